//! `storbench quick`: the CrystalDiskMark / KDiskMark default set. Four tests, each read
//! then write, on one test file that is fully written before any read.

use std::time::Duration;

use crate::relpath::RelPath;
use crate::spec::{BlockSize, JobSpec, Rw, RwKind, SizeSpec, Workload};
use crate::target::Target;

/// One of the four quick tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuickTest {
    /// `SEQ1M Q8T1`: pattern, block size, queue depth, threads.
    pub name: &'static str,
    pub bs: u64,
    pub iodepth: u32,
    pub threads: u32,
    pub random: bool,
}

/// CrystalDiskMark's "Default" profile, in its order.
pub const TESTS: [QuickTest; 4] = [
    QuickTest {
        name: "SEQ1M Q8T1",
        bs: 1 << 20,
        iodepth: 8,
        threads: 1,
        random: false,
    },
    QuickTest {
        name: "SEQ1M Q1T1",
        bs: 1 << 20,
        iodepth: 1,
        threads: 1,
        random: false,
    },
    QuickTest {
        name: "RND4K Q32T1",
        bs: 4096,
        iodepth: 32,
        threads: 1,
        random: true,
    },
    QuickTest {
        name: "RND4K Q1T1",
        bs: 4096,
        iodepth: 1,
        threads: 1,
        random: true,
    },
];

/// Checks that a test file of `size` bytes holds whole blocks of every test: at least one
/// of the largest block and a multiple of it (all block sizes are powers of two), since a
/// shorter last IO would be counted under the test's block-size label.
pub fn check_size(size: u64) -> Result<(), String> {
    let block = TESTS.iter().map(|t| t.bs).max().unwrap_or(1);
    let fits = TESTS
        .iter()
        .all(|t| size >= t.bs && size.is_multiple_of(t.bs));
    if fits {
        return Ok(());
    }
    let mib = block >> 20;
    Err(format!(
        "the test file must be at least {mib} MiB and a whole number of {mib} MiB blocks \
         (its SEQ1M tests move {mib} MiB per IO)"
    ))
}

/// What the user chose.
#[derive(Clone, Debug, PartialEq)]
pub struct QuickOptions {
    /// A device or LUN (the test file itself) for device-like targets, else the directory
    /// the test file is created in; parsed where the user gave it.
    pub target: Target,
    /// The target is a whole device or LUN (no test file is created).
    pub device: bool,
    pub size: u64,
    pub runtime: Duration,
    pub direct: bool,
    pub ioengine: String,
    /// Name of the test file inside the directory.
    pub file_name: String,
    pub allow_destructive: bool,
}

/// Eight jobs (four tests × read, write), each its own reporting group and stonewalled, all
/// on the same test file. Job names are `<test> read` / `<test> write`; the quick reporter
/// relies on that.
pub fn workload(o: &QuickOptions) -> Workload {
    let mut jobs = Vec::new();
    let mut group = 0;
    for t in TESTS {
        for write in [false, true] {
            let mut j = JobSpec::new(format!(
                "{} {}",
                t.name,
                if write { "write" } else { "read" }
            ));
            j.group = group;
            j.stonewall = group > 0;
            j.filenames = vec![test_file(o)];
            j.own_filenames = !o.device;
            j.size = Some(SizeSpec::Bytes(o.size));
            j.bs = [
                BlockSize::Fixed(t.bs),
                BlockSize::Fixed(t.bs),
                BlockSize::Fixed(t.bs),
            ];
            j.rw = Rw {
                kind: match (t.random, write) {
                    (false, false) => RwKind::Read,
                    (false, true) => RwKind::Write,
                    (true, false) => RwKind::RandRead,
                    (true, true) => RwKind::RandWrite,
                },
                nr: 1,
                hole: 0,
                back: 0,
            };
            j.iodepth = t.iodepth;
            j.numjobs = t.threads;
            j.ioengine = o.ioengine.clone();
            j.direct = o.direct;
            j.runtime = Some(o.runtime);
            j.time_based = true;
            j.end_fsync = write;
            j.overwrite = true;
            j.group_reporting = true;
            j.allow_destructive = o.allow_destructive;
            j.options = vec![
                ("rw".into(), j.rw.kind.fio_name().into()),
                ("bs".into(), t.bs.to_string()),
                ("iodepth".into(), t.iodepth.to_string()),
            ];
            jobs.push(j);
            group += 1;
        }
    }
    Workload {
        jobs,
        global_options: vec![
            ("size".into(), o.size.to_string()),
            ("runtime".into(), format!("{}", o.runtime.as_secs())),
            ("direct".into(), if o.direct { "1" } else { "0" }.into()),
            ("ioengine".into(), o.ioengine.clone()),
        ],
        job_files: Vec::new(),
    }
}

/// The test file: the device or LUN itself, else `file_name` in the target directory,
/// joined by the target's own rule (a URL keeps its query at the end). The name is
/// storbench's own (`storbench-quick.PID.tmp`), one plain component: the local join is
/// only the fallback a malformed name would take.
fn test_file(o: &QuickOptions) -> String {
    if o.device {
        return o.target.expose().to_string();
    }
    RelPath::new(&o.file_name)
        .and_then(|name| o.target.join(name))
        .unwrap_or_else(|_| Target::local_join(o.target.expose(), &o.file_name))
        .expose()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> QuickOptions {
        QuickOptions {
            target: Target::Path("/tmp".into()),
            device: false,
            size: 1 << 30,
            runtime: Duration::from_secs(5),
            direct: true,
            ioengine: "io_uring".into(),
            file_name: "storbench-quick.1.tmp".into(),
            allow_destructive: false,
        }
    }

    #[test]
    fn eight_stonewalled_groups_on_one_file() {
        let w = workload(&opts());
        assert_eq!(w.jobs.len(), 8);
        let names: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names[0], "SEQ1M Q8T1 read");
        assert_eq!(names[7], "RND4K Q1T1 write");
        assert!(
            w.jobs
                .iter()
                .all(|j| j.filenames == vec!["/tmp/storbench-quick.1.tmp".to_string()])
        );
        assert_eq!(
            w.jobs.iter().map(|j| j.group).collect::<Vec<_>>(),
            (0..8).collect::<Vec<_>>()
        );
        assert!(!w.jobs[0].stonewall && w.jobs[1..].iter().all(|j| j.stonewall));
        assert_eq!(w.jobs[4].iodepth, 32);
        assert_eq!(w.jobs[4].rw.kind, RwKind::RandRead);
        assert!(w.jobs[5].end_fsync && !w.jobs[4].end_fsync);
    }

    #[test]
    fn sizes_must_hold_whole_1m_blocks() {
        for ok in [1 << 20, 8 << 20, 1 << 30] {
            assert_eq!(check_size(ok), Ok(()));
        }
        for bad in [0, 3 << 10, 4096, (1 << 20) - 4096, (3 << 20) / 2] {
            let e = check_size(bad).unwrap_err();
            assert!(e.contains("at least 1 MiB"), "{e}");
        }
    }

    #[test]
    fn devices_and_urls() {
        let mut o = opts();
        o.target = Target::parse("nfs://h/export?version=3").unwrap();
        assert_eq!(
            workload(&o).jobs[0].filenames[0],
            "nfs://h/export/storbench-quick.1.tmp?version=3"
        );
        o.device = true;
        o.target = Target::parse("iscsi://h/iqn.x/1").unwrap();
        assert_eq!(workload(&o).jobs[0].filenames[0], "iscsi://h/iqn.x/1");
        assert!(!workload(&o).jobs[0].names_generated());
    }

    #[test]
    fn the_test_file_is_a_name_storbench_generates() {
        let mut o = opts();
        for dir in ["/tmp", "nfs://h/export/d?version=3", "smb://u@h/share/d"] {
            o.target = Target::parse(dir).unwrap();
            let w = workload(&o);
            assert!(w.jobs.iter().all(|j| j.names_generated()), "{dir}");
        }
    }
}
