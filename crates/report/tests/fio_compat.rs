//! Cross-checks against the real fio 3.33: each case runs fio once with
//! `--output-format=terse,json+,normal`, rebuilds our result model from its json+ document,
//! renders it with our reporters and compares with what fio printed from the same figures:
//! the JSON (keys, order, nesting, value types and values), the normal text line by line,
//! the terse line field by field, and the percentiles computed from the json+ `bins`.
//! Skipped with a printed reason when fio 3.33 is not installed.

mod common;

use serde_json::Value;
use storbench_model::result::{RunResult, UnifiedRw};
use storbench_report::fio::{FioOpts, json, normal, terse};

use common::fio::{FioRun, fio_available, hist_from, run_fio, run_from};

struct Case {
    name: &'static str,
    args: Vec<String>,
    /// Clone count behind each JSON `jobs[]` entry.
    members: Vec<u32>,
    /// fio 3.33 prints zeros in the `mixed:` line of unified_rw_reporting=both; we don't.
    skip_mixed_line: bool,
}

fn case(name: &'static str, args: &str, members: &[u32]) -> Case {
    Case {
        name,
        args: args.split_whitespace().map(String::from).collect(),
        members: members.to_vec(),
        skip_mixed_line: false,
    }
}

const NULL: &str = "--ioengine=null --size=64M --runtime=1 --time_based --bs=4k";

fn cases() -> Vec<Case> {
    let mut both = case(
        "both",
        &format!("--name=m {NULL} --rw=randrw --unified_rw_reporting=both"),
        &[1],
    );
    both.skip_mixed_line = true;
    vec![
        case(
            "psync_randrw_disk",
            "--name=t --ioengine=psync --filename=f1 --size=8M --rw=randrw --bs=4k --runtime=1 --time_based",
            &[1],
        ),
        case(
            "libaio_depth8",
            "--name=a --ioengine=libaio --direct=1 --iodepth=8 --filename=f2 --size=16M --rw=randread --runtime=1 --time_based",
            &[1],
        ),
        case(
            "group_reporting",
            &format!("--name=g {NULL} --rw=read --numjobs=2 --group_reporting"),
            &[2],
        ),
        case(
            "clones",
            &format!("--name=g {NULL} --rw=write --numjobs=2"),
            &[1, 1],
        ),
        case(
            "mixed",
            &format!("--name=m {NULL} --rw=randrw --unified_rw_reporting=mixed"),
            &[1],
        ),
        both,
        case(
            "kb_base_1000",
            &format!("--name=k {NULL} --rw=read --kb_base=1000"),
            &[1],
        ),
        case(
            "bits",
            &format!("--name=k {NULL} --rw=read --unit_base=1"),
            &[1],
        ),
        case(
            "gtod_reduce",
            &format!("--name=g {NULL} --rw=read --gtod_reduce=1"),
            &[1],
        ),
        case(
            "lat_slat_percentiles",
            "--name=l --ioengine=libaio --direct=1 --iodepth=4 --filename=f3 --size=8M --rw=randread --runtime=1 --time_based --lat_percentiles=1 --slat_percentiles=1",
            &[1],
        ),
        case(
            "two_groups",
            &format!("--name=a {NULL} --rw=read --name=b --stonewall {NULL} --rw=write"),
            &[1, 1],
        ),
        // Exactly 1000 and 2000 IOs: p/100·N lands on whole numbers (99.9% of 1000), where
        // fio's long-double comparison decides which bucket a percentile falls in.
        case(
            "exact_1000_ios",
            "--name=n --ioengine=null --size=4000k --bs=4k --rw=read",
            &[1],
        ),
        case(
            "exact_2000_ios",
            "--name=n --ioengine=null --size=8000k --bs=4k --rw=randwrite --percentile_list=10:25:50:75:90:99:99.5:99.9:99.95",
            &[1],
        ),
        case(
            "fsync",
            "--name=fs --ioengine=psync --filename=f4 --size=2M --rw=write --bs=4k --fsync=4",
            &[1],
        ),
    ]
}

struct Checked {
    fio: FioRun,
    run: RunResult,
}

fn run_cases() -> Option<Vec<(Case, Checked)>> {
    if !fio_available() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    Some(
        cases()
            .into_iter()
            .map(|c| {
                let args: Vec<&str> = c.args.iter().map(String::as_str).collect();
                let fio = run_fio(dir.path(), &args);
                let run = run_from(&fio.json, &c.members);
                (c, Checked { fio, run })
            })
            .collect(),
    )
}

/// One test runs every case so fio runs once per case.
#[test]
fn outputs_match_real_fio() {
    let Some(cases) = run_cases() else { return };
    for (c, k) in &cases {
        check_percentiles(c.name, &k.fio.json);
        check_json(c.name, &k.fio.json, &k.run);
        check_normal(c, &k.fio.normal, &k.run);
        check_terse(c.name, &k.fio.terse, &k.run);
        check_clat2csv(c.name, &k.run);
    }
}

/// Our percentiles from fio's own `bins` equal fio's `percentile` values exactly.
fn check_percentiles(name: &str, doc: &Value) {
    let mut checked = 0;
    for job in doc["jobs"].as_array().unwrap() {
        for dir in ["read", "write", "trim", "mixed", "sync"] {
            for lat in ["slat_ns", "clat_ns", "lat_ns"] {
                let v = &job[dir][lat];
                let (Some(pct), Some(bins)) = (v["percentile"].as_object(), v["bins"].as_object())
                else {
                    continue;
                };
                let hist = hist_from(bins);
                let list: Vec<f64> = pct.keys().map(|k| k.parse().unwrap()).collect();
                let ours = hist.percentiles(&list);
                let fios: Vec<u64> = pct.values().map(|v| v.as_u64().unwrap()).collect();
                assert_eq!(ours, fios, "{name}: {dir} {lat} percentiles");
                checked += 1;
            }
        }
    }
    assert!(
        checked > 0 || name == "gtod_reduce",
        "{name}: no percentiles compared"
    );
}

fn render_json(run: &RunResult, plus: bool) -> Value {
    let mut out = Vec::new();
    json::render(run, &FioOpts::default(), plus, &mut out).unwrap();
    serde_json::from_slice(&out).expect("our JSON is valid")
}

fn check_json(name: &str, fio: &Value, run: &RunResult) {
    let mut ours = render_json(run, true);
    let extras = ours.as_object_mut().unwrap().remove("storbench");
    assert!(extras.is_some(), "{name}: storbench key missing");
    compare_json(name, "", fio, &ours);
    // Plain JSON: the same without any `bins`.
    let plain = render_json(run, false);
    assert!(
        !plain.to_string().contains("\"bins\""),
        "{name}: bins in plain JSON"
    );
}

/// Same keys in the same order, same types, equal values (floats to fio's printed precision).
fn compare_json(name: &str, path: &str, fio: &Value, ours: &Value) {
    match (fio, ours) {
        (Value::Object(a), Value::Object(b)) => {
            let ka: Vec<&String> = a.keys().collect();
            let kb: Vec<&String> = b.keys().collect();
            assert_eq!(ka, kb, "{name}: keys of {path}");
            for (k, va) in a {
                compare_json(name, &format!("{path}/{k}"), va, &b[k]);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{name}: length of {path}");
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                compare_json(name, &format!("{path}[{i}]"), va, vb);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            assert_eq!(a.is_f64(), b.is_f64(), "{name}: number type of {path}");
            if path.ends_with("/eta") {
                return;
            }
            if a.is_f64() {
                let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
                assert!(close(x, y), "{name}: {path}: fio {x}, ours {y}");
            } else {
                assert_eq!(a, b, "{name}: {path}");
            }
        }
        (Value::String(a), Value::String(b)) => {
            if path != "/time" {
                assert_eq!(a, b, "{name}: {path}");
            }
        }
        _ => panic!("{name}: {path}: fio {fio}, ours {ours}"),
    }
}

/// Equal within what rebuilding the figures from fio's rounded JSON can lose.
fn close(x: f64, y: f64) -> bool {
    (x - y).abs() <= 2e-3 + 1e-6 * x.abs().max(y.abs())
}

fn check_normal(c: &Case, fio_text: &str, run: &RunResult) {
    let mut out = Vec::new();
    normal::render(run, &FioOpts::default(), &mut out).unwrap();
    let ours = String::from_utf8(out).unwrap();
    let fio_lines: Vec<&str> = fio_text.lines().collect();
    let our_lines: Vec<&str> = ours.lines().collect();
    assert_eq!(
        fio_lines.len(),
        our_lines.len(),
        "{}: line count\n--- fio\n{fio_text}\n--- ours\n{ours}",
        c.name
    );
    for (a, b) in fio_lines.iter().zip(&our_lines) {
        if c.skip_mixed_line && a.starts_with("  mixed: IOPS=") {
            assert!(b.starts_with("  mixed: IOPS="), "{}: {b}", c.name);
            continue;
        }
        assert!(
            same_line(&mask(a), &mask(b)),
            "{}: lines differ\n fio: {a}\nours: {b}\n--- ours\n{ours}",
            c.name
        );
    }
}

/// Hides what cannot match: the pid and the date of a job header line.
fn mask(line: &str) -> String {
    match line.find(": pid=") {
        Some(i) if line.contains("(groupid=") => line[..i].to_string(),
        _ => line.to_string(),
    }
}

/// Equal text; decimal numbers may differ by one in the last printed digit (our figures are
/// rebuilt from fio's rounded JSON).
fn same_line(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (ta, tb) = (tokens(a), tokens(b));
    ta.len() == tb.len()
        && ta.iter().zip(&tb).all(|(x, y)| {
            x == y
                || match (x.parse::<f64>(), y.parse::<f64>()) {
                    (Ok(p), Ok(q)) if x.contains('.') && y.contains('.') => {
                        let last = 10f64.powi(-((x.len() - x.find('.').unwrap() - 1) as i32));
                        (p - q).abs() <= last * 1.01
                    }
                    _ => false,
                }
        })
}

fn tokens(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut num = false;
    for ch in s.chars() {
        let is_num = ch.is_ascii_digit() || ch == '.';
        if out.is_empty() || is_num != num {
            out.push(String::new());
        }
        num = is_num;
        out.last_mut().unwrap().push(ch);
    }
    out
}

fn check_terse(name: &str, fio_lines: &[String], run: &RunResult) {
    let mut out = Vec::new();
    terse::render(run, &mut out).unwrap();
    let ours = String::from_utf8(out).unwrap();
    let ours: Vec<&str> = ours.lines().collect();
    assert_eq!(fio_lines.len(), ours.len(), "{name}: terse lines");
    for (a, b) in fio_lines.iter().zip(&ours) {
        let fa: Vec<&str> = a.trim_end().split(';').collect();
        let fb: Vec<&str> = b.split(';').collect();
        assert_eq!(
            fa.len(),
            fb.len(),
            "{name}: terse field count\n fio: {a}\nours: {b}"
        );
        for (i, (x, y)) in fa.iter().zip(&fb).enumerate() {
            let num = |s: &str| s.trim_end_matches('%').parse::<f64>().ok();
            // Latency-distribution shares (`%3.2f%%`) fold the ns buckets, whose counts can
            // only be estimated from fio's floored shares: allow a few hundredths there.
            let tol = if x.ends_with('%') && x.len() - x.find('.').unwrap_or(0) == 4 {
                0.05
            } else {
                1e-2
            };
            let ok = x == y
                || matches!((num(x), num(y)), (Some(p), Some(q)) if x.contains('.') && (p - q).abs() <= tol + 1e-5 * p.abs());
            assert!(ok, "{name}: terse field {} fio {x} ours {y}", i + 1);
        }
    }
}

/// Debian's fio_jsonplus_clat2csv reads our json+ and its CSV holds our histogram counts.
/// (Like fio's own, our unified_rw_reporting=mixed JSON has no read/write keys for it.)
fn check_clat2csv(name: &str, run: &RunResult) {
    if run.groups[0].jobs[0].settings.unified_rw == UnifiedRw::Mixed {
        return;
    }
    if common::clat2csv::available() {
        common::clat2csv::check(name, run);
    }
}
