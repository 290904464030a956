//! The connection's socket (TCP or Unix-domain), non-blocking, with waits bounded by a
//! deadline: nothing in this crate blocks without a timeout.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::url::Endpoint;

pub(crate) struct Sock {
    fd: OwnedFd,
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) local: Option<SocketAddr>,
}

impl Sock {
    /// Connects to `endpoint`; a TCP one at the first of `addrs` (its host's addresses,
    /// resolved by the caller) that answers within `timeout`.
    pub(crate) fn connect(
        endpoint: &Endpoint,
        addrs: &[SocketAddr],
        timeout: Duration,
    ) -> io::Result<Sock> {
        match endpoint {
            Endpoint::Tcp { .. } => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                for &a in addrs {
                    match TcpStream::connect_timeout(&a, timeout) {
                        Ok(s) => {
                            s.set_nodelay(true)?;
                            s.set_nonblocking(true)?;
                            return Ok(Sock {
                                peer: s.peer_addr().ok(),
                                local: s.local_addr().ok(),
                                fd: s.into(),
                            });
                        }
                        Err(e) => last = e,
                    }
                }
                Err(last)
            }
            Endpoint::Unix { socket } => {
                let s = UnixStream::connect(socket)?;
                s.set_nonblocking(true)?;
                Ok(Sock {
                    fd: s.into(),
                    peer: None,
                    local: None,
                })
            }
        }
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// One non-blocking read: `Ok(None)` when nothing is there, `Ok(Some(0))` at EOF.
    pub(crate) fn read(&self, buf: *mut u8, len: usize) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: the caller hands a writable region of `len` bytes.
            let n = unsafe { libc::read(self.fd(), buf.cast(), len) };
            if n >= 0 {
                return Ok(Some(n as usize));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(None),
                _ => return Err(e),
            }
        }
    }

    /// One non-blocking gathered send: bytes written, 0 if the socket is full. A server
    /// that went away is an error (EPIPE), never a SIGPIPE.
    pub(crate) fn writev(&self, iov: &[libc::iovec]) -> io::Result<usize> {
        loop {
            // SAFETY: a zeroed msghdr is valid; the iovecs point at memory kept valid by
            // the caller.
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
            msg.msg_iovlen = iov.len() as _;
            let n = unsafe { libc::sendmsg(self.fd(), &msg, libc::MSG_NOSIGNAL) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(0),
                _ => return Err(e),
            }
        }
    }

    /// Waits until the socket is readable (or writable too, with `out`), at most `wait`.
    /// Returns whether it became ready.
    pub(crate) fn poll(&self, out: bool, wait: Duration) -> io::Result<bool> {
        let mut p = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN | if out { libc::POLLOUT } else { 0 },
            revents: 0,
        };
        let ms = wait.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        Ok(r > 0)
    }

    /// Reads exactly `buf.len()` bytes by `deadline` (the handshake).
    pub(crate) fn read_exact(&self, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
        let mut got = 0;
        while got < buf.len() {
            match self.read(buf[got..].as_mut_ptr(), buf.len() - got)? {
                Some(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Some(n) => got += n,
                None => self.wait(false, deadline)?,
            }
        }
        Ok(())
    }

    /// Writes all of `buf` by `deadline` (the handshake).
    pub(crate) fn write_all(&self, buf: &[u8], deadline: Instant) -> io::Result<()> {
        let mut sent = 0;
        while sent < buf.len() {
            let iov = [libc::iovec {
                iov_base: buf[sent..].as_ptr() as *mut _,
                iov_len: buf.len() - sent,
            }];
            match self.writev(&iov)? {
                0 => self.wait(true, deadline)?,
                n => sent += n,
            }
        }
        Ok(())
    }

    fn wait(&self, out: bool, deadline: Instant) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let mut p = libc::pollfd {
            fd: self.fd(),
            events: if out { libc::POLLOUT } else { libc::POLLIN },
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, left.as_millis().max(1) as i32) };
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}
