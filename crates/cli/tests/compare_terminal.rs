//! `storbench compare` as a terminal shows it: two repeated runs compared inside tmux at 80
//! and 160 columns. The answer line comes first, no line is wider than the pane (tmux's
//! joined and unjoined captures agree), and the narrow layout is used below 100 columns,
//! the wide table above.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::system::have_tool;
use common::tmux::Tmux;
use common::{Run, storbench};

/// Two labelled null-engine runs of three rounds each in `db`.
fn two_repeated_runs(dir: &Path, db: &Path) {
    for label in ["before-the-change", "after-the-change"] {
        let saved = Run::of(
            storbench()
                .env("STORBENCH_DB", db)
                .current_dir(dir)
                .args([
                    "fio",
                    "--ioengine=null",
                    "--name=seqread",
                    "--rw=read",
                    "--bs=1m",
                    "--size=256m",
                    "--repeat",
                    "3",
                ])
                .arg(format!("--label={label}")),
        );
        assert_eq!(saved.code, Some(0), "{}", saved.stderr);
    }
}

/// The screen (joined and as drawn) once `compare` has ended in a pane of `columns`.
fn compare_in_tmux(columns: u16) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    two_repeated_runs(dir.path(), &db);
    let bin = assert_cmd::cargo::cargo_bin("storbench");
    let command = format!(
        "env -u COLUMNS NO_COLOR=1 STORBENCH_DB={} {} compare before-the-change after-the-change; echo exit=$?; sleep 600",
        db.display(),
        bin.display(),
    );
    let tmux = Tmux::start(dir.path(), columns, &command);
    let started = Instant::now();
    loop {
        let joined = tmux.capture(true, false);
        if joined.contains("exit=") {
            return (joined, tmux.capture(false, false));
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "compare did not end:\n{joined}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The drawn lines, without the blank rows below the output.
fn drawn(screen: &str) -> Vec<String> {
    let mut lines: Vec<String> = screen.lines().map(|l| l.trim_end().to_string()).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

fn assert_fits(columns: u16, joined: &str, unjoined: &str) {
    assert!(joined.contains("exit=0"), "{joined}");
    let (joined, unjoined) = (drawn(joined), drawn(unjoined));
    assert_eq!(
        joined, unjoined,
        "a line wider than {columns} columns wrapped"
    );
    for line in &joined {
        assert!(line.chars().count() <= usize::from(columns), "{line:?}");
    }
    assert!(joined[0].starts_with("Comparing "), "{joined:#?}");
    // The answer comes before the first test's table.
    let answer = joined.iter().position(|l| l.starts_with("answer: "));
    let first_table = joined.iter().position(String::is_empty);
    assert!(answer.is_some() && answer < first_table, "{joined:#?}");
}

fn tmux_or_skip() -> bool {
    let ok = have_tool("tmux");
    if !ok {
        eprintln!("SKIP: needs tmux (Debian package tmux)");
    }
    ok
}

#[test]
fn compare_fits_80_columns_in_its_narrow_layout() {
    if !tmux_or_skip() {
        return;
    }
    let (joined, unjoined) = compare_in_tmux(80);
    assert_fits(80, &joined, &unjoined);
    // One metric per heading line, one line per run below it.
    assert!(
        joined
            .lines()
            .any(|l| l.starts_with("    before-the-change ")),
        "{joined}"
    );
    assert!(
        !joined.lines().any(|l| l.contains("  metric  ")),
        "{joined}"
    );
}

#[test]
fn compare_uses_160_columns_for_its_table() {
    if !tmux_or_skip() {
        return;
    }
    let (joined, unjoined) = compare_in_tmux(160);
    assert_fits(160, &joined, &unjoined);
    let header = joined
        .lines()
        .find(|l| l.trim_start().starts_with("metric "))
        .unwrap_or_else(|| panic!("no table head:\n{joined}"));
    assert!(
        header.contains("before-the-change") && header.contains("after-the-change"),
        "{header}"
    );
}
