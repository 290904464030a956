//! fio's per-IO logs and histogram log on the IO path: one record copied per completed IO
//! (`log_avg_msec=0`), and per direction a histogram line every `log_hist_msec`, both
//! handed to the batch's log writer thread (`storbench_model::iolog`).
//!
//! fio logs only after the ramp (its completions are not accounted before), from the
//! epoch the ramp's end resets; so does this, from when the worker starts measuring.

use super::{Slot, Worker};
use storbench_model::histogram::{Histogram, PLAT_NR};
use storbench_model::iolog::{IoLogger, IoRecord};

/// A clone's logging state.
pub(super) struct Logging {
    logger: IoLogger,
    /// A record per IO is wanted (not only the histogram log).
    per_io: bool,
    hist_msec: u64,
    /// Per direction: fio's `hist_last` (ms since the epoch; 0 until the first IO after
    /// the first millisecond, as fio's) and the bins at its previous line.
    hist_last: [u64; 3],
    prev: [Box<[u64; PLAT_NR]>; 3],
    /// The clone's epoch: when it started measuring, ns since the run's epoch.
    epoch_ns: u64,
}

impl Logging {
    pub(super) fn new(logger: IoLogger, job: &storbench_job::JobSpec) -> Self {
        let l = &job.logs;
        Logging {
            logger,
            per_io: l.any() && l.avg_msec == 0,
            hist_msec: if l.hist.is_some() { l.hist_msec } else { 0 },
            hist_last: [0; 3],
            prev: std::array::from_fn(|_| Box::new([0; PLAT_NR])),
            epoch_ns: 0,
        }
    }

    /// The statistics start over at `now_ns` (the ramp's end): so do the logs.
    pub(super) fn restart(&mut self, now_ns: u64) {
        self.epoch_ns = now_ns;
        self.hist_last = [0; 3];
        for p in &mut self.prev {
            p.fill(0);
        }
    }

    pub(super) fn finish(&mut self) {
        self.logger.finish();
    }

    /// fio's `add_clat_sample` histogram step: once `log_hist_msec` has passed since the
    /// direction's last line, a line of the bins completed since, stamped now.
    fn hist_step(&mut self, d: usize, elapsed_ms: u64, bs: u32, hist: &Histogram) {
        let last = &mut self.hist_last[d];
        if *last == 0 {
            *last = elapsed_ms;
        }
        let window = elapsed_ms - *last;
        if window < self.hist_msec {
            return;
        }
        *last = elapsed_ms - (window - self.hist_msec);
        let Some(mut line) = self.logger.hist_buffer() else {
            return;
        };
        let prev = &mut self.prev[d];
        for ((out, &now), before) in line.bins.iter_mut().zip(hist.counts()).zip(prev.iter_mut()) {
            *out = now - *before;
            *before = now;
        }
        line.t_ms = elapsed_ms;
        line.ddir = d as u8;
        line.bs = bs;
        self.logger.send_hist(line);
    }
}

impl Worker<'_> {
    /// Logs one completed read, write or trim of `bytes` in `slot` (after the ramp only).
    #[inline]
    pub(super) fn log_io(&mut self, s: &Slot, slot: u32, bytes: u64, t_done: u64) {
        // fio logs an IO's own priority, else the job's.
        let ioprio = match self.cmdprio.as_ref().map_or(0, |c| c.ioprio(slot)) {
            0 => self.own_ioprio,
            p => p,
        };
        let Some(l) = self.logging.as_mut() else {
            return;
        };
        if !self.measuring {
            return;
        }
        let t_ns = t_done.saturating_sub(l.epoch_ns);
        let d = s.ddir as usize;
        if l.per_io {
            l.logger.push(IoRecord {
                t_ns,
                clat_ns: t_done.saturating_sub(s.t_issue),
                lat_ns: t_done.saturating_sub(s.t_start),
                slat_ns: s.t_issue.saturating_sub(s.t_start),
                offset: s.offset,
                bytes: bytes as u32,
                ddir: s.ddir,
                slat: self.measure.slat,
                ioprio,
            });
        }
        if l.hist_msec > 0 && self.measure.clat {
            l.hist_step(
                d,
                t_ns / 1_000_000,
                bytes as u32,
                &self.stats.dirs[d].clat.hist,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use storbench_model::iolog::{HistLine, IoLogSink, LogPipes};

    /// A histogram line as (time, direction, block size, IOs in it).
    type Seen = (u64, u8, u32, u64);

    struct Lines(Arc<Mutex<Vec<Seen>>>);

    impl IoLogSink for Lines {
        fn records(&mut self, _: &[IoRecord]) -> std::io::Result<()> {
            Ok(())
        }
        fn hist(&mut self, l: &HistLine) -> std::io::Result<()> {
            let n = l.bins.iter().sum();
            self.0.lock().unwrap().push((l.t_ms, l.ddir, l.bs, n));
            Ok(())
        }
        fn finish(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// fio's windows: the first IO after the first millisecond opens them, a line comes at
    /// the first completion `log_hist_msec` or more later, holding the IOs since the
    /// previous line, and the next window keeps the drift (`elapsed - (window - msec)`).
    #[test]
    fn histogram_windows_follow_fio() {
        let mut job = storbench_job::JobSpec::new("j");
        job.logs.hist = Some("h".into());
        job.logs.hist_msec = 100;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut pipes = LogPipes::new(1);
        let logger = pipes.add("j".into(), Box::new(Lines(seen.clone())));
        let writer = pipes.writer().unwrap();
        let t = std::thread::spawn(move || writer.run());
        let mut l = Logging::new(logger, &job);
        assert!(!l.per_io);
        let mut h = Histogram::default();
        for ms in [0, 5, 50, 105, 150, 210, 230, 330] {
            h.record(1000);
            l.hist_step(1, ms, 4096, &h);
        }
        l.finish();
        t.join().unwrap();
        // Opened at 5 ms (0 leaves it closed); at 105 a line of 4 IOs, the next window
        // from 105; at 210 (105 ms): 2 IOs, the next from 205; at 330 (125 ms): 2 IOs.
        assert_eq!(
            *seen.lock().unwrap(),
            [(105, 1, 4096, 4), (210, 1, 4096, 2), (330, 1, 4096, 2)]
        );
    }
}
