//! The IO engines storbench has, and the options that belong to one engine. Engine options
//! go into `JobSpec::engine_options` normalised: flags and booleans as `1`/`0`, numbers in
//! decimal, text as given; the last one given wins.

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::build::JobBuilder;
use crate::units::{parse_bool, parse_u32};

/// One engine name fio users write.
pub struct EngineName {
    /// fio's name, stored in `JobSpec::ioengine`.
    pub name: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    /// Completes every IO inside the submit call, so `iodepth` has no effect.
    pub synchronous: bool,
    pub about: &'static str,
}

const fn engine(name: &'static str, synchronous: bool, about: &'static str) -> EngineName {
    EngineName {
        name,
        aliases: &[],
        synchronous,
        about,
    }
}

/// Every engine storbench has (the engines crate's `ALL` registers the same names).
pub const ENGINES: &[EngineName] = &[
    engine("sync", true, "read()/write() after lseek()"),
    engine("psync", true, "pread()/pwrite() (fio's default on Linux)"),
    engine(
        "pvsync2",
        true,
        "preadv2()/pwritev2(), with hipri and nowait",
    ),
    engine(
        "io_uring",
        false,
        "Linux io_uring, with fixed buffers, registered files, polling",
    ),
    engine(
        "libaio",
        false,
        "Linux native AIO (kernel syscalls, no libaio.so needed)",
    ),
    engine("posixaio", false, "POSIX aio_read()/aio_write()"),
    engine("mmap", true, "memcpy to and from a memory-mapped file"),
    engine(
        "null",
        false,
        "Completes every IO at once without doing anything (overhead baseline)",
    ),
    engine(
        "nfs",
        false,
        "User-space NFSv3 client: nfs://host/export/path, no mount needed",
    ),
    EngineName {
        name: "libiscsi",
        aliases: &["iscsi"],
        synchronous: false,
        about: "User-space iSCSI initiator: iscsi://host[:port]/iqn/lun, no login needed",
    },
    engine(
        "filecreate",
        true,
        "Each IO creates a file (metadata benchmark)",
    ),
    engine(
        "filestat",
        true,
        "Each IO stats a file (metadata benchmark)",
    ),
    engine(
        "filedelete",
        true,
        "Each IO deletes a file (metadata benchmark)",
    ),
];

/// The engine answering to `name`.
pub fn find_engine(name: &str) -> Option<&'static EngineName> {
    ENGINES
        .iter()
        .find(|e| e.name == name || e.aliases.contains(&name))
}

/// `ioengine=` value → storbench's canonical engine name.
pub(super) fn parse_engine(v: &str) -> Result<&'static str, String> {
    if let Some(e) = find_engine(v) {
        return Ok(e.name);
    }
    if super::UNSUPPORTED_ENGINES.contains(&v) || v.starts_with("external:") {
        return Err(format!(
            "fio's {v} engine is not supported by storbench (see docs/fio-compat.md)"
        ));
    }
    let names = ENGINES.iter().map(|e| e.name);
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
        if !def.engines.contains(&job.ioengine.as_str()) {
            return Err(format!(
                "{name} is an option of the {} engine{}, not of ioengine={}",
                def.engines.join(" and "),
                if def.engines.len() > 1 { "s" } else { "" },
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

const IO_URING: &[&str] = &["io_uring"];

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "hipri",
        K::Flag,
        C::Engine,
        "",
        "Polled completions (io_uring: IORING_SETUP_IOPOLL; pvsync2: RWF_HIPRI)",
        |b, v| set_flag(b, "hipri", v),
    )
    .engines(&["io_uring", "pvsync2"]),
    OptDef::new(
        "sqthread_poll",
        K::Flag,
        C::Engine,
        "",
        "A kernel thread polls the submission queue (IORING_SETUP_SQPOLL)",
        |b, v| set_flag(b, "sqthread_poll", v),
    )
    .engines(IO_URING),
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
    )
    .engines(IO_URING),
    OptDef::new(
        "registerfiles",
        K::Flag,
        C::Engine,
        "",
        "Register the job's files with the ring once",
        |b, v| set_flag(b, "registerfiles", v),
    )
    .engines(IO_URING),
    OptDef::new(
        "fixedbufs",
        K::Flag,
        C::Engine,
        "",
        "Register the IO buffers with the ring once (fixed buffers)",
        |b, v| set_flag(b, "fixedbufs", v),
    )
    .engines(IO_URING),
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
    )
    .engines(&["io_uring", "pvsync2", "libaio"]),
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
    .engines(&["pvsync2"])
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
    )
    .engines(&["nfs"]),
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
