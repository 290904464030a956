//! Ctrl-C and SIGTERM: the run stops cleanly, partial results are printed, the exit code is
//! non-zero, and created files are removed (quick: always; fio: when unlink=1).

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::system::{ChildGuard, spawn, wait_for};
use common::{Run, entries, storbench};

/// Waits until a file whose name starts with `prefix` exists in `dir` and `child` has
/// written `laid_out` bytes (its lay-out is done), then a little more so the measured IO is
/// under way. A signal during the lay-out ends the run before it has results, which the
/// tests of partial results must not race into.
fn wait_for_file(child: &ChildGuard, dir: &Path, prefix: &str, laid_out: u64) {
    let seen = wait_for(Duration::from_secs(8), || {
        entries(dir).iter().any(|e| e.starts_with(prefix))
    });
    assert!(seen, "no {prefix}* file appeared in {}", dir.display());
    let written = wait_for(Duration::from_secs(30), || {
        bytes_written(child.pid()) >= laid_out
    });
    assert!(written, "the lay-out of {prefix}* did not finish");
    std::thread::sleep(Duration::from_millis(400));
}

/// What /proc/PID/io says the process wrote: `wchar` counts write calls (buffered psync),
/// `write_bytes` what reached the block layer (direct IO through libaio or io_uring).
fn bytes_written(pid: i32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    field("wchar:").max(field("write_bytes:"))
}

const MIB: u64 = 1 << 20;

const LONG_FIO: [&str; 9] = [
    "fio",
    "--name=s",
    "--ioengine=psync",
    "--size=8m",
    "--rw=randwrite",
    "--bs=4k",
    "--runtime=60",
    "--time_based",
    "--no-save",
];

#[test]
fn sigint_stops_fio_prints_partial_results_and_unlinks() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = LONG_FIO.to_vec();
    args.push("--unlink=1");
    let child = spawn(dir.path(), &args);
    wait_for_file(&child, dir.path(), "s.0.0", 8 * MIB);
    child.signal(libc::SIGINT);
    let run = child.wait_output(Duration::from_secs(10));
    assert_eq!(run.code, Some(130), "{run:?}");
    common::assert_no_panic(&run.stderr);
    assert!(
        run.stdout.contains("s: (groupid=0, jobs=1)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  write: IOPS="), "{}", run.stdout);
    assert!(run.stdout.contains("interrupted"), "{}", run.stdout);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn sigterm_stops_fio_json_and_keeps_files_without_unlink() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = LONG_FIO.to_vec();
    args.push("--output-format=json");
    let child = spawn(dir.path(), &args);
    wait_for_file(&child, dir.path(), "s.0.0", 8 * MIB);
    child.signal(libc::SIGTERM);
    let run = child.wait_output(Duration::from_secs(10));
    assert_eq!(run.code, Some(143), "128 + SIGTERM: {run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    assert_eq!(doc["storbench"]["interrupted"], true);
    assert!(doc["jobs"][0]["write"]["total_ios"].as_u64() > Some(0));
    assert_eq!(
        entries(dir.path()),
        ["s.0.0"],
        "unlink=0 keeps the file, as fio"
    );
}

/// Runs `storbench quick` (16 MiB, 5 s per test, `extra` flags) on `dir` and sends `sig`
/// once the first test is under way.
fn interrupt_quick(dir: &Path, extra: &[&str], sig: i32) -> Run {
    let target = dir.to_str().unwrap();
    let mut args = vec!["quick", "--size", "16m", "--runtime", "5s"];
    args.extend_from_slice(extra);
    args.extend([target, "--no-save"]);
    let child = spawn(dir, &args);
    wait_for_file(&child, dir, "storbench-quick.", 16 * MIB);
    std::thread::sleep(Duration::from_millis(600));
    child.signal(sig);
    child.wait_output(Duration::from_secs(10))
}

#[test]
fn sigint_stops_quick_prints_what_ran_and_removes_the_test_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = interrupt_quick(dir.path(), &[], libc::SIGINT);
    assert_eq!(run.code, Some(130), "128 + SIGINT: {run:?}");
    common::assert_no_panic(&run.stderr);
    let first_row = run
        .stdout
        .lines()
        .any(|l| l.starts_with("SEQ1M Q8T1") && l.split_whitespace().nth(2) == Some("read"));
    assert!(first_row, "{}", run.stdout);
    assert!(run.stdout.contains("interrupted"), "{}", run.stdout);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn sigterm_stops_quick_json_with_the_interruption_marked() {
    let dir = tempfile::tempdir().unwrap();
    let run = interrupt_quick(dir.path(), &["--json"], libc::SIGTERM);
    assert_eq!(run.code, Some(143), "128 + SIGTERM: {run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    assert_eq!(doc["interrupted"], true);
    let tests = doc["tests"].as_array().unwrap();
    assert!(
        !tests.is_empty() && tests.len() < 8,
        "{} tests",
        tests.len()
    );
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// Interrupted while the test file is still being written: it is removed all the same, and
/// the run ends as one cut during the tests does (128 + SIGINT, not a plain failure).
#[test]
fn sigint_during_quick_lay_out_removes_the_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().to_str().unwrap();
    let child = spawn(
        dir.path(),
        &[
            "quick",
            "--size",
            "2g",
            "--runtime",
            "1s",
            target,
            "--no-save",
        ],
    );
    let seen = wait_for(Duration::from_secs(8), || !entries(dir.path()).is_empty());
    assert!(seen, "no test file appeared");
    child.signal(libc::SIGINT);
    let run = child.wait_output(Duration::from_secs(10));
    assert_eq!(run.code, Some(130), "{run:?}");
    assert!(run.stderr.contains("lay-out of"), "{}", run.stderr);
    common::assert_no_panic(&run.stderr);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// The interruption is said once in the notes block.
#[test]
fn interruption_is_noted_once() {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(dir.path(), &LONG_FIO);
    wait_for_file(&child, dir.path(), "s.0.0", 8 * MIB);
    child.signal(libc::SIGINT);
    let run = child.wait_output(Duration::from_secs(10));
    let said = run
        .stdout
        .lines()
        .filter(|l| l.contains("interrupted"))
        .count();
    assert_eq!(said, 1, "{}", run.stdout);
}

/// An interrupted quick run is saved marked: `history` flags it, `show` says so in its
/// heading, and `compare`/`report` warn that its figures cover only part of the run.
#[test]
fn interrupted_runs_are_marked_in_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let sb = |args: &[&str]| {
        let mut c = storbench();
        c.env("STORBENCH_DB", &db).current_dir(&work).args(args);
        c
    };
    Run::of(&mut sb(&["quick", "--size", "1m", "--runtime", "100ms"])).ok();
    let child = ChildGuard(Some(
        sb(&["quick", "--size", "16m", "--runtime", "5s"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    wait_for_file(&child, &work, "storbench-quick.", 16 * MIB);
    child.signal(libc::SIGINT);
    let cut = child.wait_output(Duration::from_secs(10));
    assert_eq!(cut.code, Some(130), "{cut:?}");
    assert!(cut.stderr.contains("saved as run 2"), "{}", cut.stderr);
    let history = Run::of(&mut sb(&["history"]));
    let marked: Vec<&str> = history
        .ok()
        .lines()
        .filter(|l| l.contains("quick*"))
        .collect();
    assert_eq!(marked.len(), 1, "{}", history.stdout);
    assert!(
        marked[0].trim_start().starts_with("2 "),
        "{}",
        history.stdout
    );
    assert!(
        history.stdout.contains("* interrupted"),
        "{}",
        history.stdout
    );
    let show = Run::of(&mut sb(&["show", "2"]));
    assert!(
        show.ok().lines().next().unwrap().contains("INTERRUPTED"),
        "{}",
        show.stdout
    );
    let html = dir.path().join("r.html");
    for args in [
        &["compare", "1", "2"][..],
        &["report", "1", "2", "-o", html.to_str().unwrap()],
    ] {
        let run = Run::of(&mut sb(args));
        run.ok();
        assert!(
            run.stderr.contains("warning: run 2 was interrupted"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("run 1 was"), "{}", run.stderr);
    }
    assert!(entries(&work).is_empty(), "{:?}", entries(&work));
}

/// A third signal exits at once and names the test file the run would have removed, also
/// while the file is still being laid out (2 GiB: the likeliest time to lose patience).
#[test]
fn a_third_signal_names_the_test_file_left_behind() {
    for (size, laying_out) in [("16m", false), ("2g", true)] {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().to_str().unwrap();
        let args = [
            "quick",
            "--size",
            size,
            "--runtime",
            "5s",
            target,
            "--no-save",
        ];
        let child = spawn(dir.path(), &args);
        if laying_out {
            let seen = wait_for(Duration::from_secs(8), || !entries(dir.path()).is_empty());
            assert!(seen, "no test file appeared");
        } else {
            wait_for_file(&child, dir.path(), "storbench-quick.", 16 * MIB);
        }
        // Three different signals: one sent twice could merge with the first while pending.
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            child.signal(sig);
        }
        let run = child.wait_output(Duration::from_secs(10));
        assert!([130, 143, 129].map(Some).contains(&run.code), "{run:?}");
        let named = format!("may be left behind (such as {target}/storbench-quick.");
        assert!(run.stderr.contains(&named), "{size}: {}", run.stderr);
    }
}
