//! `net`: fio's network engine, byte for byte on the wire, so fio or storbench can be
//! either end. A TCP job listens (`listen`) or connects to `hostname:port`; a UDP or
//! Unix-socket job's reader waits for its writer. Each write is one `send` of the block
//! (TCP: `MSG_MORE` until the last, as fio), each read fills its block (fewer bytes only
//! when the peer ends its stream). A UDP writer starts with fio's open message and stamps
//! a sequence trailer into each datagram, from which the reader counts those lost; every
//! end says goodbye with fio's close message, and a reader that receives it (or the end
//! of the stream) ends its job as if its size were reached. `pingpong` answers each IO
//! with the same payload in the other direction.
//!
//! The socket is made when the worker sets the engine up (the runner's earlier look at
//! the job's "file" opens nothing) and the connection when it opens its file, before the
//! job's clock starts, as fio resets its statistics once a listener has accepted.

mod socket;
mod wire;

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};

use storbench_core::{
    Caps, Engine, EngineError, EngineInfo, EngineSetup, FileId, FileSpec, IoKind, IoUnit, Queued,
};
use storbench_job::{JobSpec, NetOptions, NetProtocol, VerifyKind};

use socket::Addr;

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "net";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(Net::new(job, NAME)))
}

/// One end of a net job's stream.
pub struct Net {
    name: &'static str,
    o: NetOptions,
    /// The bytes the job moves (`size`): a TCP sender holds back its segments until the
    /// last block (MSG_MORE).
    size: u64,
    /// UDP: stamp and check fio's sequence trailer (not when blocks carry verify data).
    sequence: bool,
    /// Set by `setup`: only a worker's engine makes sockets.
    live: bool,
    /// What errors name: `tcp 10.0.0.2:8888`, `unix /run/x.sock`.
    what: String,
    listener: Option<OwnedFd>,
    sock: Option<OwnedFd>,
    /// UDP: where datagrams go (a writer) or last came from (a reader).
    peer: Addr,
    /// The Unix socket this end made, removed when it is dropped.
    made_path: Option<std::ffi::CString>,
    sent: u64,
    send_seq: u64,
    recv_seq: u64,
    /// fio stops counting lost datagrams once a trailer's length disagrees.
    seq_off: bool,
    dropped: u64,
}

impl Net {
    pub fn new(job: &JobSpec, name: &'static str) -> Net {
        let o = job.engine_options.net.clone();
        let what = match (o.protocol, &o.hostname, o.port) {
            (NetProtocol::Unix, h, _) => format!("unix {}", h.as_deref().unwrap_or("")),
            (p, Some(h), Some(port)) => format!("{} {h}:{port}", p.fio_name()),
            (p, _, port) => format!("{} port {}", p.fio_name(), port.unwrap_or(0)),
        };
        Net {
            name,
            size: crate::options::file_size(job).unwrap_or(0),
            sequence: job.verify.kind == VerifyKind::None,
            live: false,
            what,
            listener: None,
            sock: None,
            peer: Addr::empty(),
            made_path: None,
            sent: 0,
            send_seq: 0,
            recv_seq: 0,
            seq_off: false,
            dropped: 0,
            o,
        }
    }

    /// The peer's (or a multicast group's) address for a TCP or UDP job.
    fn inet_addr(&self) -> Result<SocketAddr, EngineError> {
        let host = self.o.hostname.as_deref().unwrap_or("");
        let port = self.o.port.unwrap_or(0);
        let found = storbench_resolve::resolve(host, port)
            .map_err(|e| EngineError::os("resolve", &self.what, e))?;
        let v6 = self.o.protocol.is_v6();
        found
            .into_iter()
            .find(|a| a.is_ipv6() == v6)
            .ok_or_else(|| {
                EngineError::unsupported(format!(
                    "{}: no {} address",
                    self.what,
                    if v6 { "IPv6" } else { "IPv4" }
                ))
            })
    }

    fn domain(&self) -> i32 {
        match self.o.protocol {
            NetProtocol::Unix => libc::AF_UNIX,
            p if p.is_v6() => libc::AF_INET6,
            _ => libc::AF_INET,
        }
    }

    fn kind(&self) -> i32 {
        if self.o.protocol.is_udp() {
            libc::SOCK_DGRAM
        } else {
            libc::SOCK_STREAM
        }
    }

    /// fio's socket options: the window (receive side for a listener or pingpong, send
    /// side for a sender or pingpong) and the TCP segment size.
    fn tune(&self, fd: &OwnedFd) -> Result<(), EngineError> {
        let (fd, w) = (fd.as_raw_fd(), self.o.window_size);
        if w > 0 {
            if self.o.listen || self.o.pingpong {
                socket::set_opt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, w as i32, "window_size")?;
            }
            if !self.o.listen || self.o.pingpong {
                socket::set_opt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, w as i32, "window_size")?;
            }
        }
        if self.o.mss > 0 && self.o.protocol.is_tcp() {
            socket::set_opt(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, self.o.mss as i32, "mss")?;
        }
        Ok(())
    }

    fn nodelay(&self, fd: &OwnedFd) -> Result<(), EngineError> {
        if self.o.nodelay && self.o.protocol.is_tcp() {
            socket::set_opt(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, 1i32, "nodelay")?;
        }
        Ok(())
    }

    /// The listening end's socket: a TCP listener, a UDP reader (joined to its multicast
    /// group), a Unix reader.
    fn bind_listener(&mut self) -> Result<(), EngineError> {
        let fd = socket::socket(self.domain(), self.kind(), &self.what)?;
        let addr = if self.o.protocol == NetProtocol::Unix {
            self.unix_listen_addr()?
        } else {
            let raw = fd.as_raw_fd();
            socket::set_opt(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1i32, "SO_REUSEADDR")?;
            socket::set_opt(raw, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1i32, "SO_REUSEPORT")?;
            self.tune(&fd)?;
            let port = self.o.port.unwrap_or(0);
            let any = if self.o.protocol.is_v6() {
                SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port))
            } else {
                SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port))
            };
            match self.o.hostname.as_deref() {
                Some(group) => Addr::inet(self.join_group(&fd, group, port)?),
                None => Addr::inet(any),
            }
        };
        socket::bind(&fd, &addr, &self.what)?;
        if self.o.protocol == NetProtocol::Unix {
            self.made_path = Some(socket::c_path(self.o.hostname.as_deref().unwrap_or(""))?);
        }
        if !self.o.protocol.is_udp() {
            socket::listen(&fd, &self.what)?;
        }
        self.listener = Some(fd);
        Ok(())
    }

    /// Joins multicast `group` (on `interface`, else any); the address to bind.
    fn join_group(&self, fd: &OwnedFd, group: &str, port: u16) -> Result<SocketAddr, EngineError> {
        let ip: std::net::Ipv4Addr = group.parse().map_err(|_| {
            EngineError::unsupported(format!("hostname={group} is not a multicast group"))
        })?;
        let iface = self.o.interface.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
        let mreq = libc::ip_mreq {
            imr_multiaddr: libc::in_addr {
                s_addr: u32::from(ip).to_be(),
            },
            imr_interface: libc::in_addr {
                s_addr: u32::from(iface).to_be(),
            },
        };
        socket::set_opt(fd.as_raw_fd(), libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, mreq, "IP_ADD_MEMBERSHIP")?;
        Ok(SocketAddr::from((ip, port)))
    }

    /// A Unix reader's path: an old socket there is replaced, as fio does; anything else
    /// is refused, never removed.
    fn unix_listen_addr(&self) -> Result<Addr, EngineError> {
        let path = self.o.hostname.as_deref().unwrap_or("");
        let addr = Addr::unix(path)?;
        match std::fs::symlink_metadata(path) {
            Ok(m) if std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()) => {
                std::fs::remove_file(path).map_err(|e| EngineError::os("remove old socket", path, e))?;
            }
            Ok(_) => {
                return Err(EngineError::new(
                    storbench_core::ErrorKind::Refused,
                    format!("{path} exists and is not a socket: storbench replaces only a socket"),
                ));
            }
            Err(_) => {}
        }
        Ok(addr)
    }

    /// The sending end's connection (TCP, Unix) or socket (UDP, with fio's open message).
    fn connect(&mut self) -> Result<OwnedFd, EngineError> {
        let fd = socket::socket(self.domain(), self.kind(), &self.what)?;
        self.nodelay(&fd)?;
        self.tune(&fd)?;
        if self.o.protocol == NetProtocol::Unix {
            let addr = Addr::unix(self.o.hostname.as_deref().unwrap_or(""))?;
            socket::connect(&fd, &addr, &self.what)?;
            return Ok(fd);
        }
        let sa = self.inet_addr()?;
        self.peer = Addr::inet(sa);
        if !self.o.protocol.is_udp() {
            socket::connect(&fd, &self.peer, &self.what)?;
            return Ok(fd);
        }
        if let SocketAddr::V4(v4) = sa
            && v4.ip().is_multicast()
        {
            let raw = fd.as_raw_fd();
            if let Some(i) = self.o.interface {
                let a = libc::in_addr {
                    s_addr: u32::from(i).to_be(),
                };
                socket::set_opt(raw, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, a, "IP_MULTICAST_IF")?;
            }
            socket::set_opt(raw, libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, self.o.ttl as i32, "IP_MULTICAST_TTL")?;
        }
        Ok(fd)
    }

    /// The listening end's connection: accepted (TCP, Unix), or the UDP socket once the
    /// writer's open message came.
    fn accept(&mut self) -> Result<OwnedFd, EngineError> {
        let listener = self.listener.take().ok_or_else(|| {
            EngineError::protocol(format!("{}: the job opens one connection", self.what))
        })?;
        if !self.o.protocol.is_udp() {
            let fd = socket::accept(&listener, &self.what)?
                .ok_or_else(|| EngineError::protocol(format!("{}: stopped while waiting for a connection", self.what)))?;
            self.nodelay(&fd)?;
            return Ok(fd);
        }
        socket::set_wake(listener.as_raw_fd(), &self.what)?;
        let mut msg = [0u8; wire::LINK_LEN];
        let got = socket::recv_from(&listener, &mut msg, &mut self.peer, &self.what)?;
        match got {
            Some(wire::LINK_LEN) if wire::is_open_msg(&msg) => Ok(listener),
            Some(_) => Err(EngineError::protocol(format!(
                "{}: bad udp open magic {:02x?}: the writer is not a fio net job",
                self.what, msg
            ))),
            None => Err(EngineError::protocol(format!(
                "{}: stopped while waiting for the writer",
                self.what
            ))),
        }
    }

    /// Sends one block; `None` when nothing could be sent.
    fn send(&mut self, buf: &mut [u8]) -> Result<Option<usize>, EngineError> {
        let sock = self.sock.as_ref().ok_or_else(|| self.not_open())?;
        let n = if self.o.protocol.is_udp() {
            if self.sequence {
                wire::store_seq(buf, self.send_seq);
                self.send_seq += 1;
            }
            socket::send_to(sock, buf, &self.peer, &self.what)?
        } else {
            let more = self.o.protocol.is_tcp()
                && !self.o.pingpong
                && self.sent + (buf.len() as u64) < self.size;
            let flags = if more { libc::MSG_MORE } else { 0 };
            socket::send_all(sock, buf, flags, &self.what)?
        };
        self.sent += n as u64;
        Ok((n > 0).then_some(n))
    }

    /// Receives one block; `None` at the peer's end (its close message, the end of its
    /// stream) or a stop.
    fn recv(&mut self, buf: &mut [u8]) -> Result<Option<usize>, EngineError> {
        let sock = self.sock.as_ref().ok_or_else(|| self.not_open())?;
        let n = if self.o.protocol.is_udp() {
            match socket::recv_from(sock, buf, &mut self.peer, &self.what)? {
                Some(n) => n,
                None => return Ok(None),
            }
        } else {
            socket::recv_all(sock, buf, &self.what)?
        };
        if n == 0 || (n == wire::LINK_LEN && wire::is_close_msg(&buf[..n])) {
            return Ok(None);
        }
        if self.o.protocol.is_udp() && self.sequence {
            self.count_lost(&buf[..n]);
        }
        Ok(Some(n))
    }

    /// fio's count of datagrams lost: the gaps in the writer's sequence numbers.
    fn count_lost(&mut self, datagram: &[u8]) {
        if self.seq_off {
            return;
        }
        match wire::read_seq(datagram) {
            wire::Seq::None => {}
            wire::Seq::Mismatch => self.seq_off = true,
            wire::Seq::Number(seq) => {
                self.dropped += seq.saturating_sub(self.recv_seq);
                self.recv_seq = seq + 1;
            }
        }
    }

    fn not_open(&self) -> EngineError {
        EngineError::protocol(format!("{}: IO before the connection was made", self.what))
    }

    /// fio's goodbye: the close message, on every protocol; errors do not matter, the
    /// peer may be gone.
    fn say_goodbye(&mut self) {
        let Some(sock) = self.sock.take() else { return };
        let msg = wire::close_msg();
        if self.o.protocol.is_udp() {
            let _ = socket::send_to(&sock, &msg, &self.peer, &self.what);
        } else {
            // SAFETY: `msg` is valid for its length.
            let _ = unsafe {
                libc::send(
                    sock.as_raw_fd(),
                    msg.as_ptr().cast(),
                    msg.len(),
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(path) = self.made_path.take() {
            // SAFETY: a valid C string; the socket this end bound there.
            unsafe { libc::unlink(path.as_ptr()) };
        }
    }
}

impl Engine for Net {
    fn name(&self) -> &'static str {
        self.name
    }

    /// Nothing to lay out: the runner only asks the "file" its size.
    fn caps(&self) -> Caps {
        Caps {
            synchronous: true,
            has_slat: false,
            trim: false,
            meta: false,
            no_data: true,
        }
    }

    fn setup(&mut self, _setup: &EngineSetup) -> Result<(), EngineError> {
        self.live = true;
        if self.o.listen {
            self.bind_listener()?;
        }
        Ok(())
    }

    fn open(&mut self, _file: &FileSpec) -> Result<FileId, EngineError> {
        if !self.live {
            return Ok(0);
        }
        let fd = if self.o.listen {
            self.accept()?
        } else {
            self.connect()?
        };
        socket::set_wake(fd.as_raw_fd(), &self.what)?;
        self.sock = Some(fd);
        if self.o.protocol.is_udp() && !self.o.listen {
            let msg = wire::open_msg();
            let sock = self.sock.as_ref().expect("just set");
            socket::send_to(sock, &msg, &self.peer, &self.what)?;
        }
        Ok(0)
    }

    fn size(&mut self, _file: FileId) -> Result<u64, EngineError> {
        Ok(self.size)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        // SAFETY: the worker's buffer of `len` bytes is ours until this IO completes.
        let buf = unsafe { std::slice::from_raw_parts_mut(io.buf.as_ptr(), io.len as usize) };
        let first = match io.kind {
            IoKind::Write => self.send(buf)?,
            IoKind::Read => self.recv(buf)?,
            IoKind::Fsync | IoKind::Fdatasync => return Ok(Queued::Done(0)),
            IoKind::Trim => {
                return Err(EngineError::unsupported("the net engine cannot trim"));
            }
        };
        let Some(n) = first else {
            return Ok(Queued::End);
        };
        if !self.o.pingpong || n < buf.len() {
            return Ok(Queued::Done(n as u64));
        }
        let reply = match io.kind {
            IoKind::Write => self.recv(buf)?,
            _ => self.send(buf)?,
        };
        Ok(reply.map_or(Queued::End, |m| Queued::Done(m as u64)))
    }

    fn close(&mut self, _file: FileId) -> Result<(), EngineError> {
        self.say_goodbye();
        Ok(())
    }

    fn dropped_reads(&self) -> u64 {
        self.dropped
    }

    fn info(&mut self) -> EngineInfo {
        EngineInfo {
            details: vec![("protocol".to_string(), self.o.protocol.fio_name().to_string())],
            ..EngineInfo::default()
        }
    }
}
