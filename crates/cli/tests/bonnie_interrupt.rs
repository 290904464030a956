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
    start_with(dir, args, None)
}

/// Starts a run with `ignored` set to SIG_IGN, as `nohup` leaves SIGHUP.
fn start_with(dir: &std::path::Path, args: &[&str], ignored: Option<libc::c_int>) -> Reap {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("storbench"));
    cmd.args(["--no-save", "bonnie", "-d", dir.to_str().unwrap(), "-q"])
        .args(args)
        .env_remove("STORBENCH_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(sig) = ignored {
        // SAFETY: only signal(2), async-signal-safe, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(sig, libc::SIG_IGN);
                Ok(())
            });
        }
    }
    Reap(Some(cmd.spawn().expect("start storbench")))
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

fn interrupt(run: Reap, dir: &std::path::Path) -> String {
    stop_with(run, dir, libc::SIGINT)
}

/// Sends `sig`; the run must end with 128 + `sig` and nothing left in `dir`.
fn stop_with(mut run: Reap, dir: &std::path::Path, sig: libc::c_int) -> String {
    let child = run.0.take().expect("started");
    // SAFETY: kill with a valid pid and signal number.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(rc, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "the run finished before the signal: {stderr}"
    );
    assert_eq!(out.status.code(), Some(128 + sig), "{stderr}");
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

/// A hang-up (the ssh session dropped) and SIGQUIT clean up like Ctrl-C.
#[test]
fn hang_up_and_quit_remove_everything() {
    for sig in [libc::SIGHUP, libc::SIGQUIT] {
        let dir = tempfile::tempdir().unwrap();
        let run = start(dir.path(), &["-s", "0", "-n", "64:1k:0:4"]);
        wait_until_busy(dir.path(), Duration::from_millis(100));
        let stderr = stop_with(run, dir.path(), sig);
        assert!(stderr.contains("interrupted during"), "{sig}: {stderr}");
    }
}

/// Under `nohup` SIGHUP stays ignored: the run goes on to the end and cleans up itself.
#[test]
fn an_ignored_hang_up_stays_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let run = start_with(dir.path(), &["-s", "0", "-n", "4"], Some(libc::SIGHUP));
    wait_until_busy(dir.path(), Duration::ZERO);
    let child = run.0.as_ref().expect("started");
    // SAFETY: kill with a valid pid and signal number.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGHUP) },
        0
    );
    let mut run = run;
    let out = run.0.take().unwrap().wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(",4,"),
        "a CSV line with -n 4"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Three signals in a row exit at once and name where the run's files are, so the user
/// can remove them by hand (this test removes them itself).
#[test]
fn a_third_signal_exits_at_once_naming_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = start(dir.path(), &["-s", "1024", "-r", "0", "-n", "1"]);
    wait_until_busy(dir.path(), Duration::from_millis(200));
    let child = run.0.take().expect("started");
    let pid = child.id() as libc::pid_t;
    // Three different signals: one sent twice could merge with the first while pending.
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: kill with a valid pid and signal number.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    assert!(
        [130, 143, 129].map(Some).contains(&code),
        "{code:?}: {stderr}"
    );
    let named = format!(
        "third signal: exiting at once; files this run created may be left behind (such as {}/Bonnie.{pid})",
        dir.path().display()
    );
    assert!(stderr.contains(&named), "{stderr}");
}
