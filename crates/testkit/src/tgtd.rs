//! A tgtd (Linux SCSI target framework, user space) started for one test: its own portal
//! port and control socket, targets and LUNs backed by files, CHAP accounts, and a clean stop
//! by PID on drop — also when the test fails.
//!
//! tgtd ignores SIGTERM while targets exist, so stopping deletes the targets, asks the
//! daemon to exit through `tgtadm --mode system --op delete`, and only then falls back to
//! SIGKILL of our own PID.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

static NEXT_CONTROL: AtomicU32 = AtomicU32::new(0);

/// Why tgtd tests cannot run here, or `None` if they can.
pub fn unavailable() -> Option<String> {
    for tool in ["tgtd", "tgtadm"] {
        let found = std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(tool).is_file()))
            || Path::new("/usr/sbin").join(tool).is_file();
        if !found {
            return Some(format!("{tool} not installed (Debian package tgt)"));
        }
    }
    None
}

/// One running tgtd.
pub struct Tgtd {
    child: Option<Child>,
    control: u32,
    addr: String,
    port: u16,
    /// tgtadm commands that built the configuration, replayed by [`Tgtd::restart`].
    script: Vec<Vec<String>>,
    tids: Vec<u32>,
}

impl Tgtd {
    /// Starts tgtd on 127.0.0.1 with a free port.
    pub fn start() -> io::Result<Tgtd> {
        // Parallel test processes may race for a port or control socket: try a few times.
        let mut last = None;
        for _ in 0..5 {
            match Self::start_at("127.0.0.1", free_port()?, None) {
                Ok(t) => return Ok(t),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("tgtd did not start")))
    }

    /// Starts tgtd on `addr:port`, optionally inside a network namespace
    /// (`ip netns exec NAME tgtd …`).
    pub fn start_at(addr: &str, port: u16, netns: Option<&str>) -> io::Result<Tgtd> {
        let control = pick_control();
        let mut t = Tgtd {
            child: None,
            control,
            addr: addr.to_string(),
            port,
            script: Vec::new(),
            tids: Vec::new(),
        };
        t.spawn(netns)?;
        Ok(t)
    }

    fn spawn(&mut self, netns: Option<&str>) -> io::Result<()> {
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "tgtd"]);
                c
            }
            None => Command::new("tgtd"),
        };
        cmd.args(["-f", "-C", &self.control.to_string(), "--iscsi"])
            .arg(format!("portal={}:{}", self.addr, self.port))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(self.log_path())?));
        // SAFETY: prctl is async-signal-safe; it makes tgtd die with the test process even
        // when the test is killed before its Drop guards run.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        self.child = Some(spawn_from_keeper(cmd)?);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self
                .tgtadm_raw(&["--mode", "system", "--op", "show"])
                .is_ok()
            {
                // A daemon that lost a race for the control socket exits at once, and the
                // answer came from someone else's: make sure ours is the one still running.
                std::thread::sleep(Duration::from_millis(50));
                let exited = self
                    .child
                    .as_mut()
                    .map(|c| c.try_wait().ok().flatten().is_some());
                if exited == Some(false) {
                    return Ok(());
                }
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                let log = std::fs::read_to_string(self.log_path()).unwrap_or_default();
                self.child = None;
                return Err(io::Error::other(format!(
                    "tgtd exited at start ({status}): {}",
                    log.lines().last().unwrap_or("")
                )));
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(io::Error::other("tgtd did not answer tgtadm within 10 s"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// tgtd's stderr, kept until the guard is dropped.
    pub fn log_path(&self) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("storbench-tgtd-{}.log", self.control))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `addr:port`.
    pub fn portal(&self) -> String {
        format!("{}:{}", self.addr, self.port)
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Runs `tgtadm -C <ours> --lld iscsi ARGS` and returns its stdout.
    pub fn tgtadm(&mut self, args: &[&str]) -> io::Result<String> {
        let out = self.tgtadm_raw(args)?;
        self.script
            .push(args.iter().map(|s| s.to_string()).collect());
        Ok(out)
    }

    fn tgtadm_raw(&self, args: &[&str]) -> io::Result<String> {
        let out = Command::new("tgtadm")
            .args(["-C", &self.control.to_string(), "--lld", "iscsi"])
            .args(args)
            .stdin(Stdio::null())
            .output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "tgtadm {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Creates target `tid` named `iqn`, open to every initiator address.
    pub fn add_target(&mut self, tid: u32, iqn: &str) -> io::Result<()> {
        let t = tid.to_string();
        self.tgtadm(&[
            "--mode",
            "target",
            "--op",
            "new",
            "--tid",
            &t,
            "--targetname",
            iqn,
        ])?;
        self.tgtadm(&[
            "--mode",
            "target",
            "--op",
            "bind",
            "--tid",
            &t,
            "--initiator-address",
            "ALL",
        ])?;
        self.tids.push(tid);
        Ok(())
    }

    /// Adds LUN `lun` backed by `file` (buffered reads and writes: bstype rdwr).
    pub fn add_lun(&mut self, tid: u32, lun: u32, file: &Path) -> io::Result<()> {
        let path = file.to_string_lossy().into_owned();
        self.tgtadm(&[
            "--mode",
            "logicalunit",
            "--op",
            "new",
            "--tid",
            &tid.to_string(),
            "--lun",
            &lun.to_string(),
            "--backing-store",
            &path,
            "--bstype",
            "rdwr",
        ])?;
        Ok(())
    }

    /// Makes LUN `lun` thin-provisioned: READ CAPACITY(16) then reports LBPME and UNMAP
    /// punches holes in the backing file. Initiators see it at their next login.
    pub fn thin_provisioning(&mut self, tid: u32, lun: u32) -> io::Result<()> {
        self.tgtadm(&[
            "--mode",
            "logicalunit",
            "--op",
            "update",
            "--tid",
            &tid.to_string(),
            "--lun",
            &lun.to_string(),
            "--params",
            "thin_provisioning=1",
        ])?;
        Ok(())
    }

    /// Requires CHAP for `tid`: the initiator must log in as `user`/`secret`.
    pub fn require_chap(&mut self, tid: u32, user: &str, secret: &str) -> io::Result<()> {
        self.bind_account(tid, user, secret, false)
    }

    /// Adds the target's own account for mutual CHAP (tgtd's "outgoing" account).
    pub fn mutual_chap(&mut self, tid: u32, user: &str, secret: &str) -> io::Result<()> {
        self.bind_account(tid, user, secret, true)
    }

    /// Makes the account `user`/`secret` and binds it to `tid`, as the target's own
    /// (outgoing) account or as the one initiators log in with.
    fn bind_account(
        &mut self,
        tid: u32,
        user: &str,
        secret: &str,
        outgoing: bool,
    ) -> io::Result<()> {
        let new = [
            "--mode",
            "account",
            "--op",
            "new",
            "--user",
            user,
            "--password",
            secret,
        ];
        self.tgtadm(&new)?;
        let tid = tid.to_string();
        let mut bind = vec![
            "--mode", "account", "--op", "bind", "--tid", &tid, "--user", user,
        ];
        if outgoing {
            bind.push("--outgoing");
        }
        self.tgtadm(&bind).map(drop)
    }

    /// The I_T nexus lines of `tgtadm --mode target --op show` for `tid` (one per logged-in
    /// session); empty when nobody is logged in.
    pub fn nexus(&self, tid: u32) -> io::Result<Vec<String>> {
        let show = self.tgtadm_raw(&["--mode", "target", "--op", "show"])?;
        let mut in_target = false;
        let mut in_nexus = false;
        let mut lines = Vec::new();
        for line in show.lines() {
            if let Some(rest) = line.strip_prefix("Target ") {
                in_target = rest.split(':').next().and_then(|n| n.trim().parse().ok()) == Some(tid);
                in_nexus = false;
                continue;
            }
            let l = line.trim();
            if l.starts_with("I_T nexus information") {
                in_nexus = in_target;
            } else if l.starts_with("LUN information") {
                in_nexus = false;
            } else if in_nexus && l.starts_with("I_T nexus:") {
                lines.push(l.to_string());
            }
        }
        Ok(lines)
    }

    /// Waits until no session is logged in to `tid` (tgtd cleans up asynchronously).
    pub fn wait_no_nexus(&self, tid: u32, timeout: Duration) -> io::Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            let n = self.nexus(tid)?;
            if n.is_empty() || Instant::now() > deadline {
                return Ok(n);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills tgtd (as a crash would) and starts a fresh one on the same portal with the same
    /// targets, LUNs and accounts. `down` is how long the portal stays closed.
    pub fn restart(&mut self, down: Duration) -> io::Result<()> {
        self.kill();
        std::thread::sleep(down);
        let script = std::mem::take(&mut self.script);
        // The old control socket may linger; the new daemon gets a fresh one (and a new
        // log: the old daemon's goes with it).
        let _ = std::fs::remove_file(self.log_path());
        self.control = pick_control();
        self.spawn(None)?;
        for args in &script {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            self.tgtadm(&args)?;
        }
        Ok(())
    }

    /// Kills tgtd as a crash would (SIGKILL by PID, reaped), leaving the portal closed.
    pub fn crash(&mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) of our own child's PID, which we have not reaped yet.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            let _ = child.wait();
        }
    }

    /// Deletes the targets, asks tgtd to exit, and reaps it (SIGKILL after 5 s).
    pub fn stop(&mut self) {
        if self.child.is_none() {
            return;
        }
        for tid in std::mem::take(&mut self.tids) {
            let _ = self.tgtadm_raw(&[
                "--mode",
                "target",
                "--op",
                "delete",
                "--force",
                "--tid",
                &tid.to_string(),
            ]);
        }
        let _ = Command::new("tgtadm")
            .args([
                "-C",
                &self.control.to_string(),
                "--mode",
                "system",
                "--op",
                "delete",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(Some(_)))) {
                self.child = None;
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
    }
}

impl Drop for Tgtd {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_file(self.log_path());
    }
}

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `cmd` from one thread that lives as long as the test process. PR_SET_PDEATHSIG
/// fires when the *thread* that forked exits, so a daemon spawned from a short-lived test
/// thread (a restart in a helper thread) would be killed at once; the keeper thread only
/// ends with the process, which is exactly when the daemon must go.
pub(crate) fn spawn_from_keeper(cmd: Command) -> io::Result<Child> {
    static KEEPER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        });
        Mutex::new(tx)
    });
    let (tx, rx) = mpsc::channel();
    keeper
        .lock()
        .map_err(|_| io::Error::other("tgtd spawner poisoned"))?
        .send((cmd, tx))
        .map_err(|_| io::Error::other("tgtd spawner is gone"))?;
    rx.recv()
        .map_err(|_| io::Error::other("tgtd spawner is gone"))?
}

pub use crate::ports::free_port;

/// A control socket number no other tgtd of this machine uses.
fn pick_control() -> u32 {
    // tgtd accepts control ports up to 32767; spread over 1000..32000 by process and time so
    // parallel test processes rarely meet.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let seed = nanos ^ std::process::id().wrapping_mul(2_654_435_761);
    loop {
        let n = 1000 + seed.wrapping_add(NEXT_CONTROL.fetch_add(7919, Ordering::Relaxed)) % 31_000;
        let sock = format!("/var/run/tgtd/socket.{n}");
        if !Path::new(&sock).exists() {
            return n;
        }
    }
}

/// Creates a sparse file of `size` bytes (a fresh LUN reads as zeros).
pub fn sparse_file(path: &Path, size: u64) -> io::Result<()> {
    let f = std::fs::File::create(path)?;
    f.set_len(size)
}

/// What most tests need: a started tgtd serving target 1 (`iqn`) with LUN 1 over a sparse
/// file of `size` bytes in a temporary directory. Dropping it stops tgtd, then removes the
/// file.
pub struct OneLun {
    pub tgtd: Tgtd,
    pub backing: PathBuf,
    pub iqn: String,
    _dir: tempfile::TempDir,
}

impl OneLun {
    /// None, with the reason printed, when tgt is not installed.
    pub fn start(iqn: &str, size: u64) -> Option<OneLun> {
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return None;
        }
        let dir = tempfile::tempdir().expect("temporary directory");
        let backing = dir.path().join("lun.img");
        sparse_file(&backing, size).expect("sparse backing file");
        let mut tgtd = Tgtd::start().expect("start tgtd");
        tgtd.add_target(1, iqn).expect("add target");
        tgtd.add_lun(1, 1, &backing).expect("add LUN");
        Some(OneLun {
            tgtd,
            backing,
            iqn: iqn.to_owned(),
            _dir: dir,
        })
    }

    /// `iscsi://127.0.0.1:PORT/IQN/1`.
    pub fn url(&self) -> String {
        format!("iscsi://{}/{}/1", self.tgtd.portal(), self.iqn)
    }

    /// Fails the test if an initiator is still logged in 5 s from now.
    pub fn assert_no_session_left(&self) {
        let left = self
            .tgtd
            .wait_no_nexus(1, Duration::from_secs(5))
            .expect("tgtadm show");
        assert!(left.is_empty(), "sessions left logged in: {left:?}");
    }
}
