//! `storbench quick`: CrystalDiskMark's test sets ([`Profile`]), each test read then write
//! (and, with `--mix`, 70/30 mixed), on one test file that is fully written before any read.
//! The sets follow CrystalDiskMark 8 and KDiskMark (docs/quick.md).

use std::time::Duration;

use crate::relpath::RelPath;
use crate::spec::{BlockSize, JobSpec, Rw, RwKind, SizeSpec, Workload};
use crate::target::Target;

/// One quick test: a pattern, block size, queue depth and thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuickTest {
    pub bs: u64,
    pub iodepth: u32,
    pub threads: u32,
    pub random: bool,
}

impl QuickTest {
    const fn seq(bs: u64, iodepth: u32, threads: u32) -> QuickTest {
        QuickTest {
            bs,
            iodepth,
            threads,
            random: false,
        }
    }

    const fn rnd(bs: u64, iodepth: u32, threads: u32) -> QuickTest {
        QuickTest {
            bs,
            iodepth,
            threads,
            random: true,
        }
    }

    /// CrystalDiskMark's name: `SEQ1M Q8T1`, `SEQ128K Q32T1`, `RND4K Q32T16`.
    pub fn name(&self) -> String {
        let size = if self.bs >= 1 << 20 {
            format!("{}M", self.bs >> 20)
        } else {
            format!("{}K", self.bs >> 10)
        };
        let kind = if self.random { "RND" } else { "SEQ" };
        format!("{kind}{size} Q{}T{}", self.iodepth, self.threads)
    }
}

pub use storbench_model::profile::Profile;

const M: u64 = 1 << 20;
const K4: u64 = 4096;

/// The profile's tests in CrystalDiskMark 8's order.
pub fn profile_tests(profile: Profile) -> &'static [QuickTest] {
    const CLASSIC: [QuickTest; 4] = [
        QuickTest::seq(M, 8, 1),
        QuickTest::seq(M, 1, 1),
        QuickTest::rnd(K4, 32, 1),
        QuickTest::rnd(K4, 1, 1),
    ];
    const DEFAULT: [QuickTest; 4] = [
        QuickTest::seq(M, 8, 1),
        QuickTest::seq(M, 1, 1),
        QuickTest::rnd(K4, 32, 16),
        QuickTest::rnd(K4, 1, 1),
    ];
    const PEAK: [QuickTest; 2] = [QuickTest::seq(M, 8, 1), QuickTest::rnd(K4, 32, 16)];
    const REAL: [QuickTest; 2] = [QuickTest::seq(M, 1, 1), QuickTest::rnd(K4, 1, 1)];
    const NVME: [QuickTest; 4] = [
        QuickTest::seq(M, 8, 1),
        QuickTest::seq(128 << 10, 32, 1),
        QuickTest::rnd(K4, 32, 16),
        QuickTest::rnd(K4, 1, 1),
    ];
    match profile {
        Profile::Classic => &CLASSIC,
        Profile::Default => &DEFAULT,
        Profile::Peak => &PEAK,
        Profile::Real => &REAL,
        Profile::Nvme => &NVME,
    }
}

/// Which tests of a profile run, and how: `--tests`, `--threads`, `--mix`.
#[derive(Clone, Debug, PartialEq)]
pub struct TestSet {
    pub profile: Profile,
    /// The tests to run, in the profile's order.
    pub tests: Vec<QuickTest>,
    /// Each test also runs as CrystalDiskMark's Mix: 70% reads, 30% writes.
    pub mix: bool,
}

/// CrystalDiskMark's Mix test: the share of reads, in percent.
pub const MIX_READ_PERCENT: u32 = 70;

impl TestSet {
    /// `only`: the names `--tests` gave (`SEQ1M-Q8T1` or `SEQ1M Q8T1`, any case), each one
    /// of the profile's; `threads`: every test's thread count instead of the profile's.
    pub fn new(
        profile: Profile,
        only: &[String],
        threads: Option<u32>,
        mix: bool,
    ) -> Result<TestSet, String> {
        let all = profile_tests(profile);
        let mut tests: Vec<QuickTest> = if only.is_empty() {
            all.to_vec()
        } else {
            let wanted: Vec<String> = only.iter().map(|n| canonical(n)).collect();
            if let Some(bad) = wanted.iter().find(|w| !all.iter().any(|t| t.name() == **w)) {
                let names: Vec<String> = all.iter().map(|t| t.name().replace(' ', "-")).collect();
                return Err(format!(
                    "'{}' is not a test of the {} profile; its tests are {}",
                    bad.replace(' ', "-"),
                    profile.name(),
                    names.join(", ")
                ));
            }
            all.iter()
                .filter(|t| wanted.contains(&t.name()))
                .copied()
                .collect()
        };
        if let Some(n) = threads {
            for t in &mut tests {
                t.threads = n;
            }
        }
        Ok(TestSet {
            profile,
            tests,
            mix,
        })
    }

    /// The profile's own set.
    pub fn of(profile: Profile) -> TestSet {
        TestSet {
            profile,
            tests: profile_tests(profile).to_vec(),
            mix: false,
        }
    }
}

/// `seq1m-q8t1` as the test's name: `SEQ1M Q8T1`.
fn canonical(name: &str) -> String {
    name.trim().replace(['-', '_'], " ").to_ascii_uppercase()
}

/// The test names `--tests` gave, checked against a profile by [`TestSet::new`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestNames(pub Vec<String>);

/// Parses `--tests`: names separated by commas, none empty.
pub fn parse_test_names(s: &str) -> Result<TestNames, String> {
    let names: Vec<String> = s.split(',').map(|n| n.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        return Err(format!(
            "'{s}': expected test names separated by commas, such as SEQ1M-Q8T1,RND4K-Q1T1"
        ));
    }
    Ok(TestNames(names))
}

/// Parses `--threads`: 1 to 64, CrystalDiskMark's range.
pub fn parse_threads(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n @ 1..=64) => Ok(n),
        _ => Err(format!("'{s}': expected a thread count from 1 to 64")),
    }
}

/// Checks that a test file of `size` bytes holds whole blocks of every test: at least one
/// of the largest block and a multiple of it (all block sizes are powers of two), since a
/// shorter last IO would be counted under the test's block-size label.
pub fn check_size(size: u64) -> Result<(), String> {
    let tests = profile_tests(Profile::Default);
    let block = tests.iter().map(|t| t.bs).max().unwrap_or(1);
    let fits = tests
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
    pub set: TestSet,
}

/// Two jobs per test (read, write; a third, mix, with `--mix`), each its own reporting group
/// and stonewalled, all on the same test file. Job names are `<test> read` / `<test> write` /
/// `<test> mix`; the quick reporter relies on that.
pub fn workload(o: &QuickOptions) -> Workload {
    let mut jobs = Vec::new();
    let mut group = 0;
    let passes: &[Pass] = if o.set.mix {
        &[Pass::Read, Pass::Write, Pass::Mix]
    } else {
        &[Pass::Read, Pass::Write]
    };
    for t in &o.set.tests {
        for &pass in passes {
            let write = pass != Pass::Read;
            let mut j = JobSpec::new(format!("{} {}", t.name(), pass.word()));
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
                kind: match (t.random, pass) {
                    (false, Pass::Read) => RwKind::Read,
                    (false, Pass::Write) => RwKind::Write,
                    (false, Pass::Mix) => RwKind::ReadWrite,
                    (true, Pass::Read) => RwKind::RandRead,
                    (true, Pass::Write) => RwKind::RandWrite,
                    (true, Pass::Mix) => RwKind::RandRw,
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
            if pass == Pass::Mix {
                j.rwmixread = MIX_READ_PERCENT;
                j.options
                    .push(("rwmixread".into(), MIX_READ_PERCENT.to_string()));
            }
            jobs.push(j);
            group += 1;
        }
    }
    Workload {
        jobs,
        global_options: vec![
            ("size".into(), o.size.to_string()),
            ("runtime".into(), format!("{}ms", o.runtime.as_millis())),
            ("direct".into(), if o.direct { "1" } else { "0" }.into()),
            ("ioengine".into(), o.ioengine.clone()),
            ("profile".into(), o.set.profile.name().into()),
        ],
        job_files: Vec::new(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    Read,
    Write,
    Mix,
}

impl Pass {
    fn word(self) -> &'static str {
        match self {
            Pass::Read => "read",
            Pass::Write => "write",
            Pass::Mix => "mix",
        }
    }
}

/// The test file: the device or LUN itself, else `file_name` in the target directory,
/// joined by the target's own rule (a URL keeps its query at the end). The name is
/// storbench's own (`storbench-quick.PID.tmp`), one plain component: the local join is
/// only the fallback a malformed name would take.
fn test_file(o: &QuickOptions) -> Target {
    if o.device {
        return o.target.clone();
    }
    RelPath::new(&o.file_name)
        .and_then(|name| o.target.join(name))
        .unwrap_or_else(|_| Target::local_join(o.target.expose(), &o.file_name))
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
            set: TestSet::of(Profile::Classic),
        }
    }

    /// A test as the cases give it: name, `seq` or `rnd`, block size, queue depth, threads.
    type Case = (&'static str, &'static str, u64, u32, u32);

    /// `(name, rw, bs, iodepth, numjobs)` of each job.
    fn jobs_of(set: TestSet) -> Vec<(String, &'static str, u64, u32, u32)> {
        let o = QuickOptions { set, ..opts() };
        workload(&o)
            .jobs
            .iter()
            .map(|j| {
                let BlockSize::Fixed(bs) = j.bs[0] else {
                    panic!("{:?}", j.bs)
                };
                (
                    j.name.clone(),
                    j.rw.kind.fio_name(),
                    bs,
                    j.iodepth,
                    j.numjobs,
                )
            })
            .collect()
    }

    fn expect(tests: &[Case]) -> Vec<(String, &'static str, u64, u32, u32)> {
        let mut out = Vec::new();
        for &(name, kind, bs, q, t) in tests {
            let (r, w): (&'static str, &'static str) = if kind == "seq" {
                ("read", "write")
            } else {
                ("randread", "randwrite")
            };
            out.push((format!("{name} read"), r, bs, q, t));
            out.push((format!("{name} write"), w, bs, q, t));
        }
        out
    }

    #[test]
    fn each_profile_runs_crystaldiskmarks_tests() {
        let cases: [(Profile, &[Case]); 5] = [
            (
                Profile::Default,
                &[
                    ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1),
                    ("SEQ1M Q1T1", "seq", 1 << 20, 1, 1),
                    ("RND4K Q32T16", "rnd", 4096, 32, 16),
                    ("RND4K Q1T1", "rnd", 4096, 1, 1),
                ],
            ),
            (
                Profile::Peak,
                &[
                    ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1),
                    ("RND4K Q32T16", "rnd", 4096, 32, 16),
                ],
            ),
            (
                Profile::Real,
                &[
                    ("SEQ1M Q1T1", "seq", 1 << 20, 1, 1),
                    ("RND4K Q1T1", "rnd", 4096, 1, 1),
                ],
            ),
            (
                Profile::Nvme,
                &[
                    ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1),
                    ("SEQ128K Q32T1", "seq", 128 << 10, 32, 1),
                    ("RND4K Q32T16", "rnd", 4096, 32, 16),
                    ("RND4K Q1T1", "rnd", 4096, 1, 1),
                ],
            ),
            (
                Profile::Classic,
                &[
                    ("SEQ1M Q8T1", "seq", 1 << 20, 8, 1),
                    ("SEQ1M Q1T1", "seq", 1 << 20, 1, 1),
                    ("RND4K Q32T1", "rnd", 4096, 32, 1),
                    ("RND4K Q1T1", "rnd", 4096, 1, 1),
                ],
            ),
        ];
        for (profile, tests) in cases {
            assert_eq!(jobs_of(TestSet::of(profile)), expect(tests), "{profile:?}");
            assert_eq!(Profile::parse(profile.name()), Ok(profile));
        }
    }

    #[test]
    fn tests_threads_and_mix_narrow_and_extend_a_profile() {
        let only = ["rnd4k-q1t1".to_string(), "SEQ1M-Q1T1".to_string()];
        let set = TestSet::new(Profile::Real, &only, None, false).unwrap();
        assert_eq!(
            jobs_of(set),
            expect(&[
                ("SEQ1M Q1T1", "seq", 1 << 20, 1, 1),
                ("RND4K Q1T1", "rnd", 4096, 1, 1),
            ]),
            "the profile's order, not the option's"
        );
        let set = TestSet::new(Profile::Peak, &["RND4K-Q32T16".into()], Some(4), true).unwrap();
        let o = QuickOptions { set, ..opts() };
        let w = workload(&o);
        let names: Vec<&str> = w.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(
            names,
            ["RND4K Q32T4 read", "RND4K Q32T4 write", "RND4K Q32T4 mix"]
        );
        assert_eq!(w.jobs[2].rw.kind, RwKind::RandRw);
        assert_eq!(w.jobs[2].rwmixread, 70);
        assert!(w.jobs.iter().all(|j| j.numjobs == 4));
        assert!(
            w.global_options
                .contains(&("profile".into(), "peak".into()))
        );
    }

    #[test]
    fn bad_profiles_tests_and_threads_are_refused() {
        assert_eq!(
            Profile::parse("fast").unwrap_err(),
            "'fast' is no profile; use default, peak, real, nvme or classic"
        );
        let e = TestSet::new(Profile::Real, &["SEQ1M-Q8T1".into()], None, false).unwrap_err();
        assert_eq!(
            e,
            "'SEQ1M-Q8T1' is not a test of the real profile; its tests are SEQ1M-Q1T1, RND4K-Q1T1"
        );
        assert!(parse_test_names("SEQ1M-Q8T1,,RND4K-Q1T1").is_err());
        assert!(parse_test_names("").is_err());
        for bad in ["0", "65", "-1", "x", ""] {
            assert!(parse_threads(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_threads("16"), Ok(16));
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
                .all(|j| j.filenames == vec![Target::Path("/tmp/storbench-quick.1.tmp".into())])
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
            workload(&o).jobs[0].filenames[0].expose(),
            "nfs://h/export/storbench-quick.1.tmp?version=3"
        );
        o.device = true;
        o.target = Target::parse("iscsi://h/iqn.x/1").unwrap();
        assert_eq!(
            workload(&o).jobs[0].filenames[0].expose(),
            "iscsi://h/iqn.x/1"
        );
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
