//! The one thread that reads the workers' published counters: bandwidth and IOPS samples per
//! `bwavgtime`/`iopsavgtime` window, the per-second timeline, and live progress for the UI.
//! Rates are computed over the actual time between readings, so a late wake-up shifts a
//! window but never distorts its figure.

use std::sync::Arc;

use storbench_job::LogSpec;

use crate::progress::{CounterSnapshot, WorkerCounters};
use storbench_model::result::TimelinePoint;

/// The log windows the sampler fills (defined with the result model, for fio's log-file
/// writers).
pub use storbench_model::live::{LogWindow, LogWindows};

/// One periodic series (bandwidth window, IOPS window or timeline) of one worker.
#[derive(Default)]
struct Series {
    period_ns: u64,
    next_ns: u64,
    last_ns: u64,
    last: CounterSnapshot,
}

impl Series {
    fn new(period_ms: u64) -> Self {
        Series {
            period_ns: period_ms.max(1) * 1_000_000,
            ..Default::default()
        }
    }

    fn start(&mut self, at_ns: u64) {
        self.last_ns = at_ns;
        self.next_ns = at_ns + self.period_ns;
        self.last = CounterSnapshot::default();
    }

    /// If a window boundary passed, returns (delta, the window's length in ns) and starts
    /// the next.
    fn tick(&mut self, now_ns: u64, snap: &CounterSnapshot) -> Option<(CounterSnapshot, u64)> {
        if now_ns < self.next_ns {
            return None;
        }
        let delta = snap.since(&self.last);
        let ns = now_ns.saturating_sub(self.last_ns);
        self.last = *snap;
        self.last_ns = now_ns;
        while self.next_ns <= now_ns {
            self.next_ns += self.period_ns;
        }
        Some((delta, ns))
    }

    /// The last window of a measurement that ended at `end_ns`, if at least nine tenths
    /// of it passed: the window due at the end of a job as long as whole windows (two of
    /// 0.5 s in a 1 s job) is recorded even when the end was read a little before it was
    /// due (the TSC of the core that read it may run a few microseconds behind); a
    /// shorter remainder is too little time to be a sample.
    fn close(&mut self, end_ns: u64, snap: &CounterSnapshot) -> Option<(CounterSnapshot, u64)> {
        if end_ns <= self.last_ns || end_ns + self.period_ns / 10 < self.next_ns {
            return None;
        }
        let delta = snap.since(&self.last);
        let ns = end_ns - self.last_ns;
        self.last = *snap;
        self.last_ns = end_ns;
        Some((delta, ns))
    }
}

/// Samples of one worker, collected while it measures.
pub struct WorkerSamples {
    counters: Arc<WorkerCounters>,
    started: bool,
    /// The series are closed: the worker's measurement has ended.
    ended: bool,
    start_ns: u64,
    bw: Series,
    iops: Series,
    timeline_series: Series,
    pub bw_samples: [Vec<f64>; 3],
    pub iops_samples: [Vec<f64>; 3],
    pub timeline: Vec<TimelinePoint>,
    /// Which log series are kept: bandwidth, IOPS, latency (on its own window).
    log_bw: bool,
    log_iops: bool,
    lat_series: Option<Series>,
    pub logs: LogWindows,
}

impl WorkerSamples {
    pub fn new(counters: Arc<WorkerCounters>, bwavgtime_ms: u64, iopsavgtime_ms: u64) -> Self {
        WorkerSamples {
            counters,
            started: false,
            ended: false,
            start_ns: 0,
            bw: Series::new(bwavgtime_ms),
            iops: Series::new(iopsavgtime_ms),
            timeline_series: Series::new(1000),
            bw_samples: Default::default(),
            iops_samples: Default::default(),
            timeline: Vec::new(),
            log_bw: false,
            log_iops: false,
            lat_series: None,
            logs: LogWindows::default(),
        }
    }

    /// Keeps the windows of the log files `spec` asks for.
    pub fn with_logs(mut self, spec: &LogSpec) -> Self {
        self.log_bw = spec.bw.is_some();
        self.log_iops = spec.iops.is_some();
        self.lat_series = spec
            .lat
            .as_ref()
            .filter(|_| spec.avg_msec > 0)
            .map(|_| Series::new(spec.avg_msec));
        self
    }

    /// Reads the worker's counters at `now_ns` (since the run epoch) and records any
    /// completed windows. Once the worker has published its measurement's end, its series
    /// are closed there and tick no more: what follows (closing its files: an iSCSI
    /// logout, an NFS COMMIT) is not measured, and a tick in it would stamp the last
    /// point late, spreading its IO over time with none. Returns the snapshot read.
    pub fn poll(&mut self, now_ns: u64) -> CounterSnapshot {
        // The end first: the counts published before it are then all in the snapshot.
        let end = self.counters.measure_end_ns();
        let snap = self.counters.snapshot();
        if self.ended || !self.start() {
            return snap;
        }
        match end {
            Some(end) => self.end_at(end, &snap),
            None => {
                let bw = self.bw.tick(now_ns, &snap);
                let iops = self.iops.tick(now_ns, &snap);
                self.record(now_ns, bw, iops);
                if let Some((d, ns)) = self.lat_series.as_mut().and_then(|l| l.tick(now_ns, &snap))
                {
                    let t_ms = self.ms_since_start(now_ns);
                    self.logs.lat.push(LogWindow {
                        t_ms,
                        dur_ns: ns,
                        delta: d,
                    });
                }
                if let Some((d, _)) = self.timeline_series.tick(now_ns, &snap) {
                    self.push_point(now_ns, &d);
                }
            }
        }
        snap
    }

    /// Keeps the rate samples of windows that ended at `at_ns` (with their lengths in ns),
    /// and their log windows when logs were asked for.
    fn record(
        &mut self,
        at_ns: u64,
        bw: Option<(CounterSnapshot, u64)>,
        iops: Option<(CounterSnapshot, u64)>,
    ) {
        let t_ms = self.ms_since_start(at_ns);
        if let Some((d, ns)) = bw {
            for dir in 0..3 {
                self.bw_samples[dir].push(d.bytes[dir] as f64 / (ns as f64 / 1e9));
            }
            if self.log_bw {
                self.logs.bw.push(LogWindow {
                    t_ms,
                    dur_ns: ns,
                    delta: d,
                });
            }
        }
        if let Some((d, ns)) = iops {
            for dir in 0..3 {
                self.iops_samples[dir].push(d.ios[dir] as f64 / (ns as f64 / 1e9));
            }
            if self.log_iops {
                self.logs.iops.push(LogWindow {
                    t_ms,
                    dur_ns: ns,
                    delta: d,
                });
            }
        }
    }

    fn ms_since_start(&self, at_ns: u64) -> u64 {
        at_ns.saturating_sub(self.start_ns) / 1_000_000
    }

    /// Starts the series when the worker has begun measuring; whether it has.
    fn start(&mut self) -> bool {
        if !self.started {
            let Some(start) = self.counters.measure_start_ns() else {
                return false;
            };
            self.started = true;
            self.start_ns = start;
            self.bw.start(start);
            self.iops.start(start);
            self.timeline_series.start(start);
            if let Some(l) = &mut self.lat_series {
                l.start(start);
            }
        }
        true
    }

    /// Closes the series once the worker is done, if polling has not: at the end the
    /// worker published, else at `end_ns` (a worker that never got to publish it).
    pub fn finish(&mut self, end_ns: u64) {
        let end = self.counters.measure_end_ns().unwrap_or(end_ns);
        let snap = self.counters.snapshot();
        if !self.ended && self.start() {
            self.end_at(end, &snap);
        }
    }

    /// Closes every series at `end_ns`, when the worker's measurement ended.
    fn end_at(&mut self, end_ns: u64, snap: &CounterSnapshot) {
        let bw = self.bw.close(end_ns, snap);
        let iops = self.iops.close(end_ns, snap);
        self.record(end_ns, bw, iops);
        self.close(end_ns, snap);
    }

    /// Records the final partial second of the timeline, ending at `end_ns`, when the
    /// worker's measurement ended. A remainder shorter than a tenth of a second joins the
    /// point before it (which then ends at `end_ns`): alone, the few IOs that completed in
    /// it would read as a spike or a dip.
    fn close(&mut self, end_ns: u64, snap: &CounterSnapshot) {
        self.ended = true;
        let d = snap.since(&self.timeline_series.last);
        if !d.ios.iter().any(|&n| n > 0) {
            return;
        }
        let end_ns = end_ns.max(self.timeline_series.last_ns);
        let short = end_ns - self.timeline_series.last_ns < self.timeline_series.period_ns / 10;
        match self.timeline.last_mut() {
            Some(last) if short => {
                last.t_ms = end_ns.saturating_sub(self.start_ns) / 1_000_000;
                for dir in 0..3 {
                    last.bytes[dir] += d.bytes[dir];
                    last.ios[dir] += d.ios[dir];
                    last.lat_sum_ns[dir] += d.lat_sum_ns[dir];
                }
            }
            _ => self.push_point(end_ns, &d),
        }
    }

    /// The latency logs' last, partial window, if anything completed in it (fio writes it
    /// when the job ends; its rates have no such window).
    /// `end_ns` is when the worker's measurement ended.
    pub fn finish_logs(&mut self, end_ns: u64) {
        let Some(l) = self.lat_series.as_ref().filter(|_| self.started) else {
            return;
        };
        let d = self.counters.snapshot().since(&l.last);
        if d.ios.iter().any(|&n| n > 0) {
            let end_ns = end_ns.max(l.last_ns);
            self.logs.lat.push(LogWindow {
                t_ms: end_ns.saturating_sub(self.start_ns) / 1_000_000,
                dur_ns: end_ns - l.last_ns,
                delta: d,
            });
        }
    }

    fn push_point(&mut self, now_ns: u64, d: &CounterSnapshot) {
        self.timeline.push(TimelinePoint {
            t_ms: now_ns.saturating_sub(self.start_ns) / 1_000_000,
            bytes: d.bytes,
            ios: d.ios,
            lat_sum_ns: d.lat_sum_ns,
        });
    }

    /// Samples with no IO at all in a direction are not kept (fio keeps none for unused
    /// directions).
    pub fn take_samples(&mut self, active: [bool; 3]) -> ([Vec<f64>; 3], [Vec<f64>; 3]) {
        let mut bw = std::mem::take(&mut self.bw_samples);
        let mut iops = std::mem::take(&mut self.iops_samples);
        for d in 0..3 {
            if !active[d] {
                bw[d].clear();
                iops[d].clear();
            }
        }
        (bw, iops)
    }

    /// Earliest next window boundary, ns since the epoch (for the sampler's sleep).
    pub fn next_due_ns(&self) -> Option<u64> {
        (self.started && !self.ended).then(|| {
            self.bw
                .next_ns
                .min(self.iops.next_ns)
                .min(self.timeline_series.next_ns)
                .min(self.lat_series.as_ref().map_or(u64::MAX, |l| l.next_ns))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_timeline() {
        let c = Arc::new(WorkerCounters::default());
        let mut s = WorkerSamples::new(c.clone(), 500, 500);
        s.poll(0);
        assert!(s.next_due_ns().is_none(), "not measuring yet");
        c.set_measure_start(1_000_000_000);
        s.poll(1_000_000_000);
        c.publish(0, 1_000_000, 100, 0);
        s.poll(1_500_000_000); // exactly one 0.5 s window
        assert_eq!(s.bw_samples[0], vec![2_000_000.0]);
        assert_eq!(s.iops_samples[0], vec![200.0]);
        c.publish(0, 3_000_000, 300, 0);
        s.poll(2_000_000_000);
        assert_eq!(s.bw_samples[0], vec![2_000_000.0, 4_000_000.0]);
        assert_eq!(s.timeline.len(), 1);
        assert_eq!(s.timeline[0].t_ms, 1000);
        assert_eq!(s.timeline[0].ios[0], 300);
        c.publish(0, 3_500_000, 350, 0);
        s.finish(2_300_000_000);
        assert_eq!(s.timeline.len(), 2);
        assert_eq!(s.timeline[1].ios[0], 50);
        let (bw, _) = s.take_samples([true, false, false]);
        assert_eq!(bw[0].len(), 2);
        assert!(bw[1].is_empty());
    }

    /// The last IOs of a job that ended just after a full second join that second's point
    /// (which then ends with the job), instead of standing alone as a spike.
    #[test]
    fn a_short_remainder_joins_the_last_point() {
        let c = Arc::new(WorkerCounters::default());
        let mut s = WorkerSamples::new(c.clone(), 1000, 1000);
        c.set_measure_start(1_000_000_000);
        s.poll(1_000_000_000);
        c.publish(1, 100_000_000, 1000, 0);
        s.poll(2_000_000_000);
        c.publish(1, 100_400_000, 1004, 0);
        s.finish(2_008_000_000);
        assert_eq!(s.timeline.len(), 1);
        assert_eq!(s.timeline[0].t_ms, 1008);
        assert_eq!(s.timeline[0].ios[1], 1004);
        assert_eq!(s.timeline[0].bytes[1], 100_400_000);
        // A job shorter than a tenth of a second has only its remainder.
        let c = Arc::new(WorkerCounters::default());
        let mut s = WorkerSamples::new(c.clone(), 1000, 1000);
        c.set_measure_start(1_000_000_000);
        s.poll(1_000_000_000);
        c.publish(0, 4096, 1, 0);
        s.finish(1_050_000_000);
        assert_eq!(s.timeline.len(), 1);
        assert_eq!((s.timeline[0].t_ms, s.timeline[0].ios[0]), (50, 1));
    }

    /// A tick that lands while the worker closes its files (after its measurement ended)
    /// would stamp the last point late, spreading its IO over time with none: the series
    /// close at the published end and tick no more.
    #[test]
    fn the_series_close_at_the_published_end() {
        let c = Arc::new(WorkerCounters::default());
        let mut s = WorkerSamples::new(c.clone(), 500, 500);
        c.set_measure_start(1_000_000_000);
        s.poll(1_000_000_000);
        c.publish(0, 1000 * 4096, 1000, 0);
        s.poll(2_000_000_000);
        c.publish(0, 1800 * 4096, 1800, 0);
        c.set_measure_end(2_800_000_000);
        s.poll(3_000_000_000);
        let points: Vec<(u64, u64)> = s.timeline.iter().map(|p| (p.t_ms, p.ios[0])).collect();
        assert_eq!(points, [(1000, 1000), (1800, 800)]);
        // The bandwidth windows stop there too: the last one read at the end (2.8 s), not
        // at 3 s with the close's idle time in it.
        assert_eq!(s.bw_samples[0], [1000.0 * 4096.0, 800.0 * 4096.0 / 0.8]);
        assert_eq!(s.next_due_ns(), None);
        s.poll(4_000_000_000);
        s.finish(4_200_000_000);
        assert_eq!(s.timeline.len(), 2);
        assert_eq!(s.bw_samples[0].len(), 2);
    }

    /// A 1 s job of 0.5 s windows has two samples, also when its end was read a little
    /// before the second window was due (fio_outputs::json_units_are_fios saw one, whose
    /// mean then exceeded the rounded-down maximum).
    #[test]
    fn a_window_nearly_full_at_the_end_is_a_sample() {
        let c = Arc::new(WorkerCounters::default());
        let mut s = WorkerSamples::new(c.clone(), 500, 500);
        c.set_measure_start(8_000_000);
        s.poll(8_000_000);
        c.publish(0, 500, 5, 0);
        s.poll(600_000_000);
        c.publish(0, 1000, 10, 0);
        c.set_measure_end(1_007_900_000);
        s.poll(1_010_000_000);
        assert_eq!(s.iops_samples[0].len(), 2, "{:?}", s.iops_samples);
        // Only 0.4 s of a window: no sample.
        let c = Arc::new(WorkerCounters::default());
        let mut s = WorkerSamples::new(c.clone(), 500, 500);
        c.set_measure_start(1);
        s.poll(1);
        c.publish(0, 500, 5, 0);
        c.set_measure_end(400_000_000);
        s.poll(410_000_000);
        assert!(s.iops_samples[0].is_empty(), "{:?}", s.iops_samples);
    }

    /// Rates are logged per sample window; latencies on log_avg_msec, with the last partial
    /// window ending when the worker did. An empty window is kept (the log has no line).
    #[test]
    fn log_windows() {
        let c = Arc::new(WorkerCounters::default());
        let spec = LogSpec {
            bw: Some("b".into()),
            lat: Some("l".into()),
            avg_msec: 500,
            ..LogSpec::default()
        };
        let mut s = WorkerSamples::new(c.clone(), 500, 500).with_logs(&spec);
        c.set_measure_start(1_000_000_000);
        s.poll(1_000_000_000);
        c.publish(0, 4096, 1, 1000);
        c.publish_lat(0, 1500, 0, 0);
        s.poll(1_500_000_000);
        s.poll(2_000_000_000);
        c.publish(0, 8192, 2, 3000);
        c.publish_lat(0, 4500, 0, 0);
        s.finish_logs(2_200_000_000);
        assert_eq!(s.logs.bw.len(), 2, "no partial window for rates");
        assert!(s.logs.iops.is_empty(), "not asked for");
        let lat: Vec<_> = s
            .logs
            .lat
            .iter()
            .map(|w| (w.t_ms, w.dur_ns, w.delta.ios[0]))
            .collect();
        assert_eq!(
            lat,
            [
                (500, 500_000_000, 1),
                (1000, 500_000_000, 0),
                (1200, 200_000_000, 1)
            ]
        );
        let last = s.logs.lat[2].delta;
        assert_eq!((last.lat_sum_ns[0], last.tlat_sum_ns[0]), (2000, 3000));
        // Without logs, nothing is kept.
        let mut s = WorkerSamples::new(c.clone(), 500, 500);
        s.poll(3_000_000_000);
        s.finish_logs(3_100_000_000);
        assert_eq!(s.logs, LogWindows::default());
    }
}
