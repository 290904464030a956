//! fio's latency profiling (`latency_target` and friends, io_u.c's `lat_target_*`): the
//! job's queue depth starts at 1 and is searched, one `latency_window` at a time, for the
//! deepest that keeps `latency_percentile` percent of IOs under the target: doubled after
//! a window that met it (bisected towards a depth that failed, once one did), bisected
//! down after one that did not. When a success leaves the depth where it was, the
//! statistics start over for one last window at that depth, and the job ends after it
//! (`latency_run` keeps searching instead). Plain counters, nothing allocated per IO.

use storbench_job::LatencyTarget;

/// What the worker has to do after a check or a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LatStep {
    Nothing,
    /// Let what is in flight complete before going on (fio's `io_u_quiesce`).
    Quiesce,
    /// Quiesce, then start the statistics over: the final window at the found depth.
    FinalRun,
    /// The final window is over: the job ends.
    Done,
    /// An IO over the target at depth 1, where every IO must be under it.
    Fatal,
}

pub(super) struct LatSearch {
    target_ns: u64,
    window_ns: u64,
    percentile: f64,
    run: bool,
    iodepth: u32,
    /// The depth in use and the bounds of the search.
    pub(super) qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    /// This window's start, IOs completed in it and how many of those were too slow.
    since_ns: u64,
    ios: u64,
    failed: u64,
    end_run: bool,
}

impl LatSearch {
    pub(super) fn new(cfg: &LatencyTarget, iodepth: u32) -> Option<Self> {
        (cfg.target_us > 0).then(|| {
            let mut s = LatSearch {
                target_ns: cfg.target_us.saturating_mul(1000),
                window_ns: cfg.window_us.saturating_mul(1000),
                percentile: cfg.percentile,
                run: cfg.run,
                iodepth: iodepth.max(1),
                qd: 1,
                low: 1,
                high: 1,
                stable: 0,
                since_ns: 0,
                ios: 0,
                failed: 0,
                end_run: false,
            };
            s.init(0);
            s
        })
    }

    pub(super) fn target_ns(&self) -> u64 {
        self.target_ns
    }

    /// fio's `lat_target_init` (also at the end of the ramp, unless in the final run).
    pub(super) fn init(&mut self, now_ns: u64) {
        if self.end_run {
            return;
        }
        self.qd = 1;
        self.high = self.iodepth;
        self.low = 1;
        self.new_cycle(now_ns);
    }

    fn new_cycle(&mut self, now_ns: u64) {
        self.since_ns = now_ns;
        self.ios = 0;
        self.failed = 0;
    }

    /// One read or write completed after `lat_ns` (fio's total latency).
    #[inline]
    pub(super) fn completed(&mut self, lat_ns: u64, now_ns: u64) -> LatStep {
        self.ios += 1;
        if lat_ns <= self.target_ns {
            return LatStep::Nothing;
        }
        if self.percentile < 100.0 {
            self.failed += 1;
            return LatStep::Nothing;
        }
        self.failed_window(now_ns)
    }

    /// fio's `lat_target_check`, after each round of completions.
    #[inline]
    pub(super) fn check(&mut self, now_ns: u64) -> LatStep {
        if now_ns.saturating_sub(self.since_ns) < self.window_ns || self.ios == 0 {
            return LatStep::Nothing;
        }
        let success = (self.ios - self.failed) as f64 / self.ios as f64 * 100.0;
        if success >= self.percentile {
            self.succeeded(now_ns)
        } else {
            match self.failed_window(now_ns) {
                // fio's check ramps down but is never fatal itself.
                LatStep::Fatal => LatStep::Nothing,
                step => step,
            }
        }
    }

    /// fio's `__lat_target_failed`.
    fn failed_window(&mut self, now_ns: u64) -> LatStep {
        if self.qd == 1 {
            return LatStep::Fatal;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = ((self.qd + self.low) / 2).max(1);
        self.stable = 0;
        self.new_cycle(now_ns);
        LatStep::Quiesce
    }

    /// fio's `lat_target_success`.
    fn succeeded(&mut self, now_ns: u64) -> LatStep {
        let qd = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        if self.high != self.iodepth {
            self.qd = (self.qd + self.high) / 2;
        } else {
            self.qd *= 2;
        }
        self.qd = self.qd.min(self.iodepth);
        let mut step = LatStep::Nothing;
        if !self.run && self.qd == qd {
            step = if self.end_run {
                LatStep::Done
            } else {
                self.end_run = true;
                LatStep::FinalRun
            };
        }
        self.new_cycle(now_ns);
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(percentile: f64, iodepth: u32) -> LatSearch {
        let cfg = LatencyTarget {
            target_us: 1000,
            window_us: 100,
            percentile,
            run: false,
        };
        LatSearch::new(&cfg, iodepth).unwrap()
    }

    /// Every window meets the target: 1, 2, 4, 8, then 8 again (the final run), done.
    #[test]
    fn doubles_up_to_iodepth_then_runs_a_final_window() {
        let mut s = search(100.0, 8);
        let mut t = 0;
        let mut depths = vec![s.qd];
        let mut steps = vec![];
        for _ in 0..5 {
            s.completed(10_000, t);
            t += 100_000;
            steps.push(s.check(t));
            depths.push(s.qd);
        }
        assert_eq!(depths, [1, 2, 4, 8, 8, 8]);
        use LatStep::*;
        assert_eq!(steps, [Nothing, Nothing, Nothing, FinalRun, Done]);
    }

    #[test]
    fn a_slow_io_bisects_down_and_is_fatal_at_depth_one() {
        let mut s = search(100.0, 16);
        assert_eq!(s.completed(2_000_000, 0), LatStep::Fatal);
        s.completed(1, 0);
        s.check(100_000);
        s.completed(1, 100_000);
        s.check(200_000);
        assert_eq!(s.qd, 4);
        assert_eq!(s.completed(2_000_000, 200_000), LatStep::Quiesce);
        assert_eq!((s.low, s.qd, s.high), (2, 3, 4));
    }

    #[test]
    fn a_percentile_counts_slow_ios_over_the_window() {
        let mut s = search(90.0, 4);
        for i in 0..10 {
            let lat = if i == 0 { 5_000_000 } else { 1 };
            assert_eq!(s.completed(lat, 0), LatStep::Nothing);
        }
        // 90% under the target: a success.
        s.check(100_000);
        assert_eq!(s.qd, 2);
        for i in 0..10 {
            s.completed(if i < 2 { 5_000_000 } else { 1 }, 100_000);
        }
        assert_eq!(s.check(200_000), LatStep::Quiesce);
        assert_eq!(s.qd, 1);
        // No IO in a window decides nothing.
        assert_eq!(s.check(900_000), LatStep::Nothing);
    }
}
