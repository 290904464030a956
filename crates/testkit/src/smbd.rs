//! A private Samba `smbd` on 127.0.0.1, for tests and benches.
//!
//! Each [`Smbd`] gets a free port and its own configuration, private (passdb), lock, state,
//! cache, pid and log directories under a temporary directory, so the system's Samba set-up
//! (`/etc/samba`, `/var/lib/samba`) is neither read nor touched. It serves:
//!
//! - `share`: read-write, for the user [`Smbd::user`] with password [`Smbd::password`]
//!   (added with `smbpasswd` to the private passdb; the Unix account behind it is the one
//!   running the tests, as Samba needs one);
//! - `guest`: read-write for guests (any name, no password);
//! - `private`: nobody may use it (for "access denied" tests);
//! - `readonly`: guests may read (`read only = yes`); a test puts files in its directory
//!   ([`Smbd::share_dir`]) beforehand;
//! - `sealed`, with [`SmbdOptions::sealed_share`]: as `share`, with `smb encrypt = required`
//!   on the share alone (the session is not asked to encrypt; the share flags say so).
//!
//! [`SmbdOptions`] chooses `server signing`, `smb encrypt` and `server min/max protocol`.
//! The server is stopped by PID on drop, with the helpers (`samba-dcerpcd`) it started.

use std::fs;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The share names every instance serves.
pub const SHARE: &str = "share";
pub const GUEST_SHARE: &str = "guest";
pub const PRIVATE_SHARE: &str = "private";
pub const READ_ONLY_SHARE: &str = "readonly";
/// Served with [`SmbdOptions::sealed_share`].
pub const SEALED_SHARE: &str = "sealed";

/// Why smbd cannot run here (missing packages), or `None` if it can.
pub fn unavailable() -> Option<String> {
    for (bin, pkg) in [("smbd", "samba"), ("smbpasswd", "samba-common-bin")] {
        let found = ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(bin).exists());
        if !found {
            return Some(format!("{bin} not installed (Debian package {pkg})"));
        }
    }
    None
}

/// Server settings that tests vary.
#[derive(Clone, Debug, Default)]
pub struct SmbdOptions {
    /// `server signing` (`default`, `auto`, `mandatory`, `disabled`); unset: Samba's default.
    pub signing: Option<&'static str>,
    /// `smb encrypt` (`off`, `desired`, `required`); unset: Samba's default.
    pub encrypt: Option<&'static str>,
    /// `server max protocol` (`SMB2_02`, `SMB2_10`, `SMB3_00`, `SMB3_02`, `SMB3_11`).
    pub max_protocol: Option<&'static str>,
    /// `server min protocol`; unset: `SMB2_02`.
    pub min_protocol: Option<&'static str>,
    /// `smb2 max credits`: the most credits the server grants a client (Samba's default
    /// 8192); a small value starves a deep queue.
    pub max_credits: Option<u32>,
    /// `durable handles = no`: the server grants no durable handle (Samba 4.17 grants them
    /// by default), so a client must reopen its files after a lost connection.
    pub no_durable_handles: bool,
    /// Also serve [`SEALED_SHARE`], which requires encryption on its own.
    pub sealed_share: bool,
}

/// A running smbd; stopped by PID on drop.
pub struct Smbd {
    pub port: u16,
    dir: tempfile::TempDir,
    opts: SmbdOptions,
    user: String,
    password: String,
    child: Option<Child>,
}

impl Smbd {
    /// Starts an instance with Samba's defaults.
    pub fn start() -> Result<Smbd, String> {
        Self::start_with(SmbdOptions::default())
    }

    pub fn start_with(opts: SmbdOptions) -> Result<Smbd, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let dir = tempfile::Builder::new()
            .prefix("storbench-smbd-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        for sub in [
            "share", "guest", "private", "readonly", "sealed", "priv", "lock", "state", "cache",
            "pid", "log", "ncalrpc",
        ] {
            fs::create_dir(dir.path().join(sub)).map_err(|e| format!("create {sub} dir: {e}"))?;
        }
        // Guests write as the Unix account running the tests, whose files these are.
        let user = unix_user()?;
        let password = format!("Sb-{:x}-{}", std::process::id(), unix_nanos() % 1_000_000);
        let port = crate::ports::free_port().map_err(|e| format!("find a free port: {e}"))?;
        let mut s = Smbd {
            port,
            dir,
            opts,
            user,
            password,
            child: None,
        };
        s.write_config()?;
        s.add_user()?;
        s.spawn()?;
        Ok(s)
    }

    /// The user name for `share`.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Its password (random per instance).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The local directory behind a share (to check what the client did).
    pub fn share_dir(&self, share: &str) -> PathBuf {
        self.dir.path().join(share)
    }

    /// The configuration file (for `smbclient -s`).
    pub fn config(&self) -> PathBuf {
        self.dir.path().join("smb.conf")
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The server's log (level 1), for failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("log").join("log.smbd")).unwrap_or_default()
    }

    /// Runs `smbclient //127.0.0.1/<share> -p <port>` with `commands` (`-c`), as the user
    /// (or as a guest with `guest`), and returns its stdout or its stderr as the error.
    /// The password goes through the environment, not argv.
    pub fn smbclient(&self, share: &str, guest: bool, commands: &str) -> Result<String, String> {
        let mut cmd = Command::new("smbclient");
        cmd.arg(format!("//127.0.0.1/{share}"))
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-s")
            .arg(self.config())
            .arg("-c")
            .arg(commands);
        if guest {
            cmd.arg("-N");
        } else {
            cmd.arg("-U").arg(&self.user).env("PASSWD", &self.password);
        }
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run smbclient: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        // smbclient reports some failures (NT_STATUS_*) on stdout with status 0.
        if !out.status.success() || stdout.contains("NT_STATUS_") {
            return Err(format!(
                "smbclient {commands:?}: {}{}",
                stdout.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(stdout)
    }

    fn write_config(&self) -> Result<(), String> {
        let d = self.dir.path();
        let p = |s: &str| d.join(s).display().to_string();
        let mut conf = format!(
            "[global]\n\
             server role = standalone server\n\
             smb ports = {port}\n\
             interfaces = 127.0.0.1\n\
             bind interfaces only = yes\n\
             disable netbios = yes\n\
             private dir = {priv}\n\
             passdb backend = tdbsam:{priv}/passdb.tdb\n\
             lock directory = {lock}\n\
             state directory = {state}\n\
             cache directory = {cache}\n\
             pid directory = {pid}\n\
             ncalrpc dir = {ncalrpc}\n\
             log file = {log}/log.%m\n\
             max log size = 0\n\
             log level = 1\n\
             map to guest = Bad User\n\
             guest account = {user}\n\
             load printers = no\n\
             printing = bsd\n\
             printcap name = /dev/null\n\
             disable spoolss = yes\n\
             server min protocol = {min}\n",
            port = self.port,
            priv = p("priv"),
            lock = p("lock"),
            state = p("state"),
            cache = p("cache"),
            pid = p("pid"),
            ncalrpc = p("ncalrpc"),
            log = p("log"),
            user = self.user,
            min = self.opts.min_protocol.unwrap_or("SMB2_02"),
        );
        if let Some(v) = self.opts.max_protocol {
            conf += &format!("server max protocol = {v}\n");
        }
        if let Some(v) = self.opts.signing {
            conf += &format!("server signing = {v}\n");
        }
        if let Some(v) = self.opts.encrypt {
            conf += &format!("smb encrypt = {v}\n");
        }
        if let Some(v) = self.opts.max_credits {
            conf += &format!("smb2 max credits = {v}\n");
        }
        if self.opts.no_durable_handles {
            conf += "durable handles = no\n";
        }
        conf += &format!(
            "[{SHARE}]\npath = {}\nread only = no\nguest ok = no\nvalid users = {}\n\
             [{GUEST_SHARE}]\npath = {}\nread only = no\nguest ok = yes\nforce user = {}\n\
             [{PRIVATE_SHARE}]\npath = {}\nread only = no\nvalid users = nobody-at-all\n\
             [{READ_ONLY_SHARE}]\npath = {}\nread only = yes\nguest ok = yes\nforce user = {}\n",
            p("share"),
            self.user,
            p("guest"),
            self.user,
            p("private"),
            p("readonly"),
            self.user,
        );
        if self.opts.sealed_share {
            conf += &format!(
                "[{SEALED_SHARE}]\npath = {}\nread only = no\nvalid users = {}\n\
                 smb encrypt = required\n",
                p("sealed"),
                self.user,
            );
        }
        fs::write(self.config(), conf).map_err(|e| format!("write smb.conf: {e}"))
    }

    /// `smbpasswd -a` into this instance's own passdb (named by its configuration).
    fn add_user(&self) -> Result<(), String> {
        let mut child = Command::new("smbpasswd")
            .arg("-c")
            .arg(self.config())
            .arg("-s")
            .arg("-a")
            .arg(&self.user)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("run smbpasswd: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let pw = format!("{0}\n{0}\n", self.password);
            stdin
                .write_all(pw.as_bytes())
                .map_err(|e| format!("smbpasswd stdin: {e}"))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("smbpasswd: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "smbpasswd -a {}: {}",
                self.user,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(())
    }

    fn spawn(&mut self) -> Result<(), String> {
        // smbd's helpers (smbd-notifyd, cleanupd) often outlive it by a moment; orphaned,
        // they would be reparented to PID 1, which in a container may never reap them, and
        // stay as zombies. As a subreaper this process inherits them instead and `stop`
        // reaps them by PID.
        // SAFETY: a flag on this process; no memory is passed.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        // Its own process group: smbd signals its whole group when it shuts down.
        let child = Command::new("smbd")
            .process_group(0)
            .arg("--foreground")
            .arg("--no-process-group")
            .arg("--configfile")
            .arg(self.config())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start smbd: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                let log = self.log();
                let tail: Vec<&str> = log.lines().rev().take(6).collect();
                return Err(format!(
                    "smbd exited ({status}) while starting; log: {}",
                    tail.join(" | ")
                ));
            }
            if answers(self.port) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(format!(
                    "smbd did not listen on port {} within 20 s",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server and every process it started (SIGTERM, SIGKILL after 10 s).
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        let pid = c.id() as i32;
        // smbd forks one process per connection and may start samba-dcerpcd (share lists)
        // with its rpcd_* workers, which leave smbd's family: find them all, by descent and
        // by this instance's own configuration file on their command line, before the
        // parent goes.
        let mut family = descendants(pid);
        for p in group_members(pid)
            .into_iter()
            .chain(using_config(&self.config()))
        {
            if !family.contains(&p) && p != pid {
                family.push(p);
            }
        }
        // smbd first: it stops the children it knows and reaps them (an orphan's zombie
        // would wait for an init that may not reap); whatever remains is signalled after.
        // SAFETY: signalling our own child by PID.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
        for &p in &family {
            if alive(p) {
                // SAFETY: signalling the processes our child started, by PID.
                unsafe { libc::kill(p, libc::SIGTERM) };
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while family.iter().any(|&p| alive(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for &p in &family {
            if alive(p) {
                // SAFETY: as above.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
        reap(&family);
    }

    /// Starts the server again on the same port and directories (after `stop`).
    pub fn start_again(&mut self) -> Result<(), String> {
        if self.child.is_some() {
            return Ok(());
        }
        self.spawn()
    }
}

impl Drop for Smbd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn unix_user() -> Result<String, String> {
    // SAFETY: getpwuid returns a pointer into static storage or null; read at once.
    let name = unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() {
            return Err("no passwd entry for this user (smbpasswd needs one)".into());
        }
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    };
    Ok(name)
}

fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn answers(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        Duration::from_millis(500),
    )
    .is_ok()
}

/// Waits (up to 5 s) until none of `pids` exists, reaping those that became this process's
/// children (as its subreaper) when smbd went first.
fn reap(pids: &[i32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        for &p in pids {
            let mut status = 0;
            // SAFETY: waits only for the given PID, without blocking.
            unsafe { libc::waitpid(p, &mut status, libc::WNOHANG) };
        }
        let left = pids
            .iter()
            .any(|p| Path::new(&format!("/proc/{p}")).exists());
        if !left || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// PIDs whose process group is `pgid` (smbd's own group: its helpers and clients).
fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The process group is the 3rd field after the ")" that ends the command name.
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|s| s.parse::<i32>().ok());
        if pgrp == Some(pgid) && pid != pgid {
            out.push(pid);
        }
    }
    out
}

fn alive(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"))
}

/// PIDs of the processes started with `--configfile=<config>` (Samba's helpers).
fn using_config(config: &Path) -> Vec<i32> {
    let want = format!("--configfile={}", config.display());
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.split(|&b| b == 0).any(|arg| arg == want.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// PIDs of every live descendant of `root` (from /proc's parent links).
fn descendants(root: i32) -> Vec<i32> {
    let mut parents = Vec::new();
    if let Ok(rd) = fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The parent PID is the 2nd field after the ")" that ends the command name.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|s| s.parse::<i32>().ok());
            if let Some(ppid) = ppid {
                parents.push((pid, ppid));
            }
        }
    }
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(child, parent) in &parents {
            if parent == p && !out.contains(&child) {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}
