//! The socket calls of the net engines over libc: addresses as `sockaddr` bytes made
//! once, options set once when a socket is made, and send/receive loops that wake every
//! [`WAKE`] to look at the stop flag, so a stalled peer never holds a stopped run.

use std::ffi::CString;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use storbench_core::EngineError;

/// How long a blocked call waits before it looks at the stop flag.
pub const WAKE_MS: i32 = 100;

/// A socket address as the kernel takes it.
#[derive(Clone, Copy)]
pub struct Addr {
    storage: libc::sockaddr_storage,
    pub len: libc::socklen_t,
}

impl Addr {
    /// Room for any address, filled by `accept` or `recvfrom`.
    pub fn empty() -> Addr {
        // SAFETY: an all-zero sockaddr_storage is a valid (unspecified) address.
        Addr {
            storage: unsafe { std::mem::zeroed() },
            len: std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t,
        }
    }

    pub fn inet(sa: SocketAddr) -> Addr {
        let mut a = Addr::empty();
        match sa {
            SocketAddr::V4(v4) => {
                // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
                let sin = unsafe { &mut *(&raw mut a.storage).cast::<libc::sockaddr_in>() };
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_port = v4.port().to_be();
                sin.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                a.len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            }
            SocketAddr::V6(v6) => {
                // SAFETY: as above, for sockaddr_in6.
                let sin6 = unsafe { &mut *(&raw mut a.storage).cast::<libc::sockaddr_in6>() };
                sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sin6.sin6_port = v6.port().to_be();
                sin6.sin6_addr.s6_addr = v6.ip().octets();
                sin6.sin6_scope_id = v6.scope_id();
                a.len = std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t;
            }
        }
        a
    }

    /// A Unix socket's path; refused when it does not fit `sun_path`.
    pub fn unix(path: &str) -> Result<Addr, EngineError> {
        let mut a = Addr::empty();
        // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_un.
        let sun = unsafe { &mut *(&raw mut a.storage).cast::<libc::sockaddr_un>() };
        let bytes = path.as_bytes();
        if bytes.is_empty() || bytes.len() >= sun.sun_path.len() || bytes.contains(&0) {
            return Err(EngineError::unsupported(format!(
                "{path}: not a usable Unix socket path (1 to {} bytes, no NUL)",
                sun.sun_path.len() - 1
            )));
        }
        sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
        for (d, s) in sun.sun_path.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        a.len = (std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
        Ok(a)
    }

    pub fn ptr(&self) -> *const libc::sockaddr {
        (&raw const self.storage).cast()
    }

    pub fn ptr_mut(&mut self) -> *mut libc::sockaddr {
        (&raw mut self.storage).cast()
    }
}

/// The last OS error as an engine error naming `op` on `target`.
pub fn os_err(op: &str, target: &str) -> EngineError {
    EngineError::os(op, target, io::Error::last_os_error())
}

/// A new socket (close-on-exec).
pub fn socket(domain: i32, kind: i32, target: &str) -> Result<OwnedFd, EngineError> {
    // SAFETY: plain syscall; the fd is owned at once.
    let fd = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(os_err("socket for", target));
    }
    // SAFETY: `fd` is a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// setsockopt of one value of type `T`.
pub fn set_opt<T>(fd: RawFd, level: i32, name: i32, v: T, what: &str) -> Result<(), EngineError> {
    // SAFETY: `v` lives across the call and its size is given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&raw const v).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(os_err("setsockopt", what));
    }
    Ok(())
}

/// Waits until `fd` is ready for `events`; false when a stop was asked for first.
pub fn wait_ready(fd: RawFd, events: i16, what: &str) -> Result<bool, EngineError> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    loop {
        if storbench_core::stop::requested() {
            return Ok(false);
        }
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&raw mut p, 1, WAKE_MS) };
        if r > 0 {
            return Ok(true);
        }
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err(os_err("poll", what));
        }
    }
}

/// Sets the receive and send timeouts to [`WAKE_MS`], so blocked transfers wake to look
/// at the stop flag.
pub fn set_wake(fd: RawFd, what: &str) -> Result<(), EngineError> {
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: libc::suseconds_t::from(WAKE_MS) * 1000,
    };
    set_opt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv, what)?;
    set_opt(fd, libc::SOL_SOCKET, libc::SO_SNDTIMEO, tv, what)
}

/// Whether the last call failed only because its timeout passed or a signal came.
pub fn retryable() -> bool {
    matches!(
        io::Error::last_os_error().raw_os_error(),
        Some(libc::EAGAIN | libc::EINTR)
    )
}

/// Whether the last call failed because the peer closed or reset the connection.
fn peer_gone() -> bool {
    matches!(
        io::Error::last_os_error().raw_os_error(),
        Some(libc::EPIPE | libc::ECONNRESET)
    )
}

/// Sends all of `buf` on a connected socket; the bytes sent when a stop or the peer's
/// end of the stream (its connection closed or reset) cut it short.
pub fn send_all(fd: &OwnedFd, buf: &[u8], flags: i32, what: &str) -> Result<usize, EngineError> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &buf[done..];
        // SAFETY: `rest` is valid for its length.
        let n = unsafe {
            libc::send(
                fd.as_raw_fd(),
                rest.as_ptr().cast(),
                rest.len(),
                flags | libc::MSG_NOSIGNAL,
            )
        };
        if n > 0 {
            done += n as usize;
        } else if n < 0 && retryable() {
            if storbench_core::stop::requested() {
                break;
            }
        } else if peer_gone() {
            break;
        } else {
            return Err(os_err("send to", what));
        }
    }
    Ok(done)
}

/// Receives up to all of `buf` from a stream; fewer bytes only at the peer's end of the
/// stream or a stop.
pub fn recv_all(fd: &OwnedFd, buf: &mut [u8], what: &str) -> Result<usize, EngineError> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: `rest` is valid for its length and ours to write.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                rest.as_mut_ptr().cast(),
                rest.len(),
                libc::MSG_WAITALL,
            )
        };
        if n > 0 {
            done += n as usize;
        } else if n == 0 {
            break;
        } else if retryable() {
            if storbench_core::stop::requested() {
                break;
            }
        } else {
            return Err(os_err("recv from", what));
        }
    }
    Ok(done)
}

/// Sends one datagram to `to`.
pub fn send_to(fd: &OwnedFd, buf: &[u8], to: &Addr, what: &str) -> Result<usize, EngineError> {
    loop {
        // SAFETY: `buf` and `to` are valid for their lengths.
        let n = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
                to.ptr(),
                to.len,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        if !retryable() || storbench_core::stop::requested() {
            return Err(os_err("sendto", what));
        }
    }
}

/// Receives one datagram into `buf`, noting its sender in `from`; `None` on a stop.
pub fn recv_from(
    fd: &OwnedFd,
    buf: &mut [u8],
    from: &mut Addr,
    what: &str,
) -> Result<Option<usize>, EngineError> {
    loop {
        from.len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `buf` and `from` are valid for their lengths and ours to write.
        let n = unsafe {
            libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                from.ptr_mut(),
                &raw mut from.len,
            )
        };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        if !retryable() {
            return Err(os_err("recvfrom", what));
        }
        if storbench_core::stop::requested() {
            return Ok(None);
        }
    }
}

/// Binds `fd` to `addr`.
pub fn bind(fd: &OwnedFd, addr: &Addr, what: &str) -> Result<(), EngineError> {
    // SAFETY: `addr` is valid for its length.
    if unsafe { libc::bind(fd.as_raw_fd(), addr.ptr(), addr.len) } < 0 {
        return Err(os_err("bind", what));
    }
    Ok(())
}

/// Connects `fd` to `addr`.
pub fn connect(fd: &OwnedFd, addr: &Addr, what: &str) -> Result<(), EngineError> {
    // SAFETY: `addr` is valid for its length.
    if unsafe { libc::connect(fd.as_raw_fd(), addr.ptr(), addr.len) } < 0 {
        return Err(os_err("connect to", what));
    }
    Ok(())
}

/// Listens on a bound stream socket with fio's backlog.
pub fn listen(fd: &OwnedFd, what: &str) -> Result<(), EngineError> {
    // SAFETY: plain syscall on an owned socket.
    if unsafe { libc::listen(fd.as_raw_fd(), 10) } < 0 {
        return Err(os_err("listen on", what));
    }
    Ok(())
}

/// Accepts one connection, waking to look at the stop flag; `None` on a stop.
pub fn accept(fd: &OwnedFd, what: &str) -> Result<Option<OwnedFd>, EngineError> {
    if !wait_ready(fd.as_raw_fd(), libc::POLLIN, what)? {
        return Ok(None);
    }
    // SAFETY: plain syscall; the new fd is owned at once.
    let c = unsafe {
        libc::accept4(
            fd.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    };
    if c < 0 {
        return Err(os_err("accept on", what));
    }
    // SAFETY: `c` is a new descriptor nothing else owns.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(c) }))
}

/// The path as a C string for the calls that take one.
pub fn c_path(path: &str) -> Result<CString, EngineError> {
    CString::new(path).map_err(|_| EngineError::unsupported(format!("{path}: NUL in the path")))
}
