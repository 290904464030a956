//! The connection: a TCP socket, a send queue of header bytes and borrowed data buffers
//! flushed with one `sendmsg`, and a receive buffer. Nothing here allocates once the buffers
//! have reached their working size.
//!
//! The socket stays in blocking mode and every send and receive says `MSG_DONTWAIT`, except
//! [`Wire::fill_blocking`]: waiting for input is then one `recv` that returns the bytes, not a
//! `poll` followed by a `recv` (one system call less each time the initiator sleeps).

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::pdu::{BHS_LEN, Bhs, pad_len};
use crate::text::Digest;

/// Most iovecs handed to one `writev`.
const IOV_BATCH: usize = 64;
/// Receive buffer size beyond the largest data segment we accept.
const RX_SLACK: usize = 64 * 1024;
/// The longest a blocking receive ([`Wire::fill_blocking`]) waits before it returns empty,
/// so that callers check their deadlines at least this often.
pub const RECV_TICK: Duration = Duration::from_millis(200);

/// One piece of the send queue.
#[derive(Clone, Copy)]
enum Seg {
    /// Bytes `start..end` of the queue's own buffer (headers, padding, digests, text).
    Own { start: usize, end: usize },
    /// Caller memory (write data) that stays valid until the task completes.
    Ext { ptr: *const u8, len: usize },
}

/// Bytes waiting to be written, in order.
#[derive(Default)]
pub struct OutQueue {
    bytes: Vec<u8>,
    segs: Vec<Seg>,
    /// First segment not yet fully written, and bytes of it already written.
    pos: usize,
    off: usize,
}

impl OutQueue {
    pub fn is_empty(&self) -> bool {
        self.pos >= self.segs.len()
    }

    fn own(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(data);
        let end = self.bytes.len();
        match self.segs.last_mut() {
            Some(Seg::Own { end: e, .. }) if *e == start => *e = end,
            _ => self.segs.push(Seg::Own { start, end }),
        }
    }

    /// Queues a PDU: header (+ digest), then `data` (+ padding + digest). `data` is borrowed:
    /// the caller guarantees it outlives the flush (task buffers do).
    ///
    /// # Safety
    /// `data` must stay valid and unchanged until [`Wire::flush`] has written it.
    pub unsafe fn push_pdu(&mut self, bhs: &Bhs, data: &[u8], copy: bool, hd: Digest, dd: Digest) {
        self.own(&bhs.0);
        if !hd.is_none() {
            self.own(&crate::pdu::digest(&bhs.0));
        }
        if data.is_empty() {
            return;
        }
        if copy || data.len() <= 512 {
            self.own(data);
        } else {
            self.segs.push(Seg::Ext {
                ptr: data.as_ptr(),
                len: data.len(),
            });
        }
        let pad = pad_len(data.len());
        self.own(&[0u8; 3][..pad]);
        if !dd.is_none() {
            let crc = crc32c::crc32c_append(crc32c::crc32c(data), &[0u8; 3][..pad]);
            self.own(&crc.to_le_bytes());
        }
    }

    fn reset(&mut self) {
        self.bytes.clear();
        self.segs.clear();
        self.pos = 0;
        self.off = 0;
    }
}

/// Received bytes not yet consumed: `buf[start..end]`.
pub struct RxBuf {
    pub buf: Vec<u8>,
    pub start: usize,
    pub end: usize,
}

impl RxBuf {
    fn new(max_data: u32) -> RxBuf {
        RxBuf {
            buf: vec![0; max_data as usize + RX_SLACK],
            start: 0,
            end: 0,
        }
    }

    #[inline]
    pub fn available(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    #[inline]
    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }
}

/// A TCP connection to one portal.
pub struct Wire {
    sock: TcpStream,
    pub portal: String,
    pub out: OutQueue,
    pub rx: RxBuf,
    pub header_digest: Digest,
    pub data_digest: Digest,
    /// When bytes last arrived (liveness).
    pub last_rx: Instant,
    /// The last read returned less than asked (or would block): the socket is empty until
    /// `wait` sees it readable again. Saves a read that would only say EAGAIN.
    drained: bool,
}

impl Wire {
    /// Connects with a deadline, trying each address the host resolves to.
    pub fn connect(host: &str, port: u16, portal: &str, timeout: Duration) -> Result<Wire> {
        let io_err = |op, source| Error::Io {
            portal: portal.to_string(),
            op,
            source,
        };
        // Not getaddrinfo: the static binary must resolve names without glibc's NSS modules.
        let addrs = storbench_resolve::resolve(host, port).map_err(|e| io_err("resolve", e))?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(sock) => {
                    sock.set_nodelay(true)
                        .map_err(|e| io_err("set TCP_NODELAY", e))?;
                    sock.set_read_timeout(Some(RECV_TICK))
                        .map_err(|e| io_err("set SO_RCVTIMEO", e))?;
                    return Ok(Wire {
                        sock,
                        portal: portal.to_string(),
                        out: OutQueue::default(),
                        rx: RxBuf::new(crate::text::Offer::default().max_recv_data_segment_length),
                        header_digest: Digest::None,
                        data_digest: Digest::None,
                        last_rx: Instant::now(),
                        drained: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                    return Err(Error::Timeout {
                        portal: portal.to_string(),
                        op: "connect",
                        secs: timeout.as_secs_f64(),
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(io_err("connect", last))
    }

    /// Grows the receive buffer for a larger negotiated data segment (login time only).
    pub fn ensure_rx_capacity(&mut self, max_data: u32) {
        let want = max_data as usize + RX_SLACK;
        if self.rx.buf.len() < want {
            self.rx.buf.resize(want, 0);
        }
    }

    /// The local address, for naming the interface used.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.sock.local_addr().ok()
    }

    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.sock.peer_addr().ok()
    }

    /// Queues a PDU whose data is borrowed (see [`OutQueue::push_pdu`]).
    ///
    /// # Safety
    /// As for [`OutQueue::push_pdu`].
    pub unsafe fn queue(&mut self, bhs: &Bhs, data: &[u8]) {
        let (hd, dd) = (self.header_digest, self.data_digest);
        // SAFETY: forwarded to the caller.
        unsafe { self.out.push_pdu(bhs, data, false, hd, dd) };
    }

    /// Queues a PDU whose data is copied into the send queue.
    pub fn queue_copy(&mut self, bhs: &Bhs, data: &[u8]) {
        let (hd, dd) = (self.header_digest, self.data_digest);
        // SAFETY: copied data is not borrowed past this call.
        unsafe { self.out.push_pdu(bhs, data, true, hd, dd) };
    }

    /// Writes as much of the send queue as the socket takes. Ok(true) when all is written.
    pub fn flush(&mut self) -> Result<bool> {
        while !self.out.is_empty() {
            let mut iov = [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; IOV_BATCH];
            let mut n = 0;
            for (i, seg) in self.out.segs[self.out.pos..]
                .iter()
                .take(IOV_BATCH)
                .enumerate()
            {
                let skip = if i == 0 { self.out.off } else { 0 };
                let (ptr, len) = match *seg {
                    Seg::Own { start, end } => (self.out.bytes[start..end].as_ptr(), end - start),
                    Seg::Ext { ptr, len } => (ptr, len),
                };
                // SAFETY: skip < len for the segment in progress.
                iov[n] = libc::iovec {
                    iov_base: unsafe { ptr.add(skip) } as *mut _,
                    iov_len: len - skip,
                };
                n += 1;
            }
            // SAFETY: msghdr is plain data; all-zero is a valid empty header.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = n as _;
            let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
            // SAFETY: the iovecs point into our buffer or into task buffers that outlive the
            // flush (Seg::Ext contract).
            let written = unsafe { libc::sendmsg(self.sock.as_raw_fd(), &msg, flags) };
            if written < 0 {
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::WouldBlock => return Ok(false),
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(self.io_err("send", err)),
                }
            }
            self.advance(written as usize);
        }
        self.out.reset();
        Ok(true)
    }

    fn advance(&mut self, mut written: usize) {
        while written > 0 {
            let seg_len = match self.out.segs[self.out.pos] {
                Seg::Own { start, end } => end - start,
                Seg::Ext { len, .. } => len,
            };
            let left = seg_len - self.out.off;
            if written >= left {
                written -= left;
                self.out.pos += 1;
                self.out.off = 0;
            } else {
                self.out.off += written;
                written = 0;
            }
        }
    }

    /// Reads what the socket has into the receive buffer. Ok(false) if nothing was ready.
    pub fn fill(&mut self) -> Result<bool> {
        self.fill_at_most(usize::MAX)
    }

    /// As [`Wire::fill`], but reads at most `max` bytes: when large payloads follow a header,
    /// reading only the header lets the payload go straight to its destination instead of
    /// through this buffer (one copy less per byte).
    pub fn fill_at_most(&mut self, max: usize) -> Result<bool> {
        self.compact_if_full();
        let end = self.rx.end;
        let n = self.read_into_at(end, max, libc::MSG_DONTWAIT)?;
        self.rx.end += n;
        Ok(n > 0)
    }

    /// Waits for input (at most [`RECV_TICK`]) and reads up to `max` bytes of it into the
    /// receive buffer. Ok(false) if none came. Only for when nothing is waiting to be sent.
    pub fn fill_blocking(&mut self, max: usize) -> Result<bool> {
        self.compact_if_full();
        self.drained = false;
        let end = self.rx.end;
        let n = self.read_into_at(end, max, 0)?;
        self.rx.end += n;
        Ok(n > 0)
    }

    /// Moves unconsumed bytes to the front when the buffer has no space left at its end.
    fn compact_if_full(&mut self) {
        if self.rx.start > 0 && self.rx.end == self.rx.buf.len() {
            self.rx.buf.copy_within(self.rx.start..self.rx.end, 0);
            self.rx.end -= self.rx.start;
            self.rx.start = 0;
        }
    }

    /// Makes room so that `need` bytes fit after `rx.start`.
    pub fn make_room(&mut self, need: usize) {
        if self.rx.start + need > self.rx.buf.len() {
            self.rx.buf.copy_within(self.rx.start..self.rx.end, 0);
            self.rx.end -= self.rx.start;
            self.rx.start = 0;
        }
    }

    fn read_into_at(&mut self, at: usize, max: usize, flags: i32) -> Result<usize> {
        if at >= self.rx.buf.len() || self.drained || max == 0 {
            return Ok(0);
        }
        let space = (self.rx.buf.len() - at).min(max);
        // SAFETY: `at + space` is within the buffer, which `recv` does not touch otherwise.
        let dst = unsafe { self.rx.buf.as_mut_ptr().add(at) };
        // SAFETY: as above.
        unsafe { self.recv(dst, space, flags) }
    }

    /// Reads straight into caller memory (large Data-In payloads), bypassing the buffer.
    ///
    /// # Safety
    /// `dst` must be valid for `len` bytes of writes.
    pub unsafe fn read_direct(&mut self, dst: *mut u8, len: usize) -> Result<usize> {
        if self.drained {
            return Ok(0);
        }
        // SAFETY: guaranteed by the caller.
        unsafe { self.recv(dst, len, libc::MSG_DONTWAIT) }
    }

    /// One `recv` of at most `len` bytes into `dst`; 0 when nothing came (would block, or
    /// the receive timeout passed). A short read marks the socket drained.
    ///
    /// # Safety
    /// `dst` must be valid for `len` bytes of writes.
    unsafe fn recv(&mut self, dst: *mut u8, len: usize, flags: i32) -> Result<usize> {
        loop {
            // SAFETY: guaranteed by the caller.
            let n = unsafe { libc::recv(self.sock.as_raw_fd(), dst.cast(), len, flags) };
            if n > 0 {
                self.last_rx = Instant::now();
                self.drained = (n as usize) < len;
                return Ok(n as usize);
            }
            if n == 0 {
                return Err(Error::Closed {
                    portal: self.portal.clone(),
                    op: "receive",
                });
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock => {
                    self.drained = true;
                    return Ok(0);
                }
                io::ErrorKind::Interrupted => continue,
                _ => return Err(self.io_err("receive", err)),
            }
        }
    }

    /// Waits until the socket is readable (or writable when output is pending), at most
    /// `timeout`. Returns false on timeout.
    pub fn wait(&mut self, timeout: Duration) -> Result<bool> {
        let mut events = libc::POLLIN;
        if !self.out.is_empty() {
            events |= libc::POLLOUT;
        }
        let mut pfd = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events,
            revents: 0,
        };
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        loop {
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r >= 0 {
                if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                    self.drained = false;
                }
                return Ok(r > 0);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(self.io_err("poll", err));
            }
        }
    }

    /// Receives one whole PDU synchronously (login, text, logout), header and data.
    pub fn recv_pdu(&mut self, timeout: Duration, op: &'static str) -> Result<(Bhs, Vec<u8>)> {
        let deadline = Instant::now() + timeout;
        let hd = self.header_digest.len();
        self.fill_to(BHS_LEN, deadline, op)?;
        let bhs = Bhs::from_slice(self.rx.available()).unwrap_or_default();
        let hdr_len = BHS_LEN + bhs.ahs_len() + hd;
        let dlen = bhs.data_len() as usize;
        if dlen > self.rx.buf.len() - RX_SLACK {
            return Err(self.proto(op, format!("data segment of {dlen} bytes is too large")));
        }
        let dd = if dlen > 0 { self.data_digest.len() } else { 0 };
        let total = hdr_len + dlen + pad_len(dlen) + dd;
        self.fill_to(total, deadline, op)?;
        let bytes = self.rx.available();
        if hd > 0 && bytes[hdr_len - 4..hdr_len] != crate::pdu::digest(&bytes[..hdr_len - 4]) {
            return Err(self.proto(op, "header digest mismatch".into()));
        }
        let data_end = hdr_len + dlen + pad_len(dlen);
        if dd > 0 && bytes[data_end..data_end + 4] != crate::pdu::digest(&bytes[hdr_len..data_end])
        {
            return Err(self.proto(op, "data digest mismatch".into()));
        }
        let data = bytes[hdr_len..hdr_len + dlen].to_vec();
        self.rx.consume(total);
        Ok((bhs, data))
    }

    fn fill_to(&mut self, need: usize, deadline: Instant, op: &'static str) -> Result<()> {
        self.make_room(need);
        let started = Instant::now();
        while self.rx.end - self.rx.start < need {
            if !self.fill()? {
                let now = Instant::now();
                if now >= deadline {
                    return Err(self.timeout(op, deadline - started));
                }
                self.wait(deadline - now)?;
            }
        }
        Ok(())
    }

    /// Sends everything queued, waiting at most `timeout`.
    pub fn flush_all(&mut self, timeout: Duration, op: &'static str) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while !self.flush()? {
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timeout(op, timeout));
            }
            self.wait(deadline - now)?;
        }
        Ok(())
    }

    pub fn io_err(&self, op: &'static str, source: io::Error) -> Error {
        Error::Io {
            portal: self.portal.clone(),
            op,
            source,
        }
    }

    pub fn proto(&self, op: &'static str, reason: String) -> Error {
        Error::Protocol {
            portal: self.portal.clone(),
            op,
            reason,
        }
    }

    pub fn timeout(&self, op: &'static str, waited: Duration) -> Error {
        Error::Timeout {
            portal: self.portal.clone(),
            op,
            secs: waited.as_secs_f64(),
        }
    }

    /// Closes both directions at once (used before a reconnect and on drop).
    pub fn shutdown(&self) {
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}
