//! What bonnie++ measures per test: elapsed time on a monotonic clock, process CPU from
//! getrusage(RUSAGE_SELF) (core's CPU accounting), and the longest single operation.

use std::time::Instant;

/// User plus system CPU of the whole process so far, ns. Process-wide like bonnie++'s, so
/// a test that runs several threads can exceed 100 %.
pub(crate) fn process_cpu_ns() -> u64 {
    storbench_core::cpu::Usage::process().cpu_ns()
}

/// The longest operation seen.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MaxLatency {
    pub max_ns: u64,
}

impl MaxLatency {
    /// Records the operation that began at `start` and ends now.
    #[inline]
    pub fn record(&mut self, start: Instant) {
        crate::progress::tick();
        let ns = start.elapsed().as_nanos() as u64;
        if ns > self.max_ns {
            self.max_ns = ns;
        }
    }

    /// Records the operation that ran from `since` until now and returns now, where the
    /// next one starts: loops of back-to-back operations read the clock once per operation
    /// (the few instructions between two operations count towards the second).
    #[inline]
    pub fn lap(&mut self, since: Instant) -> Instant {
        crate::progress::tick();
        let now = Instant::now();
        let ns = now.duration_since(since).as_nanos() as u64;
        if ns > self.max_ns {
            self.max_ns = ns;
        }
        now
    }

    pub fn merge(&mut self, other: MaxLatency) {
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

/// When one worker's timed part began and ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub start: Instant,
    pub end: Instant,
}

impl Span {
    /// The smallest span covering both.
    pub fn union(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// One test's raw figures, summed over the concurrent copies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Measured {
    /// When the first copy's timed part began.
    pub start: Instant,
    pub elapsed_ns: u64,
    pub cpu_ns: u64,
    pub max_latency_ns: u64,
}

/// `at` on the wall clock, ns since the Unix epoch: the monotonic clock's distance from
/// one reading of both, taken once, so every test of a run is on the same footing (a
/// multi-host run puts the ranks' tests on one time line with these).
pub(crate) fn unix_ns(at: Instant) -> u64 {
    static ANCHOR: std::sync::OnceLock<(Instant, u64)> = std::sync::OnceLock::new();
    let (mono, wall) = *ANCHOR.get_or_init(|| {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        (Instant::now(), wall)
    });
    if at >= mono {
        wall + at.duration_since(mono).as_nanos() as u64
    } else {
        wall.saturating_sub(mono.duration_since(at).as_nanos() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_advances_with_work() {
        let before = process_cpu_ns();
        let mut x = 0u64;
        let start = Instant::now();
        while start.elapsed().as_millis() < 30 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        assert!(process_cpu_ns() > before);
    }

    #[test]
    fn monotonic_instants_map_onto_the_wall_clock_in_order() {
        let a = Instant::now();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let b = a + std::time::Duration::from_millis(3);
        let (ua, ub) = (unix_ns(a), unix_ns(b));
        assert_eq!(ub - ua, 3_000_000);
        assert!(ua.abs_diff(wall) < 1_000_000_000, "{ua} against {wall}");
    }

    #[test]
    fn max_latency_keeps_the_longest() {
        let mut lat = MaxLatency::default();
        let start = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        lat.record(start);
        let long = lat.max_ns;
        lat.record(Instant::now());
        assert_eq!(lat.max_ns, long);
        assert!(long >= 2_000_000);
    }

    #[test]
    fn laps_measure_each_operation_from_the_end_of_the_one_before() {
        let mut lat = MaxLatency::default();
        let t0 = Instant::now();
        let t1 = lat.lap(t0);
        assert!(t1 >= t0);
        std::thread::sleep(std::time::Duration::from_millis(3));
        let t2 = lat.lap(t1);
        assert!(lat.max_ns >= 3_000_000);
        assert_eq!(lat.max_ns, t2.duration_since(t1).as_nanos() as u64);
        let long = lat.max_ns;
        lat.lap(t2);
        assert_eq!(lat.max_ns, long, "a short lap keeps the longest");
    }
}
