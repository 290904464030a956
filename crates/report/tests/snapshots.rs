//! Snapshot tests of every reporter, fed by deterministic results built in `common::sample`.
//! Review changes with `cargo insta review`; the layouts themselves are checked against real
//! fio in `fio_compat.rs`.

mod common;

use storbench_model::result::{Note, NoteLevel, RunResult, UnifiedRw};
use storbench_report::fio::{self, FioFormat, FioOpts};
use storbench_report::{quick, status};

use common::sample::{self, Shape, group, job, run};

fn render(r: &RunResult, format: FioFormat) -> String {
    let mut out = Vec::new();
    let opts = FioOpts {
        utc_offset_secs: Some(0),
    };
    fio::render(r, format, &opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn psync_run() -> RunResult {
    let mut r = run(vec![group(
        0,
        false,
        vec![job(&Shape::psync_randrw(), 0, 0)],
    )]);
    r.notes = vec![
        Note {
            level: NoteLevel::Warning,
            code: "warn.page-cache".into(),
            message: "writes completed in 6.7 µs on average: buffered, not on the device".into(),
        },
        Note {
            level: NoteLevel::Limit,
            code: "limit.cpu".into(),
            message: "the job's thread was busy 52% of the time".into(),
        },
    ];
    r
}

fn grouped_run() -> RunResult {
    let s = Shape {
        numjobs: 2,
        ..Shape::libaio_randread()
    };
    run(vec![group(0, true, vec![job(&s, 0, 0), job(&s, 0, 1)])])
}

#[test]
fn normal_single_job() {
    insta::assert_snapshot!(render(&psync_run(), FioFormat::Normal));
}

#[test]
fn normal_group_reporting() {
    insta::assert_snapshot!(render(&grouped_run(), FioFormat::Normal));
}

#[test]
fn normal_clones_and_groups() {
    let mut s = Shape::libaio_randread();
    s.name = "clone";
    s.numjobs = 2;
    let mut w = Shape::psync_randrw();
    w.name = "si";
    w.rw = "write";
    w.ios = [0, 20_000, 0];
    w.fsyncs = 5000;
    w.settings.kb_base = 1000;
    w.settings.lat_percentiles = true;
    let mut second = job(&w, 1, 0);
    second.description = Some("write with fsync every 4 writes".into());
    second.error = 5;
    second.error_text = Some("Input/output error".into());
    let mut r = run(vec![
        group(0, false, vec![job(&s, 0, 0), job(&s, 0, 1)]),
        group(1, false, vec![second]),
    ]);
    r.interrupted = true;
    insta::assert_snapshot!(render(&r, FioFormat::Normal));
}

#[test]
fn normal_unified_both_and_mixed() {
    let mut s = Shape::psync_randrw();
    s.settings.unified_rw = UnifiedRw::Both;
    let mut m = Shape::psync_randrw();
    m.name = "mix";
    m.settings.unified_rw = UnifiedRw::Mixed;
    let r = run(vec![
        group(0, false, vec![job(&s, 0, 0)]),
        group(1, false, vec![job(&m, 1, 0)]),
    ]);
    insta::assert_snapshot!(render(&r, FioFormat::Normal));
}

#[test]
fn normal_gtod_reduce_and_bits() {
    let mut s = Shape::psync_randrw();
    s.settings.clat_measured = false;
    s.settings.slat_measured = false;
    s.settings.lat_measured = false;
    s.settings.unit_base = 1;
    let r = run(vec![group(0, false, vec![job(&s, 0, 0)])]);
    insta::assert_snapshot!(render(&r, FioFormat::Normal));
}

#[test]
fn json_group_reporting() {
    let mut r = grouped_run();
    r.global_options = vec![
        ("ioengine".into(), "libaio".into()),
        ("thread".into(), String::new()),
    ];
    insta::assert_snapshot!(render(&r, FioFormat::Json));
}

#[test]
fn json_plus_single_job() {
    let mut s = Shape::psync_randrw();
    s.ios = [300, 200, 0];
    let r = run(vec![group(0, false, vec![job(&s, 0, 0)])]);
    insta::assert_snapshot!(render(&r, FioFormat::JsonPlus));
}

#[test]
fn terse_lines() {
    let mut r = grouped_run();
    r.groups
        .push(group(1, false, vec![job(&Shape::psync_randrw(), 1, 0)]));
    insta::assert_snapshot!(render(&r, FioFormat::Terse));
}

#[test]
fn terse_has_121_fields_plus_9_per_disk() {
    let mut r = psync_run();
    r.disks.clear();
    let line = render(&r, FioFormat::Terse);
    assert_eq!(line.trim_end().split(';').count(), fio::terse::FIELDS);
    r.disks = vec![sample::disk()];
    let line = render(&r, FioFormat::Terse);
    assert_eq!(line.trim_end().split(';').count(), 130);
    r.disks.push(sample::disk());
    let line = render(&r, FioFormat::Terse);
    assert_eq!(
        line.trim_end().split(';').count(),
        121 + 2 * fio::terse::DISK_FIELDS
    );
}

#[test]
fn several_formats_in_fio_order() {
    let r = psync_run();
    let mut out = Vec::new();
    let formats = [FioFormat::Normal, FioFormat::Terse, FioFormat::JsonPlus];
    fio::render_many(
        &r,
        &formats,
        &FioOpts {
            utc_offset_secs: Some(0),
        },
        &mut out,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("3;fio-3.33 (storbench 0.1.0);t;0;0;"));
    let json_start = text.find("\n{\n").unwrap();
    let normal_start = text.find("\nt: (groupid=0").unwrap();
    assert!(json_start < normal_start);
    assert!(text.contains("\"bins\""));
}

#[test]
fn start_lines() {
    let s = Shape::libaio_randread();
    let j = job(&s, 0, 0);
    let w = job(&Shape::psync_randrw(), 1, 0);
    let jobs = [
        fio::header::StartJob {
            name: &j.name,
            groupid: 0,
            header: &j.header,
            settings: &j.settings,
        },
        fio::header::StartJob {
            name: &w.name,
            groupid: 1,
            header: &w.header,
            settings: &w.settings,
        },
    ];
    let mut out = Vec::new();
    fio::header::write_start(&jobs, "storbench-0.1.0", (2, 0), &mut out).unwrap();
    writeln_layout(&mut out);
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}

fn writeln_layout(out: &mut Vec<u8>) {
    use std::io::Write;
    writeln!(out, "{}", fio::header::layout_line("t", 1, 64 << 20)).unwrap();
}

#[test]
fn quick_table() {
    let mut out = Vec::new();
    quick::render(&sample::quick_run(), &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}

#[test]
fn quick_json() {
    let mut out = Vec::new();
    quick::render_json(&sample::quick_run(), &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}

/// A server on this host gets its own column and a footnote naming it.
#[test]
fn quick_table_with_server_cpu() {
    let mut out = Vec::new();
    quick::render(&sample::loopback_quick_run(), &mut out).unwrap();
    insta::assert_snapshot!(String::from_utf8(out).unwrap());
}

/// fio's normal output keeps fio's lines (the server's CPU is told in the notes); the JSON
/// keeps it under storbench's own key, out of fio's job objects.
#[test]
fn server_cpu_in_normal_and_json() {
    let r = sample::loopback_quick_run();
    let text = render(&r, FioFormat::Normal);
    let cpu = text.find("  cpu          : usr=").expect("cpu line");
    let next = text[cpu..].lines().nth(1).unwrap_or_default();
    assert!(next.starts_with("  IO depths    : "), "{text}");
    assert!(!text.contains("server"), "{text}");
    let doc: serde_json::Value = serde_json::from_str(&render(&r, FioFormat::Json)).unwrap();
    for j in doc["jobs"].as_array().unwrap() {
        assert!(j.get("server_cpu").is_none(), "{j}");
    }
    let extra = &doc["storbench"]["jobs"][0]["server_cpu"][0];
    assert_eq!(extra["process"], "tgtd");
    assert_eq!(extra["pid"], 4242);
    assert_eq!(extra["same_host"], true);
    assert_eq!(extra["usr_ns"], 500_000_000u64);
    assert_eq!(extra["sys_ns"], 1_500_000_000u64);
    assert_eq!(extra["duration_ms"], 5000);
    // No figure, no key.
    assert!(doc["storbench"]["jobs"][7].get("server_cpu").is_none());
}

#[test]
fn eta_lines() {
    use status::{EtaStatus, JobState};
    let running = JobState::Running {
        random: true,
        reads: true,
        writes: false,
        trims: false,
    };
    let mut states = vec![JobState::Done; 2];
    states.extend(vec![running; 10]);
    let st = EtaStatus {
        jobs_running: 10,
        files_open: 10,
        states,
        percent_done: Some(45.0),
        rate_bytes: [1_234_567_890, 0, 0],
        iops: [301_408, 0, 0],
        eta_secs: Some(33),
        rate_limits: None,
        kb_base: 1024,
        unit_base: 8,
    };
    let kb1000 = EtaStatus {
        kb_base: 1000,
        unit_base: 1,
        rate_limits: Some((0, 100 << 20)),
        ..st.clone()
    };
    insta::assert_snapshot!(format!(
        "{}\n{}\n",
        status::eta_line(&st),
        status::eta_line(&kb1000)
    ));
}

#[test]
fn imported_percentiles_without_histogram() {
    let mut s = Shape::psync_randrw();
    s.ios = [300, 0, 0];
    let mut j = job(&s, 0, 0);
    let clat = &mut j.dirs[0].clat;
    clat.hist = Default::default();
    clat.given_percentiles = vec![(50.0, 44_032), (99.0, 113_152)];
    j.settings.percentile_list = vec![50.0, 99.0];
    let r = run(vec![group(0, false, vec![j])]);
    let doc: serde_json::Value =
        serde_json::from_str(&render(&r, FioFormat::JsonPlus)).expect("valid JSON");
    let clat = &doc["jobs"][0]["read"]["clat_ns"];
    assert_eq!(clat["percentile"]["50.000000"], 44_032);
    assert_eq!(clat["percentile"]["99.000000"], 113_152);
    assert!(clat.get("bins").is_none());
    let normal = render(&r, FioFormat::Normal);
    assert!(
        normal.contains("|  50th=[   45],  99th=[  114]"),
        "{normal}"
    );
}
