//! The CPU of a network target's server when it runs on this host (NFS or iSCSI over
//! 127.0.0.1, or over an address of this machine): there the server shares the client's
//! CPUs, and it is often what limits the figures.
//!
//! The server is the process owning the listening TCP socket of the connection's port: its
//! inode comes from /proc/net/tcp and tcp6, its owner from the `socket:[inode]` links in
//! /proc/<pid>/fd, and its CPU time (utime + stime, all threads) from /proc/<pid>/stat.
//! Anything that cannot be read (another user's process without root, a kernel server
//! such as knfsd or LIO, which owns its socket from no process) gives no figure, not an
//! error.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use crate::result::ServerCpu;

/// A server process found on this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerProcess {
    pub pid: u32,
    /// Its command name (`tgtd`, `ganesha.nfsd`).
    pub name: String,
    /// The address the connection reached.
    pub addr: SocketAddr,
    /// When the process started (clock ticks since boot): tells a restarted server, or a
    /// reused pid, from the one first found.
    starttime: u64,
}

impl ServerProcess {
    /// The process on this host serving `addr`, if `addr` is one of this host's and the
    /// owner of its listening socket can be seen.
    pub fn find(addr: SocketAddr) -> Option<ServerProcess> {
        if !is_local(addr.ip()) {
            return None;
        }
        let mut inodes = Vec::new();
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            if let Ok(text) = std::fs::read_to_string(table) {
                inodes.extend(listening_inodes(&text, addr));
            }
        }
        if inodes.is_empty() {
            return None;
        }
        let pid = socket_owner(&inodes)?;
        let stat = ProcStat::read(pid)?;
        Some(ServerProcess {
            pid,
            name: stat.comm,
            addr,
            starttime: stat.starttime,
        })
    }

    /// Its CPU time now, or None if it has gone (or is no longer the same process).
    pub fn sample(&self) -> Option<ServerSample> {
        let stat = ProcStat::read(self.pid)?;
        (stat.starttime == self.starttime).then(|| ServerSample {
            usr_ns: ticks_to_ns(stat.utime),
            sys_ns: ticks_to_ns(stat.stime),
            at: Instant::now(),
        })
    }
}

/// A server's CPU time at one moment.
#[derive(Clone, Copy, Debug)]
pub struct ServerSample {
    pub usr_ns: u64,
    pub sys_ns: u64,
    pub at: Instant,
}

impl ServerSample {
    /// The server's CPU from `earlier` to this sample.
    pub fn since(&self, earlier: &ServerSample, server: &ServerProcess) -> ServerCpu {
        ServerCpu {
            process: server.name.clone(),
            pid: server.pid,
            addr: server.addr.to_string(),
            same_host: true,
            usr_ns: self.usr_ns.saturating_sub(earlier.usr_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            duration_ms: self.at.saturating_duration_since(earlier.at).as_millis() as u64,
        }
    }
}

/// One of this host's addresses: loopback, or held by one of its interfaces.
pub fn is_local(ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    ip.is_loopback() || crate::nic::interface_of(ip).is_some()
}

/// Inodes of the sockets listening on `addr`'s port in a /proc/net/tcp or tcp6 table:
/// bound to its address, or to the wildcard address (which takes connections to any).
pub fn listening_inodes(table: &str, addr: SocketAddr) -> Vec<u64> {
    let want = addr.ip().to_canonical();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            if f.len() < 10 || f[3] != "0A" {
                return None;
            }
            let (ip, port) = parse_socket_address(f[1])?;
            let matches = port == addr.port() && (ip.is_unspecified() || ip == want);
            matches.then(|| f[9].parse().ok()).flatten()
        })
        .collect()
}

/// `0100007F:0CBC` or a 32-digit IPv6 form: the kernel prints each 32-bit word of the
/// address as the number it is in this machine's byte order, and the port as a number.
fn parse_socket_address(text: &str) -> Option<(IpAddr, u16)> {
    let (ip, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let hex = ip.get(i * 8..i * 8 + 8)?;
        Some(u32::from_str_radix(hex, 16).ok()?.to_ne_bytes())
    };
    let ip = match ip.len() {
        8 => IpAddr::from(word(0)?),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::from(bytes)
        }
        _ => return None,
    };
    Some((ip.to_canonical(), port))
}

/// The process holding one of `inodes` open (the lowest pid if several share it, e.g. a
/// listener inherited by forked workers).
fn socket_owner(inodes: &[u64]) -> Option<u32> {
    let me = std::process::id();
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&pid| pid != me)
        .collect();
    pids.sort_unstable();
    pids.into_iter().find(|pid| {
        // Another user's process without the right to look: not ours to see.
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .ok()
                .and_then(|l| socket_inode(l.to_str()?))
                .is_some_and(|i| inodes.contains(&i))
        })
    })
}

/// `socket:[12345]` → 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The fields of /proc/<pid>/stat used here.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ProcStat {
    comm: String,
    /// Clock ticks in user and kernel mode, of all the process's threads (live and
    /// exited); children's are apart (cutime, cstime) and left out.
    utime: u64,
    stime: u64,
    starttime: u64,
}

impl ProcStat {
    fn read(pid: u32) -> Option<ProcStat> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// `pid (comm) state ppid …`: the command name may hold spaces and parentheses, so
    /// the fields are counted from the last `)`.
    fn parse(text: &str) -> Option<ProcStat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_string();
        // Field 3 (state) is the first after the name; utime is field 14, stime 15,
        // starttime 22.
        let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        let field = |n: usize| rest.get(n - 3)?.parse::<u64>().ok();
        Some(ProcStat {
            comm,
            utime: field(14)?,
            stime: field(15)?,
            starttime: field(22)?,
        })
    }
}

fn ticks_to_ns(ticks: u64) -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as u64 } else { 100 };
    ticks.saturating_mul(1_000_000_000 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Read from this machine while a Python process listened on 127.0.0.1:47751 and on
    // [::]:47752, with one connection to each (the second from 127.0.0.1, so it shows
    // as ::ffff:127.0.0.1 in tcp6).
    const TCP: &str = include_str!("../fixtures/proc/net_tcp");
    const TCP6: &str = include_str!("../fixtures/proc/net_tcp6");
    const STAT: &str = include_str!("../fixtures/proc/pid_stat_python3");

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn finds_the_listener_of_a_port_bound_to_the_address() {
        // The listener, not the two ends of the established connection on the same port.
        assert_eq!(
            listening_inodes(TCP, addr("127.0.0.1:47751")),
            vec![3237175]
        );
        assert!(listening_inodes(TCP, addr("127.0.0.1:47753")).is_empty());
        // Bound to 127.0.0.1 only: another address of the host does not reach it.
        assert!(listening_inodes(TCP, addr("10.1.2.3:47751")).is_empty());
        // 0.0.0.0:2024 takes connections to any local address.
        assert_eq!(listening_inodes(TCP, addr("10.1.2.3:2024")), vec![1076]);
    }

    #[test]
    fn an_ipv6_wildcard_listener_serves_ipv4_connections() {
        assert_eq!(
            listening_inodes(TCP6, addr("127.0.0.1:47752")),
            vec![3237176]
        );
        assert_eq!(listening_inodes(TCP6, addr("[::1]:47752")), vec![3237176]);
        assert!(listening_inodes(TCP6, addr("127.0.0.1:47751")).is_empty());
    }

    #[test]
    fn socket_addresses_in_both_tables() {
        assert_eq!(
            parse_socket_address("0100007F:BA87"),
            Some((addr("127.0.0.1:0").ip(), 47751))
        );
        // ::ffff:127.0.0.1 is 127.0.0.1.
        assert_eq!(
            parse_socket_address("0000000000000000FFFF00000100007F:A342"),
            Some((addr("127.0.0.1:0").ip(), 41794))
        );
        assert_eq!(
            parse_socket_address("00000000000000000000000001000000:0801"),
            Some((addr("[::1]:0").ip(), 2049))
        );
        assert_eq!(parse_socket_address("0100007F"), None);
        assert_eq!(parse_socket_address("7F:0801"), None);
    }

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let s = ProcStat::parse(STAT).unwrap();
        assert_eq!(
            s,
            ProcStat {
                comm: "python3".into(),
                utime: 4,
                stime: 1,
                starttime: 7195716
            }
        );
        // A name with spaces and a parenthesis of its own.
        let odd = STAT.replace("(python3)", "(my (odd) srv)");
        let s = ProcStat::parse(&odd).unwrap();
        assert_eq!((s.comm.as_str(), s.utime, s.stime), ("my (odd) srv", 4, 1));
        assert_eq!(ProcStat::parse("26945 (python3) S 1 2"), None);
    }

    #[test]
    fn socket_links() {
        assert_eq!(socket_inode("socket:[3237175]"), Some(3237175));
        assert_eq!(socket_inode("pipe:[3237175]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    #[test]
    fn locality() {
        assert!(is_local(addr("127.0.0.1:1").ip()));
        assert!(is_local(addr("127.0.0.2:1").ip()));
        assert!(is_local(addr("[::1]:1").ip()));
        assert!(is_local(addr("[::ffff:127.0.0.1]:1").ip()));
        // TEST-NET-3: never assigned to a machine.
        assert!(!is_local(addr("203.0.113.9:1").ip()));
    }

    /// A listener of this test's own finds no server: the process looking is left out
    /// (the client never serves itself); one in a child process is found, with its CPU.
    #[test]
    fn finds_a_child_process_serving_a_local_port_and_its_cpu() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mine = listener.local_addr().unwrap();
        assert_eq!(ServerProcess::find(mine), None);
        drop(listener);
        // A child that inherits a listening socket stands in for a server.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let fd = std::os::fd::AsRawFd::as_raw_fd(&listener);
        // SAFETY: clearing FD_CLOEXEC on our own open descriptor.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        let mut child = std::process::Command::new("sh")
            // A builtin loop: an external command would outlive the shell we kill.
            .args(["-c", "while :; do :; done"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let found = ServerProcess::find(at);
        let (a, b) = found.as_ref().map_or((None, None), |s| {
            let a = s.sample();
            std::thread::sleep(std::time::Duration::from_millis(300));
            (a, s.sample())
        });
        child.kill().ok();
        child.wait().ok();
        let found = found.expect("the child holding the listener is found");
        assert_eq!(found.pid, child.id());
        assert_eq!(found.name, "sh");
        let cpu = b.unwrap().since(&a.unwrap(), &found);
        assert!(cpu.duration_ms >= 300, "{cpu:?}");
        assert!(cpu.cpu_ns() > 0, "the spinning child used no CPU: {cpu:?}");
        assert_eq!(cpu.addr, at.to_string());
    }
}
