//! One TCP connection: a non-blocking socket, the send buffer of encoded calls not yet
//! written, and the record reader for replies.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::framing::RecordReader;

/// Largest reply record accepted; READ replies are bounded by rsize, READDIRPLUS by the
/// maxcount we send, so anything bigger is a broken or hostile server.
pub const RECORD_LIMIT: usize = 64 << 20;

/// Why a connection is unusable.
#[derive(Debug)]
pub enum Broken {
    Io(io::Error),
    Closed,
    Timeout(Duration),
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Io(e) => write!(f, "{e}"),
            Broken::Closed => f.write_str("connection closed by the server"),
            Broken::Timeout(t) => write!(f, "no reply within {} s", t.as_secs()),
        }
    }
}

pub struct Conn {
    pub sock: Option<TcpStream>,
    pub reader: RecordReader,
    /// Encoded calls; bytes before `sent` are already written.
    pub out: Vec<u8>,
    pub sent: usize,
    /// Calls sent on this connection that have no reply yet.
    pub inflight: u32,
    /// Last time a reply byte arrived or the connection was (re)made.
    pub last_rx: Instant,
    pub broken: Option<Broken>,
}

impl Conn {
    pub fn new(sock: TcpStream, recv_capacity: usize) -> Conn {
        Conn {
            sock: Some(sock),
            reader: RecordReader::new(recv_capacity, RECORD_LIMIT),
            out: Vec::with_capacity(1 << 16),
            sent: 0,
            inflight: 0,
            last_rx: Instant::now(),
            broken: None,
        }
    }

    pub fn fd(&self) -> i32 {
        self.sock.as_ref().map_or(-1, |s| s.as_raw_fd())
    }

    pub fn has_unsent(&self) -> bool {
        self.sent < self.out.len()
    }

    /// Writes as much of the send buffer as the socket takes without blocking.
    pub fn flush(&mut self) {
        let Some(sock) = self.sock.as_mut() else {
            return;
        };
        while self.sent < self.out.len() {
            match sock.write(&self.out[self.sent..]) {
                Ok(0) => {
                    self.broken = Some(Broken::Closed);
                    return;
                }
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.broken = Some(Broken::Io(e));
                    return;
                }
            }
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        } else if self.sent > self.out.len() / 2 {
            // Keep the buffer from growing while the socket stays backed up.
            self.out.drain(..self.sent);
            self.sent = 0;
        }
    }

    /// Reads once without blocking; true if bytes arrived.
    pub fn read_some(&mut self) -> bool {
        let Some(sock) = self.sock.as_mut() else {
            return false;
        };
        match self.reader.fill(sock) {
            Ok(0) => {
                self.broken = Some(Broken::Closed);
                false
            }
            Ok(_) => {
                self.last_rx = Instant::now();
                true
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                false
            }
            Err(e) => {
                self.broken = Some(Broken::Io(e));
                false
            }
        }
    }

    /// Drops the socket and everything buffered, keeping the buffers' memory.
    pub fn reset(&mut self, sock: TcpStream) {
        self.sock = Some(sock);
        self.reader.reset();
        self.out.clear();
        self.sent = 0;
        self.inflight = 0;
        self.last_rx = Instant::now();
        self.broken = None;
    }
}

/// Connects to the first address that answers within `timeout`, then makes the socket
/// non-blocking with Nagle off (calls are whole records; delaying them only adds latency).
pub fn connect(addrs: &[SocketAddr], timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address to connect to");
    for addr in addrs {
        match TcpStream::connect_timeout(addr, timeout) {
            Ok(s) => {
                s.set_nodelay(true)?;
                s.set_nonblocking(true)?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}
