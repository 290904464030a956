//! `compare` on two and three runs, checked against hand-computed values and percentages.
//! The seed article's table: PATA 28,790 KB/s at 24 % CPU, NFS 43,363 KB/s at 16 %, iSCSI
//! 31,503 KB/s at 30 %.

use storbench_model::result::*;
use storbench_report::compare::{Format, MetricId, NamedRun, compare, render};

/// One read job: `kb_per_s` thousand bytes/s over 10 s, `ios` IOs, CPU `cpu_s` seconds, and
/// completion latencies given as (ns, count).
fn job(name: &str, kb_per_s: u64, ios: u64, cpu_s: f64, lats: &[(u64, u64)]) -> JobResult {
    let mut dirs: [DirResult; 3] = Default::default();
    dirs[0].io_bytes = kb_per_s * 1000 * 10;
    dirs[0].total_ios = ios;
    dirs[0].runtime_ms = 10_000;
    for &(ns, n) in lats {
        (0..n).for_each(|_| dirs[0].clat.record(ns));
    }
    JobResult {
        name: name.into(),
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
        elapsed_ms: 10_000,
        runtime_ms: 10_000,
        end_unix_ms: 0,
        dirs,
        sync: SyncResult::default(),
        cpu: CpuUsage {
            usr_ns: (cpu_s * 0.25e9) as u64,
            sys_ns: (cpu_s * 0.75e9) as u64,
            ..CpuUsage::default()
        },
        depth: DepthStats::default(),
        lat_buckets: LatBuckets::default(),
        timeline: Vec::new(),
        engine_details: Vec::new(),
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

fn run(mode: RunMode, groups: Vec<Vec<JobResult>>) -> RunResult {
    RunResult {
        groups: groups
            .into_iter()
            .enumerate()
            .map(|(i, jobs)| GroupResult {
                id: i as u32,
                group_reporting: jobs.len() > 1,
                jobs,
            })
            .collect(),
        ..RunResult::new(mode, "storbench test".into(), 1_000, 2_000)
    }
}

fn pata() -> RunResult {
    run(
        RunMode::Fio,
        vec![vec![job(
            "copy",
            28_790,
            70_290,
            2.4,
            &[(50, 90), (100, 9), (120, 1)],
        )]],
    )
}
fn nfs() -> RunResult {
    run(
        RunMode::Fio,
        vec![vec![job(
            "copy",
            43_363,
            105_866,
            1.6,
            &[(25, 90), (60, 9), (127, 1)],
        )]],
    )
}
/// iSCSI also ran a second job the others did not.
fn iscsi() -> RunResult {
    run(
        RunMode::Fio,
        vec![
            vec![job("copy", 31_503, 78_802, 3.0, &[(50, 100)])],
            vec![job("extra", 1_000, 100, 0.1, &[(10, 1)])],
        ],
    )
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

fn row(
    c: &storbench_report::compare::Comparison,
    test: &str,
    m: MetricId,
) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    let t = c
        .tests
        .iter()
        .find(|t| t.test == test)
        .unwrap_or_else(|| panic!("no {test}"));
    let r = t
        .rows
        .iter()
        .find(|r| r.metric == m)
        .unwrap_or_else(|| panic!("no {m:?}"));
    (r.values.clone(), r.change_pct.clone())
}

fn approx(got: &[Option<f64>], want: &[Option<f64>]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        match (g, w) {
            (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9 * w.abs().max(1.0), "{g} vs {w}"),
            _ => assert_eq!(g, w),
        }
    }
}

#[test]
fn two_runs() {
    let runs = [(1, "PATA", pata()), (2, "NFS", nfs())];
    let c = compare(&named(&runs), 0);
    assert_eq!(c.tests.len(), 1);
    assert_eq!(c.tests[0].test, "copy read");
    let (v, p) = row(&c, "copy read", MetricId::BandwidthMb);
    approx(&v, &[Some(28.79), Some(43.363)]);
    approx(&p, &[Some(0.0), Some(50.618270232719695)]);
    let (v, _) = row(&c, "copy read", MetricId::BandwidthMib);
    approx(&v, &[Some(27.456283569335938), Some(41.35417938232422)]);
    let (v, p) = row(&c, "copy read", MetricId::Iops);
    approx(&v, &[Some(7029.0), Some(10586.6)]);
    approx(&p, &[Some(0.0), Some(50.61317399345568)]);
    let (v, p) = row(&c, "copy read", MetricId::CpuPct);
    approx(&v, &[Some(24.0), Some(16.0)]);
    approx(&p, &[Some(0.0), Some(-33.33333333333333)]);
    // Percentiles recomputed from the histograms (values below 128 ns are exact), in µs.
    let (v, p) = row(&c, "copy read", MetricId::ClatP50);
    approx(&v, &[Some(0.05), Some(0.025)]);
    approx(&p, &[Some(0.0), Some(-50.0)]);
    let (v, p) = row(&c, "copy read", MetricId::ClatP99);
    approx(&v, &[Some(0.1), Some(0.06)]);
    approx(&p, &[Some(0.0), Some(-40.0)]);
    let (v, p) = row(&c, "copy read", MetricId::ClatP999);
    approx(&v, &[Some(0.12), Some(0.127)]);
    approx(&p, &[Some(0.0), Some(5.833333333333333)]);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
}

#[test]
fn three_runs_with_unshared_test_and_other_baseline() {
    let runs = [
        (1, "PATA", pata()),
        (2, "NFS", nfs()),
        (3, "iSCSI", iscsi()),
    ];
    let c = compare(&named(&runs), 0);
    let (_, p) = row(&c, "copy read", MetricId::BandwidthMb);
    approx(
        &p,
        &[Some(0.0), Some(50.618270232719695), Some(9.423410906564783)],
    );
    let (_, p) = row(&c, "copy read", MetricId::CpuPct);
    approx(&p, &[Some(0.0), Some(-33.33333333333333), Some(25.0)]);
    let (_, p) = row(&c, "copy read", MetricId::Iops);
    approx(
        &p,
        &[Some(0.0), Some(50.61317399345568), Some(12.109830701379995)],
    );
    assert_eq!(
        c.notes,
        vec!["only in iSCSI, not compared: extra read".to_string()]
    );

    let c = compare(&named(&runs), 1);
    assert_eq!(c.baseline, 1);
    let (_, p) = row(&c, "copy read", MetricId::BandwidthMb);
    approx(
        &p,
        &[
            Some(-33.60699213615294),
            Some(0.0),
            Some(-27.350506191914764),
        ],
    );
    let (_, p) = row(&c, "copy read", MetricId::CpuPct);
    approx(&p, &[Some(50.0), Some(0.0), Some(87.5)]);
}

#[test]
fn group_reporting_entries_are_merged_before_comparing() {
    let pair = vec![
        job("pair", 10_000, 1_000, 1.0, &[(40, 10)]),
        job("pair", 30_000, 3_000, 3.0, &[(80, 10)]),
    ];
    let single = vec![job("pair", 20_000, 2_000, 1.0, &[(40, 20)])];
    let runs = [
        (1, "two", run(RunMode::Fio, vec![pair])),
        (2, "one", run(RunMode::Fio, vec![single])),
    ];
    let c = compare(&named(&runs), 0);
    let (v, p) = row(&c, "pair read", MetricId::BandwidthMb);
    approx(&v, &[Some(40.0), Some(20.0)]);
    approx(&p, &[Some(0.0), Some(-50.0)]);
    // fio's group CPU: summed CPU over summed runtime, 4 s / 20 s.
    let (v, _) = row(&c, "pair read", MetricId::CpuPct);
    approx(&v, &[Some(20.0), Some(10.0)]);
    let (v, _) = row(&c, "pair read", MetricId::ClatP50);
    approx(&v, &[Some(0.04), Some(0.04)]);
}

fn bonnie_run(put_block: Option<f64>, get_block: Option<f64>, cp: f64) -> RunResult {
    let mut r = run(RunMode::Bonnie, Vec::new());
    let t = |id, rate: Option<f64>, cpu: Option<f64>| BonnieTest {
        id,
        rate,
        cpu_pct: cpu,
        elapsed_ns: 1,
        max_latency_ns: Some(1_000_000),
        span: None,
    };
    r.bonnie = Some(BonnieResult {
        tests: vec![
            t(BonnieTestId::PutBlock, put_block, Some(cp)),
            t(BonnieTestId::GetBlock, get_block, get_block.map(|_| 10.0)),
            t(BonnieTestId::SeqCreate, Some(5000.0), Some(50.0)),
        ],
        ..BonnieResult::default()
    });
    r
}

#[test]
fn bonnie_columns() {
    let runs = [
        (1, "hdd", bonnie_run(Some(250_000.0), None, 50.0)),
        (
            2,
            "ssd",
            bonnie_run(Some(500_000.0), Some(1_000_000.0), 40.0),
        ),
    ];
    let c = compare(&named(&runs), 0);
    let names: Vec<&str> = c.tests.iter().map(|t| t.test.as_str()).collect();
    assert_eq!(
        names,
        [
            "Sequential Output Block",
            "Sequential Input Block",
            "Sequential Create"
        ]
    );
    let (v, p) = row(&c, "Sequential Output Block", MetricId::BandwidthMb);
    approx(&v, &[Some(256.0), Some(512.0)]);
    approx(&p, &[Some(0.0), Some(100.0)]);
    let (v, p) = row(&c, "Sequential Output Block", MetricId::CpuPct);
    approx(&v, &[Some(50.0), Some(40.0)]);
    approx(&p, &[Some(0.0), Some(-20.0)]);
    let (v, p) = row(&c, "Sequential Input Block", MetricId::BandwidthMib);
    approx(&v, &[None, Some(1_000_000.0 / 1024.0)]);
    assert_eq!(p, vec![None, None]);
    assert!(
        c.notes.iter().any(|n| n.contains("hdd finished too fast")),
        "{:?}",
        c.notes
    );
    let (v, _) = row(&c, "Sequential Create", MetricId::Rate);
    approx(&v, &[Some(5000.0), Some(5000.0)]);
}

/// A `+++++` is named once per run and test, also when every run printed it; a run that did
/// not run the test at all is not said to have been too fast.
#[test]
fn too_fast_notes_name_only_runs_that_printed_plus() {
    let mut no_io = bonnie_run(None, None, 0.0);
    if let Some(b) = no_io.bonnie.as_mut() {
        b.tests.retain(|t| t.id == BonnieTestId::SeqCreate);
    }
    let runs = [
        (1, "a", bonnie_run(Some(1.0), None, 1.0)),
        (2, "b", bonnie_run(Some(2.0), None, 1.0)),
        (3, "files-only", no_io),
    ];
    let c = compare(&named(&runs), 0);
    let too_fast: Vec<&str> = c
        .notes
        .iter()
        .filter(|n| n.contains("too fast"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        too_fast,
        [
            "Sequential Input Block: a finished too fast to measure (bonnie's +++++)",
            "Sequential Input Block: b finished too fast to measure (bonnie's +++++)",
        ]
    );
    // The tables print bonnie's own mark where a run has the test, `-` where it lacks it.
    let input = c
        .tests
        .iter()
        .find(|t| t.test == "Sequential Input Block")
        .unwrap();
    let cells = |metric| {
        let row = input.rows.iter().find(|r| r.metric == metric).unwrap();
        assert_eq!(row.too_fast, [true, true, false]);
        (0..3)
            .map(|i| row.cell(i, |v| v.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(cells(MetricId::BandwidthMb), ["+++++", "+++++", "-"]);
    assert_eq!(cells(MetricId::CpuPct), ["+++", "+++", "-"]);
    let mut out = Vec::new();
    render(
        &c,
        Format::Text {
            color: false,
            width: None,
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let line = text
        .lines()
        .skip_while(|l| *l != "Sequential Input Block")
        .find(|l| l.trim_start().starts_with("bandwidth MB/s"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(line.matches("+++++").count(), 2, "{line}");
}

#[test]
fn nothing_shared_is_said_plainly() {
    let runs = [
        (1, "fio", pata()),
        (2, "bonnie", bonnie_run(Some(1.0), Some(1.0), 1.0)),
    ];
    let c = compare(&named(&runs), 0);
    assert!(c.tests.is_empty());
    let mut out = Vec::new();
    render(
        &c,
        Format::Text {
            color: false,
            width: None,
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("These runs share no test."), "{text}");
    assert!(
        text.contains("only in fio, not compared: copy read"),
        "{text}"
    );
    assert!(
        text.contains("fio is a fio run, bonnie is a bonnie run: runs of different kinds"),
        "{text}"
    );
}

#[test]
fn text_table_layout_and_colours() {
    let runs = [
        (1, "PATA", pata()),
        (2, "NFS", nfs()),
        (3, "iSCSI", iscsi()),
    ];
    let c = compare(&named(&runs), 0);
    let mut out = Vec::new();
    render(
        &c,
        Format::Text {
            color: false,
            width: None,
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let expected_head = "Comparing PATA (#1), NFS (#2), iSCSI (#3); changes against PATA (#1)";
    assert!(text.starts_with(expected_head), "{text}");
    let bw = text.lines().find(|l| l.contains("bandwidth MB/s")).unwrap();
    let cols: Vec<&str> = bw.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "bandwidth",
            "MB/s",
            "28.79",
            "43.36",
            "+50.6%",
            "31.50",
            "+9.4%"
        ]
    );
    let cpu = text.lines().find(|l| l.contains("CPU %")).unwrap();
    assert_eq!(
        cpu.split_whitespace().collect::<Vec<_>>(),
        // CPU as a whole percentage, by the one number formatter.
        ["CPU", "%", "24%", "16%", "-33.3%", "30%", "+25.0%"]
    );
    assert!(!text.contains('\x1b'));

    let mut out = Vec::new();
    render(
        &c,
        Format::Text {
            color: true,
            width: None,
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    // Less CPU is better (green), more is worse (red); more bandwidth is better.
    assert!(text.contains("\x1b[32m  -33.3%\x1b[0m"), "{text:?}");
    assert!(text.contains("\x1b[31m  +25.0%\x1b[0m"), "{text:?}");
    assert!(text.contains("\x1b[32m  +50.6%\x1b[0m"), "{text:?}");
}

#[test]
fn markdown_csv_and_json() {
    let runs = [(1, "PATA", pata()), (2, "NFS", nfs())];
    let c = compare(&named(&runs), 0);
    let fmt = |f| {
        let mut out = Vec::new();
        render(&c, f, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let md = fmt(Format::Markdown);
    assert!(md.contains("| metric | PATA | NFS | Δ |"), "{md}");
    assert!(md.contains("| :--- | ---: | ---: | ---: |"), "{md}");
    assert!(
        md.contains("| bandwidth MB/s | 28.79 | 43.36 | +50.6% |"),
        "{md}"
    );

    let csv = fmt(Format::Csv);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("test,metric,unit,run_id,run,value,change_pct,reference,low,high,verdict,p")
    );
    assert!(
        csv.contains("copy read,bandwidth_mb,MB/s,2,NFS,43.363,50.618270232719"),
        "{csv}"
    );
    assert!(
        csv.contains("copy read,cpu_pct,%,1,PATA,24,0,true"),
        "{csv}"
    );

    let json: serde_json::Value = serde_json::from_str(&fmt(Format::Json)).unwrap();
    assert_eq!(json["baseline"], 0);
    assert_eq!(json["runs"][1]["name"], "NFS");
    assert_eq!(json["tests"][0]["rows"][0]["metric"], "bandwidth_mb");
    assert_eq!(json["tests"][0]["rows"][0]["values"][1], 43.363);
}

/// Markdown shares a comparison with its context: each run's settings (sizes and runtimes
/// with units), a Valid row under a test some run judged, and each run's notes.
#[test]
fn markdown_keeps_settings_verdicts_and_notes() {
    let mut suspect = nfs();
    suspect.global_options = vec![
        ("size".into(), "268435456".into()),
        ("runtime".into(), "30".into()),
    ];
    suspect.verdicts = vec![Verdict {
        job: "copy".into(),
        validity: Validity::Suspect,
        reasons: Vec::new(),
    }];
    suspect.notes = vec![Note {
        level: NoteLevel::Warning,
        code: "verdict.cache".into(),
        message: "the page cache served the reads".into(),
    }];
    let runs = [(1, "PATA", pata()), (2, "NFS", suspect)];
    let c = compare(&named(&runs), 0);
    let mut out = Vec::new();
    render(&c, Format::Markdown, &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    assert!(
        md.contains("- NFS: size 256 MiB · runtime 30 s · buffered\n"),
        "{md}"
    );
    assert!(md.contains("- PATA: "), "{md}");
    assert!(md.contains("| Valid | - | suspect |  |"), "{md}");
    assert!(
        md.contains("**notes of NFS**\n\n- warning: the page cache served the reads"),
        "{md}"
    );
    assert!(!md.contains("notes of PATA"), "{md}");
}

/// Quick runs compare the quick table's rows: one test per preset test and direction.
#[test]
fn quick_tests_are_the_table_rows() {
    let quick = |kb: u64| {
        let threads = vec![
            job("RND4K Q32T16 read", kb, 1_000, 1.0, &[(50, 10)]),
            job("RND4K Q32T16 read", kb, 1_000, 1.0, &[(50, 10)]),
        ];
        let seq = vec![job("SEQ1M Q8T1 read", kb * 10, 100, 1.0, &[(100, 10)])];
        run(RunMode::Quick, vec![seq, threads])
    };
    let runs = [(1, "a", quick(1_000)), (2, "b", quick(2_000))];
    let c = compare(&named(&runs), 0);
    let names: Vec<&str> = c.tests.iter().map(|t| t.test.as_str()).collect();
    assert_eq!(names, ["SEQ1M Q8T1 read", "RND4K Q32T16 read"]);
    // Two threads of 1000 kB/s each over the same 10 s: 2 MB/s, then 4 MB/s (+100 %).
    let (v, p) = row(&c, "RND4K Q32T16 read", MetricId::BandwidthMb);
    approx(&v, &[Some(2.0), Some(4.0)]);
    approx(&p, &[Some(0.0), Some(100.0)]);
    // The quick table's CPU: both threads' 2 s over the 10 s wall time.
    let (v, _) = row(&c, "RND4K Q32T16 read", MetricId::CpuPct);
    approx(&v, &[Some(20.0), Some(20.0)]);
}

/// A latency row has one unit, the one its least value reads in: ns below 1 µs, ms when
/// every value is at least 1 ms; IOPS is not "IOPS IOPS".
#[test]
fn latency_units_follow_the_values() {
    let slow = |p50_ns: u64| {
        run(
            RunMode::Fio,
            vec![vec![job("j", 1_000, 100, 1.0, &[(p50_ns, 10)])]],
        )
    };
    let runs = [(1, "a", slow(20_000_000)), (2, "b", slow(30_000_000))];
    let c = compare(&named(&runs), 0);
    let mut out = Vec::new();
    render(
        &c,
        Format::Text {
            color: false,
            width: None,
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let p50 = text.lines().find(|l| l.contains("latency p50")).unwrap();
    // 20 ms and 30 ms land in histogram buckets whose midpoints are within 1/128.
    assert!(p50.contains("latency p50 ms"), "{text}");
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("IOPS ")),
        "{text}"
    );
    assert!(!text.contains("IOPS IOPS"));

    let fast = [(1, "a", pata()), (2, "b", nfs())];
    let c = compare(&named(&fast), 0);
    let mut out = Vec::new();
    render(
        &c,
        Format::Text {
            color: false,
            width: None,
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    let p50 = text.lines().find(|l| l.contains("latency p50")).unwrap();
    assert_eq!(
        p50.split_whitespace().collect::<Vec<_>>(),
        ["latency", "p50", "ns", "50.00", "25.00", "-50.0%"]
    );
}

/// The same job over NFSv3 and over NFSv4.1 measures two protocols: the comparison says so.
#[test]
fn nfs_versions_are_a_setting_in_which_runs_differ() {
    let over = |protocol: &str| {
        let mut j = job("seq", 40_000, 100, 1.0, &[(100, 10)]);
        j.engine_details = vec![("protocol".into(), protocol.into())];
        run(RunMode::Fio, vec![vec![j]])
    };
    let runs = [(1, "v3", over("NFSv3")), (2, "v4", over("NFSv4.1"))];
    let c = compare(&named(&runs), 0);
    assert!(
        c.warnings
            .iter()
            .any(|w| w == "runs differ in protocol: v3 NFSv3, v4 NFSv4.1"),
        "{:?}",
        c.warnings
    );
    let same = [(1, "a", over("NFSv3")), (2, "b", over("NFSv3"))];
    let c = compare(&named(&same), 0);
    assert!(
        c.warnings.iter().all(|w| !w.contains("protocol")),
        "{:?}",
        c.warnings
    );
}
