//! The exec engine's program: found before the job, started with its output redirected,
//! watched without blocking, and stopped as fio stops it (SIGTERM, the grace time,
//! SIGKILL), then reaped, so no program outlives its job. The child also gets SIGKILL if
//! the thread that started it dies without stopping it (`PR_SET_PDEATHSIG`).

use std::fs::File;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use storbench_core::{EngineError, ErrorKind};

/// How often a stop looks whether the program has exited.
const POLL: Duration = Duration::from_millis(10);

/// A running (or exited, not yet stopped) program, the leader of a process group of its
/// own, so that a stop reaches what it started too (a shell's commands).
pub(super) struct Program {
    child: Child,
    started: Instant,
    /// When it was first seen to have exited. It stays unreaped (a zombie) until the
    /// stop, so its process group id cannot be taken by another process meanwhile.
    seen_exit: Option<Duration>,
    stopped: bool,
}

/// The executable `name` names: a path with a `/` as given, else the first in `PATH`, as
/// execvp(3) looks it up. One line naming it when there is none.
pub(super) fn find_program(name: &str) -> Result<PathBuf, EngineError> {
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if name.contains('/') {
        Some(PathBuf::from(name)).filter(|p| runnable(p))
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(name))
                .find(|p| runnable(p))
        })
    };
    found.ok_or_else(|| {
        let why = if name.contains('/') {
            "is not an executable file"
        } else {
            "was not found in PATH"
        };
        EngineError::new(ErrorKind::Refused, format!("exec: program {name} {why}"))
    })
}

/// Opens fio's output file `name` for the program: created 0644 or truncated as fio does,
/// but never through a symbolic link, and only if it is a regular file (a FIFO there would
/// block, a device would be written to).
fn output_file(name: &str) -> Result<File, EngineError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(name)
        .map_err(|e| EngineError::os("exec: cannot open output file", name, e))?;
    let meta = file
        .metadata()
        .map_err(|e| EngineError::os("exec: cannot stat output file", name, e))?;
    if !meta.is_file() {
        return Err(EngineError::new(
            ErrorKind::Refused,
            format!("exec: output file {name} exists and is not a regular file"),
        ));
    }
    file.set_len(0)
        .map_err(|e| EngineError::os("exec: cannot truncate output file", name, e))?;
    Ok(file)
}

impl Program {
    /// Starts `argv` with stdout and stderr in the files `out` names (else storbench's).
    pub(super) fn start(
        argv: &[String],
        out: Option<&(String, String)>,
    ) -> Result<Self, EngineError> {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).process_group(0);
        if let Some((stdout, stderr)) = out {
            cmd.stdout(output_file(stdout)?);
            cmd.stderr(output_file(stderr)?);
        }
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .map_err(|e| EngineError::os("exec: cannot start", &argv[0], e))?;
        Ok(Program {
            child,
            started: Instant::now(),
            seen_exit: None,
            stopped: false,
        })
    }

    /// Whether it has exited, without waiting and without reaping it.
    pub(super) fn exited(&mut self) -> bool {
        if self.seen_exit.is_none() && self.leader_gone() {
            self.seen_exit = Some(self.started.elapsed());
        }
        self.seen_exit.is_some()
    }

    fn leader_gone(&self) -> bool {
        // SAFETY: waitid fills `info`, a plain C struct, and WNOWAIT leaves the child
        // unreaped.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            libc::waitid(libc::P_PID, self.child.id(), &mut info, flags) == 0
                && info.si_pid() != 0
        }
    }

    /// Signals its whole process group; it is unreaped, so the group is still its own.
    fn signal_group(&self, sig: libc::c_int) {
        // SAFETY: a plain syscall on the group id of our unreaped child.
        unsafe { libc::kill(-(self.child.id() as libc::pid_t), sig) };
    }

    /// Ends it as fio does: SIGTERM to the program, up to `grace` to exit, then SIGKILL;
    /// then SIGKILL to whatever of its process group is left, and reaps it. Says what the result should
    /// note: a program that exited by itself while the job was to run on (`timed`) or
    /// with a failure, or one that had to be killed.
    pub(super) fn stop(&mut self, grace: Duration, timed: bool) -> Option<String> {
        if std::mem::replace(&mut self.stopped, true) {
            return None;
        }
        let by_itself = self.exited();
        if !by_itself {
            // The program alone, as fio signals it: it may end what it started its way.
            // SAFETY: a plain syscall on our unreaped child's pid.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let end = Instant::now() + grace;
            while !self.exited() && Instant::now() < end {
                std::thread::sleep(POLL);
            }
        }
        let killed = !self.exited();
        self.signal_group(libc::SIGKILL);
        let status = self.child.wait().ok()?;
        if killed {
            return Some(format!(
                "did not exit within grace_time={} s of SIGTERM; killed",
                grace.as_secs()
            ));
        }
        let after = self.seen_exit.unwrap_or_default();
        (by_itself && (timed || !status.success())).then(|| {
            format!(
                "exited by itself ({}), seen {} ms after it started",
                describe(status),
                after.as_millis()
            )
        })
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("status {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => status.to_string(),
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if !self.stopped {
            self.signal_group(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_terminates_then_kills_and_reaps() {
        let argv: Vec<String> = ["sh", "-c", "trap '' TERM; sleep 30"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut p = Program::start(&argv, None).unwrap();
        let pid = p.child.id() as libc::pid_t;
        // The shell ignores SIGTERM only once it has run its `trap`: wait for that, however
        // slowly a loaded machine starts it.
        let began = Instant::now();
        while !ignores_term(pid) {
            assert!(began.elapsed() < Duration::from_secs(20), "the shell never set its trap");
            std::thread::sleep(Duration::from_millis(10));
        }
        let t = Instant::now();
        let note = p.stop(Duration::from_millis(300), true).unwrap();
        assert!(note.contains("killed"), "{note}");
        assert!(t.elapsed() >= Duration::from_millis(300));
        // The shell and its sleep are gone: no live process is left in its group (the
        // sleep may stay a zombie until its new parent reaps it, and takes a moment to
        // become one after SIGKILL).
        let killed = Instant::now();
        while live_in_group(pid) != 0 && killed.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(live_in_group(pid), 0);

        let argv: Vec<String> = ["sleep", "30"].iter().map(|s| s.to_string()).collect();
        let mut p = Program::start(&argv, None).unwrap();
        let t = Instant::now();
        assert_eq!(p.stop(Duration::from_secs(5), true), None);
        assert!(t.elapsed() < Duration::from_secs(2), "SIGTERM ended sleep");
    }

    /// Whether process `pid` ignores SIGTERM (signal 15: bit 14 of SigIgn in its status).
    fn ignores_term(pid: libc::pid_t) -> bool {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0)
    }

    /// Processes of process group `pgid` that are not zombies, from /proc.
    fn live_in_group(pgid: libc::pid_t) -> usize {
        let stats = std::fs::read_dir("/proc").unwrap().flatten().filter_map(|e| {
            std::fs::read_to_string(e.path().join("stat")).ok()
        });
        stats
            .filter(|st| {
                let after = st.rsplit_once(") ").map_or("", |(_, a)| a);
                let f: Vec<&str> = after.split(' ').collect();
                f.len() > 2 && f[0] != "Z" && f[2] == pgid.to_string()
            })
            .count()
    }

    #[test]
    fn output_files_are_never_followed_through_links() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("victim");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.path().join("j.stdout");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(output_file(link.to_str().unwrap()).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        let plain = d.path().join("k.stdout");
        std::fs::write(&plain, b"old output").unwrap();
        output_file(plain.to_str().unwrap()).unwrap();
        assert_eq!(std::fs::read(&plain).unwrap(), b"");
    }
}
