//! A start barrier that can be abandoned: workers of a group finish their set-up, then start
//! IO together; if one fails its set-up, the others are released with an error instead of
//! waiting forever.
//!
//! The release is one futex wake of every waiter, and the waiters take no lock on the way
//! out. A mutex and condition variable would hand the lock from waiter to waiter: with more
//! busy workers than CPUs each hand-over waits for the next waiter to be scheduled among
//! those already running, so 256 jobs on 2 CPUs started over some ten seconds, one after
//! another, instead of together. The gate also names the group's start, read once by the
//! last arrival: every worker's clock for start delays, ramps and runtimes counts from it,
//! so a worker that gets a CPU late still ends its time-based job on the group's deadline.
//! In a multi-host run the last arrival also agrees with the other ranks ([`crate::coord`])
//! before the release, so the group starts on every host together; a failed agreement
//! abandons the gate and is kept for the runner to report.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::clock::Clock;

const WAITING: u32 = 0;
const RELEASED: u32 = 1;
const ABANDONED: u32 = 2;

pub struct StartGate {
    expected: usize,
    arrived: AtomicUsize,
    /// WAITING until the last arrival releases everyone (RELEASED) or set-up fails
    /// (ABANDONED); waiters sleep on this word.
    state: AtomicU32,
    /// The group's start, ns since the run epoch, written before the release.
    start_ns: AtomicU64,
    clock: Clock,
    /// Set by whoever first speaks for this process in the cross-rank agreement (the last
    /// arrival, ready; or the first failure, not ready), so it is made exactly once.
    agreed: AtomicBool,
    /// Why the agreement failed (another rank not ready or gone), for the runner.
    coord_error: Mutex<Option<crate::error::EngineError>>,
}

/// What a worker waits at before its group starts: the run's [`StartGate`], or, for a
/// worker in a process of its own, its side of the pipes to the thread that waits at the
/// gate for it (`crates/run/src/forked.rs`).
pub trait Gate {
    /// Waits for all workers; the group's start (ns since the run epoch), or None if the
    /// gate was abandoned.
    fn arrive_and_wait(&self) -> Option<u64>;
    /// Releases everyone with failure (this worker could not start).
    fn abandon(&self);
}

impl Gate for StartGate {
    fn arrive_and_wait(&self) -> Option<u64> {
        StartGate::arrive_and_wait(self)
    }
    fn abandon(&self) {
        StartGate::abandon(self)
    }
}

impl StartGate {
    pub fn new(expected: usize, clock: Clock) -> Self {
        StartGate {
            expected,
            arrived: AtomicUsize::new(0),
            state: AtomicU32::new(WAITING),
            start_ns: AtomicU64::new(0),
            clock,
            agreed: AtomicBool::new(false),
            coord_error: Mutex::new(None),
        }
    }

    /// Waits for all workers; the group's start (ns since the run epoch), or None if the
    /// gate was abandoned.
    pub fn arrive_and_wait(&self) -> Option<u64> {
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 >= self.expected {
            if self.speak(true) {
                self.start_ns.store(self.clock.now_ns(), Ordering::Relaxed);
                self.settle(RELEASED);
            } else {
                self.settle(ABANDONED);
            }
        }
        loop {
            match self.state.load(Ordering::Acquire) {
                WAITING => futex_wait(&self.state, WAITING),
                RELEASED => return Some(self.start_ns.load(Ordering::Relaxed)),
                _ => return None,
            }
        }
    }

    /// Releases everyone with failure (a worker could not start); the other ranks of a
    /// multi-host run are told, so they stop too.
    pub fn abandon(&self) {
        self.settle(ABANDONED);
        self.speak(false);
    }

    /// Why the other ranks did not start this group, if the agreement failed.
    pub fn coordination_error(&self) -> Option<crate::error::EngineError> {
        self.coord_error.lock().ok()?.clone()
    }

    /// Makes this process's one agreement for the group, if nobody made it yet; false
    /// when it failed (the reason kept). A no-op without a coordinator.
    fn speak(&self, ready: bool) -> bool {
        if self.agreed.swap(true, Ordering::AcqRel) {
            return ready;
        }
        match crate::coord::agree(crate::coord::Point::GroupStart, ready) {
            Ok(()) => true,
            Err(e) => {
                if let Ok(mut slot) = self.coord_error.lock() {
                    *slot = Some(e);
                }
                false
            }
        }
    }

    /// Moves the gate out of WAITING once (the first of release and abandon wins) and wakes
    /// every waiter.
    fn settle(&self, to: u32) {
        if self
            .state
            .compare_exchange(WAITING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            futex_wake_all(&self.state);
        }
    }
}

/// Sleeps while `word` holds `expected` (returns at once if it does not, or on a signal).
fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind `word`, which outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes every thread sleeping on `word`.
fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only uses the address of `word` as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn releases_when_all_arrive_with_one_start() {
        let g = Arc::new(StartGate::new(3, Clock::new(Instant::now())));
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || g.arrive_and_wait())
            })
            .collect();
        let starts: Vec<Option<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(starts[0].is_some(), "{starts:?}");
        assert!(starts.iter().all(|s| *s == starts[0]), "{starts:?}");
    }

    #[test]
    fn abandon_releases_waiters_with_none() {
        let g = Arc::new(StartGate::new(2, Clock::new(Instant::now())));
        let g2 = g.clone();
        let waiter = std::thread::spawn(move || g2.arrive_and_wait());
        std::thread::sleep(std::time::Duration::from_millis(20));
        g.abandon();
        assert_eq!(waiter.join().unwrap(), None);
    }
}
