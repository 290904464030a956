//! quick's default terminal output is quiet: no verdict lines repeating the Valid column
//! (they come back with `--verbose`), the bookkeeping ("saved as run N") after the table and
//! no test file path, and notes wrapped at word boundaries to the width COLUMNS gives.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::storbench;

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

/// stdout and stderr of `quick` interleaved in one file, as a terminal shows them.
fn quick_output(home: &Path, target: &Path, extra: &[&str]) -> String {
    let log = home.join(format!("out.{}.txt", extra.len()));
    let file = std::fs::File::create(&log).unwrap();
    let status = storbench()
        .current_dir(home)
        .env("STORBENCH_DB", home.join("r.db"))
        .env("COLUMNS", "60")
        .args([
            "quick",
            "--size",
            "4m",
            "--runtime",
            "100ms",
            "--buffered",
            "--profile",
            "real",
        ])
        .args(extra)
        .arg(target)
        .stdout(Stdio::from(file.try_clone().unwrap()))
        .stderr(Stdio::from(file))
        .status()
        .unwrap();
    let out = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{out}");
    out
}

#[test]
fn quick_is_quiet_by_default_and_says_more_with_verbose() {
    let dir = scratch();
    let home = tempfile::tempdir().unwrap();
    let out = quick_output(home.path(), dir.path(), &[]);
    let table = out
        .find("Test ")
        .unwrap_or_else(|| panic!("no table: {out}"));
    let saved = out
        .find("storbench: saved as run 1")
        .unwrap_or_else(|| panic!("not saved: {out}"));
    assert!(saved > table, "bookkeeping before the table: {out}");
    assert!(
        !out.contains("storbench-quick."),
        "the test file's path: {out}"
    );
    assert!(out.contains("Valid"), "{out}");
    assert!(
        !out.contains("  verdict  "),
        "verdict lines by default: {out}"
    );

    let notes = out
        .split("storbench notes:")
        .nth(1)
        .unwrap_or_else(|| panic!("no notes: {out}"));
    let notes = &notes[..notes.find("storbench: saved").unwrap_or(notes.len())];
    assert!(notes.lines().count() > 2, "{notes}");
    for l in notes.lines() {
        assert!(l.chars().count() <= 60, "wider than COLUMNS=60: {l:?}");
        assert!(!l.ends_with('-'), "{l:?}");
    }
    assert!(
        notes
            .lines()
            .any(|l| l.starts_with("           ") && !l[11..].starts_with(' ')),
        "no wrapped continuation: {notes}"
    );

    let verbose = quick_output(home.path(), dir.path(), &["--verbose"]);
    assert!(
        verbose.contains("  verdict  SEQ1M Q1T1 read: "),
        "--verbose keeps the verdicts: {verbose}"
    );
}
