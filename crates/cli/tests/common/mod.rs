//! Shared helpers of the end-to-end tests of `storbench fio` and `storbench quick`: running
//! the binary and the real fio 3.33, probes that skip kernel-dependent tests with a printed
//! reason, comparing JSON shapes, and Drop guards for everything a test creates (temp dirs,
//! loop devices, mounts, child processes), so nothing is left behind when a test fails.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod json;
pub mod mpi;
pub mod shdisk;
pub mod system;
pub mod tmux;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `storbench` with a clean environment for tests: backtraces on (so a panic would show),
/// no colours, and a results database that cannot be opened, so a test that forgot
/// `--no-save` fails instead of writing to the user's history.
pub fn storbench() -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("storbench"));
    c.env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db");
    c
}

/// `storbench fio <args> --no-save`, run in `dir`.
pub fn sb_fio(dir: &Path, args: &[&str]) -> Run {
    let mut c = storbench();
    c.current_dir(dir).arg("fio").args(args).arg("--no-save");
    Run::of(&mut c)
}

/// A finished command with its output as text.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// No command of these tests runs anywhere near this long: a hang fails the test instead of
/// stalling the suite.
const RUN_LIMIT: Duration = Duration::from_secs(60);

impl Run {
    /// Runs `c` to the end (stdin closed), killing it after [`RUN_LIMIT`].
    pub fn of(c: &mut Command) -> Run {
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the command starts");
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut buf);
                }
                buf
            })
        };
        let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
        let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
        let end = Instant::now() + RUN_LIMIT;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{c:?} did not finish within {RUN_LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Run::from(Output {
            status,
            stdout: out.join().unwrap(),
            stderr: err.join().unwrap(),
        })
    }

    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert!(self.success(), "failed ({:?}): {}", self.code, self.stderr);
        assert_no_panic(&self.stderr);
        &self.stdout
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok()).unwrap_or_else(|e| {
            panic!("stdout is not valid JSON ({e}):\n{}", self.stdout);
        })
    }

    /// The JSON document of a run that may have failed (a verify error, an IO error gone
    /// past): from the first line that opens it, whatever the exit status.
    pub fn json_any(&self) -> serde_json::Value {
        let start = if self.stdout.starts_with("{\n") {
            0
        } else {
            self.stdout.find("\n{\n").map(|i| i + 1).unwrap_or_else(|| {
                panic!(
                    "no JSON ({:?}): {}\n{}",
                    self.code, self.stdout, self.stderr
                )
            })
        };
        serde_json::from_str(&self.stdout[start..])
            .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", self.stdout))
    }

    /// fio's JSON document: fio prints notes ("note: both iodepth >= 1 and synchronous I/O
    /// engine…") on stdout before it, so parsing starts at the first line that opens it.
    pub fn fio_json(&self) -> serde_json::Value {
        assert!(
            self.success(),
            "fio failed ({:?}): {}",
            self.code,
            self.stderr
        );
        let start = self.stdout.find("\n{\n").map_or(0, |i| i + 1);
        let text = if self.stdout.starts_with("{\n") {
            &self.stdout
        } else {
            &self.stdout[start..]
        };
        serde_json::from_str(text).unwrap_or_else(|e| panic!("fio JSON ({e}):\n{}", self.stdout))
    }

    /// Asserts the run failed with exactly one line on stderr besides quick's banner (no
    /// panic, no backtrace) and returns that line.
    pub fn one_error_line(&self) -> String {
        assert!(
            !self.success() && self.code.is_some(),
            "expected a failure, got {:?}\nstdout: {}\nstderr: {}",
            self.code,
            self.stdout,
            self.stderr
        );
        assert_no_panic(&self.stderr);
        // quick's banner ("storbench quick: <target> — <size> …") is printed
        // before the run starts, so errors found while running come after it.
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with("storbench quick: "))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "expected one line on stderr, got:\n{}",
            self.stderr
        );
        lines[0].to_string()
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

pub fn assert_no_panic(stderr: &str) {
    assert!(
        !stderr.contains("panicked") && !stderr.contains("stack backtrace"),
        "panic in storbench:\n{stderr}"
    );
}

/// Whether fio 3.33 is installed; prints why a test is skipped when not.
pub fn fio_available() -> bool {
    match Command::new("fio").arg("--version").output() {
        Ok(o) if String::from_utf8_lossy(&o.stdout).starts_with("fio-3.33") => true,
        Ok(o) => {
            eprintln!(
                "SKIP: fio 3.33 needed, found {}",
                String::from_utf8_lossy(&o.stdout).trim()
            );
            false
        }
        Err(e) => {
            eprintln!("SKIP: fio is not runnable ({e})");
            false
        }
    }
}

/// The real fio, run in `dir` (as processes, its default).
pub fn fio(dir: &Path, args: &[&str]) -> Run {
    Run::of(Command::new("fio").current_dir(dir).args(args))
}

/// A fresh temp dir that other users may enter (tempfile's are 0700), for tests that run
/// storbench as an unprivileged user. Removed on drop.
pub fn open_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Names of the entries in `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs `check` for every item, each on a thread of its own: most of the time of a
/// cross-check is fio starting up (half a second), not work. A failing check fails the test.
pub fn par_each<T: Sync>(items: &[T], check: impl Fn(&T) + Sync) {
    std::thread::scope(|s| {
        let handles: Vec<_> = items.iter().map(|i| s.spawn(|| check(i))).collect();
        let failed = handles
            .into_iter()
            .map(|h| h.join())
            .filter(Result::is_err)
            .count();
        assert_eq!(failed, 0, "{failed} check(s) failed (see above)");
    });
}

/// Splits a command line written as one string.
pub fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

/// Runs `c` with stdout a pipe whose reader is already gone, as `storbench … | head` once
/// head has exited.
pub fn into_closed_pipe(c: &mut std::process::Command) -> std::process::Output {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe fills two new descriptors; we close the read end and own the write end.
    let w = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        std::os::fd::OwnedFd::from_raw_fd(fds[1])
    };
    c.stdout(std::process::Stdio::from(w)).output().unwrap()
}

/// The CPU storbench recorded for the first job's server in a fio JSON report: kept under
/// storbench's own key (fio's job object is left as fio has it), naming `process` with
/// `pid` on this host, with some CPU used.
pub fn recorded_server_cpu<'d>(
    doc: &'d serde_json::Value,
    process: &str,
    pid: u64,
) -> &'d serde_json::Value {
    let job = &doc["jobs"][0];
    assert!(job.get("server_cpu").is_none(), "{job}");
    let server = &doc["storbench"]["jobs"][0]["server_cpu"][0];
    eprintln!("server_cpu: {server}; notes: {}", doc["storbench"]["notes"]);
    assert_eq!(server["process"], process, "{server}");
    assert_eq!(server["pid"], pid, "{server}");
    assert_eq!(server["same_host"], true, "{server}");
    let cpu_ns = server["usr_ns"].as_u64().unwrap() + server["sys_ns"].as_u64().unwrap();
    assert!(cpu_ns > 0, "{server}");
    server
}
