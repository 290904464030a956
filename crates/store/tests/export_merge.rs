//! Moving runs between machines: an export (`.sbr`) read back gives the same runs (kind,
//! rounds, per-second samples, environment, verdicts, label, tags); another database
//! merges run by run, once.

mod common;

use common::*;
use storbench_model::repeats::{Repeats, Round};
use storbench_model::result::{Reason, RunResult, Validity, Verdict};
use storbench_store::import::{bundle, import_text, import_text_with_meta};
use storbench_store::{RunFilter, RunMeta, Store, StoreError};

/// A quick run with two rounds and a verdict, as a repeated run stores it.
fn repeated_quick() -> RunResult {
    let mut run = quick_run(5_000);
    run.repeats = Some(Repeats {
        requested: 2,
        rounds: (0..2)
            .map(|i| Round {
                started_unix_ms: 5_000 + i * 100,
                finished_unix_ms: 5_090 + i * 100,
                interrupted: false,
                groups: run.groups.clone(),
            })
            .collect(),
    });
    run.verdicts = vec![Verdict {
        job: "SEQ1M Q8T1 read".into(),
        validity: Validity::Suspect,
        reasons: vec![Reason {
            check: "cache".into(),
            validity: Validity::Suspect,
            message: "the disks moved 12% of the bytes read".into(),
        }],
    }];
    run
}

fn saved(store: &mut Store, run: &RunResult, label: &str) -> i64 {
    let meta = RunMeta {
        label: Some(label.into()),
        tags: vec!["nas".into(), "zfs".into()],
        source: None,
    };
    store.save(run, &meta).unwrap()
}

#[test]
fn export_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut here = Store::open(dir.path().join("here.db")).unwrap();
    let runs = [repeated_quick(), fio_run(1_000), bonnie_run(3_000)];
    let stored: Vec<_> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let id = saved(&mut here, r, &format!("r{i}"));
            here.load(id).unwrap()
        })
        .collect();
    let mut file = Vec::new();
    bundle::write(&stored, &mut file).unwrap();
    let text = String::from_utf8(file).unwrap();
    assert!(text.starts_with("{\"format\":\"storbench-runs/1\""));

    let back = import_text_with_meta("x.sbr", &text, 0).unwrap();
    assert_eq!(back.len(), 3);
    for (b, original) in back.iter().zip(&runs) {
        assert_eq!(&b.run, original, "mode {:?}", original.mode);
        assert_eq!(b.tags, ["nas", "zfs"]);
    }
    assert_eq!(back[0].label.as_deref(), Some("r0"));
    // Stored on the other machine, loaded again: still the same run.
    let mut there = Store::open(dir.path().join("there.db")).unwrap();
    let id = there
        .save(
            &back[0].run,
            &RunMeta {
                label: back[0].label.clone(),
                tags: back[0].tags.clone(),
                source: Some("x.sbr".into()),
            },
        )
        .unwrap();
    let loaded = there.load(id).unwrap();
    assert_eq!(loaded.run, runs[0]);
    assert_eq!(loaded.run.repeats.as_ref().unwrap().rounds.len(), 2);
    // The importer other tools' files go through sees the same runs.
    assert_eq!(import_text("x.sbr", &text, 0).unwrap()[1], runs[1]);
}

#[test]
fn bad_exports_are_one_line_errors() {
    let cases = [
        (
            "{\"format\":\"storbench-runs/9\",\"runs\":[]}",
            "does not know",
        ),
        (
            "{\"format\":\"storbench-runs/1\",\"runs\":[]}",
            "holds no run",
        ),
        (
            "{\"format\":\"storbench-runs/1\",\"runs\":[{\"run\":{}}]}",
            "missing field",
        ),
        (
            "{\"format\":\"storbench-runs/1\",\"runs\":[",
            "not a valid storbench export",
        ),
        (
            "{\"format\":\"storbench-runs/1\",\"runs\":[],\"x\":1}",
            "unknown field",
        ),
    ];
    for (text, want) in cases {
        let e = import_text("bad.sbr", text, 0).unwrap_err().to_string();
        assert!(e.starts_with("bad.sbr") && e.contains(want), "{text}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn another_database_merges_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut other = Store::open(dir.path().join("other.db")).unwrap();
    let a = saved(&mut other, &repeated_quick(), "lab");
    saved(&mut other, &fio_run(1_000), "lab-fio");
    let mut here = Store::open(dir.path().join("here.db")).unwrap();
    saved(&mut here, &bonnie_run(3_000), "mine");

    assert_eq!(here.merge_from(&other).unwrap(), (2, 0));
    assert_eq!(here.merge_from(&other).unwrap(), (0, 2), "merged twice");
    let all = here.list(&RunFilter::default()).unwrap();
    assert_eq!(all.len(), 3);
    let merged = all
        .iter()
        .find(|s| s.meta.label.as_deref() == Some("lab"))
        .unwrap();
    let back = here.load(merged.id).unwrap();
    assert_eq!(back.run, repeated_quick());
    assert_eq!(back.meta.tags, ["nas", "zfs"]);
    let source = back.meta.source.unwrap();
    assert!(source.ends_with(&format!("other.db run {a}")), "{source}");
}

#[test]
fn a_foreign_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("foreign.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    let e = Store::open_read_only(&path).err().expect("refused");
    assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
    assert!(!e.to_string().contains('\n'));
}
