//! Ctrl-C in the middle of a run: storbench stops, removes the test file and the
//! `Bonnie.<pid>` tree it created, and exits non-zero.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the child if the test fails before it has been waited for.
struct Reap(Option<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut()
            && let Ok(None) = child.try_wait()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start(dir: &std::path::Path, args: &[&str]) -> Reap {
    let child = Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "bonnie", "-d", dir.to_str().unwrap(), "-q"])
        .args(args)
        .env_remove("STORBENCH_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storbench");
    Reap(Some(child))
}

/// Waits until the run has created something (so the signal lands mid-run), then `extra`.
fn wait_until_busy(dir: &std::path::Path, extra: Duration) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_dir(dir).unwrap().next().is_none() {
        assert!(Instant::now() < deadline, "the run never created its files");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(extra);
}

fn interrupt(mut run: Reap, dir: &std::path::Path) -> String {
    // SAFETY: kill with a valid pid and signal number.
    let child = run.0.take().expect("started");
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "the run finished before the signal: {stderr}"
    );
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    stderr
}

#[test]
fn interrupted_during_the_io_tests() {
    let per_char: &[&str] = &["-s", "1024", "-r", "0", "-n", "1"];
    let block: &[&str] = &["-s", "1024", "-r", "0", "-n", "1", "-f"];
    for (args, after) in [
        (per_char, Duration::ZERO),
        (per_char, Duration::from_millis(1500)),
        (block, Duration::from_millis(300)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let run = start(dir.path(), args);
        wait_until_busy(dir.path(), after);
        let stderr = interrupt(run, dir.path());
        assert!(stderr.contains("interrupted during"), "{stderr}");
    }
}

#[test]
fn interrupted_during_the_file_tests() {
    for after in [Duration::from_millis(50), Duration::from_millis(700)] {
        let dir = tempfile::tempdir().unwrap();
        let run = start(dir.path(), &["-s", "0", "-n", "64:1k:0:4"]);
        wait_until_busy(dir.path(), after);
        let stderr = interrupt(run, dir.path());
        assert!(stderr.contains("interrupted during"), "{stderr}");
    }
}
