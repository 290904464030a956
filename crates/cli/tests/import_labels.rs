//! Labels and tags are bounded where they are typed, and every reader copes with any stored
//! length (an older database or an imported file may hold longer ones); importing a run the
//! database already holds skips it and says so. Each test works in a scratch directory.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{Run, storbench};

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `storbench ARGS` with the results database `db`.
    fn run_in(&self, db: &str, args: &[&str]) -> Run {
        let mut c = storbench();
        c.current_dir(self.dir.path())
            .env("STORBENCH_DB", self.path(db))
            .args(args);
        Run::of(&mut c)
    }

    fn ok_in(&self, db: &str, args: &[&str]) -> Run {
        let out = self.run_in(db, args);
        assert!(out.success(), "storbench {args:?}: {}", out.stderr);
        common::assert_no_panic(&out.stderr);
        out
    }

    /// A short null-engine run saved in `db`.
    fn measure(&self, db: &str, name: &str) {
        let job = format!("--name={name}");
        self.ok_in(
            db,
            &["fio", "--ioengine=null", &job, "--size=1m", "--rw=read"],
        );
    }

    fn history_ids(&self, db: &str) -> Vec<i64> {
        let out = self.ok_in(db, &["history", "--format", "json"]);
        let rows: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        let mut ids: Vec<i64> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        ids.sort();
        ids
    }
}

#[test]
fn a_label_or_tag_beyond_the_limit_is_refused_with_one_line() {
    let s = Scratch::new();
    let long = format!("--label={}", "l".repeat(257));
    let fio = ["fio", "--ioengine=null", "--name=x", "--size=1m", &long];
    let line = s.run_in("a.db", &fio).one_error_line();
    assert!(
        line.starts_with("storbench: --label: 257 characters or more"),
        "{line}"
    );
    let tag = "t".repeat(300);
    let line = s
        .run_in("a.db", &["quick", "--tag", &tag, "."])
        .one_error_line();
    assert!(line.contains("a label or tag has at most 256"), "{line}");
    assert!(!s.path("a.db").exists(), "a refused run was saved");
    // At the limit it is kept whole.
    let fine = format!("--label={}", "l".repeat(256));
    s.ok_in(
        "a.db",
        &["fio", "--ioengine=null", "--name=x", "--size=1m", &fine],
    );
    let out = s.ok_in("a.db", &["history"]);
    assert!(out.stdout.contains(&"l".repeat(256)));
}

/// An export of run 1 of `db` with a label and a tag of `n` characters, written to `file`.
fn huge_labelled_export(s: &Scratch, db: &str, file: &str, n: usize) {
    s.ok_in(db, &["export", "1", "-o", file]);
    let mut bundle: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path(file)).unwrap()).unwrap();
    let run = &mut bundle["runs"][0];
    run["label"] = format!("<!--{}", "L".repeat(n)).into();
    run["tags"] = serde_json::json!([format!("{}\u{1b}[2J", "T".repeat(n))]);
    run.as_object_mut().unwrap().remove("id");
    std::fs::write(s.path(file), bundle.to_string()).unwrap();
}

#[test]
fn every_reader_copes_with_a_huge_stored_label() {
    let s = Scratch::new();
    s.measure("a.db", "x");
    huge_labelled_export(&s, "a.db", "huge.sbr", 1 << 20);
    s.measure("b.db", "y");
    s.ok_in("b.db", &["import", "huge.sbr"]);
    let started = Instant::now();
    let bounded = |out: &Run| {
        assert!(out.stdout.len() < 64 << 10, "{} bytes", out.stdout.len());
        assert!(out.stderr.len() < 64 << 10, "{} bytes", out.stderr.len());
    };
    let history = s.ok_in("b.db", &["history"]);
    bounded(&history);
    let ellipsis = format!("<!--{}…", "L".repeat(251));
    assert!(history.stdout.contains(&ellipsis), "{}", history.stdout);
    assert!(!history.stdout.contains('\u{1b}'));
    bounded(&s.ok_in("b.db", &["show", "2"]));
    bounded(&s.ok_in("b.db", &["compare", "1", "2"]));
    s.ok_in("b.db", &["report", "1", "2", "-o", "r.html"]);
    let html = std::fs::metadata(s.path("r.html")).unwrap().len();
    assert!(html < 4 << 20, "report of {html} bytes");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn importing_an_export_twice_or_into_its_own_database_adds_nothing() {
    let s = Scratch::new();
    s.measure("a.db", "x");
    s.measure("a.db", "y");
    s.ok_in("a.db", &["export", "1", "2", "-o", "o.sbr"]);
    // Back into its own database.
    let back = s.ok_in("a.db", &["import", "o.sbr"]);
    assert!(
        back.stderr
            .contains("o.sbr: run 1 already held as run 1, skipped"),
        "{}",
        back.stderr
    );
    assert!(
        back.stderr
            .contains("o.sbr: run 2 already held as run 2, skipped"),
        "{}",
        back.stderr
    );
    assert!(!back.stderr.contains("imported as"), "{}", back.stderr);
    assert_eq!(s.history_ids("a.db"), [1, 2]);
    // Twice into another, and twice in one command.
    let first = s.ok_in("b.db", &["import", "o.sbr"]);
    assert!(
        first.stderr.contains("imported as runs 1, 2"),
        "{}",
        first.stderr
    );
    let again = s.ok_in("b.db", &["import", "o.sbr", "o.sbr"]);
    assert_eq!(
        again.stderr.matches("already held as run").count(),
        4,
        "{}",
        again.stderr
    );
    assert_eq!(s.history_ids("b.db"), [1, 2]);
    let fresh = s.ok_in("c.db", &["import", "o.sbr", "o.sbr"]);
    assert!(
        fresh
            .stderr
            .contains("run 2 already held as run 2, skipped"),
        "{}",
        fresh.stderr
    );
    assert_eq!(s.history_ids("c.db"), [1, 2]);
}

#[test]
fn a_different_run_under_a_held_id_is_imported_as_new_with_a_note() {
    let s = Scratch::new();
    s.measure("a.db", "x");
    s.ok_in("a.db", &["export", "1", "-o", "o.sbr"]);
    s.measure("b.db", "other");
    let out = s.ok_in("b.db", &["import", "o.sbr"]);
    assert!(
        out.stderr.contains(
            "o.sbr: run 1 differs from this database's run of that id; imported as new run 2"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(s.history_ids("b.db"), [1, 2]);
}
