//! fio 3.33's averaged log files (`write_bw_log`, `write_iops_log`, `write_lat_log` with
//! `log_avg_msec`), written from the windows the sampler kept.
//!
//! Facts from fio 3.33's source:
//! - names (init.c `gen_log_name`): `<prefix>_<type>.<N>.log`, N being the clone's
//!   `thread_number` (every clone of every job, from 1); with `per_job_logs=0`,
//!   `<prefix>_<type>.log`, appended to (iolog.c `flush_log(log, !per_job_logs)`); otherwise
//!   the file is truncated (`fopen "w"`). `write_lat_log` writes `lat`, `slat` and `clat`
//!   files, each unless its `disable_*lat` is set; slat stays empty for synchronous engines.
//! - lines (iolog.c `flush_samples`): `"%lu, %ld, %u, %llu, %u\n"`: time in ms since the
//!   job's epoch (reset after ramp_time), value, direction (0 read, 1 write, 2 trim), block
//!   size (0 for averaged entries) and the priority column (0: no RT priority). With
//!   `log_offset=1` an offset column comes before the priority (0 for averaged entries),
//!   and with `log_prio=1` the priority is printed as `0x%04x` (averaged entries: 0x0000).
//! - values (stat.c `__add_samples`, `__add_stat_to_log`): bandwidth in KiB/s
//!   (`bytes * 1000 / ms / 1024`), IOPS (`ios * 1000 / ms`), latencies in ns as the window's
//!   mean rounded (`mean + 0.50`); a direction with nothing in a window has no line. Rates
//!   have no line for the last, partial window (the helper thread stops sampling a job
//!   that is no longer running); latency logs do (`finalize_logs`).

use std::fs::OpenOptions;
use std::io::{self, Write};

use storbench_model::iolog::{LogJob, LogSpec};
use storbench_model::live::{LogWindow, LogWindows};

/// One of fio's log types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    Bw,
    Iops,
    Lat,
    Slat,
    Clat,
    /// The completion latency histogram log (`write_hist_log`).
    Hist,
}

impl LogKind {
    fn name(self) -> &'static str {
        match self {
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
            LogKind::Lat => "lat",
            LogKind::Slat => "slat",
            LogKind::Clat => "clat",
            LogKind::Hist => "clat_hist",
        }
    }
}

/// The file name fio gives a log.
pub fn file_name(prefix: &str, kind: LogKind, thread_number: u32, per_job: bool) -> String {
    if per_job {
        format!("{prefix}_{}.{thread_number}.log", kind.name())
    } else {
        format!("{prefix}_{}.log", kind.name())
    }
}

/// A mean rounded as fio rounds it (`mean + 0.50`, truncated).
fn mean(sum: u64, n: u64) -> u64 {
    ((u128::from(sum) * 2 + u128::from(n)) / (u128::from(n) * 2)) as u64
}

/// A rate per second of `amount` over `dur_ns`, truncated as fio's integer division is.
fn per_sec(amount: u64, dur_ns: u64) -> u64 {
    if dur_ns == 0 {
        return 0;
    }
    (u128::from(amount) * 1_000_000_000 / u128::from(dur_ns)) as u64
}

/// The value of direction `d` in window `w`, or `None` when nothing counts in it.
fn value(kind: LogKind, w: &LogWindow, d: usize) -> Option<u64> {
    let x = &w.delta;
    let ios = x.ios[d];
    match kind {
        LogKind::Bw => (x.bytes[d] > 0).then(|| per_sec(x.bytes[d], w.dur_ns) / 1024),
        LogKind::Iops => (ios > 0).then(|| per_sec(ios, w.dur_ns)),
        LogKind::Clat => (ios > 0).then(|| mean(x.lat_sum_ns[d], ios)),
        LogKind::Lat => (ios > 0).then(|| mean(x.tlat_sum_ns[d], ios)),
        LogKind::Slat => (x.slat_n[d] > 0).then(|| mean(x.slat_sum_ns[d], x.slat_n[d])),
        LogKind::Hist => None,
    }
}

/// The columns after direction and block size of an averaged line: the offset column
/// (`log_offset`) and the priority, as fio prints them for entries without either.
pub(super) fn tail(spec: &LogSpec) -> &'static str {
    match (spec.offset, spec.prio) {
        (false, false) => "0",
        (false, true) => "0x0000",
        (true, false) => "0, 0",
        (true, true) => "0, 0x0000",
    }
}

/// The log's lines: one per direction with something in the window, in window order.
pub fn lines(kind: LogKind, windows: &[LogWindow], spec: &LogSpec) -> String {
    use std::fmt::Write as _;
    let tail = tail(spec);
    let mut out = String::new();
    for w in windows {
        for d in 0..3 {
            if let Some(v) = value(kind, w, d) {
                let _ = writeln!(out, "{}, {v}, {d}, 0, {tail}", w.t_ms);
            }
        }
    }
    out
}

/// The files of the bandwidth, IOPS and latency logs `job` asks for, as (name, kind).
pub(super) fn wanted_files(job: LogJob<'_>, n: u32) -> Vec<(String, LogKind)> {
    let l = job.logs;
    let mut out = Vec::new();
    let mut add = |prefix: &Option<String>, kind| {
        if let Some(p) = prefix {
            out.push((file_name(p, kind, n, l.per_job), kind));
        }
    };
    add(&l.bw, LogKind::Bw);
    add(&l.iops, LogKind::Iops);
    for (kind, off) in [
        (LogKind::Lat, job.disable_lat),
        (LogKind::Slat, job.disable_slat),
        (LogKind::Clat, job.disable_clat),
    ] {
        if !off {
            add(&l.lat, kind);
        }
    }
    out
}

/// The logs `job` asks for, with their windows, as (file name, kind, windows).
fn wanted<'a>(
    job: LogJob<'a>,
    n: u32,
    logs: &'a LogWindows,
) -> Vec<(String, LogKind, &'a [LogWindow])> {
    wanted_files(job, n)
        .into_iter()
        .map(|(name, kind)| {
            let w: &[LogWindow] = match kind {
                LogKind::Bw => &logs.bw,
                LogKind::Iops => &logs.iops,
                _ => &logs.lat,
            };
            (name, kind, w)
        })
        .collect()
}

/// Opens a log file as fio does: truncated, or appended to when the clones share it.
pub(super) fn open_log(name: &str, per_job: bool) -> io::Result<std::fs::File> {
    OpenOptions::new()
        .create(true)
        .write(true)
        .append(!per_job)
        .truncate(per_job)
        .open(name)
}

/// Writes the log files of clone `thread_number` of `job` in the current directory (or
/// where the prefix points), as fio does when a job ends. A file that cannot be written
/// does not stop the others; each failure is returned, naming its file.
pub fn write_clone_logs(job: LogJob<'_>, thread_number: u32, logs: &LogWindows) -> Vec<io::Error> {
    let mut failed = Vec::new();
    for (name, kind, windows) in wanted(job, thread_number, logs) {
        let written = open_log(&name, job.logs.per_job)
            .and_then(|mut f| f.write_all(lines(kind, windows, job.logs).as_bytes()));
        if let Err(e) = written {
            failed.push(io::Error::new(e.kind(), format!("log file {name}: {e}")));
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use storbench_model::live::CounterSnapshot;

    fn window(t_ms: u64, dur_ms: u64, d: usize, ios: u64, lat_ns: u64) -> LogWindow {
        let mut delta = CounterSnapshot::default();
        delta.ios[d] = ios;
        delta.bytes[d] = ios * 4096;
        delta.lat_sum_ns[d] = ios * lat_ns;
        delta.tlat_sum_ns[d] = ios * (lat_ns + 100);
        LogWindow {
            t_ms,
            dur_ns: dur_ms * 1_000_000,
            delta,
        }
    }

    #[test]
    fn names() {
        assert_eq!(file_name("bw", LogKind::Bw, 3, true), "bw_bw.3.log");
        assert_eq!(
            file_name("x/lat", LogKind::Clat, 1, true),
            "x/lat_clat.1.log"
        );
        assert_eq!(file_name("j", LogKind::Iops, 7, false), "j_iops.log");
    }

    fn plain() -> LogSpec {
        LogSpec::default()
    }

    /// log_offset and log_prio add fio's columns: offset 0 and priority 0x0000 in
    /// averaged lines (fio 3.33: `1000, 3, 1, 0, 0, 0x0000`).
    #[test]
    fn offset_and_priority_columns() {
        let ws = [window(1000, 1000, 1, 3, 7)];
        let mut spec = plain();
        spec.offset = true;
        assert_eq!(lines(LogKind::Clat, &ws, &spec), "1000, 7, 1, 0, 0, 0\n");
        spec.prio = true;
        assert_eq!(
            lines(LogKind::Clat, &ws, &spec),
            "1000, 7, 1, 0, 0, 0x0000\n"
        );
        spec.offset = false;
        assert_eq!(lines(LogKind::Clat, &ws, &spec), "1000, 7, 1, 0, 0x0000\n");
    }

    #[test]
    fn rates_are_per_window_and_directions_without_io_have_no_line() {
        let mut w = window(500, 500, 0, 1000, 0);
        w.delta.ios[1] = 10;
        w.delta.bytes[1] = 40960;
        let empty = window(1000, 500, 0, 0, 0);
        let ws = [w, empty];
        // 4096000 B in 0.5 s = 8000 KiB/s; 40960 B = 80 KiB/s.
        assert_eq!(
            lines(LogKind::Bw, &ws, &plain()),
            "500, 8000, 0, 0, 0\n500, 80, 1, 0, 0\n"
        );
        assert_eq!(
            lines(LogKind::Iops, &ws, &plain()),
            "500, 2000, 0, 0, 0\n500, 20, 1, 0, 0\n"
        );
    }

    #[test]
    fn latencies_are_rounded_means_and_the_partial_window_keeps_its_end() {
        let mut w = window(1000, 1000, 1, 3, 0);
        w.delta.lat_sum_ns[1] = 10; // 3.33 -> 3
        w.delta.tlat_sum_ns[1] = 11; // 3.67 -> 4
        let last = window(1234, 234, 1, 2, 5000);
        let ws = [w, last];
        assert_eq!(
            lines(LogKind::Clat, &ws, &plain()),
            "1000, 3, 1, 0, 0\n1234, 5000, 1, 0, 0\n"
        );
        assert_eq!(
            lines(LogKind::Lat, &ws, &plain()),
            "1000, 4, 1, 0, 0\n1234, 5100, 1, 0, 0\n"
        );
        assert_eq!(lines(LogKind::Slat, &ws, &plain()), "", "no slat measured");
        // A partial window's rate is over its own length.
        assert_eq!(
            lines(LogKind::Iops, &[last], &plain()),
            "1234, 8, 1, 0, 0\n"
        );
    }

    #[test]
    fn the_files_a_job_asks_for() {
        let spec = LogSpec {
            lat: Some("l".into()),
            ..LogSpec::default()
        };
        let job = LogJob {
            logs: &spec,
            disable_lat: false,
            disable_slat: true,
            disable_clat: false,
            disable_bw: false,
        };
        let logs = LogWindows::default();
        let names: Vec<String> = wanted(job, 2, &logs).into_iter().map(|w| w.0).collect();
        assert_eq!(names, ["l_lat.2.log", "l_clat.2.log"]);
    }
}
