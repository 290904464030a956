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
