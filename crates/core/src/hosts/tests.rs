use super::*;
use crate::result::*;

fn job(name: &str, write_bytes: u64, end_unix_ms: u64, runtime_ms: u64) -> JobResult {
    let mut dirs: [DirResult; 3] = Default::default();
    dirs[1].io_bytes = write_bytes;
    dirs[1].runtime_ms = runtime_ms;
    JobResult {
        name: name.into(),
        groupid: 0,
        jobnum: 0,
        jobs: 1,
        pid: 1,
        error: 0,
        error_text: None,
        description: None,
        options: vec![],
        header: Default::default(),
        settings: ReportSettings::default(),
        targets: vec![],
        elapsed_ms: runtime_ms,
        runtime_ms,
        end_unix_ms,
        dirs,
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

fn run_of(jobs: Vec<JobResult>) -> RunResult {
    RunResult {
        schema: RESULT_SCHEMA,
        mode: RunMode::Fio,
        tool_version: "t".into(),
        started_unix_ms: 1_000,
        finished_unix_ms: 9_000,
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
        notes: vec![Note {
            level: NoteLevel::Info,
            code: "info.x".into(),
            message: "m".into(),
        }],
        environment: None,
        bonnie: None,
        repeats: None,
        interrupted: false,
        verdicts: Vec::new(),
        hosts: None,
        server_stats: None,
    }
}

fn rank(rank: u32, host: &str, offset: f64, result: Result<RunResult, String>) -> RankRun {
    RankRun {
        rank,
        host: host.into(),
        clock_offset_ms: offset,
        result,
    }
}

const MB: u64 = 1_000_000;

#[test]
fn aggregate_is_all_bytes_over_earliest_start_to_latest_end() {
    // Rank 0: 100 MB from 10_000 to 12_000 (50 MB/s). Rank 1: 100 MB from 10_500 to 12_500
    // on its own clock, which runs 500 ms ahead: 10_000 to 12_000 on rank 0's. Rank 2:
    // 200 MB from 10_000 to 14_000.
    let ranks = vec![
        rank(
            0,
            "a",
            0.0,
            Ok(run_of(vec![job("j", 100 * MB, 12_000, 2_000)])),
        ),
        rank(
            1,
            "b",
            500.0,
            Ok(run_of(vec![job("j", 100 * MB, 12_500, 2_000)])),
        ),
        rank(
            2,
            "c",
            0.0,
            Ok(run_of(vec![job("j", 200 * MB, 14_000, 4_000)])),
        ),
    ];
    let g = aggregate(0, &ranks).unwrap();
    assert_eq!(g.bytes[1], 400 * MB);
    assert_eq!(g.start_unix_ms, 10_000);
    assert_eq!(g.first_done_ms, 2_000);
    assert_eq!(g.last_done_ms, 4_000);
    assert!((g.aggregate_bw[1] - 100.0 * MB as f64).abs() < 1.0, "{g:?}");
    // At the first end: 100 + 100 + half of rank 2's 200 MB, over 2 s.
    assert!(
        (g.first_done_bw[1] - 150.0 * MB as f64).abs() < 1.0,
        "{g:?}"
    );
    assert_eq!(
        g.per_rank[1].start_ms, 0,
        "the offset puts rank 1 on rank 0's clock"
    );
    assert!((g.per_rank[2].bw[1] - 50.0 * MB as f64).abs() < 1.0);
}

#[test]
fn ranks_that_run_together_aggregate_to_their_sum() {
    let ranks: Vec<RankRun> = (0..3)
        .map(|r| {
            rank(
                r,
                "h",
                0.0,
                Ok(run_of(vec![job("j", 80 * MB, 12_000, 2_000)])),
            )
        })
        .collect();
    let g = aggregate(0, &ranks).unwrap();
    let sum: f64 = g.per_rank.iter().map(|p| p.bw[1]).sum();
    assert!(
        (g.aggregate_bw[1] - sum).abs() < 1.0,
        "{} vs {sum}",
        g.aggregate_bw[1]
    );
}

#[test]
fn merge_names_jobs_by_host_and_keeps_failed_ranks() {
    let ranks = vec![
        rank(0, "a", 0.0, Ok(run_of(vec![job("j", MB, 12_000, 2_000)]))),
        rank(1, "b", 0.0, Err("nfs: connection refused".into())),
        rank(2, "c", 0.0, Ok(run_of(vec![job("j", MB, 12_000, 2_000)]))),
    ];
    let run = merge("mpi", ranks).unwrap();
    let names: Vec<&str> = run.groups[0].jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["a:j", "c:j"]);
    assert_eq!(split_name(names[1]), ("c", "j"));
    assert_eq!(split_name("plain"), ("", "plain"));
    let hosts = run.hosts.as_ref().unwrap();
    assert_eq!(hosts.ranks.len(), 3);
    assert_eq!(
        hosts.ranks[1].error.as_deref(),
        Some("nfs: connection refused")
    );
    assert!(
        run.notes
            .iter()
            .any(|n| n.code == "warn.rank" && n.message.contains("b (rank 1)"))
    );
    assert!(run.notes.iter().any(|n| n.message == "c: m"));
    assert_eq!(hosts.groups[0].per_rank.len(), 2);
}

#[test]
fn ranks_on_one_host_are_told_apart_by_rank() {
    let ranks: Vec<RankRun> = (0..2).map(|r| rank(r, "h", 0.0, Err("x".into()))).collect();
    assert_eq!(labels(&ranks), ["h#0", "h#1"]);
    assert_eq!(merge("mpi", ranks).unwrap_err(), "rank 0: x; rank 1: x");
}

#[test]
fn a_multi_host_result_survives_json() {
    let ranks = vec![rank(
        0,
        "a",
        0.25,
        Ok(run_of(vec![job("j", MB, 12_000, 2_000)])),
    )];
    let run = merge("mpi", ranks).unwrap();
    let back: RunResult = serde_json::from_str(&serde_json::to_string(&run).unwrap()).unwrap();
    assert_eq!(back, run);
}

#[test]
fn a_rank_below_seventy_percent_of_the_median_is_named() {
    // 100, 100 and 69 MB/s: the median is 100, 69 is below 70.
    let ranks = vec![
        rank(
            0,
            "a",
            0.0,
            Ok(run_of(vec![job("j", 200 * MB, 12_000, 2_000)])),
        ),
        rank(
            1,
            "b",
            0.0,
            Ok(run_of(vec![job("j", 200 * MB, 12_000, 2_000)])),
        ),
        rank(
            2,
            "c",
            0.0,
            Ok(run_of(vec![job("j", 138 * MB, 12_000, 2_000)])),
        ),
    ];
    let run = merge("mpi", ranks).unwrap();
    let named: Vec<&str> = run
        .notes
        .iter()
        .filter(|n| n.code == "warn.straggler")
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
    assert!(
        named[0].contains("c (rank 2) wrote at 69.0 MB/s"),
        "{}",
        named[0]
    );
    // At 71 MB/s it is not.
    let ranks = vec![
        rank(
            0,
            "a",
            0.0,
            Ok(run_of(vec![job("j", 200 * MB, 12_000, 2_000)])),
        ),
        rank(
            1,
            "b",
            0.0,
            Ok(run_of(vec![job("j", 200 * MB, 12_000, 2_000)])),
        ),
        rank(
            2,
            "c",
            0.0,
            Ok(run_of(vec![job("j", 142 * MB, 12_000, 2_000)])),
        ),
    ];
    let run = merge("mpi", ranks).unwrap();
    assert!(!run.notes.iter().any(|n| n.code == "warn.straggler"));
}
