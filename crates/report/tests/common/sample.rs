//! Deterministic, realistic results for snapshot tests: latencies drawn from a fixed
//! pseudo-random sequence, counters consistent with them.

use storbench_model::result::*;

/// A small xorshift generator so every run builds the same figures.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Self {
        Lcg(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A latency around `typical_ns` with a long tail.
    pub fn latency(&mut self, typical_ns: u64) -> u64 {
        let r = self.next() % 1000;
        let base = typical_ns / 2 + self.next() % typical_ns.max(1);
        match r {
            0..=979 => base,
            980..=998 => base * (2 + self.next() % 8),
            _ => base * (20 + self.next() % 80),
        }
    }
}

/// Options of a job: what it does and how its figures print.
#[derive(Clone)]
pub struct Shape {
    pub name: &'static str,
    pub rw: &'static str,
    pub ioengine: &'static str,
    pub iodepth: u32,
    pub numjobs: u32,
    /// IOs per direction (read, write, trim).
    pub ios: [u64; 3],
    pub bs: u64,
    pub runtime_ms: u64,
    pub typical_ns: u64,
    /// Async engines measure submission latency.
    pub slat: bool,
    pub fsyncs: u64,
    pub settings: ReportSettings,
}

impl Shape {
    pub fn psync_randrw() -> Shape {
        Shape {
            name: "t",
            rw: "randrw",
            ioengine: "psync",
            iodepth: 1,
            numjobs: 1,
            ios: [42_317, 42_051, 0],
            bs: 4096,
            runtime_ms: 3001,
            typical_ns: 45_000,
            slat: false,
            fsyncs: 0,
            settings: ReportSettings::default(),
        }
    }

    pub fn libaio_randread() -> Shape {
        Shape {
            name: "grp",
            rw: "randread",
            ioengine: "libaio",
            iodepth: 8,
            numjobs: 1,
            ios: [72_150, 0, 0],
            bs: 4096,
            runtime_ms: 2001,
            typical_ns: 210_000,
            slat: true,
            fsyncs: 0,
            settings: ReportSettings::default(),
        }
    }
}

fn dir(rng: &mut Lcg, s: &Shape, ios: u64) -> DirResult {
    let mut d = DirResult::default();
    if ios == 0 {
        return d;
    }
    d.io_bytes = ios * s.bs;
    d.total_ios = ios;
    d.runtime_ms = s.runtime_ms;
    for _ in 0..ios {
        let clat = rng.latency(s.typical_ns);
        let slat = if s.slat {
            rng.latency(s.typical_ns / 25)
        } else {
            0
        };
        if s.settings.slat_measured && s.slat {
            d.slat.record(slat);
        }
        if s.settings.clat_measured {
            d.clat.record(clat);
        }
        if s.settings.lat_measured {
            d.lat.record(clat + slat + 90);
        }
    }
    if s.settings.bw_measured {
        let per_window = d.io_bytes as f64 / (s.runtime_ms as f64 / 500.0);
        let bw: Vec<f64> = (0..s.runtime_ms / 500)
            .map(|i| {
                ((per_window * 2.0 * (0.8 + 0.1 * (i % 4) as f64)) as u64 / 1024 * 1024) as f64
            })
            .collect();
        let iops: Vec<f64> = bw.iter().map(|b| (b / s.bs as f64).floor()).collect();
        d.bw_samples = SampleStats::from_values(&bw);
        d.iops_samples = SampleStats::from_values(&iops);
    }
    d
}

/// One job clone with the given shape; `jobnum` varies the figures between clones.
pub fn job(s: &Shape, groupid: u32, jobnum: u32) -> JobResult {
    let mut rng = Lcg::new(0x5eed + jobnum as u64 * 7919 + groupid as u64);
    let dirs = [
        dir(&mut rng, s, s.ios[0]),
        dir(&mut rng, s, s.ios[1]),
        dir(&mut rng, s, s.ios[2]),
    ];
    let mut lat_buckets = LatBuckets::default();
    for d in &dirs {
        for (ns, c) in d.clat.hist.bins() {
            for _ in 0..c {
                record_bucket(&mut lat_buckets, ns);
            }
        }
    }
    let total: u64 = s.ios.iter().sum();
    let mut sync = SyncResult::default();
    for _ in 0..s.fsyncs {
        sync.lat.record(rng.latency(300_000));
    }
    sync.total_ios = s.fsyncs;
    let depth = if s.iodepth > 1 {
        let head = (total / 100).min(8);
        DepthStats {
            level: [head, head, head, total - 3 * head, 0, 0, 0],
            submit: [0, total / 3, 0, 0, 0, 0, 0],
            complete: [0, total / 3 - 2, 2, 0, 0, 0, 0],
        }
    } else {
        DepthStats {
            level: [total, 0, 0, 0, 0, 0, 0],
            submit: [0, total, 0, 0, 0, 0, 0],
            complete: [0, total, 0, 0, 0, 0, 0],
        }
    };
    JobResult {
        name: s.name.into(),
        groupid,
        jobnum,
        jobs: 1,
        pid: 4409 + jobnum,
        error: 0,
        error_text: None,
        description: None,
        options: vec![("rw".into(), s.rw.into()), ("bs".into(), "4k".into())],
        header: JobHeader {
            rw: s.rw.into(),
            bs: [(s.bs, s.bs); 3],
            ioengine: s.ioengine.into(),
            requested_ioengine: None,
            iodepth: s.iodepth,
            numjobs: s.numjobs,
            direct: s.slat,
        },
        settings: s.settings.clone(),
        targets: vec![format!("/srv/bench/{}.{jobnum}.0", s.name)],
        elapsed_ms: s.runtime_ms + 40,
        runtime_ms: s.runtime_ms,
        end_unix_ms: 1_795_979_787_000,
        dirs,
        sync,
        cpu: CpuUsage {
            usr_ns: s.runtime_ms * 44_700 + jobnum as u64 * 1_000_000,
            sys_ns: s.runtime_ms * 473_300,
            helper_ns: 0,
            ctx: 37_218 + jobnum as u64,
            majf: 0,
            minf: 14,
            wait_ns: 0,
        },
        depth,
        lat_buckets,
        timeline: vec![],
        engine_details: vec![("engine".into(), s.ioengine.into())],
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

/// fio's display buckets, the way the core fills them.
fn record_bucket(b: &mut LatBuckets, ns: u64) {
    const LOWER: [u64; 9] = [2, 4, 10, 20, 50, 100, 250, 500, 750];
    let small = |v: u64| LOWER.iter().take_while(|&&x| v >= x).count();
    if ns < 1000 {
        b.ns[small(ns)] += 1;
    } else if ns < 1_000_000 {
        b.us[small(ns / 1000)] += 1;
    } else {
        let ms = ns / 1_000_000;
        let i = if ms < 1000 {
            small(ms)
        } else if ms < 2000 {
            10
        } else {
            11
        };
        b.ms[i] += 1;
    }
}

pub fn disk() -> DiskUtil {
    DiskUtil {
        name: "vda".into(),
        read_ios: 41_057,
        write_ios: 20_184,
        read_merges: 81,
        write_merges: 0,
        read_ticks: 1592,
        write_ticks: 15_797,
        in_queue: 17_391,
        util: 67.33,
        ..Default::default()
    }
}

/// A run of the given groups (group id = position).
pub fn run(groups: Vec<GroupResult>) -> RunResult {
    RunResult {
        command_line: vec!["storbench".into(), "fio".into(), "--name=t".into()],
        groups,
        disks: vec![disk()],
        ..RunResult::new(
            RunMode::Fio,
            "0.1.0".into(),
            1_795_979_783_000,
            1_795_979_787_000,
        )
    }
}

pub fn group(id: u32, group_reporting: bool, jobs: Vec<JobResult>) -> GroupResult {
    GroupResult {
        id,
        group_reporting,
        jobs,
    }
}

/// A quick run: the four CrystalDiskMark tests, read and write each.
pub fn quick_run() -> RunResult {
    let tests = [
        ("SEQ1M Q8T1", 1u64 << 20, 8u32, 2_000_000u64),
        ("SEQ1M Q1T1", 1 << 20, 1, 600_000),
        ("RND4K Q32T1", 4096, 32, 400_000),
        ("RND4K Q1T1", 4096, 1, 85_000),
    ];
    let mut groups = Vec::new();
    for (name, bs, qd, typical) in tests {
        for (d, dname) in ["read", "write"].iter().enumerate() {
            let runtime_ms = 5000;
            let ios_total = runtime_ms * 1_000_000 / typical * qd as u64;
            let mut ios = [0u64; 3];
            ios[d] = ios_total;
            let label: &'static str = Box::leak(format!("{name} {dname}").into_boxed_str());
            let s = Shape {
                name: label,
                rw: if bs == 4096 {
                    ["randread", "randwrite"][d]
                } else {
                    ["read", "write"][d]
                },
                ioengine: "io_uring",
                iodepth: qd,
                numjobs: 1,
                ios,
                bs,
                runtime_ms,
                typical_ns: typical,
                slat: true,
                fsyncs: 0,
                settings: ReportSettings::default(),
            };
            let id = groups.len() as u32;
            let mut j = job(&s, id, 0);
            j.targets = vec!["/mnt/tank/storbench-quick.tmp".into()];
            groups.push(group(id, true, vec![j]));
        }
    }
    let mut r = run(groups);
    r.mode = RunMode::Quick;
    r.disks = vec![];
    r.notes = vec![Note {
        level: NoteLevel::Warning,
        code: "warn.page-cache".into(),
        message: "the 1 GiB test file fits in RAM (16 GiB); reads may come from the page cache"
            .into(),
    }];
    r
}

/// The quick run against tgtd on this host: every test's job carries the server's CPU,
/// 40% for sequential tests and 95% for random ones.
#[allow(dead_code)]
pub fn loopback_quick_run() -> RunResult {
    let mut r = quick_run();
    for j in r.groups.iter_mut().flat_map(|g| &mut g.jobs) {
        j.targets = vec!["iscsi://127.0.0.1:3260/iqn.2026-11.lab.storbench:t/1".into()];
        let busy_ms = if j.name.starts_with("RND") {
            4750
        } else {
            2000
        };
        j.server_cpu = vec![storbench_model::result::ServerCpu {
            process: "tgtd".into(),
            pid: 4242,
            addr: "127.0.0.1:3260".into(),
            same_host: true,
            usr_ns: busy_ms * 250_000,
            sys_ns: busy_ms * 750_000,
            duration_ms: 5000,
            // tgtd: one event loop thread does all the work.
            busiest_thread_ns: Some(busy_ms * 1_000_000),
            quota_basis_points: None,
            throttled_periods: None,
        }];
    }
    // One test whose server could not be seen (the column says so).
    r.groups[7].jobs[0].server_cpu.clear();
    r
}
