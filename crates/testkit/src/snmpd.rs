//! Debian's net-snmp `snmpd` for the `--server-stats` tests: started on a private address
//! and port (inside a test's network namespace when given one, as the "NAS"), with its own
//! configuration, state directory and a community of its own, and stopped by PID on drop.

use std::io;
use std::net::UdpSocket;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use crate::ports::free_port;

/// Why snmpd cannot run here, or `None`.
pub fn unavailable() -> Option<String> {
    match Command::new("snmpd")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => None,
        Err(_) => Some("snmpd is not installed (Debian package snmpd)".into()),
    }
}

/// An SNMPv3 user every instance knows (net-snmp `createUser`), read-only at its level.
pub struct V3User {
    pub name: &'static str,
    /// net-snmp's protocol name, and the URL's `auth=` for it.
    pub auth: &'static str,
    pub url_auth: &'static str,
    /// `AES` for authPriv; `None`: authNoPriv.
    pub privacy: Option<&'static str>,
}

/// The users: SHA-1 and SHA-256 with AES (authPriv), MD5 with AES (old NAS firmware), and
/// SHA-1 without privacy (authNoPriv).
pub const V3_USERS: [V3User; 4] = [
    V3User {
        name: "sbsha",
        auth: "SHA",
        url_auth: "sha",
        privacy: Some("AES"),
    },
    V3User {
        name: "sbsha256",
        auth: "SHA-256",
        url_auth: "sha256",
        privacy: Some("AES"),
    },
    V3User {
        name: "sbmd5",
        auth: "MD5",
        url_auth: "md5",
        privacy: Some("AES"),
    },
    V3User {
        name: "sbauth",
        auth: "SHA",
        url_auth: "sha",
        privacy: None,
    },
];
/// Every v3 user's passwords (test secrets, given to storbench in its environment).
pub const AUTH_PASSWORD: &str = "sb-auth-pass-1";
pub const PRIV_PASSWORD: &str = "sb-priv-pass-2";

pub struct Snmpd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub addr: String,
    pub port: u16,
    /// The read-only community this instance answers (unique per process).
    pub community: String,
}

impl Snmpd {
    /// Starts snmpd answering `community`-less requests nowhere but `addr:port`, inside
    /// `netns` when given; waits until it answers a GET.
    pub fn start_at(addr: &str, port: u16, netns: Option<&str>) -> Result<Snmpd, String> {
        if let Some(why) = unavailable() {
            return Err(why);
        }
        let dir = tempfile::Builder::new()
            .prefix("storbench-snmpd-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let community = format!("sb{}", std::process::id());
        let mut conf = format!(
            "agentAddress udp:{addr}:{port}\nrocommunity {community} default\n\
             dontLogTCPWrappersConnects yes\n"
        );
        for u in V3_USERS {
            let privacy = u
                .privacy
                .map_or(String::new(), |p| format!(" {p} {PRIV_PASSWORD}"));
            conf.push_str(&format!(
                "createUser {} {} {AUTH_PASSWORD}{privacy}\nrouser {} {}\n",
                u.name,
                u.auth,
                u.name,
                if u.privacy.is_some() { "priv" } else { "auth" }
            ));
        }
        let conf_path = dir.path().join("snmpd.conf");
        std::fs::write(&conf_path, conf).map_err(|e| format!("write snmpd.conf: {e}"))?;
        let mut cmd = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "snmpd"]);
                c
            }
            None => Command::new("snmpd"),
        };
        // -f: stay in the foreground (our child, stopped by PID); -C: no other config;
        // state and MIB look-ups kept in our directory.
        cmd.args(["-f", "-C", "-c"])
            .arg(&conf_path)
            .arg("-Lf")
            .arg(dir.path().join("snmpd.log"))
            .args(["-I", "-smux"])
            .env("SNMP_PERSISTENT_DIR", dir.path())
            .env("MIBS", "")
            .env("MIBDIRS", dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe; snmpd dies with the test process even when
        // the test is killed before its Drop runs.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = crate::tgtd::spawn_from_keeper(cmd).map_err(|e| format!("start snmpd: {e}"))?;
        let mut s = Snmpd {
            child: Some(child),
            dir,
            addr: addr.to_string(),
            port,
            community,
        };
        s.wait_ready()?;
        Ok(s)
    }

    /// `snmp://community@addr:port`.
    pub fn url(&self) -> String {
        format!("snmp://{}@{}:{}", self.community, self.addr, self.port)
    }

    /// `snmpv3://user@addr:port?auth=…` for one of [`V3_USERS`].
    pub fn v3_url(&self, user: &V3User) -> String {
        format!(
            "snmpv3://{}@{}:{}?auth={}",
            user.name, self.addr, self.port, user.url_auth
        )
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("snmpd.log")).unwrap_or_default()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!(
                    "snmpd exited ({status}) while starting: {}",
                    self.log()
                ));
            }
            if answers(&self.addr, self.port, &self.community).unwrap_or(false) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err("snmpd did not answer within 10 s".into())
    }
}

/// Sends a v2c GET of sysUpTime.0 and says whether any reply came within 200 ms.
fn answers(addr: &str, port: u16, community: &str) -> io::Result<bool> {
    let sock = UdpSocket::bind(if addr.contains(':') {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    })?;
    sock.connect((addr, port))?;
    sock.set_read_timeout(Some(Duration::from_millis(200)))?;
    let c = community.as_bytes();
    let oid = [0x2b, 6, 1, 2, 1, 1, 3, 0];
    let vb_len = 2 + oid.len() + 2;
    let list_len = 2 + vb_len;
    let pdu_len = 3 + 3 + 3 + 2 + list_len;
    let msg_len = 3 + 2 + c.len() + 2 + pdu_len;
    let mut m = vec![0x30, msg_len as u8, 2, 1, 1, 4, c.len() as u8];
    m.extend_from_slice(c);
    m.extend_from_slice(&[0xa0, pdu_len as u8, 2, 1, 1, 2, 1, 0, 2, 1, 0]);
    m.extend_from_slice(&[0x30, list_len as u8, 0x30, vb_len as u8, 6, oid.len() as u8]);
    m.extend_from_slice(&oid);
    m.extend_from_slice(&[5, 0]);
    sock.send(&m)?;
    let mut buf = [0u8; 1500];
    Ok(sock.recv(&mut buf).is_ok())
}

impl Drop for Snmpd {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill with our own child's PID.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
