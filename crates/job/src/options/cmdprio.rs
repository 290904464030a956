//! The io_uring and libaio engines' per-IO priorities (`crate::cmdprio`): `cmdprio_percentage`
//! or `cmdprio_bssplit` choose which IOs carry one, `cmdprio_class` and `cmdprio` which.
//! A single value applies to reads and writes, `read,write` sets each.

use super::{Category as C, Kind as K, OptDef, val};
use crate::build::JobBuilder;
use crate::cmdprio::{CmdPrio, parse_bssplit};
use crate::units::{parse_percent, parse_small};

/// The job's priorities, noting that `name` (an engine option) was given.
fn given<'b>(b: &'b mut JobBuilder, name: &'static str) -> &'b mut CmdPrio {
    b.spec.engine_options.mark(name);
    &mut b.spec.engine_options.cmdprio
}

/// `v` or `read,write` (a trim value, allowed by fio's parser, is ignored).
fn per_dir<T: Copy>(
    v: &str,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<[Option<T>; 2], String> {
    let dirs = crate::units::split_dirs(v)?;
    Ok([
        dirs[0].map(&parse).transpose()?,
        dirs[1].map(&parse).transpose()?,
    ])
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "cmdprio_percentage",
        K::PercentDirs,
        C::Engine,
        "0",
        "Percentage of IOs issued with cmdprio_class/cmdprio in the IO itself, read,write",
        |b, v| {
            let p = per_dir(val(v)?, parse_percent)?;
            let c = given(b, "cmdprio_percentage");
            for (have, new) in c.percentage.iter_mut().zip(p) {
                *have = new.unwrap_or(*have);
            }
            Ok(())
        },
    )
    .note(
        "Per-IO priority through io_uring's `ioprio` and libaio's `aio_reqprio`; the \
         real-time class (the default) needs CAP_SYS_ADMIN or CAP_SYS_NICE, without which \
         the kernel refuses each such IO and the job ends with that reason. fio's JSON \
         reports each priority's completion latency under `prios`.",
    ),
    OptDef::new(
        "cmdprio_class",
        K::IntDirs,
        C::Engine,
        "",
        "IO priority class of those IOs (1 real-time, 2 best-effort, 3 idle), read,write",
        |b, v| {
            let p = per_dir(val(v)?, |s| match parse_small(s, 3)? {
                0 => Err("class 0 is no class (1 real-time, 2 best-effort, 3 idle)".into()),
                c => Ok(c),
            })?;
            let c = given(b, "cmdprio_class");
            for (have, new) in c.class.iter_mut().zip(p) {
                *have = new.or(*have);
            }
            Ok(())
        },
    )
    .note("Not given: 1, the real-time class, as in fio."),
    OptDef::new(
        "cmdprio",
        K::IntDirs,
        C::Engine,
        "0",
        "IO priority level of those IOs (0 highest to 7), read,write",
        |b, v| {
            let p = per_dir(val(v)?, |s| parse_small(s, 7))?;
            let c = given(b, "cmdprio");
            for (have, new) in c.level.iter_mut().zip(p) {
                *have = new.or(*have);
            }
            Ok(())
        },
    ),
    OptDef::new(
        "cmdprio_bssplit",
        K::Str,
        C::Engine,
        "",
        "Per block size, the percentage of IOs with a priority: bs/perc[/class/level]:…, read,write",
        |b, v| {
            let kb_base = b.spec.kb_base;
            let split = parse_bssplit(val(v)?, kb_base)?;
            given(b, "cmdprio_bssplit").bssplit = Some(split);
            Ok(())
        },
    ),
];
