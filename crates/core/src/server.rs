//! The CPU of a network target's server when it runs on this host (NFS or iSCSI over
//! 127.0.0.1, or over an address of this machine, or in another network namespace of it,
//! as a container is): there the server shares the client's CPUs, and it is often what
//! limits the figures. A server held to a CPU quota by its control group is measured
//! against that quota, with the periods the quota throttled it in.
//!
//! The server is the process owning the server's end of the client's own connection (its
//! inode comes from /proc/net/tcp and tcp6, its owner from the `socket:[inode]` links in
//! /proc/<pid>/fd): the process that serves it, even when another holds the listening
//! socket (systemd or inetd for a socket-activated service, the parent of a server that
//! forks per connection). Only when that end cannot be found is the owner of the
//! listening socket taken. Its CPU time (utime + stime, all threads) comes from
//! /proc/<pid>/stat, and each thread's from /proc/<pid>/task/<tid>/stat, since a
//! multi-threaded server can use more than one CPU while no thread of it is the limit.
//! Anything that cannot be read (another user's process without root, a kernel server
//! such as knfsd or LIO, which owns its socket from no process) gives no figure, not an
//! error.
//!
//! Finding the process reads every process's descriptors: it is done once per worker,
//! before the measurement starts, never by the sampler.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use storbench_model::result::ServerCpu;

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
    /// The CPU quota of its control group, if it has one.
    quota: Option<CpuQuota>,
}

/// A control group's CPU bandwidth limit (cgroup v1 `cpu.cfs_quota_us` over
/// `cpu.cfs_period_us`, or v2 `cpu.max`) and where its throttling is counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuQuota {
    /// The CPU the group may use, in hundredths of a percent of one CPU.
    pub basis_points: u64,
    /// Its `cpu.stat`.
    stat: std::path::PathBuf,
}

impl CpuQuota {
    /// The quota of `pid`'s control group, or None when it has none (or it is unreadable).
    pub fn of(pid: u32) -> Option<CpuQuota> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        text.lines().find_map(|line| {
            // `ID:CONTROLLERS:PATH`; v2's line is `0::PATH`.
            let mut f = line.splitn(3, ':');
            let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
            let rel = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "cpu") {
                let dir = std::path::Path::new("/sys/fs/cgroup/cpu").join(rel);
                let quota: i64 = read_trimmed(&dir.join("cpu.cfs_quota_us"))?.parse().ok()?;
                let period: u64 = read_trimmed(&dir.join("cpu.cfs_period_us"))?.parse().ok()?;
                Self::new(quota, period, dir)
            } else if controllers.is_empty() {
                let dir = std::path::Path::new("/sys/fs/cgroup").join(rel);
                let max = read_trimmed(&dir.join("cpu.max"))?;
                let (quota, period) = max.split_once(' ')?;
                Self::new(quota.parse().ok()?, period.parse().ok()?, dir)
            } else {
                None
            }
        })
    }

    fn new(quota_us: i64, period_us: u64, dir: std::path::PathBuf) -> Option<CpuQuota> {
        let quota_us = u64::try_from(quota_us).ok().filter(|&q| q > 0)?;
        (period_us > 0).then(|| CpuQuota {
            basis_points: quota_us * 10_000 / period_us,
            stat: dir.join("cpu.stat"),
        })
    }

    /// The group's CFS periods so far and how many of them it was throttled in
    /// (`nr_periods`, `nr_throttled`, in v1 and v2 alike).
    fn periods(&self) -> Option<(u64, u64)> {
        let text = std::fs::read_to_string(&self.stat).ok()?;
        let field = |name: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == name).then(|| v.trim().parse().ok())?
            })
        };
        Some((field("nr_periods")?, field("nr_throttled")?))
    }
}

fn read_trimmed(path: &std::path::Path) -> Option<String> {
    Some(std::fs::read_to_string(path).ok()?.trim().to_string())
}

impl ServerProcess {
    /// The process on this host serving the connection from `client` to `server`, if
    /// `server` is one of this host's addresses and the process can be seen: the owner of
    /// the connection's server end, else (no `client`, or that end not found) of the
    /// socket listening on `server`.
    pub fn find(server: SocketAddr, client: Option<SocketAddr>) -> Option<ServerProcess> {
        if !is_local(server.ip()) {
            return client.and_then(|c| Self::in_other_namespace(server, c));
        }
        let tables: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
            .iter()
            .filter_map(|t| std::fs::read_to_string(t).ok())
            .collect();
        let inodes = |f: &dyn Fn(&str) -> Vec<u64>| -> Vec<u64> {
            tables.iter().flat_map(|t| f(t)).collect()
        };
        let connection =
            client.map_or_else(Vec::new, |c| inodes(&|t| established_inodes(t, server, c)));
        let pid = socket_owner(&connection)
            .or_else(|| socket_owner(&inodes(&|t| listening_inodes(t, server))))?;
        Self::of_pid(pid, server)
    }

    /// A server in another network namespace of this host (a container, or a namespace
    /// standing in for a NAS): the owner of the connection's server end, found in the
    /// socket table of each other namespace (socket inodes are unique across them).
    fn in_other_namespace(server: SocketAddr, client: SocketAddr) -> Option<ServerProcess> {
        let mine = std::fs::read_link("/proc/self/ns/net").ok()?;
        let mut seen = vec![mine];
        let pids: Vec<u32> = std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        for pid in pids {
            let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/net")) else {
                continue;
            };
            if seen.contains(&ns) {
                continue;
            }
            seen.push(ns);
            let inodes: Vec<u64> = ["tcp", "tcp6"]
                .iter()
                .filter_map(|t| std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).ok())
                .flat_map(|t| established_inodes(&t, server, client))
                .collect();
            if let Some(owner) = socket_owner(&inodes) {
                return Self::of_pid(owner, server);
            }
        }
        None
    }

    fn of_pid(pid: u32, server: SocketAddr) -> Option<ServerProcess> {
        let stat = ProcStat::read(pid)?;
        Some(ServerProcess {
            pid,
            name: stat.comm,
            addr: server,
            starttime: stat.starttime,
            quota: CpuQuota::of(pid),
        })
    }

    /// Its CPU time now (the whole process's and each thread's), or None if it has gone
    /// (or is no longer the same process).
    pub fn sample(&self) -> Option<ServerSample> {
        let stat = ProcStat::read(self.pid)?;
        (stat.starttime == self.starttime).then(|| ServerSample {
            usr_ns: ticks_to_ns(stat.utime),
            sys_ns: ticks_to_ns(stat.stime),
            threads: thread_times(self.pid),
            periods: self.quota.as_ref().and_then(CpuQuota::periods),
            at: Instant::now(),
        })
    }
}

/// Each thread's CPU time (ns, user + kernel) by thread id; empty if unreadable.
fn thread_times(pid: u32) -> Vec<(u32, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let s = ProcStat::parse(&text)?;
            Some((tid, ticks_to_ns(s.utime + s.stime)))
        })
        .collect()
}

/// A server's CPU time at one moment.
#[derive(Clone, Debug)]
pub struct ServerSample {
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// (thread id, CPU ns) of each of its threads.
    pub threads: Vec<(u32, u64)>,
    /// Its control group's CFS periods so far and those it was throttled in, when it has
    /// a CPU quota.
    pub periods: Option<(u64, u64)>,
    pub at: Instant,
}

impl ServerSample {
    /// The server's CPU from `earlier` to this sample.
    pub fn since(&self, earlier: &ServerSample, server: &ServerProcess) -> ServerCpu {
        let addr = SocketAddr::new(server.addr.ip().to_canonical(), server.addr.port());
        ServerCpu {
            process: server.name.clone(),
            pid: server.pid,
            addr: addr.to_string(),
            same_host: true,
            usr_ns: self.usr_ns.saturating_sub(earlier.usr_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            duration_ms: self.at.saturating_duration_since(earlier.at).as_millis() as u64,
            busiest_thread_ns: self.busiest_thread_since(earlier),
            quota_basis_points: server.quota.as_ref().map(|q| q.basis_points),
            throttled_periods: self
                .periods
                .zip(earlier.periods)
                .map(|((n, t), (n0, t0))| [n.saturating_sub(n0), t.saturating_sub(t0)]),
        }
    }

    /// The most CPU one thread used since `earlier` (a thread started since counts from
    /// zero); None when no thread could be read.
    fn busiest_thread_since(&self, earlier: &ServerSample) -> Option<u64> {
        self.threads
            .iter()
            .map(|&(tid, ns)| {
                let before = earlier
                    .threads
                    .iter()
                    .find(|t| t.0 == tid)
                    .map_or(0, |t| t.1);
                ns.saturating_sub(before)
            })
            .max()
    }
}

/// One of this host's addresses: loopback, or held by one of its interfaces.
pub fn is_local(ip: IpAddr) -> bool {
    let ip = ip.to_canonical();
    ip.is_loopback() || crate::nic::interface_of(ip).is_some()
}

/// Inodes of the sockets listening on `addr`'s port in a /proc/net/tcp or tcp6 table:
/// bound to its address, or to a wildcard address that takes connections to it. IPv4's
/// 0.0.0.0 takes no IPv6 connections; IPv6's `::` takes IPv4 ones too (a dual-stack
/// socket, as the kernel makes by default: /proc does not show IPV6_V6ONLY).
pub fn listening_inodes(table: &str, addr: SocketAddr) -> Vec<u64> {
    let want = addr.ip().to_canonical();
    table_rows(table)
        .filter(|r| r.state == "0A" && r.local.1 == addr.port())
        .filter(|r| {
            let ip = r.local.0;
            ip == want || (ip.is_unspecified() && (ip.is_ipv6() || want.is_ipv4()))
        })
        .map(|r| r.inode)
        .collect()
}

/// Inodes of the established sockets from `local` to `remote` in a /proc/net/tcp or tcp6
/// table (IPv4-mapped addresses count as IPv4).
pub fn established_inodes(table: &str, local: SocketAddr, remote: SocketAddr) -> Vec<u64> {
    let canon = |a: SocketAddr| (a.ip().to_canonical(), a.port());
    table_rows(table)
        .filter(|r| r.state == "01" && r.local == canon(local) && r.remote == canon(remote))
        .map(|r| r.inode)
        .filter(|&i| i != 0)
        .collect()
}

/// One socket of a /proc/net/tcp or tcp6 table.
struct TableRow<'a> {
    local: (IpAddr, u16),
    remote: (IpAddr, u16),
    state: &'a str,
    inode: u64,
}

fn table_rows(table: &str) -> impl Iterator<Item = TableRow<'_>> {
    table.lines().skip(1).filter_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
        if f.len() < 10 {
            return None;
        }
        Some(TableRow {
            local: parse_socket_address(f[1])?,
            remote: parse_socket_address(f[2])?,
            state: f[3],
            inode: f[9].parse().ok()?,
        })
    })
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
    if inodes.is_empty() {
        return None;
    }
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
mod tests;
