//! Result fixtures for the store tests: one run per mode with histograms, timelines and an
//! environment, so a round trip covers every part of the model.
#![allow(dead_code)]

use storbench_model::result::*;

pub fn job(name: &str, read: (u64, u64), write: (u64, u64), runtime_ms: u64) -> JobResult {
    let mut dirs: [DirResult; 3] = Default::default();
    for (d, (bytes, ios)) in [(0, read), (1, write)] {
        dirs[d].io_bytes = bytes;
        dirs[d].total_ios = ios;
        dirs[d].runtime_ms = if ios > 0 { runtime_ms } else { 0 };
        for i in 0..ios.min(500) {
            dirs[d].clat.record(50_000 + i * 1_000);
            dirs[d].lat.record(55_000 + i * 1_000);
        }
        dirs[d].bw_samples = SampleStats::from_values(&[1e6, 2e6, 3e6]);
    }
    JobResult {
        name: name.to_string(),
        groupid: 0,
        jobnum: 0,
        jobs: 1,
        pid: 4242,
        error: 0,
        error_text: None,
        description: None,
        options: vec![("rw".into(), "randrw".into()), ("bs".into(), "4k".into())],
        header: JobHeader {
            rw: "randrw".into(),
            bs: [(4096, 4096); 3],
            ioengine: "psync".into(),
            ..JobHeader::default()
        },
        settings: ReportSettings::default(),
        targets: vec!["/mnt/pool/test.0".into()],
        elapsed_ms: runtime_ms + 100,
        runtime_ms,
        end_unix_ms: 1_790_000_010_000,
        dirs,
        sync: SyncResult::default(),
        cpu: CpuUsage {
            usr_ns: 300_000_000,
            sys_ns: 700_000_000,
            ..CpuUsage::default()
        },
        depth: DepthStats::default(),
        lat_buckets: LatBuckets::default(),
        timeline: (1..=3)
            .map(|s| TimelinePoint {
                t_ms: s * 1000,
                bytes: [read.0 / 3, write.0 / 3, 0],
                ios: [read.1 / 3, write.1 / 3, 0],
                lat_sum_ns: [1_000_000, 2_000_000, 0],
            })
            .collect(),
        engine_details: vec![("engine".into(), "psync".into())],
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

pub fn environment(target: &str) -> Environment {
    Environment {
        hostname: "nas1".into(),
        cpu_model: "AMD EPYC".into(),
        ncpus: 2,
        mem_bytes: 24 << 30,
        kernel: "6.18.44".into(),
        storbench_version: "0.1.0".into(),
        targets: vec![TargetInfo {
            target: target.into(),
            fs_type: Some("ext4".into()),
            mount_options: Some("rw,relatime".into()),
            device: Some("vda".into()),
            device_model: Some("virtio".into()),
            rotational: Some(false),
            scheduler: Some("mq-deadline".into()),
            size_bytes: Some(100 << 30),
            ..TargetInfo::default()
        }],
    }
}

pub fn base_run(mode: RunMode, started: u64) -> RunResult {
    RunResult {
        schema: RESULT_SCHEMA,
        mode,
        tool_version: "storbench 0.1.0".into(),
        started_unix_ms: started,
        finished_unix_ms: started + 3_000,
        command_line: vec!["storbench".into(), "fio".into(), "job.fio".into()],
        job_files: vec![("job.fio".into(), "[job]\nrw=randrw\n".into())],
        global_options: vec![("direct".into(), "1".into())],
        groups: Vec::new(),
        disks: vec![DiskUtil {
            name: "vda".into(),
            read_ios: 10,
            util: 55.5,
            ..DiskUtil::default()
        }],
        nics: Vec::new(),
        system_cpu: Some(SystemCpu {
            ncpus: 2,
            user: 10.0,
            system: 20.0,
            ..SystemCpu::default()
        }),
        notes: vec![Note {
            level: NoteLevel::Warning,
            code: "warn.page-cache".into(),
            message: "file smaller than RAM".into(),
        }],
        environment: Some(environment("/mnt/pool")),
        bonnie: None,
        repeats: None,
        interrupted: false,
        verdicts: Vec::new(),
        hosts: None,
        server_stats: None,
        diagnosis: None,
    }
}

/// Two groups: one of two jobs with group_reporting, one single job.
pub fn fio_run(started: u64) -> RunResult {
    let mut run = base_run(RunMode::Fio, started);
    let mut g1 = job("seq-read", (400 << 20, 100), (0, 0), 2000);
    g1.groupid = 1;
    run.groups = vec![
        GroupResult {
            id: 0,
            group_reporting: true,
            jobs: vec![
                job("rand", (4 << 20, 1024), (2 << 20, 512), 2000),
                job("rand", (4 << 20, 1024), (2 << 20, 512), 2000),
            ],
        },
        GroupResult {
            id: 1,
            group_reporting: false,
            jobs: vec![g1],
        },
    ];
    run
}

/// A sequential test (1 MiB IOs: 100 MiB read, 50 MiB written in 1 s) and a random one
/// (4 KiB IOs: 8,000 reads and 4,000 writes in 1 s).
pub fn quick_run(started: u64) -> RunResult {
    let mut run = base_run(RunMode::Quick, started);
    let seq = job("SEQ1M Q8T1", (100 << 20, 100), (50 << 20, 50), 1000);
    let mut random = job("RND4K Q32T1", (8000 << 12, 8000), (4000 << 12, 4000), 1000);
    random.header.rw = "randrw".into();
    run.groups = [seq, random]
        .into_iter()
        .enumerate()
        .map(|(i, mut job)| {
            if i == 0 {
                job.header.rw = "rw".into();
            }
            GroupResult {
                id: i as u32,
                group_reporting: true,
                jobs: vec![job],
            }
        })
        .collect();
    run
}

pub fn bonnie_run(started: u64) -> RunResult {
    let mut run = base_run(RunMode::Bonnie, started);
    run.bonnie = Some(BonnieResult {
        name: "nas1".into(),
        version: "2.00a".into(),
        concurrency: 1,
        file_size_mib: 512,
        chunk_bytes: 8192,
        seeks: 8192,
        seekers: 5,
        num_files: 16,
        num_dirs: 1,
        file_chunk_bytes: 8192,
        tests: vec![
            BonnieTest {
                id: BonnieTestId::PutBlock,
                rate: Some(250_784.0),
                cpu_pct: Some(51.0),
                elapsed_ns: 2_000_000_000,
                max_latency_ns: Some(957_000),
                span: None,
            },
            BonnieTest {
                id: BonnieTestId::GetBlock,
                rate: None,
                cpu_pct: None,
                elapsed_ns: 100_000_000,
                max_latency_ns: Some(362_000),
                span: None,
            },
            BonnieTest {
                id: BonnieTestId::Seeks,
                rate: Some(14_015.0),
                cpu_pct: Some(47.0),
                elapsed_ns: 3_000_000_000,
                max_latency_ns: None,
                span: None,
            },
        ],
        ..BonnieResult::default()
    });
    run
}
