//! The engine-specific options of a job, typed. The option table's parsers
//! (`options/engine.rs`) fill one [`EngineOptions`] per job as each option is read, so the
//! engines read fields (`job.engine_options.hipri`) and never parse text; which engine an
//! option belongs to is its catalogue entry's `options` list, checked once the job's
//! engine is known (`check_engine_options`).

/// The nfs engine's base (`nfs_url`): an NFS URL, parsed once by the option table.
pub type NfsBase = crate::target::TypedUrl<storbench_nfs::NfsUrl>;

/// Every engine option storbench knows, parsed, with the names the job gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// The options given, each once, in the order first given.
    given: Vec<&'static str>,
    /// io_uring: IORING_SETUP_IOPOLL; pvsync2: RWF_HIPRI.
    pub hipri: bool,
    /// io_uring: a kernel thread polls the submission queue.
    pub sqthread_poll: bool,
    /// io_uring: the CPU of that thread.
    pub sqthread_poll_cpu: Option<u32>,
    /// io_uring: the job's files registered with the ring.
    pub registerfiles: bool,
    /// io_uring: the buffers registered with the ring.
    pub fixedbufs: bool,
    /// io_uring, libaio, pvsync2: RWF_NOWAIT.
    pub nowait: bool,
    /// pvsync2: RWF_DONTCACHE.
    pub uncached: bool,
    /// nfs: the export the job's relative file names are in, parsed where it is read.
    pub nfs_url: Option<NfsBase>,
    /// nbd: the export.
    pub uri: Option<String>,
    /// cpuio: percent of one CPU to keep busy, 1 to 100 (required).
    pub cpuload: Option<u32>,
    /// cpuio: µs of each busy period (fio's `cpuchunks`; 50000 when not given).
    pub cpuchunks: Option<u32>,
    /// cpuio: what a busy period computes.
    pub cpumode: CpuMode,
    /// cpuio: the job ends once the IO jobs running with it have ended.
    pub exit_on_io_done: bool,
    /// exec: the program to run (required), looked up in `PATH` without a `/`.
    pub program: Option<String>,
    /// exec: its arguments, split on spaces, with `%r` (runtime in s) and `%n` (job name).
    pub arguments: Option<String>,
    /// exec: seconds between SIGTERM and SIGKILL when the job ends (1 when not given).
    pub grace_time: Option<u32>,
    /// exec: the program's stdout and stderr go to `<job>.stdout` and `<job>.stderr`
    /// (true when not given), else to storbench's own.
    pub std_redirect: Option<bool>,
    /// e4defrag: the donor file's name (required), under the job's `directory=`.
    pub donorname: Option<String>,
    /// e4defrag: the donor's blocks are allocated before each move and freed after it,
    /// instead of once over the whole file before the job.
    pub inplace: bool,
    /// net, netsplice: the socket options (`options/net.rs`).
    pub net: NetOptions,
    /// io_uring, libaio: per-IO priorities (`cmdprio.rs`).
    pub cmdprio: crate::cmdprio::CmdPrio,
}

/// fio's `protocol=` of the net engines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NetProtocol {
    #[default]
    Tcp,
    TcpV6,
    Udp,
    UdpV6,
    Unix,
}

impl NetProtocol {
    /// fio's word for it.
    pub fn fio_name(self) -> &'static str {
        match self {
            NetProtocol::Tcp => "tcp",
            NetProtocol::TcpV6 => "tcpv6",
            NetProtocol::Udp => "udp",
            NetProtocol::UdpV6 => "udpv6",
            NetProtocol::Unix => "unix",
        }
    }

    pub fn is_tcp(self) -> bool {
        matches!(self, NetProtocol::Tcp | NetProtocol::TcpV6)
    }

    pub fn is_udp(self) -> bool {
        matches!(self, NetProtocol::Udp | NetProtocol::UdpV6)
    }

    pub fn is_v6(self) -> bool {
        matches!(self, NetProtocol::TcpV6 | NetProtocol::UdpV6)
    }
}

/// The options of fio's net and netsplice engines, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetOptions {
    /// The peer (a sender's destination, a UDP reader's multicast group); a Unix socket's
    /// path. fio keeps it as the job's file name: `filename=` sets it as well.
    pub hostname: Option<String>,
    /// TCP or UDP port, 1 to 65535 (required for both; invalid with `unix`).
    pub port: Option<u16>,
    pub protocol: NetProtocol,
    /// TCP: wait for the peer to connect instead of connecting.
    pub listen: bool,
    /// Each IO is answered by the peer with the same payload (latency mode).
    pub pingpong: bool,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// UDP multicast: the address of the interface to send or receive on.
    pub interface: Option<std::net::Ipv4Addr>,
    /// UDP multicast: time to live of packets sent (1 when not given).
    pub ttl: u32,
    /// SO_SNDBUF/SO_RCVBUF, bytes (0: the system's).
    pub window_size: u32,
    /// TCP_MAXSEG (0: the system's).
    pub mss: u32,
}

impl Default for NetOptions {
    fn default() -> Self {
        NetOptions {
            hostname: None,
            port: None,
            protocol: NetProtocol::Tcp,
            listen: false,
            pingpong: false,
            nodelay: false,
            interface: None,
            ttl: 1,
            window_size: 0,
            mss: 0,
        }
    }
}

/// fio's `cpumode`: how the cpuio engine keeps a CPU busy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CpuMode {
    /// Spins on the clock for `cpuchunks` µs.
    #[default]
    Noop,
    /// Sorts 1 MiB of numbers four ways, as fio's qsort mode; the idle time follows the
    /// time a round took.
    Qsort,
}

impl CpuMode {
    /// fio's word for it, as its start line prints it.
    pub fn fio_name(self) -> &'static str {
        match self {
            CpuMode::Noop => "noop",
            CpuMode::Qsort => "qsort",
        }
    }
}

impl EngineOptions {
    /// The names of the options given, in the order first given.
    pub fn given(&self) -> &[&'static str] {
        &self.given
    }

    /// Sets the nfs engine's base URL, already parsed, as `nfs_url=` would.
    pub fn set_nfs_url(&mut self, base: NfsBase) {
        self.mark("nfs_url");
        self.nfs_url = Some(base);
    }

    /// Notes that option `name` was given (the parsers call it).
    pub(crate) fn mark(&mut self, name: &'static str) {
        if !self.given.contains(&name) {
            self.given.push(name);
        }
    }

    /// Sets option `name` from `value` as a job file would give it (`""` as given bare,
    /// `hipri` alone), through the option table's own parser: for jobs built in code
    /// (bonnie's URL, tests).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let def = crate::options::find(name)
            .filter(|d| d.category == crate::options::Category::Engine)
            .ok_or_else(|| format!("{name} is not an engine option"))?;
        let mut b = crate::build::JobBuilder::new();
        b.spec.engine_options = std::mem::take(self);
        let result = (def.apply)(&mut b, (!value.is_empty()).then_some(value));
        *self = std::mem::take(&mut b.spec.engine_options);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_parses_through_the_table_and_records_the_name_once() {
        let mut o = EngineOptions::default();
        o.set("hipri", "1").unwrap();
        o.set("sqthread_poll_cpu", "3").unwrap();
        o.set("hipri", "0").unwrap();
        assert!(!o.hipri);
        o.set("hipri", "").unwrap();
        assert!(o.hipri);
        assert!(o.set("hipri", "maybe").is_err());
        assert_eq!(o.sqthread_poll_cpu, Some(3));
        assert_eq!(o.given(), ["hipri", "sqthread_poll_cpu"]);
        assert!(o.set("sqthread_poll_cpu", "x").is_err());
        assert!(o.set("bs", "4k").is_err());
    }
}
