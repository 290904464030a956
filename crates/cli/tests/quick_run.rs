//! `storbench quick` end to end on temp dirs: the eight-row table, `--json` against
//! docs/quick.schema.json, the page-cache warnings (tmpfs; a file system that refuses
//! O_DIRECT), and the test file removed afterwards.

mod common;

use std::path::Path;

use common::system::{LoopDev, Mount, root_or_skip, sh};
use common::{Run, entries, storbench};
use serde_json::Value;

const TESTS: [&str; 8] = [
    "SEQ1M Q8T1 read",
    "SEQ1M Q8T1 write",
    "SEQ1M Q1T1 read",
    "SEQ1M Q1T1 write",
    "RND4K Q32T1 read",
    "RND4K Q32T1 write",
    "RND4K Q1T1 read",
    "RND4K Q1T1 write",
];

/// `storbench quick --size 16m --runtime 300ms [target] <extra>` run in `cwd`.
fn quick(cwd: &Path, target: Option<&Path>, extra: &[&str]) -> Run {
    let mut c = storbench();
    c.current_dir(cwd)
        .args(["quick", "--size", "16m", "--runtime", "300ms", "--no-save"])
        .args(target)
        .args(extra);
    Run::of(&mut c)
}

/// A latency cell (`5.800`, `1,309`) in its column's unit (`ms`, from the heading), in ns.
fn latency_ns(value: &str, unit: &str) -> f64 {
    let v: f64 = value
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("latency {value}"));
    v * match unit {
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => panic!("latency unit {unit}"),
    }
}

/// The unit a latency column's heading names: `p99 ms` → `ms`.
fn column_unit<'a>(header: &'a str, column: &str) -> &'a str {
    header
        .split(&format!("{column} "))
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("{column} in {header}"))
}

#[test]
fn quick_table_has_eight_rows_of_positive_figures() {
    let dir = tempfile::tempdir().unwrap();
    let run = quick(dir.path(), Some(dir.path()), &[]);
    let out = run.ok();
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.starts_with("SEQ1M") || l.starts_with("RND4K"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: Vec<String> = rows.iter().map(|r| r[..3].join(" ")).collect();
    assert_eq!(names, TESTS, "{out}");
    let header = out
        .lines()
        .find(|l| l.starts_with("Test "))
        .expect("header");
    let units = ["p50", "p99", "p99.9"].map(|c| column_unit(header, c));
    for r in &rows {
        // test (2 words), dir, MB/s, MiB/s, IOPS, p50, p99, p99.9 (in their columns'
        // units), CPU%, the validity verdict.
        assert_eq!(r.len(), 11, "{r:?}");
        assert!(["ok", "suspect", "INVALID"].contains(&r[10]), "{r:?}");
        let num = |i: usize| {
            r[i].replace(',', "")
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("{r:?}"))
        };
        let (mb, mib, iops) = (num(3), num(4), num(5));
        assert!(mb > 0.0 && mib > 0.0 && iops > 0.0, "{r:?}");
        // Both rounded to 4 significant digits (or whole numbers above 1,000).
        assert!(
            (mb - mib * 1.048_576).abs() <= 0.01 + mb * 1.5e-3,
            "MB/s vs MiB/s: {r:?}"
        );
        let lat: Vec<f64> = (0..3).map(|k| latency_ns(r[6 + k], units[k])).collect();
        assert!(
            lat[0] > 0.0 && lat[0] <= lat[1] && lat[1] <= lat[2],
            "{r:?}"
        );
        let cpu: f64 = r[9].trim_end_matches('%').parse().unwrap();
        assert!(cpu >= 0.0 && !r[9].contains('.'), "{r:?}");
    }
    assert!(run.stderr.contains("storbench quick:"), "{}", run.stderr);
    assert!(
        entries(dir.path()).is_empty(),
        "left behind: {:?}",
        entries(dir.path())
    );
}

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/quick.schema.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The figures of one `tests[]` entry agree with each other.
fn check_entry(t: &Value) {
    let f = |k: &str| t[k].as_f64().unwrap_or_else(|| panic!("{k} in {t}"));
    for k in [
        "io_bytes",
        "runtime_ms",
        "mb_per_s",
        "mib_per_s",
        "iops",
        "cpu_percent",
    ] {
        assert!(f(k) > 0.0, "{k} in {t}");
    }
    assert!((f("mb_per_s") - f("mib_per_s") * 1.048_576).abs() < 1e-6 * f("mb_per_s"));
    let bytes_per_s = f("iops") * f("block_size");
    assert!(
        (bytes_per_s - f("mib_per_s") * 1_048_576.0).abs() < 1e-3 * bytes_per_s,
        "{t}"
    );
    let l = &t["latency_ns"];
    let (p50, p99, p999) = (l["p50"].as_u64(), l["p99"].as_u64(), l["p99_9"].as_u64());
    assert!(l["mean"].as_u64() > Some(0) && p50 > Some(0), "{t}");
    assert!(p50 <= p99 && p99 <= p999, "{t}");
}

/// `--json` in the current directory (quick's default target): the schema holds, eight
/// tests in order, figures that agree with each other, nothing left behind.
#[test]
fn quick_json_follows_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let run = quick(dir.path(), None, &["--json"]);
    let doc = run.json();
    let violations = common::json::validate(&schema(), &doc);
    assert!(violations.is_empty(), "{violations:#?}");
    let tests = doc["tests"].as_array().unwrap();
    let names: Vec<String> = tests
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t["test"].as_str().unwrap(),
                t["direction"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(names, TESTS);
    tests.iter().for_each(check_entry);
    let sizes: Vec<u64> = tests
        .iter()
        .map(|t| t["block_size"].as_u64().unwrap())
        .collect();
    assert_eq!(
        sizes,
        [1 << 20, 1 << 20, 1 << 20, 1 << 20, 4096, 4096, 4096, 4096]
    );
    assert!(
        entries(dir.path()).is_empty(),
        "left behind: {:?}",
        entries(dir.path())
    );
}

/// The schema check itself rejects what it must.
#[test]
fn schema_validation_rejects_bad_documents() {
    let s = schema();
    let bad =
        serde_json::json!({"schema": "storbench-quick/2", "tests": [{"test": 1}], "extra": true});
    let v = common::json::validate(&s, &bad);
    assert!(v.iter().any(|m| m.contains("storbench-quick/1")), "{v:#?}");
    assert!(v.iter().any(|m| m.contains("extra")), "{v:#?}");
    assert!(v.iter().any(|m| m.contains("/tests[0]/test")), "{v:#?}");
    assert!(v.iter().any(|m| m.contains("required key notes")), "{v:#?}");
}

fn codes(doc: &Value) -> Vec<String> {
    doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["code"].as_str().unwrap().to_string())
        .collect()
}

/// A directory of the test's own on /dev/shm, or None (with the reason printed) where
/// /dev/shm is not a tmpfs.
fn shm_dir() -> Option<tempfile::TempDir> {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    if !mounts
        .lines()
        .any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.contains(" tmpfs "))
    {
        eprintln!("SKIP: /dev/shm is not a tmpfs here");
        return None;
    }
    Some(tempfile::tempdir_in("/dev/shm").unwrap())
}

/// On tmpfs every figure is memory speed, and the result says so.
#[test]
fn quick_on_tmpfs_says_figures_are_memory_speed() {
    let Some(dir) = shm_dir() else { return };
    // The default target, ".": relative, and its test file is gone when the run ends.
    let doc = quick(dir.path(), None, &["--json"]).json();
    assert!(
        codes(&doc).contains(&"limit.memory".to_string()),
        "{:?}",
        codes(&doc)
    );
    assert!(entries(dir.path()).is_empty());
}

/// quick's latency is the total latency (fio's `lat`, from just before submission): on
/// tmpfs libaio completes the IO inside io_submit, so the completion latency alone reads a
/// few µs at a few thousand IOPS. At queue depth 1, mean latency × IOPS is the busy share of
/// the time (Little's law), close to 1 for the total latency.
#[test]
fn quick_latency_is_from_submission_with_libaio() {
    let Some(dir) = shm_dir() else { return };
    let doc = quick(dir.path(), None, &["--json", "--engine", "libaio"]).json();
    for t in doc["tests"].as_array().unwrap() {
        assert_eq!(t["latency_ns"]["measured"], "total", "{t}");
        if t["queue_depth"] == 1 {
            let busy = t["latency_ns"]["mean"].as_f64().unwrap() * t["iops"].as_f64().unwrap();
            assert!(
                busy / 1e9 > 0.5,
                "mean latency × IOPS = {:.3}: {t}",
                busy / 1e9
            );
        }
    }
    assert!(entries(dir.path()).is_empty());
}

/// Where the file system refuses O_DIRECT (ramfs), quick falls back to buffered IO and
/// warns that the page cache is in play, on stderr and in the result.
#[test]
fn quick_warns_when_direct_io_is_refused() {
    if !root_or_skip("mounting a ramfs") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ram = Mount::new("ramfs", "e2e-ramfs", &dir.path().join("ram"), "");
    let run = quick(dir.path(), Some(&ram.point), &["--json"]);
    let doc = run.json();
    assert!(
        run.stderr.contains("refuses direct I/O") && run.stderr.contains("page cache"),
        "{}",
        run.stderr
    );
    assert!(codes(&doc).contains(&"warn.buffered-quick".to_string()));
    assert!(entries(&ram.point).is_empty(), "{:?}", entries(&ram.point));
}

/// Live progress (`--eta always`) goes to stderr, plain lines off a terminal; stdout keeps
/// only the JSON. In a pipe without it, stderr has only the banner.
#[test]
fn quick_progress_only_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let live = quick(dir.path(), Some(dir.path()), &["--json", "--eta", "always"]);
    live.json();
    let frames: Vec<&str> = live.stderr.split(['\r', '\n']).collect();
    for (i, test) in TESTS.iter().enumerate() {
        let (name, dir) = test.rsplit_once(' ').unwrap();
        let shown = frames
            .iter()
            .any(|f| f.starts_with(&format!("[{}/8] {name}", i + 1)) && f.contains(dir));
        assert!(shown, "no progress for {test}: {:?}", live.stderr);
    }
    let quiet = quick(dir.path(), Some(dir.path()), &["--json"]);
    quiet.json();
    let lines: Vec<&str> = quiet.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{:?}", quiet.stderr);
    assert!(lines[0].starts_with("storbench quick: "), "{}", lines[0]);
    assert!(entries(dir.path()).is_empty());
}

/// quick on a device its tests keep busy names the device as the limit: the busy time is
/// judged per test, not over the whole run with its gaps and lighter tests (86% on a loop
/// device whose sequential tests had it busy all the time, under the 90% threshold).
#[test]
fn quick_on_a_device_names_it_as_the_limit_of_the_tests_that_kept_it_busy() {
    if !LoopDev::available() {
        return;
    }
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let dev = LoopDev::new(dir.path(), 64 << 20);
    // Direct IO to the backing file: a cached loop device is memory speed, not a device.
    sh("losetup", &["--direct-io=on", &dev.dev]);
    let mut c = storbench();
    c.args([
        "quick",
        "--size",
        "32m",
        "--runtime",
        "1s",
        "--no-save",
        "--json",
    ])
    .arg(&dev.dev);
    let doc = Run::of(&mut c).json();
    let name = dev.dev.trim_start_matches("/dev/");
    let busy: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == "limit.device")
        .filter_map(|n| n["message"].as_str())
        .collect();
    assert!(
        busy.iter().any(|m| TESTS
            .iter()
            .any(|t| m.starts_with(&format!("{t}: device {name} ")))),
        "{:#}",
        doc["notes"]
    );
}
