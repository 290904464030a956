//! A private nfs-ganesha (VFS FSAL, NFSv3 over TCP) on 127.0.0.1, for tests and benches.
//!
//! [`Ganesha::start_v4_only`] serves NFSv4.1 and 4.2 only (`Protocols = 4`,
//! `Minor_Versions = 1, 2`): no MOUNT, clients find `/export` under the pseudo-root.
//!
//! Besides `/export` (read-write), every instance exports `/private` with no access at all,
//! so tests can provoke MNT3ERR_ACCES.
//!
//! Each [`Ganesha`] gets free ports, its own config, log, recovery and export directories
//! under a temporary directory, and is stopped by PID on drop. NFSv3 needs rpcbind while
//! ganesha starts (it exits if it cannot register): a system rpcbind answering on
//! 127.0.0.1:111 is reused, otherwise one is started and shared by every testkit user on
//! the machine (a user list under a file lock), and stopped by PID when the last one ends.
//!
//! Every instance registers as "the" NFS and MOUNT service with rpcbind, so only one test at
//! a time can rely on the portmapper: [`Ganesha::start_registered`] holds a machine-wide lock
//! for its lifetime, and other instances start and stop only while nobody holds it. All
//! other tests should address their server with explicit `port=` and `mountport=`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LOCK_DIR: &str = "/tmp/storbench-testkit";
const PSEUDO: &str = "/export";

/// Why ganesha cannot run here (missing packages), or `None` if it can.
pub fn unavailable() -> Option<String> {
    for bin in ["ganesha.nfsd", "rpcbind"] {
        let found = ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
            .iter()
            .any(|d| Path::new(d).join(bin).exists());
        if !found {
            return Some(format!(
                "{bin} not installed (Debian packages nfs-ganesha, nfs-ganesha-vfs, rpcbind)"
            ));
        }
    }
    let fsal = [
        "/usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so",
        "/usr/lib/aarch64-linux-gnu/ganesha/libfsalvfs.so",
        "/usr/lib/ganesha/libfsalvfs.so",
    ];
    if !fsal.iter().any(|p| Path::new(p).exists()) {
        return Some("ganesha VFS FSAL not installed (Debian package nfs-ganesha-vfs)".into());
    }
    None
}

/// A running ganesha; stopped (with rpcbind if it was the last user) on drop.
pub struct Ganesha {
    pub nfs_port: u16,
    pub mount_port: u16,
    /// The one address the server listens on (127.0.0.1 unless started with `start_at`).
    pub bind: Ipv4Addr,
    dir: tempfile::TempDir,
    child: Option<Child>,
    rpcbind: Option<RpcbindUse>,
    /// Held for the whole life of a portmapper-registered instance.
    exclusive: Option<File>,
    /// When the current process was started (whole seconds since the epoch).
    started_secs: u64,
    /// Serves NFSv4.1/4.2 only.
    v4_only: bool,
    /// NFSv4 lease time in seconds, when not ganesha's default.
    lease: Option<u32>,
    /// NFSv4 grace period after a start in seconds (`None`: no grace period at all).
    grace: Option<u32>,
}

impl Ganesha {
    /// Starts an instance to be addressed with explicit ports.
    pub fn start() -> Result<Ganesha, String> {
        Self::launch(false, Ipv4Addr::LOCALHOST)
    }

    /// Starts an instance that serves NFSv4.1 and 4.2 only (no NFSv3, no MOUNT).
    pub fn start_v4_only() -> Result<Ganesha, String> {
        Self::launch_with(false, Ipv4Addr::LOCALHOST, true, None, None)
    }

    /// [`start_v4_only`](Self::start_v4_only) with a lease of `secs` seconds (so tests can
    /// outlast it).
    pub fn start_v4_only_lease(secs: u32) -> Result<Ganesha, String> {
        Self::launch_with(false, Ipv4Addr::LOCALHOST, true, Some(secs), None)
    }

    /// [`start_v4_only_lease`](Self::start_v4_only_lease) with a grace period of `grace`
    /// seconds after each start (clients it knew reclaim their state; new OPENs get
    /// NFS4ERR_GRACE until it ends), which the other instances do without.
    pub fn start_v4_only_grace(lease: u32, grace: u32) -> Result<Ganesha, String> {
        Self::launch_with(false, Ipv4Addr::LOCALHOST, true, Some(lease), Some(grace))
    }

    /// Starts an instance listening on `bind` only (an address of this host, such as the
    /// host end of a test's veth, so clients in network namespaces reach it over a link).
    pub fn start_at(bind: Ipv4Addr) -> Result<Ganesha, String> {
        Self::launch(false, bind)
    }

    /// [`start_v4_only`](Self::start_v4_only) listening on `bind` only, as
    /// [`start_at`](Self::start_at).
    pub fn start_v4_only_at(bind: Ipv4Addr) -> Result<Ganesha, String> {
        Self::launch_with(false, bind, true, None, None)
    }

    /// Starts an instance that may be found through the portmapper (serialised machine-wide).
    pub fn start_registered() -> Result<Ganesha, String> {
        Self::launch(true, Ipv4Addr::LOCALHOST)
    }

    fn launch(registered: bool, bind: Ipv4Addr) -> Result<Ganesha, String> {
        Self::launch_with(registered, bind, false, None, None)
    }

    fn launch_with(
        registered: bool,
        bind: Ipv4Addr,
        v4_only: bool,
        lease: Option<u32>,
        grace: Option<u32>,
    ) -> Result<Ganesha, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let exclusive = if registered {
            Some(lock("portmap.lock", libc::LOCK_EX)?)
        } else {
            None
        };
        let rpcbind = Some(RpcbindUse::acquire()?);
        let dir = tempfile::Builder::new()
            .prefix("storbench-ganesha-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        for sub in ["export", "recovery", "private"] {
            fs::create_dir(dir.path().join(sub)).map_err(|e| format!("create {sub} dir: {e}"))?;
        }
        let (nfs_port, mount_port) = (free_port()?, free_port()?);
        let mut g = Ganesha {
            nfs_port,
            mount_port,
            bind,
            dir,
            child: None,
            rpcbind,
            exclusive,
            started_secs: 0,
            v4_only,
            lease,
            grace,
        };
        g.write_config()?;
        g.spawn()?;
        Ok(g)
    }

    /// The exported directory on the local file system (to check what the client did).
    pub fn export_dir(&self) -> PathBuf {
        self.dir.path().join("export")
    }

    /// `nfs://<bind>:<nfs port>/export/<rel>?mountport=<mount port>`.
    pub fn url(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        let sep = if rel.is_empty() { "" } else { "/" };
        format!(
            "nfs://{}:{}{PSEUDO}{sep}{rel}?mountport={}",
            self.bind, self.nfs_port, self.mount_port
        )
    }

    /// `nfs://<bind>:<nfs port>/export/<rel>`, for NFSv4 (no MOUNT port).
    pub fn url4(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        let sep = if rel.is_empty() { "" } else { "/" };
        format!("nfs://{}:{}{PSEUDO}{sep}{rel}", self.bind, self.nfs_port)
    }

    /// `nfs://127.0.0.1/export/<rel>`: ports from the portmapper.
    pub fn portmap_url(&self, rel: &str) -> String {
        format!("nfs://127.0.0.1{PSEUDO}/{}", rel.trim_start_matches('/'))
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("ganesha.log")).unwrap_or_default()
    }

    fn write_config(&self) -> Result<(), String> {
        let d = self.dir.path();
        let (protocols, minors) = match self.v4_only {
            true => ("4", " Minor_Versions = 1, 2;"),
            false => ("3, 4", ""),
        };
        let lease = self
            .lease
            .map_or(String::new(), |s| format!(" Lease_Lifetime = {s};"));
        let grace = self.grace.map_or(" Graceless = true;".to_string(), |s| {
            format!(" Graceless = false; Grace_Period = {s};")
        });
        let conf = format!(
            "NFS_CORE_PARAM {{ Protocols = {protocols}; NFS_Port = {}; MNT_Port = {}; Bind_addr = {}; \
             Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false; Mount_Path_Pseudo = true; }}\n\
             NFSV4 {{{grace} RecoveryRoot = {};{minors}{lease} }}\n\
             EXPORT {{ Export_Id = 1; Path = {}; Pseudo = {PSEUDO}; Access_Type = RW; Squash = No_Root_Squash; \
             Protocols = {protocols}; Transports = TCP; SecType = sys; FSAL {{ Name = VFS; }} }}\n\
             EXPORT {{ Export_Id = 2; Path = {}; Pseudo = /private; Access_Type = None; \
             Protocols = {protocols}; Transports = TCP; SecType = sys; FSAL {{ Name = VFS; }} }}\n",
            self.nfs_port,
            self.mount_port,
            self.bind,
            d.join("recovery").display(),
            d.join("export").display(),
            d.join("private").display(),
        );
        fs::write(d.join("ganesha.conf"), conf).map_err(|e| format!("write ganesha.conf: {e}"))
    }

    fn spawn(&mut self) -> Result<(), String> {
        // Registration with rpcbind is unset-then-set: concurrent starts would fail it.
        let _one_at_a_time = if self.exclusive.is_none() {
            Some(lock("portmap.lock", libc::LOCK_EX)?)
        } else {
            None
        };
        let d = self.dir.path();
        let child = Command::new("ganesha.nfsd")
            .arg("-F")
            .arg("-f")
            .arg(d.join("ganesha.conf"))
            .arg("-L")
            .arg(d.join("ganesha.log"))
            .arg("-p")
            .arg(d.join("ganesha.pid"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start ganesha.nfsd: {e}"))?;
        self.child = Some(child);
        self.started_secs = unix_secs();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                let tail: String = self
                    .log()
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(" | ");
                return Err(format!(
                    "ganesha.nfsd exited ({status}) while starting; log: {tail}"
                ));
            }
            let ready = match self.v4_only {
                true => nfs4_null_ok(self.bind, self.nfs_port),
                false => mount_ok(self.bind, self.mount_port),
            };
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(
                    "ganesha did not serve MOUNT of /export (or NFSv4 NULL) within 30 s".into(),
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s); the export stays.
    pub fn stop(&mut self) {
        let _one_at_a_time = if self.exclusive.is_none() {
            lock("portmap.lock", libc::LOCK_EX).ok()
        } else {
            None
        };
        self.kill();
    }

    /// Kills the server at once (a crash), without a clean shutdown.
    pub fn crash(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same ports and export (after `stop` or `crash`).
    ///
    /// ganesha's NFSv3 write verifier is its start time in whole seconds, so a restart
    /// within the same second would look to clients as if the server never restarted (and
    /// they could not know to send lost UNSTABLE writes again): this waits for the next
    /// second first, as any real restart would take.
    pub fn start_again(&mut self) -> Result<(), String> {
        if self.child.is_some() {
            return Ok(());
        }
        while unix_secs() <= self.started_secs {
            std::thread::sleep(Duration::from_millis(20));
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    fn kill(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: signalling our own child by PID.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        self.stop();
        self.rpcbind.take();
        self.exclusive.take();
    }
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn free_port() -> Result<u16, String> {
    crate::ports::free_port().map_err(|e| format!("find a free port: {e}"))
}

/// Opens and flocks a file under the shared lock directory; the lock lives with the file.
fn lock(name: &str, how: i32) -> Result<File, String> {
    fs::create_dir_all(LOCK_DIR).map_err(|e| format!("create {LOCK_DIR}: {e}"))?;
    let path = Path::new(LOCK_DIR).join(name);
    let f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), how) } != 0 {
        return Err(format!(
            "lock {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(f)
}

fn answers(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        Duration::from_millis(500),
    )
    .is_ok()
}

/// A hand-made MOUNT v3 MNT of /export with AUTH_NONE: true if the server grants it.
fn mount_ok(bind: Ipv4Addr, port: u16) -> bool {
    let Ok(mut s) =
        TcpStream::connect_timeout(&SocketAddr::from((bind, port)), Duration::from_millis(500))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut body = Vec::new();
    for w in [
        0x5eed_u32,
        0,
        2,
        100_005,
        3,
        1,
        0,
        0,
        0,
        0,
        PSEUDO.len() as u32,
    ] {
        body.extend_from_slice(&w.to_be_bytes());
    }
    body.extend_from_slice(PSEUDO.as_bytes());
    body.resize(body.len().div_ceil(4) * 4, 0);
    let mut msg = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    if s.write_all(&msg).is_err() {
        return false;
    }
    // mark, xid, REPLY, MSG_ACCEPTED, verf flavor, verf len, SUCCESS, mountstat
    let mut reply = [0u8; 32];
    if s.read_exact(&mut reply).is_err() {
        return false;
    }
    let word =
        |i: usize| u32::from_be_bytes(reply[i * 4..i * 4 + 4].try_into().unwrap_or([0xff; 4]));
    word(2) == 1 && word(3) == 0 && word(6) == 0 && word(7) == 0
}

/// A hand-made NFSv4 NULL call: true if the server accepts it.
fn nfs4_null_ok(bind: Ipv4Addr, port: u16) -> bool {
    let Ok(mut s) =
        TcpStream::connect_timeout(&SocketAddr::from((bind, port)), Duration::from_millis(500))
    else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut msg = Vec::new();
    // mark, xid, CALL, RPC v2, NFS, v4, NULL, AUTH_NONE cred and verifier
    for w in [
        0x8000_0028_u32,
        0x4e55_4c4c,
        0,
        2,
        100_003,
        4,
        0,
        0,
        0,
        0,
        0,
    ] {
        msg.extend_from_slice(&w.to_be_bytes());
    }
    if s.write_all(&msg).is_err() {
        return false;
    }
    // mark, xid, REPLY, MSG_ACCEPTED, verf flavor, verf len, SUCCESS
    let mut reply = [0u8; 28];
    if s.read_exact(&mut reply).is_err() {
        return false;
    }
    let word =
        |i: usize| u32::from_be_bytes(reply[i * 4..i * 4 + 4].try_into().unwrap_or([0xff; 4]));
    word(2) == 1 && word(3) == 0 && word(6) == 0
}

/// This process's use of rpcbind, recorded in a user list so the last user stops the one
/// testkit started.
struct RpcbindUse;

impl RpcbindUse {
    fn acquire() -> Result<RpcbindUse, String> {
        let _l = lock("rpcbind.lock", libc::LOCK_EX)?;
        let mut users = read_users();
        if !answers(111) {
            let _ = fs::remove_file(Path::new(LOCK_DIR).join("rpcbind.pid"));
            let child = Command::new("rpcbind")
                .arg("-f")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("start rpcbind: {e}"))?;
            let pid = child.id();
            // The child is reaped by whoever stops it last; forget the handle here.
            std::mem::forget(child);
            fs::write(Path::new(LOCK_DIR).join("rpcbind.pid"), pid.to_string())
                .map_err(|e| format!("record rpcbind pid: {e}"))?;
            let deadline = Instant::now() + Duration::from_secs(5);
            while !answers(111) {
                if Instant::now() > deadline {
                    return Err("rpcbind did not answer on 127.0.0.1:111 within 5 s".into());
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        users.push(std::process::id());
        write_users(&users);
        Ok(RpcbindUse)
    }
}

impl Drop for RpcbindUse {
    fn drop(&mut self) {
        let Ok(_l) = lock("rpcbind.lock", libc::LOCK_EX) else {
            return;
        };
        let mut users = read_users();
        if let Some(i) = users.iter().position(|&p| p == std::process::id()) {
            users.remove(i);
        }
        write_users(&users);
        if !users.is_empty() {
            return;
        }
        let pid_file = Path::new(LOCK_DIR).join("rpcbind.pid");
        let Some(pid) = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok())
        else {
            return;
        };
        // Only signal it if it still is rpcbind (PIDs get recycled).
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "rpcbind" {
            // SAFETY: signalling the rpcbind that testkit started, by PID.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            for _ in 0..100 {
                // SAFETY: reaping it if it is our child; harmless otherwise.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
                if !Path::new(&format!("/proc/{pid}")).exists()
                    || fs::read_to_string(format!("/proc/{pid}/stat"))
                        .is_ok_and(|s| s.contains(") Z"))
                {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = fs::remove_file(pid_file);
    }
}

/// Live PIDs of processes using the testkit rpcbind (dead ones are dropped).
fn read_users() -> Vec<u32> {
    fs::read_to_string(Path::new(LOCK_DIR).join("rpcbind.users"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
        .collect()
}

fn write_users(users: &[u32]) {
    let text: Vec<String> = users.iter().map(u32::to_string).collect();
    let _ = fs::write(Path::new(LOCK_DIR).join("rpcbind.users"), text.join("\n"));
}
