//! fio's `thinktime`: pauses between IOs, as an application that computes between its
//! reads and writes (fio's `handle_thinktime`). After each round of issuing and reaping
//! the worker asks [`Think::due`]; a due pause waits for the IOs in flight, spins
//! `thinktime_spin`, then sleeps the rest of `thinktime` (never past the job's deadline).

use storbench_job::ThinkTime;

/// One worker's thinktime state: the counts and time of its last pause.
#[derive(Debug)]
pub(super) struct Think {
    cfg: ThinkTime,
    /// IOs (completed or issued, as `cfg.on_issue` says) at the last pause.
    last_blocks: u64,
    /// ns since the run epoch of the last pause (or the job's start).
    last_ns: u64,
}

impl Think {
    /// The job's thinktime, if it pauses at all.
    pub(super) fn new(cfg: &ThinkTime) -> Option<Think> {
        (cfg.think_us > 0).then_some(Think {
            cfg: *cfg,
            last_blocks: 0,
            last_ns: 0,
        })
    }

    /// Starts the iotime count at the job's start (fio counts from its epoch).
    pub(super) fn start_at(&mut self, now_ns: u64) {
        self.last_ns = now_ns;
    }

    /// Whether the rule needs the time (thinktime_iotime), so the caller reads the clock.
    pub(super) fn needs_clock(&self) -> bool {
        self.cfg.iotime_us > 0
    }

    fn count(&self, issued: u64, completed: u64) -> u64 {
        if self.cfg.on_issue { issued } else { completed }
    }

    /// fio's test: `thinktime_iotime` has passed since the last pause, or `thinktime_blocks`
    /// IOs were done (issued) since it; with iotime given and blocks not, only the time.
    pub(super) fn due(&self, issued: u64, completed: u64, now_ns: u64) -> bool {
        if self.cfg.iotime_us > 0 {
            if now_ns.saturating_sub(self.last_ns) >= self.cfg.iotime_us * 1000 {
                return true;
            }
            if !self.cfg.blocks_given {
                return false;
            }
        }
        self.count(issued, completed) >= self.last_blocks + self.cfg.blocks
    }

    /// The pause: ns to spin, then ns to sleep.
    pub(super) fn pause_ns(&self) -> (u64, u64) {
        let spin = self.cfg.spin_us.min(self.cfg.think_us);
        (spin * 1000, (self.cfg.think_us - spin) * 1000)
    }

    /// Records a pause that ended at `now_ns` with these counts.
    pub(super) fn paused(&mut self, issued: u64, completed: u64, now_ns: u64) {
        self.last_blocks = self.count(issued, completed);
        if self.cfg.iotime_us > 0 {
            self.last_ns = now_ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn think(f: impl FnOnce(&mut ThinkTime)) -> Think {
        let mut cfg = ThinkTime {
            think_us: 100,
            ..ThinkTime::default()
        };
        f(&mut cfg);
        Think::new(&cfg).unwrap()
    }

    #[test]
    fn no_thinktime_means_no_pauses() {
        assert!(Think::new(&ThinkTime::default()).is_none());
    }

    #[test]
    fn pauses_every_blocks_completed_ios() {
        let mut t = think(|c| c.blocks = 4);
        assert!(!t.due(10, 3, 0), "issued IOs do not count by default");
        assert!(t.due(10, 4, 0));
        t.paused(10, 4, 0);
        assert!(!t.due(11, 7, 0));
        assert!(t.due(11, 8, 0));
    }

    #[test]
    fn issue_type_counts_issued_ios() {
        let t = think(|c| {
            c.blocks = 2;
            c.on_issue = true;
        });
        assert!(!t.due(1, 0, 0));
        assert!(t.due(2, 0, 0));
    }

    #[test]
    fn iotime_alone_counts_time_only() {
        let mut t = think(|c| c.iotime_us = 1000);
        t.start_at(5_000_000);
        assert!(
            !t.due(100, 100, 5_999_999),
            "the default one block does not count"
        );
        assert!(t.due(100, 100, 6_000_000));
        t.paused(100, 100, 6_000_000);
        assert!(!t.due(200, 200, 6_500_000));
    }

    #[test]
    fn iotime_with_blocks_pauses_on_either() {
        let t = think(|c| {
            c.iotime_us = 1000;
            c.blocks = 8;
            c.blocks_given = true;
        });
        assert!(t.due(8, 8, 1));
        assert!(t.due(1, 1, 1_000_000));
        assert!(!t.due(1, 1, 999_999));
    }

    #[test]
    fn spin_is_part_of_the_pause() {
        assert_eq!(think(|c| c.spin_us = 30).pause_ns(), (30_000, 70_000));
        assert_eq!(think(|c| c.spin_us = 300).pause_ns(), (100_000, 0));
    }
}
