//! How long a job runs, how fast it may go, and when it syncs.

use std::time::Duration;

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::spec::{RateProcess, SteadyMetric, SteadyState};
use crate::units::{
    SECOND_US, parse_bool, parse_float, parse_size, parse_time_us, parse_u32, parse_u64,
    split_dirs, split_range,
};

fn seconds(v: Option<&str>) -> Result<Duration, String> {
    parse_time_us(val(v)?, SECOND_US).map(Duration::from_micros)
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "runtime",
        K::Time,
        C::Timing,
        "0",
        "Stop after this long; without time_based only a cap (0: no limit)",
        |b, v| {
            let d = seconds(v)?;
            b.spec.runtime = (!d.is_zero()).then_some(d);
            Ok(())
        },
    )
    .aliases(&["timeout"]),
    OptDef::new(
        "time_based",
        K::Flag,
        C::Timing,
        "",
        "Run for the whole runtime, repeating the workload as needed",
        |b, v| {
            b.spec.time_based = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "ramp_time",
        K::Time,
        C::Timing,
        "",
        "Run this long before measuring; it adds to the wall time",
        |b, v| {
            b.spec.ramp_time = seconds(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "startdelay",
        K::TimeRange,
        C::Timing,
        "0",
        "Wait this long before starting; a lo-hi range picks a delay per clone",
        |b, v| {
            let v = val(v)?;
            let (lo, hi) = match split_range(v) {
                Some((lo, hi)) => (parse_time_us(lo, SECOND_US)?, parse_time_us(hi, SECOND_US)?),
                None => (parse_time_us(v, SECOND_US)?, parse_time_us(v, SECOND_US)?),
            };
            b.spec.startdelay = (
                Duration::from_micros(lo.min(hi)),
                Duration::from_micros(lo.max(hi)),
            );
            Ok(())
        },
    ),
    OptDef::new(
        "loops",
        K::Int,
        C::Timing,
        "1",
        "Repeat the workload this many times",
        |b, v| {
            b.spec.loops = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
    OptDef::new(
        "numruns",
        K::Int,
        C::Timing,
        "1",
        "Run the whole job set this many times (1 to 100) and report each figure's 95% interval",
        |b, v| {
            let v = val(v)?;
            b.spec.numruns = storbench_model::repeats::parse_count(v)?;
            Ok(())
        },
    )
    .note("fio 3.33 knows `numruns` only as the tiobench profile's option (`--profile=tiobench`, where it becomes `loops` of the profile's jobs) and ignores it in other jobs. storbench runs the whole job set this many times as `--repeat N` does: fio's output shows the last round, the notes block and the JSON's `storbench` key each figure's mean and 95% interval over the rounds; the run is saved once with its rounds. The largest value in the job set counts; `--repeat` overrides it."),
    OptDef::new(
        "number_ios",
        K::Int,
        C::Timing,
        "0",
        "Stop after this many IOs (0: no limit)",
        |b, v| {
            let n = parse_u64(val(v)?, b.spec.kb_base)?;
            b.spec.number_ios = (n > 0).then_some(n);
            Ok(())
        },
    ),
    OptDef::new(
        "io_size",
        K::Size,
        C::Timing,
        "0",
        "Bytes of IO per loop, within the size= region: less ends the job early, more wraps over the region (0: as size=)",
        |b, v| {
            let v = val(v)?;
            if v.trim_end().ends_with('%') {
                return Err("a percentage is not supported by storbench here; give bytes".into());
            }
            let n = parse_size(v, b.spec.kb_base)?;
            b.spec.io_size = (n > 0).then_some(n);
            Ok(())
        },
    )
    .aliases(&["io_limit"])
    .note("Bytes only; fio's N% form is not supported. With loops, as fio: each of the `loops` passes goes to the end of the files or until the job has done io_size times loops bytes, and more passes follow while the bytes moved, a verifying job's reads included, are short of io_size by a block or more (size=1m io_size=4m loops=2 writes 4 MiB)."),
    OptDef::new(
        "steadystate",
        K::Choice(STEADY),
        C::Timing,
        "iops_slope:0.01%",
        "Criterion and limit of steady state (with ss_dur): the job ends once its window meets it",
        |b, v| {
            let ss = parse_steadystate(val(v)?, b.spec.kb_base)?;
            b.spec.steadystate = SteadyState {
                dur_s: b.spec.steadystate.dur_s,
                ramp: b.spec.steadystate.ramp,
                ..ss
            };
            Ok(())
        },
    )
    .aliases(&["ss"])
    .note("As fio 3.33: one sample a second (IOPS and bytes/s over that second, from the end of ramp_time, plus ss_ramp), the job (or its group under group_reporting) ends once the last ss_dur samples meet the limit; JSON `steadystate` and the normal output's line as fio's. storbench does not refuse different ss options within one reporting group (fio does); the window is the first job's."),
    OptDef::new(
        "steadystate_duration",
        K::Time,
        C::Timing,
        "0",
        "Window of steady state, in whole seconds of one sample each (0: no steady state)",
        |b, v| {
            let d = seconds(v)?;
            b.spec.steadystate.dur_s = u32::try_from(d.as_secs())
                .map_err(|_| "steadystate_duration is too long".to_string())?;
            Ok(())
        },
    )
    .aliases(&["ss_dur"]),
    OptDef::new(
        "steadystate_ramp_time",
        K::Time,
        C::Timing,
        "0",
        "Time after the job's ramp before steady-state samples are taken",
        |b, v| {
            b.spec.steadystate.ramp = seconds(v)?;
            Ok(())
        },
    )
    .aliases(&["ss_ramp"]),
];

const STEADY: &[(&str, &str)] = &[
    (
        "iops:N[%]",
        "Largest deviation of IOPS from the window's mean",
    ),
    ("iops_slope:N[%]", "Slope of the IOPS through the window"),
    (
        "bw:N[%]",
        "Largest deviation of bandwidth (bytes/s) from the window's mean",
    ),
    ("bw_slope:N[%]", "Slope of the bandwidth through the window"),
];

/// fio's `str_steadystate_cb`: `criterion:limit`, the limit a percentage of the mean
/// (`0.3%`), IOPS (a decimal) or bytes/s with fio's units.
fn parse_steadystate(v: &str, kb_base: u32) -> Result<SteadyState, String> {
    let (name, limit) = v.split_once(':').ok_or_else(|| {
        format!("'{v}' has no threshold: give criterion:limit, e.g. iops_slope:0.1%")
    })?;
    let (metric, slope) = match name.trim() {
        "iops" => (SteadyMetric::Iops, false),
        "iops_slope" => (SteadyMetric::Iops, true),
        "bw" => (SteadyMetric::Bw, false),
        "bw_slope" => (SteadyMetric::Bw, true),
        other => {
            return Err(format!(
                "'{other}' is not one of iops, iops_slope, bw, bw_slope"
            ));
        }
    };
    let limit = limit.trim();
    let (limit, percent) = match limit.strip_suffix('%') {
        Some(p) => (parse_float(p.trim())?, true),
        None if metric == SteadyMetric::Iops => (parse_float(limit)?, false),
        None => (parse_size(limit, kb_base)? as f64, false),
    };
    if limit < 0.0 {
        return Err("the steady-state limit must not be negative".into());
    }
    Ok(SteadyState {
        metric,
        slope,
        limit,
        percent,
        ..SteadyState::default()
    })
}

/// fio's latency options take microseconds unless a unit is given.
fn micros(v: Option<&str>) -> Result<u64, String> {
    parse_time_us(val(v)?, 1)
}

pub(super) const LATENCY: &[OptDef] = &[
    OptDef::new(
        "latency_target",
        K::TimeUs,
        C::Rate,
        "",
        "Search the deepest queue (up to iodepth) whose IOs stay under this latency (µs unless suffixed)",
        |b, v| {
            b.spec.latency.target_us = micros(v)?;
            Ok(())
        },
    )
    .note("fio 3.33's search: from depth 1, doubled after each window that met the target, halved towards the last good depth after one that did not (or at once on an IO over it, with latency_percentile=100); when the depth stops changing, the statistics start over for one last window and the job ends (unless latency_run). An IO over the target at depth 1 with latency_percentile=100 ends the job with ETIMEDOUT, as fio's."),
    OptDef::new(
        "latency_window",
        K::TimeUs,
        C::Rate,
        "",
        "Time each queue depth is tried for (µs unless suffixed)",
        |b, v| {
            b.spec.latency.window_us = micros(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "latency_percentile",
        K::FloatList,
        C::Rate,
        "100",
        "Percent of the window's IOs that must be under latency_target",
        |b, v| {
            let p = parse_float(val(v)?)?;
            if !(0.0..=100.0).contains(&p) {
                return Err(format!("{p} is not a percentage (0 to 100)"));
            }
            b.spec.latency.percentile = p;
            Ok(())
        },
    ),
    OptDef::new(
        "latency_run",
        K::Bool,
        C::Rate,
        "0",
        "Keep adjusting the queue depth for the whole run instead of settling on one",
        |b, v| {
            b.spec.latency.run = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "max_latency",
        K::IntDirs,
        C::Rate,
        "",
        "End the job (ETIMEDOUT) when an IO takes longer than this (µs unless suffixed), or read,write[,trim]",
        |b, v| {
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    let us = parse_time_us(p, 1)?;
                    b.spec.max_latency_us[d] = (us > 0).then_some(us);
                }
            }
            Ok(())
        },
    ),
];

const BLOCKS_TYPE: &[(&str, &str)] = &[
    ("complete", "Count IOs completed (fio's default)"),
    ("issue", "Count IOs issued"),
];

/// fio's thinktime family (see `ThinkTime`): times are µs unless suffixed, as in fio.
pub(super) const THINK: &[OptDef] = &[
    OptDef::new(
        "thinktime",
        K::TimeUs,
        C::Rate,
        "0",
        "Pause this long (µs unless suffixed) after every thinktime_blocks IOs, waiting first for those in flight",
        |b, v| {
            b.spec.think.think_us = micros(v)?;
            Ok(())
        },
    )
    .note("As fio 3.33: checked after each IO; a due pause first waits for the IOs in flight, and never sleeps past the job's runtime. The pause counts in the job's runtime, as in fio. rate_ignore_thinktime is not supported."),
    OptDef::new(
        "thinktime_spin",
        K::TimeUs,
        C::Rate,
        "0",
        "Part of each thinktime pause spent busy on the CPU instead of sleeping (µs unless suffixed)",
        |b, v| {
            b.spec.think.spin_us = micros(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "thinktime_blocks",
        K::Int,
        C::Rate,
        "1",
        "IOs between thinktime pauses",
        |b, v| {
            let n = parse_u64(val(v)?, b.spec.kb_base)?;
            if n == 0 {
                return Err("0 IOs between pauses: give 1 or more".into());
            }
            b.spec.think.blocks = n;
            b.spec.think.blocks_given = true;
            Ok(())
        },
    ),
    OptDef::new(
        "thinktime_blocks_type",
        K::Choice(BLOCKS_TYPE),
        C::Rate,
        "complete",
        "Whether thinktime_blocks counts IOs completed or issued",
        |b, v| {
            b.spec.think.on_issue = match val(v)? {
                "complete" => false,
                "issue" => true,
                other => return Err(format!("'{other}' is not one of complete, issue")),
            };
            Ok(())
        },
    ),
    OptDef::new(
        "thinktime_iotime",
        K::TimeUs,
        C::Rate,
        "0",
        "Pause for thinktime after this much time of IO (µs unless suffixed), as well as after thinktime_blocks when given",
        |b, v| {
            b.spec.think.iotime_us = micros(v)?;
            Ok(())
        },
    ),
];

const RATE_PROCESS: &[(&str, &str)] = &[
    ("linear", "Evenly spaced IOs"),
    (
        "poisson",
        "Exponentially distributed gaps (a Poisson arrival process)",
    ),
];

pub(super) const RATE: &[OptDef] = &[
    OptDef::new(
        "rate",
        K::SizeDirs,
        C::Rate,
        "",
        "Bandwidth cap per job clone in bytes/s, or read,write[,trim]",
        |b, v| {
            let kb = b.spec.kb_base;
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    let n = parse_size(p, kb)?;
                    b.spec.rate[d] = (n > 0).then_some(n);
                }
            }
            Ok(())
        },
    ),
    OptDef::new(
        "rate_iops",
        K::IntDirs,
        C::Rate,
        "",
        "IOPS cap per job clone, or read,write[,trim]",
        |b, v| {
            let kb = b.spec.kb_base;
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    let n = parse_u64(p, kb)?;
                    b.spec.rate_iops[d] = (n > 0).then_some(n);
                }
            }
            Ok(())
        },
    ),
    OptDef::new(
        "rate_min",
        K::SizeDirs,
        C::Rate,
        "",
        "End the job (EIO) when its bandwidth falls below this many bytes/s, or read,write[,trim]",
        |b, v| {
            let kb = b.spec.kb_base;
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    let n = parse_size(p, kb)?;
                    b.spec.rate_min[d] = (n > 0).then_some(n);
                }
            }
            Ok(())
        },
    )
    .aliases(&["ratemin"])
    .note("As fio 3.33: checked once a second (fio's default rate_cycle) from two seconds after the job's start, on the bytes done in that second; fio's message and err=5 (EIO)."),
    OptDef::new(
        "rate_iops_min",
        K::IntDirs,
        C::Rate,
        "",
        "End the job (EIO) when its IOPS fall below this, or read,write[,trim]",
        |b, v| {
            let kb = b.spec.kb_base;
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    let n = parse_u64(p, kb)?;
                    b.spec.rate_iops_min[d] = (n > 0).then_some(n);
                }
            }
            Ok(())
        },
    )
    .note("As fio 3.33, checked only for a direction without rate or rate_min."),
    OptDef::new(
        "rate_process",
        K::Choice(RATE_PROCESS),
        C::Rate,
        "linear",
        "How rated IOs are spaced",
        |b, v| {
            b.spec.rate_process = match val(v)? {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                other => return Err(format!("'{other}' is not one of linear, poisson")),
            };
            Ok(())
        },
    ),
];

const SYNC_VALUES: &[(&str, &str)] = &[
    ("none", "Normal writes"),
    ("0", "Same as none"),
    ("sync", "O_SYNC writes"),
    ("1", "Same as sync"),
];

pub(super) const SYNC: &[OptDef] = &[
    OptDef::new(
        "fsync",
        K::Int,
        C::Sync,
        "0",
        "fsync after every N writes (0: never)",
        |b, v| {
            b.spec.fsync = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
    OptDef::new(
        "fdatasync",
        K::Int,
        C::Sync,
        "0",
        "fdatasync after every N writes (0: never)",
        |b, v| {
            b.spec.fdatasync = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    )
    .note("Counted as fio 3.33 counts them: not in the sync total (`total=…,0`, JSON `sync.total_ios` 0) but as short reads (`short=N,…`, JSON `read.short_ios`); their latency is the sync latency."),
    OptDef::new(
        "end_fsync",
        K::Bool,
        C::Sync,
        "0",
        "fsync when the job's writes are done, and at the end of each of its loops (counted in its run time, not as sync IOs)",
        |b, v| {
            b.spec.end_fsync = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "fsync_on_close",
        K::Bool,
        C::Sync,
        "0",
        "fsync each file when it is closed",
        |b, v| {
            b.spec.fsync_on_close = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "sync",
        K::Choice(SYNC_VALUES),
        C::Sync,
        "none",
        "Open files for synchronous writes (O_SYNC; FILE_SYNC over NFS, FUA over iSCSI)",
        |b, v| {
            b.spec.sync = match val(v)? {
                "none" | "0" => false,
                "sync" | "1" => true,
                "dsync" => {
                    return Err("O_DSYNC writes (sync=dsync) are not supported by storbench; sync=1 gives O_SYNC".into());
                }
                other => return Err(format!("'{other}' is not one of none, sync, 0, 1")),
            };
            Ok(())
        },
    )
    .note("dsync (O_DSYNC) is not supported."),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steadystate_forms() {
        let s = parse_steadystate("iops_slope:0.3%", 1024).unwrap();
        assert_eq!(
            (s.metric, s.slope, s.limit, s.percent),
            (SteadyMetric::Iops, true, 0.3, true)
        );
        let s = parse_steadystate("bw:10m", 1024).unwrap();
        assert_eq!(
            (s.metric, s.slope, s.limit, s.percent),
            (SteadyMetric::Bw, false, 10485760.0, false)
        );
        let s = parse_steadystate("iops:250.5", 1024).unwrap();
        assert_eq!((s.limit, s.percent), (250.5, false));
        assert_eq!(s.fio_name(), "iops:250.500000");
        assert!(
            parse_steadystate("iops", 1024)
                .unwrap_err()
                .contains("threshold")
        );
        assert!(parse_steadystate("lat:1%", 1024).is_err());
        assert!(parse_steadystate("bw:x", 1024).is_err());
    }
}
