//! How long a job runs, how fast it may go, and when it syncs.

use std::time::Duration;

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::spec::RateProcess;
use crate::units::{
    SECOND_US, parse_bool, parse_size, parse_time_us, parse_u32, parse_u64, split_dirs, split_range,
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
            b.spec.numruns = crate::rounds::parse_count(v)?;
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
    .note("Bytes only; fio's N% form is not supported."),
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
    ),
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
