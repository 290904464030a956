//! Repeated runs end to end through the `storbench` binary: `quick --repeat 3` and
//! `fio --repeat 3` / `numruns=3` report each figure's mean and 95% interval consistent with
//! the rounds, are saved as ONE run with 3 rounds and shown again by `show`; `compare` tells
//! noise (the same set-up twice) from a real change (a `--rate`-limited run), and warns
//! when the runs' settings differ; bad round counts are one line and a non-zero exit.
//! Everything runs on a temporary directory (tmpfs where /dev/shm is one), in seconds.

mod common;

use std::path::{Path, PathBuf};

use common::{Run, storbench};
use serde_json::Value;

/// A directory for test files: on /dev/shm (tmpfs) where it exists, so rounds of the same
/// set-up differ only by noise; else the system's temp directory.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

struct Db {
    dir: tempfile::TempDir,
}

impl Db {
    fn new() -> Db {
        Db {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }

    /// `storbench <args>` with this database.
    fn run(&self, cwd: &Path, args: &[&str]) -> Run {
        let mut c = storbench();
        c.current_dir(cwd)
            .env("STORBENCH_DB", self.path())
            .args(args);
        Run::of(&mut c)
    }
}

/// A small fio job on `dir`: 1 s of buffered psync IO to a 4 MiB file.
fn fio_args<'a>(dir: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "fio",
        "--name=rr",
        "--rw=randread",
        "--bs=4k",
        "--size=4m",
        "--ioengine=psync",
        "--runtime=1",
        "--time_based",
        "--directory",
        dir,
        "--output-format=json",
    ];
    a.extend_from_slice(extra);
    a
}

/// The mean, low and high of one metric of one test in a `storbench` intervals array.
fn interval<'a>(intervals: &'a Value, test: &str, metric: &str) -> &'a Value {
    let t = intervals
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == test)
        .unwrap_or_else(|| panic!("no test {test} in {intervals}"));
    t["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} in {t}"))
}

/// The interval agrees with the round values it came from: their mean, n = 3, and a
/// t interval's half width (t(0.975, 2) = 4.303 times the standard error).
fn assert_consistent(m: &Value) {
    let rounds: Vec<f64> = m["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(rounds.len(), 3, "{m}");
    assert_eq!(m["n"], 3);
    let mean = rounds.iter().sum::<f64>() / 3.0;
    let got = m["mean"].as_f64().unwrap();
    // fio's JSON writes six decimals.
    assert!((got - mean).abs() <= 1e-6 * mean.abs().max(1.0), "{m}");
    let (low, high) = (m["low"].as_f64().unwrap(), m["high"].as_f64().unwrap());
    assert!(low <= mean && mean <= high, "{m}");
    if m["method"] == "t" {
        let var = rounds.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0;
        let half = 4.302_65 * (var / 3.0).sqrt();
        assert!(
            ((high - low) / 2.0 - half).abs() <= 1e-3 * half.max(1e-9),
            "{m}"
        );
    } else {
        let min = rounds.iter().copied().fold(f64::INFINITY, f64::min);
        let max = rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert!(low >= min && high <= max, "{m}");
    }
}

/// The number of runs in the database, and the rounds of run `id` as `show --format raw`
/// gives them.
fn stored_rounds(db: &Db, cwd: &Path, id: &str) -> usize {
    let raw = db.run(cwd, &["show", id, "--format", "raw"]).json();
    raw["repeats"]["rounds"].as_array().map_or(0, Vec::len)
}

fn history_ids(db: &Db, cwd: &Path) -> usize {
    let out = db.run(cwd, &["history", "--format", "json"]).json();
    out.as_array().map_or(0, Vec::len)
}

#[test]
fn fio_repeat_reports_intervals_and_saves_one_run_with_three_rounds() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let db = Db::new();
    let run = db.run(
        dir.path(),
        &fio_args(d, &["--repeat", "3", "--label", "rep"]),
    );
    let doc = run.fio_json();
    // fio's layout: one document, its jobs the last round's.
    assert_eq!(doc["jobs"].as_array().unwrap().len(), 1);
    let rep = &doc["storbench"]["repeats"];
    assert_eq!(
        (rep["requested"].as_u64(), rep["complete"].as_u64()),
        (Some(3), Some(3))
    );
    for metric in ["bandwidth_mb", "iops"] {
        assert_consistent(interval(&rep["intervals"], "rr read", metric));
    }
    let p99 = interval(&rep["intervals"], "rr read", "clat_p99");
    assert_eq!(p99["method"], "bootstrap");
    assert_consistent(p99);
    assert_eq!(stderr_rounds(&run), 3, "{}", run.stderr);

    assert_eq!(history_ids(&db, dir.path()), 1, "one run saved");
    assert_eq!(stored_rounds(&db, dir.path(), "rep"), 3);
    // `show` renders it again in fio's normal layout, with the intervals block.
    let shown = db.run(dir.path(), &["show", "rep", "--format", "normal"]);
    let text = shown.ok();
    assert!(
        text.contains("storbench intervals: mean ± half width of the 95% interval over 3 rounds"),
        "{text}"
    );
    assert!(text.contains("  rr read: bandwidth "), "{text}");
}

/// Lines `storbench: round k of n` on stderr.
fn stderr_rounds(run: &Run) -> usize {
    run.stderr
        .lines()
        .filter(|l| l.starts_with("storbench: round "))
        .count()
}

#[test]
fn numruns_in_a_job_runs_the_set_that_many_times() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let db = Db::new();
    let run = db.run(dir.path(), &fio_args(d, &["--numruns=2", "--no-save"]));
    let doc = run.fio_json();
    assert_eq!(doc["storbench"]["repeats"]["complete"], 2);
    assert_eq!(stderr_rounds(&run), 2);
}

#[test]
fn quick_repeat_shows_plus_minus_and_saves_rounds() {
    let dir = scratch();
    let db = Db::new();
    let args = [
        "quick",
        "--size",
        "4m",
        "--runtime",
        "200ms",
        "--buffered",
        "--repeat",
        "3",
    ];
    let mut all: Vec<&str> = args.to_vec();
    all.push(dir.path().to_str().unwrap());
    all.extend(["--label", "q"]);
    let run = db.run(dir.path(), &all);
    let out = run.ok();
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("SEQ1M") || l.starts_with("RND4K"))
        .collect();
    assert_eq!(rows.len(), 8, "{out}");
    for r in &rows {
        // An interval that would reach below zero shows its ends: `1,192 (0 to 3,461)`.
        assert!(
            r.matches(" ± ").count() + r.matches(" to ").count() >= 3,
            "MB/s, MiB/s, IOPS as mean ± half: {r}"
        );
    }
    assert!(
        out.contains("Figures are means over 3 rounds ± the half width of their 95% interval"),
        "{out}"
    );
    assert_eq!(history_ids(&db, dir.path()), 1);
    assert_eq!(stored_rounds(&db, dir.path(), "q"), 3);
    let json = db
        .run(dir.path(), &["show", "q", "--format", "quick-json"])
        .json();
    let schema_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/quick.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(schema_path).unwrap()).unwrap();
    let violations = common::json::validate(&schema, &json);
    assert!(violations.is_empty(), "{violations:#?}");
    let iv = &json["repeats"]["intervals"];
    assert_consistent(interval(iv, "RND4K Q32T1 read", "iops"));
    assert_consistent(interval(iv, "SEQ1M Q8T1 write", "bandwidth_mb"));
    // The table's cell is the interval's mean.
    let m = interval(iv, "RND4K Q32T1 read", "iops");
    let row = rows
        .iter()
        .find(|r| r.starts_with("RND4K Q32T1  read"))
        .unwrap();
    let mean = storbench_report::intervals::interval_cell(
        m["mean"].as_f64().unwrap(),
        m["low"].as_f64().unwrap(),
        m["high"].as_f64().unwrap(),
    );
    assert!(row.contains(&mean), "{row} lacks {mean}");
}

#[test]
fn compare_tells_noise_from_change_and_warns_on_settings() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let db = Db::new();
    // The same set-up twice: held to 20 MiB/s, far below what tmpfs gives, so that other
    // load on a shared test machine cannot tell the two runs apart.
    let same = ["--repeat", "3", "--rate=20m"];
    for label in ["a", "b"] {
        db.run(
            dir.path(),
            &fio_args(d, &[&same[..], &["--label", label]].concat()),
        )
        .ok();
    }
    // The same job held to a tenth of that.
    db.run(
        dir.path(),
        &fio_args(d, &["--repeat", "3", "--rate=2m", "--label", "slow"]),
    )
    .ok();
    db.run(dir.path(), &fio_args(d, &["--bs=64k", "--label", "bigger"]))
        .ok();

    let json = |a: &str, b: &str| -> Value {
        db.run(dir.path(), &["compare", a, b, "--format", "json"])
            .json()
    };
    let verdict = |c: &Value, metric: &str| -> Value {
        let rows = c["tests"][0]["rows"].as_array().unwrap();
        rows.iter().find(|r| r["metric"] == metric).unwrap()["verdicts"][1].clone()
    };

    let ab = json("a", "b");
    assert_eq!(ab["warnings"], serde_json::json!([]), "{ab}");
    let v = verdict(&ab, "bandwidth_mb");
    assert_eq!(
        (v["basis"].as_str(), v["significant"].as_bool()),
        (Some("rounds"), Some(false)),
        "{ab}"
    );

    let slow = json("a", "slow");
    let v = verdict(&slow, "bandwidth_mb");
    assert_eq!(
        (v["basis"].as_str(), v["significant"].as_bool()),
        (Some("rounds"), Some(true)),
        "{slow}"
    );

    let text = db
        .run(dir.path(), &["compare", "a", "slow"])
        .ok()
        .to_string();
    let bw = text.lines().find(|l| l.contains("bandwidth MB/s")).unwrap();
    assert!(
        bw.contains(" ± ") && bw.trim_end().ends_with("real"),
        "{text}"
    );
    // The answer comes first: the change, as a factor of the reference's rate.
    let answer = text.lines().nth(1).unwrap_or_default();
    assert!(
        answer.starts_with("answer: ") && answer.contains("× slower ["),
        "{text}"
    );
    let text = db.run(dir.path(), &["compare", "a", "b"]).ok().to_string();
    let bw = text.lines().find(|l| l.contains("bandwidth MB/s")).unwrap();
    assert!(bw.trim_end().ends_with("noise"), "{text}");

    let diff = db.run(dir.path(), &["compare", "a", "bigger"]);
    let out = diff.ok();
    assert!(
        out.lines()
            .take(4)
            .any(|l| l.starts_with("warning: runs differ in block size: a 4096, bigger 65536")),
        "{out}"
    );
    let md = db.run(
        dir.path(),
        &["compare", "a", "bigger", "--format", "markdown"],
    );
    assert!(
        md.ok().contains("- warning: runs differ in block size"),
        "{}",
        md.stdout
    );
}

#[test]
fn bad_round_counts_are_one_line() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let q = |n: &str| {
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(["quick", "--no-save", "--size", "1m", "--repeat", n, d]);
        Run::of(&mut c)
    };
    for (n, want) in [
        ("0", "at least 1 round"),
        ("-3", "at least 1 round"),
        ("101", "at most 100 rounds"),
        ("lots", "not a whole number"),
    ] {
        let r = q(n);
        assert!(!r.success(), "--repeat {n} was accepted");
        assert!(r.stderr.contains(want), "--repeat {n}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    for args in [
        &["--repeat", "0"][..],
        &["--repeat=1000"][..],
        &["--numruns=0"][..],
        &["--numruns=-1"][..],
    ] {
        let r = common::sb_fio(dir.path(), &fio_args(d, args)[1..]);
        let line = r.one_error_line();
        assert!(
            line.contains("round") || line.contains("numruns"),
            "{args:?}: {line}"
        );
    }
}
