//! THE engine catalogue: every IO engine storbench has and every URL scheme it reaches,
//! described once. `ioengine=` validation, engine-option checks, `--enghelp`, `--cmdhelp`,
//! docs/fio-compat.md, target parsing ([`crate::target`]) and URL routing all read it.
//!
//! The catalogue is pure data, so this crate (below core and the engines) can validate
//! jobs against it. The engines crate holds the code: one file per engine, each naming
//! its catalogue entry ([`EngineInfo::name`]) beside its constructor; a test there checks
//! that every entry here has exactly one constructor there and the other way round.
//!
//! Adding an engine: its file in `crates/engines/src/`, one entry in [`ENGINES`]. Adding a
//! protocol: one [`Protocol`] constant here, named by its engine's entry (see
//! docs/ARCHITECTURE.md for the whole checklist).

/// A URL scheme storbench reaches with its own client, and what such a target is.
#[derive(Debug, PartialEq, Eq)]
pub struct Protocol {
    /// The scheme before `://`, lower case.
    pub scheme: &'static str,
    /// How a target is written, for messages (`nfs://host/export[/dir]`).
    pub form: &'static str,
    /// A whole device (a LUN): checked for existing data before writes, never laid out,
    /// created or removed.
    pub device_like: bool,
    /// Holds files and directories with metadata operations (create, stat, unlink), so
    /// generated file names, `directory=`, bonnie's file tests and the metadata engines
    /// work on it.
    pub metadata: bool,
}

/// What an engine reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serves {
    /// Local files and block devices.
    Local,
    /// Targets written as URLs of this protocol.
    Url(&'static Protocol),
    /// Moves no data: `null`, whose IOs do nothing.
    Nothing,
    /// Does no IO on any file (fio's `FIO_NOIO` engines: cpuio, exec): the job has no
    /// file and no size, each of its IOs is a read of zero bytes (one busy period, one
    /// look at a program), and only its runtime, a signal or `exit_on_io_done` ends it.
    NoFile,
    /// Metadata operations only (fio's filecreate/filestat/filedelete): each IO is one
    /// operation on a local path, or on a URL through the engine serving its protocol.
    Metadata,
}

/// One IO engine as users and validation see it.
#[derive(Debug)]
pub struct EngineInfo {
    /// fio's name, stored in `JobSpec::ioengine`.
    pub name: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    /// One line for `--enghelp`, `--cmdhelp=ioengine` and docs.
    pub about: &'static str,
    /// Completes every IO inside the submit call, so `iodepth` has no effect.
    pub synchronous: bool,
    /// Does work in threads other than the worker's (io_uring's kernel workers, POSIX
    /// AIO's threads), whose CPU the runner attributes to the engine's jobs.
    pub helper_threads: bool,
    /// Its clones run in processes of their own unless the job says `thread`, as fio runs
    /// every clone: its helpers are per process (glibc's one POSIX AIO pool), so clones
    /// sharing a process share them (`crates/run/src/forked.rs`).
    pub process_per_clone: bool,
    pub serves: Serves,
    /// Its own options, by name: each is an option of the table (`options::find`) in the
    /// `Engine` category; a job giving one with another engine is refused.
    pub options: &'static [&'static str],
}

impl EngineInfo {
    /// Whether `name` is this engine's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }

    /// Whether its IOs complete without touching anything (`null`, `cpp_null`): no file,
    /// no socket, so no figure of it says anything of storage.
    pub fn fakes_io(&self) -> bool {
        self.serves == Serves::Nothing && !self.is_net()
    }

    /// Whether it does no IO at all (`null`, cpuio, exec): nothing to lay out, no device
    /// to judge.
    pub fn does_no_io(&self) -> bool {
        matches!(self.serves, Serves::Nothing | Serves::NoFile)
    }

    /// Whether its jobs have no file at all (cpuio, exec): see [`Serves::NoFile`].
    pub fn has_no_file(&self) -> bool {
        self.serves == Serves::NoFile
    }

    /// Whether its "file" is a socket to a peer: fio's net and netsplice engines.
    pub fn is_net(&self) -> bool {
        std::ptr::eq(self.options, NET_OPTIONS)
    }

    /// Whether it reports rates in bits unless `unit_base` says otherwise, as fio's net
    /// engine does (netsplice reports bytes).
    pub fn reports_bits(&self) -> bool {
        self.is_net() && self.name == "net"
    }

    /// Whether its IOs move data on the target (quick refuses the others).
    pub fn moves_data(&self) -> bool {
        matches!(self.serves, Serves::Local | Serves::Url(_))
    }

    /// Whether it can reach a target of `protocol` (`None`: a local path or device).
    pub fn reaches(&self, protocol: Option<&Protocol>) -> bool {
        match (self.serves, protocol) {
            (Serves::Local, None) => true,
            (Serves::Url(p), Some(q)) => p == q,
            (Serves::Metadata, None) => true,
            (Serves::Metadata, Some(q)) => q.metadata,
            _ => false,
        }
    }
}

/// NFSv3 and NFSv4.1/4.2 through storbench's own client (crates/nfs).
pub const NFS: Protocol = Protocol {
    scheme: "nfs",
    form: "nfs://host/export[/dir]",
    device_like: false,
    metadata: true,
};

/// iSCSI LUNs through storbench's own initiator (crates/iscsi).
pub const ISCSI: Protocol = Protocol {
    scheme: "iscsi",
    form: "iscsi://host/iqn/lun",
    device_like: true,
    metadata: false,
};

/// `nbd://host[:port][/export]`; `nbd+unix:///export?socket=PATH` is the same protocol
/// over a Unix-domain socket (see [`protocol`]).
pub const NBD: Protocol = Protocol {
    scheme: "nbd",
    form: "nbd://host[:port]/export",
    device_like: true,
    metadata: false,
};

/// SMB2/3 shares through storbench's own client (crates/smb).
pub const SMB: Protocol = Protocol {
    scheme: "smb",
    form: "smb://[user@]host/share[/dir]",
    device_like: false,
    metadata: true,
};

const IO_URING_OPTIONS: &[&str] = &[
    "hipri",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "registerfiles",
    "fixedbufs",
    "nowait",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
];

const LIBAIO_OPTIONS: &[&str] = &[
    "nowait",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
];

const fn local(
    name: &'static str,
    synchronous: bool,
    options: &'static [&'static str],
    about: &'static str,
) -> EngineInfo {
    EngineInfo {
        name,
        aliases: &[],
        about,
        synchronous,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Local,
        options,
    }
}

const fn metadata(name: &'static str, about: &'static str) -> EngineInfo {
    EngineInfo {
        name,
        aliases: &[],
        about,
        synchronous: true,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Metadata,
        options: &[],
    }
}

const fn pseudo(
    name: &'static str,
    options: &'static [&'static str],
    about: &'static str,
) -> EngineInfo {
    EngineInfo {
        name,
        aliases: &[],
        about,
        synchronous: true,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::NoFile,
        options,
    }
}

/// An engine whose IOs complete at once and do nothing (fio's `FIO_FAKEIO` engines).
const fn fake(name: &'static str, about: &'static str) -> EngineInfo {
    EngineInfo {
        name,
        aliases: &[],
        about,
        synchronous: false,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Nothing,
        options: &[],
    }
}

/// The options of fio's net and netsplice engines.
const NET_OPTIONS: &[&str] = &[
    "hostname",
    "port",
    "protocol",
    "nodelay",
    "listen",
    "pingpong",
    "interface",
    "ttl",
    "window_size",
    "mss",
];

/// A net engine: its "file" is a socket to a peer, so there is nothing to lay out and no
/// device to judge.
const fn net(name: &'static str, about: &'static str) -> EngineInfo {
    EngineInfo {
        name,
        aliases: &[],
        about,
        synchronous: true,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Nothing,
        options: NET_OPTIONS,
    }
}

/// Every engine storbench has, in the order `--enghelp` and the docs list them.
pub static ENGINES: &[EngineInfo] = &[
    local("sync", true, &[], "read()/write() after lseek()"),
    local(
        "psync",
        true,
        &[],
        "pread()/pwrite() (fio's default on Linux)",
    ),
    local(
        "vsync",
        true,
        &[],
        "readv()/writev() after lseek(), one IO per call",
    ),
    local("pvsync", true, &[], "preadv()/pwritev(), one IO per call"),
    EngineInfo {
        helper_threads: true,
        ..local(
            "io_uring",
            false,
            IO_URING_OPTIONS,
            "Linux io_uring, with fixed buffers, registered files, polling",
        )
    },
    local(
        "pvsync2",
        true,
        &["hipri", "nowait", "uncached"],
        "preadv2()/pwritev2(), with hipri and nowait",
    ),
    local(
        "libaio",
        false,
        LIBAIO_OPTIONS,
        "Linux native AIO (kernel syscalls, no libaio.so needed)",
    ),
    EngineInfo {
        helper_threads: true,
        process_per_clone: true,
        ..local("posixaio", false, &[], "POSIX aio_read()/aio_write()")
    },
    local("mmap", true, &[], "memcpy to and from a memory-mapped file"),
    local(
        "falloc",
        true,
        &[],
        "fallocate() per write and read, a punched hole per trim",
    ),
    local(
        "e4defrag",
        true,
        &["donorname", "inplace"],
        "ext4's online defragmenter: each write moves its blocks to a donor file's (EXT4_IOC_MOVE_EXT)",
    ),
    local(
        "ftruncate",
        true,
        &[],
        "ftruncate() to the offset of each write",
    ),
    fake(
        "null",
        "Completes every IO at once without doing anything (overhead baseline)",
    ),
    fake(
        "cpp_null",
        "fio's null engine built from C++ (its external-engine example): the same engine",
    ),
    EngineInfo {
        name: "nfs",
        aliases: &[],
        about: "User-space NFSv3 and NFSv4.1/4.2 client: nfs://host/export/path, no mount needed",
        synchronous: false,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Url(&NFS),
        options: &["nfs_url"],
    },
    EngineInfo {
        name: "libiscsi",
        aliases: &["iscsi"],
        about: "User-space iSCSI initiator: iscsi://host[:port]/iqn/lun, no login needed",
        synchronous: false,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Url(&ISCSI),
        options: &[],
    },
    EngineInfo {
        name: "nbd",
        aliases: &[],
        about: "User-space NBD client: uri=nbd://host[:port]/export, no nbd device needed",
        synchronous: false,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Url(&NBD),
        options: &["uri"],
    },
    EngineInfo {
        name: "smb",
        aliases: &[],
        about: "User-space SMB2/3 client: smb://[user@]host/share/path, no mount needed",
        synchronous: false,
        helper_threads: false,
        process_per_clone: false,
        serves: Serves::Url(&SMB),
        options: &[],
    },
    net(
        "net",
        "TCP, UDP or Unix-socket stream to or from a fio or storbench peer (fio's wire format)",
    ),
    net(
        "netsplice",
        "The net engine under fio's splice name: the same stream, the same wire format",
    ),
    pseudo(
        "cpuio",
        &["cpuload", "cpuchunks", "cpumode", "exit_on_io_done"],
        "Keeps cpuload percent of one CPU busy in cpuchunks-µs periods; moves no data",
    ),
    pseudo(
        "exec",
        &["program", "arguments", "grace_time", "std_redirect"],
        "Runs program for the job's runtime, then stops it (SIGTERM, grace_time, SIGKILL)",
    ),
    metadata("filecreate", "Each IO creates a file (metadata benchmark)"),
    metadata("filestat", "Each IO stats a file (metadata benchmark)"),
    metadata("filedelete", "Each IO deletes a file (metadata benchmark)"),
];

pub use storbench_model::fio::DEFAULT_ENGINE;

/// The local engines `quick` uses, best first: the first this kernel lets us create.
pub const QUICK_LOCAL_ENGINES: &[&str] = &["io_uring", "libaio"];

/// The engine answering to `name` (its name or an alias).
pub fn find(name: &str) -> Option<&'static EngineInfo> {
    ENGINES.iter().find(|e| e.answers_to(name))
}

/// Whether the engine named `name` fakes its IOs ([`EngineInfo::fakes_io`]).
pub fn fakes_io(name: &str) -> bool {
    find(name).is_some_and(EngineInfo::fakes_io)
}

/// The engine serving URLs of `protocol`.
pub fn engine_for(protocol: &Protocol) -> Option<&'static EngineInfo> {
    ENGINES
        .iter()
        .find(|e| matches!(e.serves, Serves::Url(p) if p == protocol))
}

/// Every protocol some engine serves.
pub fn protocols() -> impl Iterator<Item = &'static Protocol> {
    ENGINES.iter().filter_map(|e| match e.serves {
        Serves::Url(p) => Some(p),
        _ => None,
    })
}

/// The protocol of `scheme`, if storbench reaches it. `PROTO+TRANSPORT` (`nbd+unix`) is
/// `PROTO` over another transport, which its client parses (or refuses in one line).
pub fn protocol(scheme: &str) -> Option<&'static Protocol> {
    let base = scheme.split_once('+').map_or(scheme, |(b, _)| b);
    protocols().find(|p| p.scheme == base)
}

/// The engines that move data on `protocol`'s targets (`None`: local ones), by name.
pub fn data_engines(protocol: Option<&Protocol>) -> Vec<&'static str> {
    ENGINES
        .iter()
        .filter(|e| e.moves_data() && e.reaches(protocol))
        .map(|e| e.name)
        .collect()
}

/// The engines whose own option `option` is.
pub fn engines_with_option(option: &str) -> Vec<&'static str> {
    ENGINES
        .iter()
        .filter(|e| e.options.contains(&option))
        .map(|e| e.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{self, Category};

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = Vec::new();
        for e in ENGINES {
            for n in std::iter::once(&e.name).chain(e.aliases) {
                assert!(!seen.contains(n), "{n} named twice");
                seen.push(n);
            }
        }
        assert!(find(DEFAULT_ENGINE).is_some_and(|e| e.serves == Serves::Local));
    }

    /// The catalogue and the option table describe engine options together: every option
    /// an engine claims is in the table's engine category, every option there belongs to
    /// an engine.
    #[test]
    fn engine_options_are_in_the_option_table() {
        for e in ENGINES {
            for o in e.options {
                let def =
                    options::find(o).unwrap_or_else(|| panic!("{}: {o} not in table", e.name));
                assert_eq!(def.category, Category::Engine, "{o}");
            }
        }
        for def in options::all().filter(|o| o.category == Category::Engine) {
            assert!(
                !engines_with_option(def.name).is_empty(),
                "{} has no engine",
                def.name
            );
        }
        assert_eq!(engines_with_option("hipri"), ["io_uring", "pvsync2"]);
    }

    #[test]
    fn protocols_route_to_their_engine() {
        assert_eq!(protocol("nfs"), Some(&NFS));
        assert_eq!(engine_for(&ISCSI).map(|e| e.name), Some("libiscsi"));
        assert_eq!(data_engines(Some(&NFS)), ["nfs"]);
        assert_eq!(protocol("smb"), Some(&SMB));
        assert_eq!(data_engines(Some(&SMB)), ["smb"]);
        assert!(find("filecreate").unwrap().reaches(Some(&SMB)));
        let local = data_engines(None);
        assert!(local.contains(&"io_uring") && !local.contains(&"null"));
        assert!(!local.iter().any(|e| e.starts_with("file")));
        assert!(find("filestat").unwrap().reaches(Some(&NFS)));
        assert!(!find("filestat").unwrap().reaches(Some(&ISCSI)));
    }
}
