//! The IO path's clock: nanoseconds since the run's epoch, read up to three times per IO.
//!
//! On x86-64 with an invariant TSC (`constant_tsc` and `nonstop_tsc`, as fio's `cpu`
//! clocksource requires) it reads the time-stamp counter and scales it with a factor
//! calibrated against CLOCK_MONOTONIC; elsewhere it falls back to `Instant`. A TSC read is
//! several times cheaper than clock_gettime, which matters at millions of IOs per second.

use std::time::{Duration, Instant};

/// A monotonic nanosecond clock anchored at an epoch. Cheap to copy into each worker.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    epoch: Instant,
    tsc: Option<TscScale>,
}

#[derive(Clone, Copy, Debug)]
struct TscScale {
    base: u64,
    /// ns per tick as a 32.32 fixed-point number.
    mult: u64,
}

impl Clock {
    /// A clock whose zero is `epoch`, using the TSC when it is trustworthy here.
    pub fn new(epoch: Instant) -> Self {
        Clock {
            epoch,
            tsc: calibrate(epoch),
        }
    }

    /// A clock that always uses `Instant` (for tests and comparisons).
    pub fn monotonic(epoch: Instant) -> Self {
        Clock { epoch, tsc: None }
    }

    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    pub fn uses_tsc(&self) -> bool {
        self.tsc.is_some()
    }

    /// Nanoseconds since the epoch.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        match self.tsc {
            Some(s) => {
                let ticks = read_tsc().wrapping_sub(s.base);
                ((ticks as u128 * s.mult as u128) >> 32) as u64
            }
            None => self.epoch.elapsed().as_nanos() as u64,
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn read_tsc() -> u64 {
    0
}

fn tsc_is_invariant() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    let source =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    has("constant_tsc") && has("nonstop_tsc") && source.trim() == "tsc"
}

/// Measures ticks per nanosecond over a few milliseconds against the monotonic clock.
fn calibrate(epoch: Instant) -> Option<TscScale> {
    if !tsc_is_invariant() {
        return None;
    }
    let (t0, i0) = (read_tsc(), Instant::now());
    let spin = Duration::from_millis(5);
    while i0.elapsed() < spin {
        std::hint::spin_loop();
    }
    let (t1, i1) = (read_tsc(), Instant::now());
    let ns = i1.duration_since(i0).as_nanos() as u64;
    let ticks = t1.checked_sub(t0).filter(|&t| t > 0)?;
    let mult = ((ns as u128) << 32) / ticks as u128;
    // Anchor so that now_ns() reads the time since `epoch`.
    let since_epoch = i1.duration_since(epoch).as_nanos() as u64;
    let base_offset = ((since_epoch as u128) << 32) / mult.max(1);
    Some(TscScale {
        base: t1.wrapping_sub(base_offset as u64),
        mult: mult as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_monotonic_clock() {
        let epoch = Instant::now();
        let clock = Clock::new(epoch);
        std::thread::sleep(Duration::from_millis(20));
        let fast = clock.now_ns();
        let slow = epoch.elapsed().as_nanos() as u64;
        // Within 1% plus scheduling slack.
        assert!(
            fast.abs_diff(slow) < slow / 100 + 2_000_000,
            "tsc={} mono={slow} (tsc used: {})",
            fast,
            clock.uses_tsc()
        );
    }

    #[test]
    fn is_monotonic() {
        let clock = Clock::new(Instant::now());
        let mut last = clock.now_ns();
        for _ in 0..100_000 {
            let t = clock.now_ns();
            assert!(t >= last);
            last = t;
        }
    }
}
