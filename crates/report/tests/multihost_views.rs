//! A multi-host run in `compare` and the HTML report (docs/multihost.md): per-host rows
//! (each rank's jobs), the All clients test with IOR's aggregate and the ranks' summed
//! timeline, and the straggler marked in the report's per-rank table.

use storbench_model::hosts::{RankRun, merge};
use storbench_model::result::*;
use storbench_report::compare::{MetricId, NamedRun, compare};

const MB: u64 = 1_000_000;

/// A write job of `mb` MB over 2 s ending at 12 s, with one timeline point per second.
fn job(mb: u64) -> JobResult {
    let mut dirs: [DirResult; 3] = Default::default();
    dirs[1].io_bytes = mb * MB;
    dirs[1].total_ios = mb;
    dirs[1].runtime_ms = 2_000;
    let half = TimelinePoint {
        t_ms: 1_000,
        bytes: [0, mb * MB / 2, 0],
        ios: [0, mb / 2, 0],
        lat_sum_ns: [0; 3],
    };
    JobResult {
        name: "w".into(),
        groupid: 0,
        jobnum: 0,
        jobs: 1,
        pid: 1,
        error: 0,
        error_text: None,
        description: None,
        options: Vec::new(),
        header: JobHeader::default(),
        settings: ReportSettings::default(),
        targets: Vec::new(),
        elapsed_ms: 2_000,
        runtime_ms: 2_000,
        end_unix_ms: 12_000,
        dirs,
        sync: SyncResult::default(),
        cpu: CpuUsage::default(),
        depth: DepthStats::default(),
        lat_buckets: LatBuckets::default(),
        timeline: vec![
            half.clone(),
            TimelinePoint {
                t_ms: 2_000,
                ..half
            },
        ],
        engine_details: Vec::new(),
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

fn one_rank(mb: u64) -> RunResult {
    RunResult {
        schema: RESULT_SCHEMA,
        mode: RunMode::Fio,
        tool_version: "storbench test".into(),
        started_unix_ms: 10_000,
        finished_unix_ms: 12_000,
        command_line: Vec::new(),
        job_files: Vec::new(),
        global_options: Vec::new(),
        groups: vec![GroupResult {
            id: 0,
            group_reporting: false,
            jobs: vec![job(mb)],
        }],
        disks: Vec::new(),
        nics: Vec::new(),
        system_cpu: None,
        notes: Vec::new(),
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

/// Three hosts writing `mb` MB each in 2 s, host c only `c_mb`.
fn three_hosts(mb: u64, c_mb: u64) -> RunResult {
    let ranks = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(r, h)| RankRun {
            rank: r as u32,
            host: h.to_string(),
            clock_offset_ms: 0.0,
            result: Ok(one_rank(if *h == "c" { c_mb } else { mb })),
        })
        .collect();
    merge("mpi", ranks).unwrap()
}

fn named<'a>(runs: &'a [(i64, &str, RunResult)]) -> Vec<NamedRun<'a>> {
    runs.iter()
        .map(|(id, name, run)| NamedRun {
            id: *id,
            name: name.to_string(),
            run,
        })
        .collect()
}

#[test]
fn compare_has_a_row_per_host_and_all_clients_with_the_aggregate() {
    let runs = [
        (1, "before", three_hosts(100, 100)),
        (2, "after", three_hosts(100, 40)),
    ];
    let c = compare(&named(&runs), 0);
    let bw = |test: &str| {
        let t = c
            .tests
            .iter()
            .find(|t| t.test == test)
            .unwrap_or_else(|| panic!("no {test} in {:?}", c.tests));
        let r = t.rows.iter().find(|r| r.metric == MetricId::BandwidthMb);
        r.unwrap().values.clone()
    };
    assert_eq!(bw("a:w write"), [Some(50.0), Some(50.0)]);
    assert_eq!(bw("c:w write"), [Some(50.0), Some(20.0)]);
    // 300 MB and 240 MB over the 2 s from the earliest start to the latest end.
    assert_eq!(bw("All clients write"), [Some(150.0), Some(120.0)]);
}

#[test]
fn the_report_has_the_per_rank_table_with_the_straggler_and_the_summed_timeline() {
    let runs = [(1, "three hosts", three_hosts(100, 40))];
    let mut out = Vec::new();
    storbench_report::html::render(&named(&runs), 0, &Default::default(), &mut out).unwrap();
    let html = String::from_utf8(out).unwrap();
    assert!(
        html.contains("<table class=\"hosts\">"),
        "no per-rank table"
    );
    let rows: Vec<&str> = html
        .lines()
        .filter(|l| l.starts_with("<tr><td>0</td>"))
        .collect();
    assert_eq!(rows.len(), 3, "{rows:#?}");
    assert!(rows[0].contains("<td>a</td>") && rows[0].contains("<td>50.0</td>"));
    assert!(!rows[0].contains("straggler"), "{}", rows[0]);
    assert!(
        rows[2].contains("<td>c</td>")
            && rows[2].contains("straggler: below 70% of the median 50.0 MB/s"),
        "{}",
        rows[2]
    );
    assert!(
        html.contains("All clients</td><td>write</td><td>240.0</td><td>120.0</td>"),
        "no All clients row"
    );
    // The chart data holds the All clients timeline: 120 MB in each second.
    let data = html
        .split("\"test\":\"All clients write\"")
        .nth(1)
        .expect("an All clients chart");
    assert!(
        data.contains("\"mbps\":[120.0,120.0]"),
        "{}",
        &data[..300.min(data.len())]
    );
}
