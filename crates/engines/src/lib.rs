//! IO engines, one file each, all behind [`storbench_core::Engine`].
//!
//! Adding an engine is one new file and one line in [`ALL`].

pub mod dirfds;
pub mod dirtable;
pub mod listing;
pub mod local;
pub mod options;
pub mod umask;

pub mod filecreate;
pub mod filedelete;
pub mod filestat;
pub mod io_uring;
pub mod libaio;
pub mod meta;
pub mod mmap;
pub mod null;
pub mod posixaio;
pub mod psync;
pub mod pvsync2;
pub mod sync;
// Network engines (their own files): `pub mod nfs;` and `pub mod iscsi;` go here.
pub mod iscsi;
pub mod nfs;
pub mod smb;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

/// How to build one engine, and what the CLI says about it.
pub struct EngineDef {
    /// fio's name (`psync`, `io_uring`, …).
    pub name: &'static str,
    /// Other fio names this definition serves (`sync`, `pvsync2`, …).
    pub aliases: &'static [&'static str],
    /// One line for `--enghelp` and docs.
    pub about: &'static str,
    /// Builds one instance for one worker thread of `job`.
    pub create: fn(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError>,
    /// Where its IOs move data, so presets that measure data (quick) can refuse the
    /// metadata engines and `null`, whose "IOs" move nothing.
    pub data: DataPath,
}

/// The kind of target an engine reads and writes data on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataPath {
    /// Local files and block devices.
    Local,
    /// nfs:// URLs.
    Nfs,
    /// iscsi:// URLs.
    Iscsi,
    /// Moves no data (null, filecreate, filestat, filedelete).
    None,
}

/// The engines that move data on `path`'s kind of target, by fio name.
pub fn data_engines(path: DataPath) -> Vec<&'static str> {
    ALL.iter()
        .filter(|d| d.data == path)
        .map(|d| d.name)
        .collect()
}

/// Every engine storbench has.
pub static ALL: &[EngineDef] = &[
    EngineDef {
        name: "psync",
        aliases: &[],
        about: "pread/pwrite, one IO at a time",
        create: psync::create,
        data: DataPath::Local,
    },
    EngineDef {
        name: "sync",
        aliases: &[],
        about: "read/write with lseek, one IO at a time",
        create: sync::create,
        data: DataPath::Local,
    },
    EngineDef {
        name: "pvsync2",
        aliases: &[],
        about: "preadv2/pwritev2 with per-IO flags (hipri, nowait, uncached)",
        create: pvsync2::create,
        data: DataPath::Local,
    },
    EngineDef {
        name: "io_uring",
        aliases: &[],
        about: "Linux io_uring (fixedbufs, registerfiles, hipri, sqthread_poll, nowait)",
        create: io_uring::create,
        data: DataPath::Local,
    },
    EngineDef {
        name: "libaio",
        aliases: &[],
        about: "Linux native AIO through the io_submit syscalls (no libaio.so needed)",
        create: libaio::create,
        data: DataPath::Local,
    },
    EngineDef {
        name: "posixaio",
        aliases: &[],
        about: "POSIX AIO (glibc aio_read/aio_write, helper threads)",
        create: posixaio::create,
        data: DataPath::Local,
    },
    EngineDef {
        name: "mmap",
        aliases: &[],
        about: "memcpy to/from a shared mapping of the file, msync for fsync",
        create: mmap::create,
        data: DataPath::Local,
    },
    EngineDef {
        name: "null",
        aliases: &[],
        about: "moves no data: the overhead baseline",
        create: null::create,
        data: DataPath::None,
    },
    EngineDef {
        name: "filecreate",
        aliases: &[],
        about: "each IO creates one file (metadata benchmark)",
        create: filecreate::create,
        data: DataPath::None,
    },
    EngineDef {
        name: "filestat",
        aliases: &[],
        about: "each IO stats one file (metadata benchmark)",
        create: filestat::create,
        data: DataPath::None,
    },
    EngineDef {
        name: "filedelete",
        aliases: &[],
        about: "each IO unlinks one file (metadata benchmark)",
        create: filedelete::create,
        data: DataPath::None,
    },
    // Network engines: one line each for nfs and iscsi.
    EngineDef {
        name: "nfs",
        aliases: &[],
        about: "user-space NFSv3 client: nfs://host/export/file, pipelined RPCs (no mount, no root)",
        create: nfs::create,
        data: DataPath::Nfs,
    },
    EngineDef {
        name: "libiscsi",
        aliases: &["iscsi"],
        about: "user-space iSCSI initiator: iscsi://host/iqn/lun, pipelined SCSI tasks (no kernel initiator, no root)",
        create: iscsi::create,
        data: DataPath::Iscsi,
    },
];

/// The definition serving fio engine name `name`.
pub fn find(name: &str) -> Option<&'static EngineDef> {
    ALL.iter()
        .find(|d| d.name == name || d.aliases.contains(&name))
}

/// Builds the engine a job asks for, with a one-line error for unknown names.
pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let def = find(&job.ioengine).ok_or_else(|| {
        let names: Vec<&str> = ALL.iter().map(|d| d.name).collect();
        EngineError::unsupported(format!(
            "ioengine={} is not available; storbench has: {}",
            job.ioengine,
            names.join(", ")
        ))
    })?;
    (def.create)(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_engines_by_target_kind() {
        let local = data_engines(DataPath::Local);
        assert!(local.contains(&"io_uring") && local.contains(&"libaio"));
        assert!(!local.iter().any(|e| e.starts_with("file") || *e == "null"));
        assert_eq!(data_engines(DataPath::Nfs), ["nfs"]);
        assert_eq!(data_engines(DataPath::Iscsi), ["libiscsi"]);
    }
}
