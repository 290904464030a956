//! Sharing one result, through the `storbench` binary: a real quick run shown as a markdown
//! table, CSV and JSON; its summary card written as PNG and SVG without hosts or paths;
//! exported to a `.sbr` file and imported into another database exactly; one database merged
//! into another, once; foreign and damaged files refused in one line.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sb(db: &Path, args: &[&str]) -> Output {
    let mut c = common::storbench();
    c.env("STORBENCH_DB", db).args(args);
    c.output().unwrap()
}

fn ok(db: &Path, args: &[&str]) -> String {
    let out = sb(db, args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "storbench {args:?} failed: {err}");
    common::assert_no_panic(&err);
    String::from_utf8(out.stdout).unwrap()
}

/// The one error line of a failing command.
fn fails(db: &Path, args: &[&str]) -> String {
    let out = sb(db, args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "storbench {args:?}: {err}");
    common::assert_no_panic(&err);
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// A database holding one real quick run (labelled "nas", tagged "lab").
fn quick_db(dir: &Path) -> PathBuf {
    let db = dir.join("results.db");
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let w = work.to_str().unwrap();
    let args = [
        "quick",
        "--size",
        "8m",
        "--runtime",
        "200ms",
        "--label",
        "nas",
        "--tag",
        "lab",
        w,
    ];
    ok(&db, &args);
    db
}

#[test]
fn one_quick_run_shared_every_way() {
    let dir = tempfile::tempdir().unwrap();
    let db = quick_db(dir.path());

    let md = ok(&db, &["show", "nas", "--format", "markdown"]);
    let lines: Vec<&str> = md.lines().collect();
    assert!(lines[0].starts_with("**storbench quick** · "), "{md}");
    // The settings: size and runtime with units, direct or buffered, the file system.
    assert!(
        lines[2].starts_with("size 8 MiB · runtime 200 ms · ")
            && (lines[2].contains(" · direct · ") || lines[2].contains(" · buffered · "))
            && lines[2].contains(" · file system "),
        "{md}"
    );
    assert!(
        lines[4].starts_with("| test | MB/s | IOPS | p50 (")
            && lines[4].ends_with("| CPU | Valid |"),
        "{md}"
    );
    assert!(lines[6].starts_with("| SEQ1M Q8T1 read | "), "{md}");
    let tests = &lines[6..14];
    assert!(tests[7].starts_with("| RND4K Q1T1 write | "), "{md}");
    for t in tests {
        assert!(
            ["| ok |", "| suspect |", "| INVALID |"]
                .iter()
                .any(|v| t.ends_with(v)),
            "no verdict: {t}"
        );
    }
    assert!(!md.contains("NaN") && md.contains('%'), "{md}");
    // The notes the terminal gives, as a list.
    let quick_notes = ok(&db, &["show", "nas"]);
    if quick_notes.contains("storbench notes:") {
        assert!(md.contains("\nNotes:\n\n- "), "{md}");
    }
    assert!(
        !tests
            .iter()
            .any(|t| t.ends_with("| suspect |") || t.ends_with("| INVALID |"))
            || md.contains("Notes:"),
        "a marked test without its notes: {md}"
    );

    let csv = ok(&db, &["show", "nas", "--format", "csv"]);
    let mut rows = csv.lines();
    assert!(rows.next().unwrap().starts_with("test,MB/s,IOPS,"), "{csv}");
    assert_eq!(rows.count(), 8, "{csv}");

    let raw = ok(&db, &["show", "nas", "--format", "raw"]);
    assert!(raw.contains("\"mode\": \"quick\""));

    // Card as images, for forums: no host name, no local path.
    let png = dir.path().join("card.png");
    let svg = dir.path().join("card.svg");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    ok(
        &db,
        &[
            "report",
            "nas",
            "--png",
            png.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
            "--title",
            "My NAS",
            "--hide-host",
        ],
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("My NAS") && text.contains("SEQ1M"), "{text}");
    assert!(!text.contains(host.trim()), "host name in the card");
    assert!(!text.contains(dir.path().to_str().unwrap()) || text.contains("work"));
}

#[test]
fn export_import_and_merge_round_trip_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let db = quick_db(dir.path());
    let sbr = dir.path().join("nas.sbr");
    ok(&db, &["export", "nas", "-o", sbr.to_str().unwrap()]);

    let there = dir.path().join("there.db");
    ok(&there, &["import", sbr.to_str().unwrap()]);
    let original = ok(&db, &["show", "nas", "--format", "raw"]);
    assert_eq!(ok(&there, &["show", "nas", "--format", "raw"]), original);
    let listed = ok(&there, &["history", "--format", "csv"]);
    assert!(
        listed.contains("quick") && listed.contains("lab"),
        "{listed}"
    );

    let merged = dir.path().join("merged.db");
    let out = sb(&merged, &["import", db.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("merged 1 run(s)"));
    let again = sb(&merged, &["import", db.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 run(s); 1 already here"));
    assert_eq!(ok(&merged, &["show", "nas", "--format", "raw"]), original);
    let md = ok(&merged, &["show", "nas", "--format", "md"]);
    assert_eq!(md, ok(&db, &["show", "nas", "--format", "md"]));
}

#[test]
fn foreign_and_damaged_files_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let foreign = dir.path().join("foreign.db");
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf 'SQLite format 3\\000' > {0}; head -c 4096 /dev/urandom >> {0}",
            foreign.display()
        ))
        .status()
        .unwrap();
    let bad_sbr = dir.path().join("bad.sbr");
    std::fs::write(
        &bad_sbr,
        "{\"format\":\"storbench-runs/1\",\"runs\":[{\"run\":3}]}",
    )
    .unwrap();
    for (file, want) in [
        (&foreign, "foreign.db"),
        (&bad_sbr, "not a valid storbench export"),
    ] {
        let err = fails(&db, &["import", file.to_str().unwrap()]);
        assert!(err.contains(want), "{err}");
    }
    assert!(!db.exists(), "a refused import created the database");
    // The card needs a quick run.
    let fio_db = dir.path().join("fio.db");
    ok(
        &fio_db,
        &["fio", "--name=x", "--ioengine=null", "--size=1m"],
    );
    let err = fails(&fio_db, &["report", "1", "--png", "/dev/null/x.png"]);
    assert!(err.contains("not a quick run"), "{err}");
}

/// The database is checked before a run: a file that is not a storbench database stops
/// quick and fio in one line, before any file is laid out, and stays as it was.
#[test]
fn a_foreign_database_stops_a_run_before_any_io() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.txt");
    std::fs::write(&db, "my notes\n").unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let file = format!("--filename={}", work.join("f.dat").display());
    let w = work.to_str().unwrap();
    let runs: [&[&str]; 2] = [
        &["quick", "--size", "8m", "--runtime", "100ms", w],
        &["fio", "--name=x", "--rw=write", "--size=1m", &file],
    ];
    for args in runs {
        let err = fails(&db, args);
        assert_eq!(
            err.matches("not a storbench results database").count(),
            1,
            "{err}"
        );
        assert_eq!(common::entries(&work), Vec::<String>::new(), "{args:?}");
    }
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "my notes\n");
}
