//! One TCP connection: a non-blocking socket, the calls encoded but not yet written, and the
//! record reader for replies.
//!
//! Sending is vectored: call headers are encoded into `out`, and the payload of a large
//! WRITE is written straight from where it lies (the caller's buffer or the retained copy)
//! with `writev`, never copied into a send buffer. Receiving normally gathers whole records,
//! but a large READ payload is read straight into the caller's buffer once its reply header
//! is known (see [`DirectRead`]).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::framing::RecordReader;

/// Largest reply record accepted; READ replies are bounded by rsize, READDIRPLUS by the
/// maxcount we send, so anything bigger is a broken or hostile server.
pub const RECORD_LIMIT: usize = 64 << 20;
/// Payloads up to this size are copied next to their header (one iovec is cheaper).
pub const INLINE_MAX: usize = 8 << 10;
/// Most bytes asked of the socket per read into the record buffer, so that a large READ
/// payload mostly arrives through [`DirectRead`] rather than through the buffer.
const READ_CHUNK: usize = 64 << 10;
/// iovecs per `writev` call.
const IOV_BATCH: usize = 64;

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

/// A run of bytes to send: a range of `out`, or memory the caller keeps valid until the
/// call is answered.
#[derive(Clone, Copy)]
enum Seg {
    Out { start: usize, len: usize },
    Ext { ptr: *const u8, len: usize },
}

/// The rest of a READ payload being read straight into the caller's buffer.
#[derive(Clone, Copy, Debug)]
pub struct DirectRead {
    pub slot: u32,
    /// Next byte of the caller's buffer to fill, and how many are still to come.
    pub dst: *mut u8,
    pub left: usize,
    /// XDR padding after the payload, to be read and dropped.
    pub pad: usize,
    pub count: u32,
}

/// What one read from the socket brought.
pub enum Received {
    Nothing,
    Bytes,
    /// A direct READ finished: its slot and the byte count.
    DirectDone(u32, u32),
}

pub struct Conn {
    pub sock: Option<TcpStream>,
    pub reader: RecordReader,
    out: Vec<u8>,
    /// End of the bytes of `out` already covered by `segs`.
    out_closed: usize,
    segs: Vec<Seg>,
    /// First segment not completely written, and how much of it is.
    seg_idx: usize,
    seg_off: usize,
    iov: Vec<libc::iovec>,
    /// Bytes queued and bytes written since the connection was made (a reply must not
    /// arrive before its call was written out).
    pub queued_total: u64,
    pub sent_total: u64,
    pub direct: Option<DirectRead>,
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
            out_closed: 0,
            segs: Vec::with_capacity(256),
            seg_idx: 0,
            seg_off: 0,
            iov: Vec::with_capacity(IOV_BATCH),
            queued_total: 0,
            sent_total: 0,
            direct: None,
            inflight: 0,
            last_rx: Instant::now(),
            broken: None,
        }
    }

    pub fn fd(&self) -> i32 {
        self.sock.as_ref().map_or(-1, |s| s.as_raw_fd())
    }

    pub fn has_unsent(&self) -> bool {
        self.seg_idx < self.segs.len()
    }

    /// The buffer that call headers (and small payloads) are encoded into.
    pub fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// Queues `len` bytes at `ptr` after what was encoded so far.
    ///
    /// # Safety
    /// The bytes must stay valid and unchanged until the call they belong to is answered
    /// or the connection is reset.
    pub unsafe fn attach(&mut self, ptr: *const u8, len: usize) {
        self.close_out();
        if len > 0 {
            self.segs.push(Seg::Ext { ptr, len });
            self.queued_total += len as u64;
        }
    }

    /// Ends a call: everything encoded so far is queued.
    pub fn close_out(&mut self) {
        let len = self.out.len() - self.out_closed;
        if len == 0 {
            return;
        }
        match self.segs.last_mut() {
            Some(Seg::Out { start, len: l }) if *start + *l == self.out_closed => *l += len,
            _ => self.segs.push(Seg::Out {
                start: self.out_closed,
                len,
            }),
        }
        self.out_closed = self.out.len();
        self.queued_total += len as u64;
    }

    /// Writes as much as the socket takes without blocking.
    pub fn flush(&mut self) {
        let Some(sock) = self.sock.as_ref() else {
            return;
        };
        let fd = sock.as_raw_fd();
        while self.seg_idx < self.segs.len() {
            self.iov.clear();
            for (i, seg) in self.segs[self.seg_idx..].iter().take(IOV_BATCH).enumerate() {
                let (ptr, len) = match *seg {
                    Seg::Out { start, len } => (self.out[start..].as_ptr(), len),
                    Seg::Ext { ptr, len } => (ptr, len),
                };
                let skip = if i == 0 { self.seg_off } else { 0 };
                self.iov.push(libc::iovec {
                    // SAFETY: `skip` is below the segment's length.
                    iov_base: unsafe { ptr.add(skip) } as *mut libc::c_void,
                    iov_len: len - skip,
                });
            }
            // SAFETY: every iovec points at live bytes: `out` is not touched during the
            // call, and attached memory is valid until its call is answered.
            let n = unsafe { libc::writev(fd, self.iov.as_ptr(), self.iov.len() as i32) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => {
                        self.broken = Some(Broken::Io(e));
                        return;
                    }
                }
            }
            if n == 0 {
                self.broken = Some(Broken::Closed);
                return;
            }
            self.advance(n as usize);
        }
        self.compact();
    }

    fn advance(&mut self, mut n: usize) {
        self.sent_total += n as u64;
        while n > 0 {
            let len = match self.segs[self.seg_idx] {
                Seg::Out { len, .. } | Seg::Ext { len, .. } => len,
            };
            let rest = len - self.seg_off;
            if n < rest {
                self.seg_off += n;
                return;
            }
            n -= rest;
            self.seg_idx += 1;
            self.seg_off = 0;
        }
    }

    /// Forgets what was written; keeps the buffers from growing while the socket is slow.
    fn compact(&mut self) {
        if self.seg_idx == self.segs.len() {
            if self.out_closed == self.out.len() {
                self.out.clear();
                self.out_closed = 0;
            }
            self.segs.clear();
            self.seg_idx = 0;
            return;
        }
        if self.seg_idx < 256 || self.seg_idx < self.segs.len() / 2 {
            return;
        }
        self.segs.drain(..self.seg_idx);
        self.seg_idx = 0;
        let first_out = self.segs.iter().find_map(|s| match *s {
            Seg::Out { start, .. } => Some(start),
            Seg::Ext { .. } => None,
        });
        let cut = first_out.unwrap_or(self.out_closed);
        self.out.drain(..cut);
        self.out_closed -= cut;
        for s in &mut self.segs {
            if let Seg::Out { start, .. } = s {
                *start -= cut;
            }
        }
    }

    /// Reads once without blocking: into the caller's buffer while a direct READ is under
    /// way, otherwise into the record buffer.
    pub fn read_some(&mut self) -> Received {
        let Some(sock) = self.sock.as_mut() else {
            return Received::Nothing;
        };
        let got = match self.direct.as_mut() {
            Some(d) => read_direct(sock, d),
            None => self.reader.fill_at_most(sock, READ_CHUNK),
        };
        match got {
            Ok(0) => {
                self.broken = Some(Broken::Closed);
                Received::Nothing
            }
            Ok(_) => {
                self.last_rx = Instant::now();
                match self.direct {
                    Some(d) if d.left == 0 && d.pad == 0 => {
                        self.direct = None;
                        Received::DirectDone(d.slot, d.count)
                    }
                    _ => Received::Bytes,
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Received::Nothing
            }
            Err(e) => {
                self.broken = Some(Broken::Io(e));
                Received::Nothing
            }
        }
    }

    /// Drops the socket and everything buffered, keeping the buffers' memory.
    pub fn reset(&mut self, sock: TcpStream) {
        self.sock = Some(sock);
        self.reader.reset();
        self.out.clear();
        self.out_closed = 0;
        self.segs.clear();
        self.seg_idx = 0;
        self.seg_off = 0;
        self.queued_total = 0;
        self.sent_total = 0;
        self.direct = None;
        self.inflight = 0;
        self.last_rx = Instant::now();
        self.broken = None;
    }
}

/// One read of the payload (then the padding) of a direct READ.
fn read_direct(sock: &mut TcpStream, d: &mut DirectRead) -> io::Result<usize> {
    let fd = sock.as_raw_fd();
    let mut pad = [0u8; 4];
    let (ptr, len) = if d.left > 0 {
        (d.dst, d.left)
    } else {
        (pad.as_mut_ptr(), d.pad)
    };
    // SAFETY: `ptr` is valid for `len` bytes: the caller's READ buffer (its contract keeps
    // it valid until completion) or the local pad array.
    let n = unsafe { libc::recv(fd, ptr as *mut libc::c_void, len, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    if d.left > 0 {
        // SAFETY: still within the caller's buffer.
        d.dst = unsafe { d.dst.add(n) };
        d.left -= n;
    } else {
        d.pad -= n;
    }
    Ok(n)
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
