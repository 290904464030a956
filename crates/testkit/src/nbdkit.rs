//! An nbdkit (Debian's `nbdkit`) started for one test on a private port or Unix socket,
//! serving a plugin (memory, file, ...) with optional filters and flags, stopped by PID on
//! drop — also when the test fails. nbdkit is started in the foreground, dies with the test
//! process (PR_SET_PDEATHSIG from a long-lived thread), and keeps no state outside what the
//! test gave it.

use std::io;
use std::net::{Ipv4Addr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::free_port;

/// Why nbdkit tests cannot run here, or `None` if they can.
pub fn unavailable() -> Option<String> {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join("nbdkit").is_file()));
    (!found).then(|| "nbdkit not installed (Debian package nbdkit)".to_string())
}

/// Where the server listens.
pub enum Listen {
    Tcp,
    /// A Unix-domain socket in a temporary directory of the guard's.
    Unix,
}

/// One running nbdkit.
pub struct Nbdkit {
    child: Option<Child>,
    port: u16,
    socket: Option<PathBuf>,
    _dir: tempfile::TempDir,
    log: PathBuf,
}

impl Nbdkit {
    /// `nbdkit memory SIZE` on 127.0.0.1 (a RAM disk of `size`, e.g. "64M").
    pub fn memory(size: &str) -> io::Result<Nbdkit> {
        Self::start(Listen::Tcp, &[], &["memory", size])
    }

    /// `nbdkit file FILE` on 127.0.0.1.
    pub fn file(path: &Path) -> io::Result<Nbdkit> {
        let arg = format!("file={}", path.display());
        Self::start(Listen::Tcp, &[], &["file", &arg])
    }

    /// nbdkit with `flags` (`--no-sr`, `-r`, `--filter=…`) before `plugin_args` (the
    /// plugin's name and its parameters). TCP servers retry with another port when the one
    /// picked was taken meanwhile.
    pub fn start(listen: Listen, flags: &[&str], plugin_args: &[&str]) -> io::Result<Nbdkit> {
        let mut last = None;
        for _ in 0..5 {
            match Self::spawn(&listen, flags, plugin_args) {
                Ok(n) => return Ok(n),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("nbdkit did not start")))
    }

    fn spawn(listen: &Listen, flags: &[&str], plugin_args: &[&str]) -> io::Result<Nbdkit> {
        let dir = tempfile::Builder::new()
            .prefix("storbench-nbdkit")
            .tempdir()?;
        let log = dir.path().join("nbdkit.log");
        let mut cmd = Command::new("nbdkit");
        cmd.args(["-f", "--log=stderr"]);
        let (port, socket) = match listen {
            Listen::Tcp => {
                let port = free_port()?;
                cmd.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
                (port, None)
            }
            Listen::Unix => {
                let s = dir.path().join("nbd.sock");
                cmd.arg("-U").arg(&s);
                (0, Some(s))
            }
        };
        cmd.args(flags)
            .args(plugin_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&log)?));
        // SAFETY: prctl is async-signal-safe; nbdkit dies with the test process even when
        // the test is killed before its Drop guards run.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut n = Nbdkit {
            child: Some(crate::tgtd::spawn_from_keeper(cmd)?),
            port,
            socket,
            _dir: dir,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if n.answers() {
                return Ok(n);
            }
            if let Some(status) = n.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                n.child = None;
                return Err(io::Error::other(format!(
                    "nbdkit exited at start ({status}): {}",
                    n.log().lines().last().unwrap_or("")
                )));
            }
            if Instant::now() > deadline {
                n.stop();
                return Err(io::Error::other("nbdkit did not listen within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn answers(&self) -> bool {
        match &self.socket {
            Some(s) => std::os::unix::net::UnixStream::connect(s).is_ok(),
            None => TcpStream::connect_timeout(
                &(Ipv4Addr::LOCALHOST, self.port).into(),
                Duration::from_millis(200),
            )
            .is_ok(),
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `nbd://127.0.0.1:PORT/` or `nbd+unix:///?socket=PATH` (the default export).
    pub fn uri(&self) -> String {
        match &self.socket {
            Some(s) => format!("nbd+unix:///?socket={}", s.display()),
            None => format!("nbd://127.0.0.1:{}/", self.port),
        }
    }

    /// nbdkit's stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the server by PID: SIGTERM, then SIGKILL after 5 s.
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: signalling our own child by PID.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Nbdkit {
    fn drop(&mut self) {
        self.stop();
    }
}
