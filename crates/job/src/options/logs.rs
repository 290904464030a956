//! fio's log files: the bandwidth, IOPS and latency logs (averaged, or a line per IO), the
//! latency histogram log, and the log options storbench refuses with the reason
//! (compression, Unix time stamps).

use super::{Category as C, Kind as K, OptDef, val};
use crate::spec::JobSpec;
use crate::units::{parse_bool, parse_u64};

const PREFIX_NOTE: &str = "In fio 3.33's format: with log_avg_msec=0 (the default) a `time_ms, value, ddir, bs, prio` line per IO, else averaged `time_ms, value, ddir, 0, 0` lines; times since the job started measuring (after ramp_time). Per-IO lines are written while the job runs by a writer thread, from records the IO thread copies into buffers allocated before the start (memory bounded: see the differences below). Written to `<prefix>_<type>.<N>.log` relative to the current directory, N numbering every job clone from 1 as fio does; an empty or bare value uses the job's name. As in fio, bwavgtime/iopsavgtime become log_avg_msec (or the smaller of the two when given), and rates have no line for the last, partial window.";

/// fio's `make_log_name`: an empty prefix means the job's name (resolved in `fix_logs`).
fn prefix(v: Option<&str>) -> Option<String> {
    Some(v.unwrap_or("").trim().to_string())
}

/// An option that storbench accepts only at its default (`off`).
fn refuse_on(v: Option<&str>, what: &str) -> Result<(), String> {
    if parse_bool(val(v)?)? {
        return Err(what.to_string());
    }
    Ok(())
}

/// A numeric option that storbench accepts only as 0.
fn refuse_nonzero(v: Option<&str>, what: &str) -> Result<(), String> {
    if parse_u64(val(v)?, 1024)? != 0 {
        return Err(what.to_string());
    }
    Ok(())
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "write_bw_log",
        K::Str,
        C::Reporting,
        "",
        "Write the bandwidth log (per IO, or KiB/s per log_avg_msec window)",
        |b, v| {
            b.spec.logs.bw = prefix(v);
            Ok(())
        },
    )
    .bare()
    .note(PREFIX_NOTE),
    OptDef::new(
        "write_iops_log",
        K::Str,
        C::Reporting,
        "",
        "Write the IOPS log (per IO, or IOPS per log_avg_msec window)",
        |b, v| {
            b.spec.logs.iops = prefix(v);
            Ok(())
        },
    )
    .bare()
    .note(PREFIX_NOTE),
    OptDef::new(
        "write_lat_log",
        K::Str,
        C::Reporting,
        "",
        "Write the latency logs: slat, clat and lat in ns, per IO or mean per log_avg_msec window",
        |b, v| {
            b.spec.logs.lat = prefix(v);
            Ok(())
        },
    )
    .bare()
    .note("Writes `<prefix>_lat`, `_slat` and `_clat` files as fio does, mean ns per window and direction (the slat log stays empty for synchronous engines, and a log switched off by disable_*lat is not written). Per IO, the slat lines come in completion order (fio's in submission order), each at its submission time."),
    OptDef::new(
        "log_avg_msec",
        K::Int,
        C::Reporting,
        "0",
        "Average the log entries over this many ms",
        |b, v| {
            b.spec.logs.avg_msec = parse_u64(val(v)?, 1024)?;
            Ok(())
        },
    )
    .note("0: a line per IO (bandwidth: bytes * 1000000 / clat ns, IOPS: 1)."),
    OptDef::new(
        "log_max_value",
        K::Bool,
        C::Reporting,
        "0",
        "Log the window's maximum instead of its mean",
        |b, v| {
            b.spec.logs.max_value = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("For the bandwidth and IOPS logs only (each window has one sample, as in fio); refused with write_lat_log."),
    OptDef::new(
        "per_job_logs",
        K::Bool,
        C::Reporting,
        "1",
        "One log file per job clone; 0: all clones append to one file per log type",
        |b, v| {
            b.spec.logs.per_job = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("0 writes `<prefix>_<type>.log`, appended to (never truncated), as fio does."),
    OptDef::new(
        "log_offset",
        K::Bool,
        C::Reporting,
        "0",
        "Add each IO's offset to the log lines",
        |b, v| {
            b.spec.logs.offset = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("Adds fio's offset column: the IO's offset per IO, 0 in averaged lines as in fio (`time, value, ddir, 0, 0, 0`)."),
    OptDef::new(
        "log_prio",
        K::Bool,
        C::Reporting,
        "0",
        "Log each IO's priority",
        |b, v| {
            b.spec.logs.prio = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("The last column becomes each IO's priority in hex (`class << 13 | level`: its own from `cmdprio*`, else the job's `prioclass`/`prio`, else `0x0000`); averaged entries carry `0x0000`, as fio's."),
    OptDef::new(
        "log_hist_msec",
        K::Int,
        C::Reporting,
        "0",
        "Window of the latency histogram log, ms",
        |b, v| {
            b.spec.logs.hist_msec = parse_u64(val(v)?, 1024)?;
            Ok(())
        },
    )
    .note("0: the histogram log stays empty, as fio's."),
    OptDef::new(
        "log_hist_coarseness",
        K::Int,
        C::Reporting,
        "0",
        "Sum 2^N adjacent bins in each histogram log line (0 to 6)",
        |b, v| {
            let n = parse_u64(val(v)?, 1024)?;
            if n > 6 {
                return Err(format!("log_hist_coarseness={n} is out of range: give 0 to 6 (1856 to 29 bins a line)"));
            }
            b.spec.logs.hist_coarseness = n as u32;
            Ok(())
        },
    )
    .note("1856 >> N bins a line; fio leaves values above 6 unchecked, storbench refuses them."),
    OptDef::new(
        "write_hist_log",
        K::Str,
        C::Reporting,
        "",
        "Write the completion latency histogram log",
        |b, v| {
            b.spec.logs.hist = prefix(v);
            Ok(())
        },
    )
    .bare()
    .note("`<prefix>_clat_hist.<N>.log` in fio 3.33's format, readable by fio's fiologparser_hist.py: per direction, every log_hist_msec, `time_ms, ddir, bs, ` and the counts of fio's 1856 clat bins (FIO_IO_U_PLAT_*) that completed since the direction's previous line; no line for the last, partial window. Written while the job runs by the per-IO log writer thread."),
    OptDef::new(
        "log_compression",
        K::Size,
        C::Reporting,
        "0",
        "Compress the logs in chunks of this size",
        |_, v| {
            refuse_nonzero(
                v,
                "log_compression is not supported: storbench writes plain-text logs; remove it",
            )
        },
    )
    .note("Only 0 is accepted."),
    OptDef::new(
        "log_store_compressed",
        K::Bool,
        C::Reporting,
        "0",
        "Store the logs compressed",
        |_, v| {
            refuse_on(
                v,
                "log_store_compressed=1 is not supported: storbench writes plain-text logs; remove it",
            )
        },
    )
    .note("Only 0 is accepted."),
    OptDef::new(
        "log_unix_epoch",
        K::Bool,
        C::Reporting,
        "0",
        "Time-stamp the log lines in Unix epoch ms",
        |_, v| {
            refuse_on(
                v,
                "log_unix_epoch=1 is not supported: log times are ms since the job started measuring; remove log_unix_epoch",
            )
        },
    )
    .note("Only 0 is accepted."),
];

/// fio's fix-ups of the logs (`add_job`): empty prefixes become the job's name, and the
/// bandwidth and IOPS sample windows become `log_avg_msec` (or the smaller of the two when
/// `bwavgtime`/`iopsavgtime` was given). Refuses what storbench does not write.
pub(crate) fn fix_logs(s: &mut JobSpec, avgtime_set: [bool; 2]) -> Result<(), String> {
    let name = s.name.clone();
    let l = &mut s.logs;
    for p in [&mut l.bw, &mut l.iops, &mut l.lat, &mut l.hist]
        .into_iter()
        .flatten()
    {
        if p.is_empty() {
            p.clone_from(&name);
        }
    }
    if !l.averaged() {
        return Ok(());
    }
    if l.max_value && l.lat.is_some() {
        return Err("log_max_value=1 is not supported with write_lat_log (the latency logs are means): remove log_max_value or write_lat_log".into());
    }
    let window = |set: bool, avg: u64| if set { avg.min(l.avg_msec) } else { l.avg_msec };
    if l.bw.is_some() {
        s.bwavgtime_ms = window(avgtime_set[0], s.bwavgtime_ms);
    }
    if l.iops.is_some() {
        s.iopsavgtime_ms = window(avgtime_set[1], s.iopsavgtime_ms);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_default_to_the_job_name_and_windows_follow_log_avg_msec() {
        let mut s = JobSpec::new("seq");
        s.logs.bw = Some(String::new());
        s.logs.iops = Some("io".into());
        s.logs.avg_msec = 1000;
        fix_logs(&mut s, [false, true]).unwrap();
        assert_eq!(s.logs.bw.as_deref(), Some("seq"));
        assert_eq!(s.logs.iops.as_deref(), Some("io"));
        assert_eq!((s.bwavgtime_ms, s.iopsavgtime_ms), (1000, 500));
    }

    #[test]
    fn per_io_logs_leave_the_sample_windows_alone() {
        let mut s = JobSpec::new("seq");
        s.logs.bw = Some(String::new());
        s.logs.hist = Some(String::new());
        fix_logs(&mut s, [false; 2]).unwrap();
        assert_eq!(s.logs.hist.as_deref(), Some("seq"));
        assert!(s.logs.streamed() && !s.logs.averaged());
        assert_eq!((s.bwavgtime_ms, s.iopsavgtime_ms), (500, 500));
    }

    #[test]
    fn refusals() {
        let mut s = JobSpec::new("j");
        s.logs.lat = Some("l".into());
        s.logs.avg_msec = 100;
        s.logs.max_value = true;
        assert!(
            fix_logs(&mut s, [false; 2])
                .unwrap_err()
                .contains("log_max_value")
        );
        let mut s = JobSpec::new("j");
        fix_logs(&mut s, [false; 2]).unwrap();
        assert_eq!(s.bwavgtime_ms, 500, "no log: windows unchanged");
    }
}
