//! Results built by hand for unit tests of the code that reads them (analysis, the
//! multi-host merge): one job and a run around it, every field at a plain value, so a test
//! states only what it is about and a new result field is added here once.

use crate::result::*;

/// A run of one group holding `job`, started and finished at 0.
pub fn run_with(job: JobResult) -> RunResult {
    run_of(vec![job])
}

/// A run of one group holding `jobs`, started and finished at 0.
pub fn run_of(jobs: Vec<JobResult>) -> RunResult {
    RunResult {
        schema: RESULT_SCHEMA,
        mode: RunMode::Fio,
        tool_version: "t".into(),
        started_unix_ms: 0,
        finished_unix_ms: 0,
        command_line: vec![],
        job_files: vec![],
        global_options: vec![],
        groups: vec![GroupResult {
            id: 0,
            group_reporting: false,
            jobs,
        }],
        disks: vec![],
        nics: vec![],
        system_cpu: None,
        notes: vec![],
        environment: None,
        bonnie: None,
        repeats: None,
        interrupted: false,
        verdicts: Vec::new(),
        hosts: None,
        server_stats: None,
        diagnosis: None,
    }
}

/// One 5 s job named `j` on `/tmp/x` with direct IO and no IO counted.
pub fn job() -> JobResult {
    JobResult {
        name: "j".into(),
        groupid: 0,
        jobnum: 0,
        jobs: 1,
        pid: 1,
        error: 0,
        error_text: None,
        description: None,
        options: vec![],
        header: JobHeader {
            direct: true,
            ..Default::default()
        },
        settings: ReportSettings::default(),
        targets: vec!["/tmp/x".into()],
        elapsed_ms: 5000,
        runtime_ms: 5000,
        end_unix_ms: 0,
        dirs: Default::default(),
        sync: Default::default(),
        cpu: Default::default(),
        depth: Default::default(),
        lat_buckets: Default::default(),
        timeline: vec![],
        engine_details: vec![],
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

/// A bonnie run (mode Bonnie, no groups) holding `bonnie`.
pub fn bonnie_run(bonnie: BonnieResult) -> RunResult {
    let mut run = run_of(vec![]);
    run.groups.clear();
    run.mode = RunMode::Bonnie;
    run.bonnie = Some(bonnie);
    run
}

/// A bonnie suite named `name` of 8 MiB, one copy, 1024 files, without tests.
pub fn bonnie(name: &str) -> BonnieResult {
    BonnieResult {
        name: name.into(),
        version: "storbench-t".into(),
        concurrency: 1,
        seed: 1,
        file_size_mib: 8,
        chunk_bytes: 8192,
        seeks: 8192,
        seekers: 5,
        num_files: 1,
        max_size: 0,
        min_size: 0,
        num_dirs: 0,
        file_chunk_bytes: 8192,
        compressible: false,
        target_compression: None,
        compression_unknown: None,
        direct: false,
        fsync_each_write: false,
        tests: Vec::new(),
    }
}

/// A test `id` that started at `start_ms` (ms since the epoch), ran `ms` and did `work`,
/// its rate by bonnie++'s rule, with 10% of one CPU.
pub fn bonnie_test(id: BonnieTestId, start_ms: u64, ms: u64, work: f64) -> BonnieTest {
    let elapsed_ns = ms * 1_000_000;
    BonnieTest {
        id,
        rate: (elapsed_ns >= 500_000_000).then(|| work * 1000.0 / ms as f64),
        cpu_pct: (elapsed_ns >= 500_000_000).then_some(10.0),
        elapsed_ns,
        max_latency_ns: Some(ms * 1000),
        span: Some(TestSpan {
            start_unix_ns: start_ms * 1_000_000,
            work,
            cpu_ns: elapsed_ns / 10,
        }),
    }
}
