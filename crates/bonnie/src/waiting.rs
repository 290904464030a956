//! Waiting for other threads of the suite (the other copies of a test, the seekers) while
//! keeping this copy's engine alive: an NFSv4 server drops a client that sends nothing for
//! a lease, so an engine that waits longer than that gets [`Engine::idle`] calls, at least
//! one every [`IDLE_STEP`] (the engine sends something only when its lease needs it).
//!
//! [`Engine::idle`]: storbench_core::Engine::idle

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::error::Result;
use crate::io::Io;

/// Longest wait between two idle calls.
pub(crate) const IDLE_STEP: Duration = Duration::from_secs(1);

/// A count of threads still to arrive; waiters wake as soon as it reaches zero.
pub(crate) struct Waiting {
    left: Mutex<usize>,
    changed: Condvar,
}

/// Counts its thread as arrived when dropped, so that a thread that fails or panics does
/// not leave the others waiting.
pub(crate) struct Arrival<'a>(&'a Waiting);

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        let mut left = self.0.left.lock().unwrap_or_else(PoisonError::into_inner);
        *left = left.saturating_sub(1);
        self.0.changed.notify_all();
    }
}

impl Waiting {
    /// A count of `n` threads.
    pub(crate) fn new(n: usize) -> Waiting {
        Waiting {
            left: Mutex::new(n),
            changed: Condvar::new(),
        }
    }

    /// The calling thread's arrival, counted when the value is dropped.
    pub(crate) fn arrival(&self) -> Arrival<'_> {
        Arrival(self)
    }

    /// Counts one thread as arrived.
    pub(crate) fn arrive(&self) {
        drop(self.arrival());
    }

    /// Waits until every thread has arrived.
    pub(crate) fn wait(&self) {
        let mut left = self.left.lock().unwrap_or_else(PoisonError::into_inner);
        while *left > 0 {
            left = self
                .changed
                .wait(left)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Waits until every thread has arrived, letting `io`'s engine keep its server's state
    /// (at once, then at least every [`IDLE_STEP`]); an idle call that fails ends the wait
    /// with its error.
    pub(crate) fn wait_idle(&self, io: &mut Io) -> Result<()> {
        self.wait_calling(IDLE_STEP, &mut || io.idle().map_err(Into::into))
    }

    /// Waits until every thread has arrived, calling `idle` at once and then every `step`.
    fn wait_calling(&self, step: Duration, idle: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let mut wait = Duration::ZERO;
        while !self.arrived_within(wait) {
            idle()?;
            wait = step;
        }
        Ok(())
    }

    /// Whether every thread has arrived by the end of `d`.
    fn arrived_within(&self, d: Duration) -> bool {
        let left = self.left.lock().unwrap_or_else(PoisonError::into_inner);
        let (left, _) = self
            .changed
            .wait_timeout_while(left, d, |l| *l > 0)
            .unwrap_or_else(PoisonError::into_inner);
        *left == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn waiters_wake_when_the_last_thread_arrives_or_fails() {
        let w = Waiting::new(2);
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                w.arrive();
            });
            let failing = s.spawn(|| {
                let _arrived = w.arrival();
                std::thread::sleep(Duration::from_millis(100));
                panic!("a copy that fails still arrives");
            });
            w.wait();
            assert!(failing.join().is_err());
        });
        assert!(t.elapsed() >= Duration::from_millis(100));
    }

    #[test]
    fn a_waiting_thread_is_idle_at_once_and_every_step_until_the_others_arrive() {
        let w = Waiting::new(1);
        let mut calls = 0;
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(290));
                w.arrive();
            });
            w.wait_calling(Duration::from_millis(100), &mut || {
                calls += 1;
                Ok(())
            })
            .unwrap();
        });
        // At 0, 100 and 200 ms: one at once, then one a step (never more often).
        let steps = (t.elapsed().as_millis() / 100) as u32;
        assert!(
            calls >= 2 && calls <= steps + 1,
            "{calls} idle calls in {steps} steps"
        );
        // Nobody to wait for: no call at all.
        let none = Waiting::new(0);
        none.wait_calling(Duration::from_millis(100), &mut || panic!("idle called"))
            .unwrap();
        // A failing idle call ends the wait with its error.
        let stuck = Waiting::new(1);
        let e = stuck.wait_calling(Duration::from_millis(10), &mut || {
            Err(crate::BonnieError::Check("server lost".into()))
        });
        assert!(e.is_err());
    }
}
