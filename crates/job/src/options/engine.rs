//! `ioengine=` checked against the engine catalogue ([`crate::catalogue`]), and the
//! options that belong to one engine (the catalogue says which engine claims which).
//! Engine options are parsed here, once, into the typed `JobSpec::engine_options`
//! ([`crate::EngineOptions`]); the last one given wins.

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::EngineOptions;
use crate::build::JobBuilder;
use crate::catalogue;
use crate::units::{parse_bool, parse_u32};

/// `ioengine=` value → storbench's canonical engine name.
pub(super) fn parse_engine(v: &str) -> Result<&'static str, String> {
    if let Some(e) = catalogue::find(v) {
        return Ok(e.name);
    }
    if super::UNSUPPORTED_ENGINES.contains(v) || v.starts_with("external:") {
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

/// Checks that every engine option given belongs to the job's final engine. When the
/// job's own section names its engine, the options a `[global]` gave are left unused
/// instead, as fio drops the options of an engine a job replaces.
pub(crate) fn check_engine_options(job: &crate::spec::JobSpec) -> Result<(), String> {
    let own = |name: &str| job.options.iter().any(|(k, _)| k == name);
    let replaced = own("ioengine");
    for name in job
        .engine_options
        .given()
        .iter()
        .filter(|n| !replaced || own(n))
    {
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

/// The job's engine options, noting that `name` was given.
fn given<'b>(b: &'b mut JobBuilder, name: &'static str) -> &'b mut EngineOptions {
    b.spec.engine_options.mark(name);
    &mut b.spec.engine_options
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "hipri",
        K::Flag,
        C::Engine,
        "",
        "Polled completions (io_uring: IORING_SETUP_IOPOLL; pvsync2: RWF_HIPRI)",
        |b, v| {
            given(b, "hipri").hipri = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "sqthread_poll",
        K::Flag,
        C::Engine,
        "",
        "A kernel thread polls the submission queue (IORING_SETUP_SQPOLL)",
        |b, v| {
            given(b, "sqthread_poll").sqthread_poll = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "sqthread_poll_cpu",
        K::Int,
        C::Engine,
        "",
        "CPU the submission polling thread runs on",
        |b, v| {
            given(b, "sqthread_poll_cpu").sqthread_poll_cpu = Some(parse_u32(val(v)?, 1024)?);
            Ok(())
        },
    ),
    OptDef::new(
        "registerfiles",
        K::Flag,
        C::Engine,
        "",
        "Register the job's files with the ring once",
        |b, v| {
            given(b, "registerfiles").registerfiles = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "fixedbufs",
        K::Flag,
        C::Engine,
        "",
        "Register the IO buffers with the ring once (fixed buffers)",
        |b, v| {
            given(b, "fixedbufs").fixedbufs = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "nowait",
        K::Bool,
        C::Engine,
        "0",
        "Ask for non-blocking IO (RWF_NOWAIT); IOs that would block fail with EAGAIN",
        |b, v| {
            given(b, "nowait").nowait = parse_bool(val(v)?)?;
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
            given(b, "uncached").uncached = parse_bool(val(v)?)?;
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
            let text = val(v)?;
            match crate::target::Target::parse(text)? {
                crate::target::Target::Nfs(base) => given(b, "nfs_url").set_nfs_url(base),
                _ => return Err(format!("{text} is not an nfs:// URL")),
            }
            Ok(())
        },
    ),
    OptDef::new(
        "uri",
        K::Str,
        C::Engine,
        "",
        "The NBD export: nbd://host[:port][/export] or nbd+unix:///[export]?socket=PATH",
        |b, v| {
            given(b, "uri").uri = Some(val(v)?.to_string());
            Ok(())
        },
    )
    .note("The export is the job's one file; its size is the server's."),
];

/// Makes a job that names a network URL use the engine that reaches it, before anything
/// considers the job's engine (the nbd export, the queue-depth warning): an engine left at
/// its default is switched (a copied command line just works); a local engine chosen
/// explicitly is refused. The nfs engine's base URL (`nfs_url=`) is the job's directory
/// when it names none: plain file names go below it.
pub(crate) fn route_target(job: &mut crate::spec::JobSpec) -> Result<(), String> {
    if job.directories.is_empty()
        && let Some(url) = &job.engine_options.nfs_url
    {
        job.directories = vec![crate::target::Target::Nfs(url.clone())];
    }
    let first = job.filenames.first().or(job.directories.first());
    let Some(target) = first.cloned() else {
        return Ok(());
    };
    let Some(wanted) = target.engine() else {
        return Ok(());
    };
    // fio's metadata engines run over whatever engine serves the target.
    let same = catalogue::find(&job.ioengine).is_some_and(|e| {
        e.name == wanted.name
            || (e.serves == catalogue::Serves::Metadata && e.reaches(target.protocol()))
    });
    if same {
        return Ok(());
    }
    if job.options.iter().any(|(k, _)| k == "ioengine") {
        return Err(format!(
            "ioengine={} cannot reach {target}; use --ioengine={}",
            job.ioengine, wanted.name
        ));
    }
    job.ioengine = wanted.name.to_string();
    Ok(())
}

/// fio's nbd engine takes its export from `uri=` and names the job's one file after
/// `filename` (or `nbd`); storbench makes the URI the job's file, so lay-out, the device
/// checks and the engine all see the export. An `nbd://` file name serves as well.
pub(crate) fn nbd_target(job: &mut crate::spec::JobSpec) -> Result<(), String> {
    if job.ioengine != "nbd" {
        return Ok(());
    }
    let uri = job.engine_options.uri.clone();
    let is_uri = |f: &str| f.starts_with("nbd://") || f.starts_with("nbd+unix://");
    match uri {
        Some(u) if is_uri(&u) => {
            job.filenames = vec![crate::target::Target::parse(&u)?];
            job.nrfiles = 1;
            Ok(())
        }
        Some(u) if u.starts_with("nbds") => Err(format!(
            "uri={u}: TLS (nbds://) is not supported by storbench's NBD client; use nbd:// to \
             a server that allows plain connections"
        )),
        Some(u) => Err(format!(
            "uri={u}: expected nbd://host[:port][/export] or nbd+unix:///export?socket=PATH"
        )),
        None if job.filenames.len() == 1
            && matches!(job.filenames[0], crate::target::Target::Nbd(_)) =>
        {
            Ok(())
        }
        None => Err("the nbd engine needs uri=nbd://host[:port][/export]".into()),
    }
}

/// What fio's cpuio and exec engines need, checked once the job's engine is known: fio
/// refuses a cpuio job without `cpuload` and an exec job without `program` when the job
/// starts; storbench refuses them, and values fio would bend, before the run. A cpuio job
/// has no size to end it: as in fio, only its runtime, a signal or exit_on_io_done does,
/// which a warning says (an exec job without a runtime ends when its program does).
pub(crate) fn check_pseudo(
    job: &crate::spec::JobSpec,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let o = &job.engine_options;
    match job.ioengine.as_str() {
        "cpuio" if job.runtime.is_none() && !o.exit_on_io_done => {
            warnings.push(format!(
                "job '{}': a cpuio job has no size to end it: it runs until runtime= or until \
                 stopped (Ctrl-C), as in fio",
                job.name
            ));
            check_cpu(o)
        }
        "cpuio" => check_cpu(o),
        "e4defrag" => super::e4defrag::check(job),
        "exec" => match o.program.as_deref().map(str::trim) {
            None | Some("") => Err("the exec engine needs program= (the program to run)".into()),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

fn check_cpu(o: &EngineOptions) -> Result<(), String> {
    match o.cpuload {
        None | Some(0) => {
            Err("the cpuio engine needs cpuload=1 to 100 (percent of one CPU)".into())
        }
        Some(p) if p > 100 => Err(format!(
            "cpuload={p}: at most 100 (percent of one CPU; use numjobs for more CPUs)"
        )),
        _ if o.cpuchunks == Some(0) => {
            Err("cpuchunks=0: the busy periods need at least 1 µs".into())
        }
        _ => Ok(()),
    }
}

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
        j.engine_options.set("hipri", "1").unwrap();
        assert!(check_engine_options(&j).is_err());
        // Given by a [global] before the job's own section replaced its engine: left
        // unused, as fio drops it.
        j.options.push(("ioengine".into(), "psync".into()));
        assert!(check_engine_options(&j).is_ok());
        j.options.push(("hipri".into(), "1".into()));
        assert_eq!(
            check_engine_options(&j).unwrap_err(),
            "hipri is an option of the io_uring and pvsync2 engines, not of ioengine=psync"
        );
        j.ioengine = "pvsync2".into();
        assert!(check_engine_options(&j).is_ok());
    }
}
