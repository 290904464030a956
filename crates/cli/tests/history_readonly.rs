//! Reading commands on a database this process cannot write: `history`, `show`, `compare`
//! and `report` open it read-only, so a database in a read-only directory works, and none of
//! them leaves a `-wal` or `-shm` file behind. A measuring command refuses a database file
//! it cannot write before the run.
//!
//! Tests run as root, which permission bits do not stop, so the directory is made read-only
//! by a read-only bind mount in a private mount namespace (`unshare -m`), which binds root
//! as well and disappears with the command.

mod common;

use std::path::Path;
use std::process::Command;

use common::system::{have_tool, root_or_skip};

fn storbench(db: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_storbench"));
    c.env("STORBENCH_DB", db).env("NO_COLOR", "1");
    c
}

fn save_two_runs(db: &Path) {
    for name in ["first", "second"] {
        let out = storbench(db)
            .args(["--label", name, "fio", "--name", name, "--ioengine=null"])
            .args(["--size=1M", "--rw=read", "--output-format=terse"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `storbench ARGS` with `dir` (a directory or a file) mounted read-only for it alone; its
/// output.
fn in_read_only_dir(dir: &Path, db: &Path, args: &[&str]) -> std::process::Output {
    let d = dir.to_str().unwrap();
    let script =
        format!("mount --bind {d} {d} && mount -o remount,bind,ro {d} && exec \"$0\" \"$@\"");
    Command::new("unshare")
        .args(["-m", "sh", "-c", &script, env!("CARGO_BIN_EXE_storbench")])
        .args(args)
        .env("STORBENCH_DB", db)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn wal_files(dir: &Path) -> Vec<String> {
    common::entries(dir)
        .into_iter()
        .filter(|n| n.ends_with("-wal") || n.ends_with("-shm"))
        .collect()
}

#[test]
fn reading_commands_work_in_a_read_only_directory() {
    if !root_or_skip("a read-only bind mount") || !have_tool("unshare") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    save_two_runs(&db);
    assert_eq!(wal_files(dir.path()), Vec::<String>::new());
    let probe = in_read_only_dir(dir.path(), &db, &["--version"]);
    if !probe.status.success() {
        eprintln!(
            "SKIP: no read-only bind mount here: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        );
        return;
    }
    let html = tempfile::tempdir().unwrap();
    let out_html = html.path().join("r.html");
    for args in [
        vec!["history"],
        vec!["history", "--format", "json"],
        vec!["show", "first"],
        vec!["compare", "first", "second"],
        vec![
            "report",
            "first",
            "second",
            "-o",
            out_html.to_str().unwrap(),
        ],
    ] {
        let out = in_read_only_dir(dir.path(), &db, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "storbench {args:?}: {err}");
        assert!(!err.contains("readonly"), "{err}");
        assert_eq!(wal_files(dir.path()), Vec::<String>::new(), "{args:?}");
    }
    assert!(out_html.exists());
}

#[test]
fn reading_commands_leave_no_wal_files_in_a_writable_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    save_two_runs(&db);
    for args in [
        vec!["history"],
        vec!["show", "first"],
        vec!["compare", "first", "second"],
    ] {
        let out = storbench(&db).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert_eq!(wal_files(dir.path()), Vec::<String>::new(), "{args:?}");
    }
}

/// A database file that cannot be written (SQLite would open it read-only and fail only at
/// the save) is refused before the run, in one line: nothing measured, no output.
#[test]
fn a_read_only_database_file_is_refused_before_the_run() {
    if !root_or_skip("a read-only bind mount") || !have_tool("unshare") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    save_two_runs(&db);
    let out = in_read_only_dir(
        &db,
        &db,
        &[
            "fio",
            "--name=x",
            "--ioengine=null",
            "--size=1M",
            "--output-format=terse",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("storbench: ")
            && err.contains("results.db: the database cannot be written")
            && err.contains("nothing was run"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
