//! The live display as a terminal shows it: `storbench quick` on tmpfs inside tmux at 80
//! and 160 columns, the pane captured while it runs and at the end. At most one progress
//! line is ever on the screen, none is wider than the pane (a wrapped line would be left
//! behind by the next redraw), none is left at the end, and the table is whole.
//! Off a terminal, `--eta always` gives plain lines.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::system::have_tool;
use common::tmux::Tmux;
use common::{Run, storbench};

/// A line of the live display: the bar's `[n/8]` head with its ETA, or the lay-out's.
fn is_progress(line: &str) -> bool {
    (line.starts_with('[') && line.contains("eta ")) || line.starts_with("laying out")
}

/// What the screens showed over one run.
struct Seen {
    progress_lines: Vec<String>,
    last_joined: String,
    coloured: bool,
}

fn watch_quick(columns: u16, no_color: bool) -> Seen {
    let target = tempfile::tempdir_in("/dev/shm").unwrap();
    let args = format!(
        "quick {} --size 16m --runtime 400ms --no-save",
        target.path().display()
    );
    watch(columns, no_color, &args)
}

/// bonnie on the disk under the build (direct IO, so it takes a few seconds), without the
/// per-char tests (`-f`), which would take minutes.
fn watch_bonnie(columns: u16, no_color: bool) -> Seen {
    let target = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let args = format!(
        "bonnie -d {} -s 256 -r 0 -n 1 -D --no-save -f",
        target.path().display()
    );
    watch(columns, no_color, &args)
}

/// Runs `storbench ARGS` in a tmux pane of `columns` and watches the screen until it ends.
fn watch(columns: u16, no_color: bool, args: &str) -> Seen {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("storbench");
    let env = if no_color {
        "NO_COLOR=1"
    } else {
        "-u NO_COLOR"
    };
    let command = format!(
        "env {env} STORBENCH_DB=/dev/null/none {} {args}; echo exit=$?; sleep 600",
        bin.display(),
    );
    let tmux = Tmux::start(dir.path(), columns, &command);
    let started = Instant::now();
    let mut seen = Seen {
        progress_lines: Vec::new(),
        last_joined: String::new(),
        coloured: false,
    };
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no end in sight"
        );
        let screen = tmux.capture(true, false);
        // -J keeps trailing blanks: only what was drawn counts.
        let live: Vec<&str> = screen
            .lines()
            .map(str::trim_end)
            .filter(|l| is_progress(l))
            .collect();
        assert!(live.len() <= 1, "stale progress lines:\n{screen}");
        for l in &live {
            assert!(
                l.chars().count() < usize::from(columns),
                "a progress line as wide as the pane wraps:\n{screen}"
            );
            seen.progress_lines.push(l.to_string());
        }
        if !live.is_empty() {
            seen.coloured |= tmux.capture(false, true).contains("\u{1b}[3");
        }
        if screen.contains("exit=") {
            seen.last_joined = screen;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    seen
}

fn assert_table_intact(screen: &str) {
    assert!(screen.contains("exit=0"), "{screen}");
    assert!(
        !screen.lines().any(is_progress),
        "a progress line left:\n{screen}"
    );
    let header = screen
        .lines()
        .position(|l| l.starts_with("Test ") && l.contains("MB/s"))
        .unwrap_or_else(|| panic!("no table:\n{screen}"));
    let rows: Vec<&str> = screen.lines().skip(header + 1).take(8).collect();
    let names = [
        "SEQ1M Q8T1",
        "SEQ1M Q8T1",
        "SEQ1M Q1T1",
        "SEQ1M Q1T1",
        "RND4K Q32T1",
    ];
    for (row, name) in rows.iter().zip(names) {
        assert!(row.starts_with(name), "row {row:?} in:\n{screen}");
        assert!(row.contains("read") || row.contains("write"), "{row:?}");
    }
    assert_eq!(rows.len(), 8, "{screen}");
}

fn tmux_or_skip() -> bool {
    let ok = have_tool("tmux") && Path::new("/dev/shm").is_dir();
    if !ok {
        eprintln!("SKIP: needs tmux (Debian package tmux) and /dev/shm");
    }
    ok
}

#[test]
fn quick_bar_fits_80_columns_without_colour() {
    if !tmux_or_skip() {
        return;
    }
    let seen = watch_quick(80, true);
    assert!(seen.progress_lines.len() >= 2, "{:?}", seen.progress_lines);
    assert!(!seen.coloured, "colour despite NO_COLOR");
    // Figures and the whole run's ETA fit even at 80 columns.
    let line = seen
        .progress_lines
        .iter()
        .find(|l| l.starts_with('['))
        .expect("a test's bar");
    assert!(
        line.contains("MB/s") && line.contains("IOPS") && line.contains("%"),
        "{line}"
    );
    assert!(line.contains("] ") && line.contains("eta "), "{line}");
    assert_table_intact(&seen.last_joined);
}

#[test]
fn quick_bar_uses_160_columns_with_colour() {
    if !tmux_or_skip() {
        return;
    }
    let seen = watch_quick(160, false);
    assert!(seen.progress_lines.len() >= 2, "{:?}", seen.progress_lines);
    assert!(seen.coloured, "no colour on a terminal without NO_COLOR");
    // The wide bar fills the pane but its last column.
    let widest = seen.progress_lines.iter().map(|l| l.chars().count()).max();
    assert_eq!(widest, Some(159), "{:?}", seen.progress_lines);
    let tests: std::collections::BTreeSet<&str> = seen
        .progress_lines
        .iter()
        .filter_map(|l| l.split(']').next())
        .collect();
    assert!(
        tests.len() >= 3,
        "the bar should follow the tests: {tests:?}"
    );
    assert_table_intact(&seen.last_joined);
}

/// bonnie's screen at the end: no bar left, bonnie++'s progress lines each whole on a line
/// of its own, and the table.
fn assert_bonnie_intact(screen: &str) {
    assert!(screen.contains("exit=0"), "{screen}");
    assert!(
        !screen.lines().any(is_progress),
        "a progress line left:\n{screen}"
    );
    for line in [
        "Writing intelligently...done",
        "Rewriting...done",
        "Reading intelligently...done",
        "Seeking...done",
        "Create files in sequential order...done",
        "Delete files in random order...done",
    ] {
        assert!(
            screen.lines().any(|l| l.trim_end() == line),
            "{line} missing:\n{screen}"
        );
    }
    assert!(
        screen
            .lines()
            .any(|l| l.contains("------Sequential Output------")),
        "no table:\n{screen}"
    );
}

/// One bar per test: the test's name, the rate, the whole suite's ETA.
fn assert_bonnie_bars(seen: &Seen) {
    assert!(!seen.progress_lines.is_empty(), "no bar seen");
    for l in &seen.progress_lines {
        let head_ok = l.starts_with('[') && l.contains("/10] ");
        assert!(head_ok && l.contains("eta "), "{l}");
        assert!(
            l.contains("MB/s") || l.contains("seeks/s") || l.contains("files/s"),
            "{l}"
        );
    }
}

#[test]
fn bonnie_bar_fits_80_columns_without_colour() {
    if !tmux_or_skip() {
        return;
    }
    let seen = watch_bonnie(80, true);
    assert_bonnie_bars(&seen);
    assert!(!seen.coloured, "colour despite NO_COLOR");
    assert_bonnie_intact(&seen.last_joined);
}

#[test]
fn bonnie_bar_uses_160_columns_with_colour() {
    if !tmux_or_skip() {
        return;
    }
    let seen = watch_bonnie(160, false);
    assert_bonnie_bars(&seen);
    assert!(seen.coloured, "no colour on a terminal without NO_COLOR");
    let widest = seen.progress_lines.iter().map(|l| l.chars().count()).max();
    assert_eq!(widest, Some(159), "{:?}", seen.progress_lines);
    assert_bonnie_intact(&seen.last_joined);
}

/// Off a terminal, bonnie prints bonnie++'s own lines and no bar.
#[test]
fn bonnie_plain_lines_off_a_terminal() {
    let target = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let r = Run::of(storbench().args([
        "bonnie",
        "-d",
        target.path().to_str().unwrap(),
        "-s",
        "8",
        "-r",
        "0",
        "-n",
        "1",
        "--no-save",
        "-f",
    ]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !r.stderr.contains('\r') && !r.stderr.contains('\u{1b}') && !r.stderr.contains("eta "),
        "{:?}",
        r.stderr
    );
    assert!(
        r.stderr
            .lines()
            .any(|l| l == "Writing intelligently...done"),
        "{}",
        r.stderr
    );
}

/// Off a terminal, `--eta always` prints whole lines: no carriage returns, no escapes.
#[test]
fn plain_lines_off_a_terminal() {
    let target = tempfile::tempdir_in("/dev/shm").unwrap();
    let r = Run::of(storbench().args([
        "quick",
        target.path().to_str().unwrap(),
        "--size",
        "8m",
        "--runtime",
        "600ms",
        "--no-save",
        "--eta",
        "always",
    ]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !r.stderr.contains('\r') && !r.stderr.contains('\u{1b}'),
        "{:?}",
        r.stderr
    );
    let lines: Vec<&str> = r.stderr.lines().filter(|l| l.contains("[eta ")).collect();
    assert!(lines.len() >= 8, "{}", r.stderr);
    assert!(lines[0].starts_with("[1/8] SEQ1M Q8T1"), "{}", lines[0]);
    assert!(
        lines.last().unwrap().starts_with("[8/8] RND4K Q1T1"),
        "{lines:?}"
    );
}
