//! What the runner's sampler hands to the writers that work while a run goes (fio's log
//! files): plain copies of a worker's counters and the windows of its averaged logs. Kept
//! here, with the result model, so those writers (storbench-report's `live/`) need not
//! compile the runner; core re-exports them where they were (`progress`, `sampler`).

/// A copy of one worker's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    pub bytes: [u64; 3],
    pub ios: [u64; 3],
    pub lat_sum_ns: [u64; 3],
    pub tlat_sum_ns: [u64; 3],
    pub slat_sum_ns: [u64; 3],
    pub slat_n: [u64; 3],
    pub pre_bytes: u64,
}

impl CounterSnapshot {
    pub fn since(&self, earlier: &CounterSnapshot) -> CounterSnapshot {
        let d = |a: [u64; 3], b: [u64; 3]| std::array::from_fn(|i| a[i].saturating_sub(b[i]));
        CounterSnapshot {
            bytes: d(self.bytes, earlier.bytes),
            ios: d(self.ios, earlier.ios),
            lat_sum_ns: d(self.lat_sum_ns, earlier.lat_sum_ns),
            tlat_sum_ns: d(self.tlat_sum_ns, earlier.tlat_sum_ns),
            slat_sum_ns: d(self.slat_sum_ns, earlier.slat_sum_ns),
            slat_n: d(self.slat_n, earlier.slat_n),
            pre_bytes: self.pre_bytes.saturating_sub(earlier.pre_bytes),
        }
    }
}

/// One window of a log series: when it ended (ms since measurement began), how long it
/// lasted, and what completed in it. Formatting is the reporter's (fio's log lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogWindow {
    pub t_ms: u64,
    pub dur_ns: u64,
    pub delta: CounterSnapshot,
}

/// The windows of fio's averaged logs of one worker: bandwidth and IOPS on their sample
/// windows (fio logs each rate sample), latencies on `log_avg_msec` with the final
/// partial window (fio's `finalize_logs`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogWindows {
    pub bw: Vec<LogWindow>,
    pub iops: Vec<LogWindow>,
    pub lat: Vec<LogWindow>,
}
