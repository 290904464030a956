//! `ioengine=` checked against the engine catalogue ([`crate::catalogue`]), and the
//! options that belong to one engine (the catalogue says which engine claims which).
//! Engine options go into `JobSpec::engine_options` normalised: flags and booleans as
//! `1`/`0`, numbers in decimal, text as given; the last one given wins.

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::build::JobBuilder;
use crate::catalogue;
use crate::units::{parse_bool, parse_u32};

/// `ioengine=` value → storbench's canonical engine name.
pub(super) fn parse_engine(v: &str) -> Result<&'static str, String> {
    if let Some(e) = catalogue::find(v) {
        return Ok(e.name);
    }
    if super::UNSUPPORTED_ENGINES.contains(&v) || v.starts_with("external:") {
        return Err(format!(
            "fio's {v} engine is not supported by storbench (see docs/fio-compat.md)"
        ));
    }
    let names = catalogue::ENGINES.iter().map(|e| e.name);
    match super::closest(v, names) {
        Some(s) => Err(format!("unknown engine '{v}'; did you mean '{s}'?")),
        None => Err(format!("unknown engine '{v}'")),
    }
}

/// Checks that every engine option given belongs to the job's final engine.
pub(crate) fn check_engine_options(job: &crate::spec::JobSpec) -> Result<(), String> {
    for (name, _) in &job.engine_options {
        let Some(def) = super::find(name) else {
            continue;
        };
        let engines = catalogue::engines_with_option(def.name);
        if !engines.contains(&job.ioengine.as_str()) {
            return Err(format!(
                "{name} is an option of the {} engine{}, not of ioengine={}",
                engines.join(" and "),
                if engines.len() > 1 { "s" } else { "" },
                job.ioengine
            ));
        }
    }
    Ok(())
}

fn push(b: &mut JobBuilder, name: &str, value: String) {
    b.spec.engine_options.push((name.to_string(), value));
}

fn set_flag(b: &mut JobBuilder, name: &str, v: Option<&str>) -> Result<(), String> {
    let on = flag(v)?;
    push(b, name, u8::from(on).to_string());
    Ok(())
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "hipri",
        K::Flag,
        C::Engine,
        "",
        "Polled completions (io_uring: IORING_SETUP_IOPOLL; pvsync2: RWF_HIPRI)",
        |b, v| set_flag(b, "hipri", v),
    ),
    OptDef::new(
        "sqthread_poll",
        K::Flag,
        C::Engine,
        "",
        "A kernel thread polls the submission queue (IORING_SETUP_SQPOLL)",
        |b, v| set_flag(b, "sqthread_poll", v),
    ),
    OptDef::new(
        "sqthread_poll_cpu",
        K::Int,
        C::Engine,
        "",
        "CPU the submission polling thread runs on",
        |b, v| {
            let cpu = parse_u32(val(v)?, 1024)?;
            push(b, "sqthread_poll_cpu", cpu.to_string());
            Ok(())
        },
    ),
    OptDef::new(
        "registerfiles",
        K::Flag,
        C::Engine,
        "",
        "Register the job's files with the ring once",
        |b, v| set_flag(b, "registerfiles", v),
    ),
    OptDef::new(
        "fixedbufs",
        K::Flag,
        C::Engine,
        "",
        "Register the IO buffers with the ring once (fixed buffers)",
        |b, v| set_flag(b, "fixedbufs", v),
    ),
    OptDef::new(
        "nowait",
        K::Bool,
        C::Engine,
        "0",
        "Ask for non-blocking IO (RWF_NOWAIT); IOs that would block fail with EAGAIN",
        |b, v| {
            let on = parse_bool(val(v)?)?;
            push(b, "nowait", u8::from(on).to_string());
            Ok(())
        },
    ),
    OptDef::new(
        "uncached",
        K::Bool,
        C::Engine,
        "0",
        "Buffered IO that does not stay in the page cache (RWF_UNCACHED)",
        |b, v| {
            let on = parse_bool(val(v)?)?;
            push(b, "uncached", u8::from(on).to_string());
            Ok(())
        },
    )
    .note("io_uring's uncached is not supported."),
    OptDef::new(
        "nfs_url",
        K::Str,
        C::Engine,
        "",
        "The NFS export as nfs://host/export[/path][?options]",
        |b, v| {
            push(b, "nfs_url", val(v)?.to_string());
            Ok(())
        },
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_parse_with_suggestions() {
        assert_eq!(parse_engine("io_uring"), Ok("io_uring"));
        assert_eq!(parse_engine("iscsi"), Ok("libiscsi"));
        assert!(
            parse_engine("sg")
                .unwrap_err()
                .contains("not supported by storbench")
        );
        assert!(
            parse_engine("external:/x.so")
                .unwrap_err()
                .contains("not supported")
        );
        assert_eq!(
            parse_engine("io_urin").unwrap_err(),
            "unknown engine 'io_urin'; did you mean 'io_uring'?"
        );
    }

    #[test]
    fn engine_options_must_match_the_engine() {
        let mut j = crate::spec::JobSpec::new("t");
        j.engine_options.push(("hipri".into(), "1".into()));
        assert_eq!(
            check_engine_options(&j).unwrap_err(),
            "hipri is an option of the io_uring and pvsync2 engines, not of ioengine=psync"
        );
        j.ioengine = "pvsync2".into();
        assert!(check_engine_options(&j).is_ok());
    }
}
