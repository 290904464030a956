use super::*;
use crate::fixtures;
use crate::result::*;

fn job(name: &str, write_bytes: u64, end_unix_ms: u64, runtime_ms: u64) -> JobResult {
    let mut j = fixtures::job();
    j.name = name.into();
    j.dirs[1].io_bytes = write_bytes;
    j.dirs[1].runtime_ms = runtime_ms;
    j.elapsed_ms = runtime_ms;
    j.runtime_ms = runtime_ms;
    j.end_unix_ms = end_unix_ms;
    j
}

fn run_of(jobs: Vec<JobResult>) -> RunResult {
    let mut run = fixtures::run_of(jobs);
    run.started_unix_ms = 1_000;
    run.finished_unix_ms = 9_000;
    run.notes.push(Note {
        level: NoteLevel::Info,
        code: "info.x".into(),
        message: "m".into(),
    });
    run
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

/// A run of one write job of `mb` MB over 2 s through interface `nic` shaped to `mbps`,
/// on a host whose 2 CPUs were `busy` percent busy.
fn linked(mb: u64, nic: &str, mbps: u64, busy: f64) -> RunResult {
    let mut j = job("j", mb * MB, 12_000, 2_000);
    j.engine_details = vec![("interface".into(), nic.into())];
    let mut run = run_of(vec![j]);
    run.nics = vec![NicUsage {
        name: nic.into(),
        tx_bytes: mb * MB,
        duration_ms: 2_000,
        speed_mbps: Some(mbps),
        ..Default::default()
    }];
    run.system_cpu = Some(SystemCpu {
        ncpus: 2,
        user: busy * 2.0 * 0.75,
        system: busy * 2.0 * 0.25,
        ..Default::default()
    });
    run
}

fn limits_of(run: &RunResult, code: &str) -> Vec<String> {
    run.notes
        .iter()
        .filter(|n| n.code == code)
        .map(|n| n.message.clone())
        .collect()
}

#[test]
fn full_client_links_are_named_with_their_sum() {
    // Three 400 Mbit/s clients moving 47 MB/s each: 1128 of 1200 Mbit/s, 94%.
    let ranks: Vec<RankRun> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(r, h)| rank(r as u32, h, 0.0, Ok(linked(94, "eth0", 400, 20.0))))
        .collect();
    let run = merge("mpi", ranks).unwrap();
    let named = limits_of(&run, "limit.hosts.client_links");
    assert_eq!(named.len(), 1, "{:?}", run.notes);
    assert!(
        named[0].contains("the 3 ranks wrote 141.0 MB/s (1128 Mbit/s) together, 94% of their links' 1200 Mbit/s (a 400, b 400, c 400 Mbit/s)"),
        "{}",
        named[0]
    );
    assert!(limits_of(&run, "limit.hosts.server_side").is_empty());
    let p = &run.hosts.as_ref().unwrap().groups[0].per_rank[1];
    assert_eq!((p.link.as_deref(), p.link_mbps), (Some("eth0"), Some(400)));
}

#[test]
fn a_sum_below_idle_client_links_points_past_the_clients() {
    // Three 400 Mbit/s clients at 20, 22 and 20 MB/s (40%, 44%, 40% of their links) moved
    // 496 of 1200 Mbit/s together: something past them held them back.
    let ranks = vec![
        rank(0, "a", 0.0, Ok(linked(40, "eth0", 400, 20.0))),
        rank(1, "b", 0.0, Ok(linked(44, "eth0", 400, 20.0))),
        rank(2, "c", 0.0, Ok(linked(40, "eth0", 400, 20.0))),
    ];
    let run = merge("mpi", ranks).unwrap();
    let named = limits_of(&run, "limit.hosts.server_side");
    assert_eq!(named.len(), 1, "{:?}", run.notes);
    assert!(
        named[0].contains("62.0 MB/s (496 Mbit/s) together, 41% of their links' 1200 Mbit/s"),
        "{}",
        named[0]
    );
    assert!(named[0].contains("the fullest, b, at 44%"), "{}", named[0]);
    assert!(limits_of(&run, "limit.hosts.client_links").is_empty());
}

#[test]
fn a_busy_client_host_is_named_with_its_figure_and_unknown_links_are_not_judged() {
    let ranks = vec![
        rank(0, "a", 0.0, Ok(linked(40, "eth0", 400, 20.0))),
        rank(1, "b", 0.0, Ok(linked(40, "eth0", 400, 98.0))),
        rank(
            2,
            "c",
            0.0,
            Ok(run_of(vec![job("j", 40 * MB, 12_000, 2_000)])),
        ),
    ];
    let run = merge("mpi", ranks).unwrap();
    let cpu = limits_of(&run, "limit.hosts.cpu");
    assert_eq!(
        cpu,
        [
            "b (rank 1)'s CPUs were 98% busy over its run (2 CPUs): that host's CPU may have held its share back"
        ]
    );
    let infos = &run.hosts.as_ref().unwrap().ranks;
    assert_eq!(infos[0].ncpus, Some(2));
    assert!(infos[2].cpu_busy_percent.is_none());
    // Rank c's link is unknown: the sum of the links is not judged.
    assert!(limits_of(&run, "limit.hosts.server_side").is_empty());
    assert!(limits_of(&run, "limit.hosts.client_links").is_empty());
}

#[test]
fn ranks_timelines_are_summed_per_second_on_rank_0s_clock() {
    // Rank 0 measured from 10_000 to 12_000 (points at 1 s and 2 s); rank 1's clock runs
    // 500 ms ahead, so its points at 1 s and 2 s after its start (10_500 on its clock,
    // 10_000 on rank 0's) fall in the same seconds; rank 2 started a second later.
    let with_points = |end: u64, mb: [u64; 2]| {
        let mut j = job("j", (mb[0] + mb[1]) * MB, end, 2_000);
        j.timeline = mb
            .iter()
            .enumerate()
            .map(|(i, &m)| TimelinePoint {
                t_ms: (i as u64 + 1) * 1000,
                bytes: [0, m * MB, 0],
                ios: [0, m, 0],
                lat_sum_ns: [0, m * 1000, 0],
            })
            .collect();
        Ok(run_of(vec![j]))
    };
    let ranks = vec![
        rank(0, "a", 0.0, with_points(12_000, [10, 20])),
        rank(1, "b", 500.0, with_points(12_500, [1, 2])),
        rank(2, "c", 0.0, with_points(13_000, [100, 200])),
    ];
    let g = aggregate(0, &ranks).unwrap();
    let bytes: Vec<u64> = g.timeline.iter().map(|p| p.bytes[1] / MB).collect();
    assert_eq!(bytes, [11, 122, 200]);
    let ends: Vec<u64> = g.timeline.iter().map(|p| p.t_ms).collect();
    assert_eq!(ends, [1000, 2000, 3000]);
    assert_eq!(g.timeline[1].ios[1], 122);
    // The seconds hold every byte the ranks moved.
    let sum: u64 = g.timeline.iter().map(|p| p.bytes[1]).sum();
    assert_eq!(sum, g.bytes[1]);
}
