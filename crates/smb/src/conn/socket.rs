//! Bytes on the socket: whole messages framed (sealed where the session encrypts),
//! `writev` of staged requests, and reads that honour the timeout and a stop request.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::Instant;

use super::{Conn, STOP_GRACE};
use crate::error::{Result, SmbError};
use crate::header;

impl Conn {
    /// Sends one whole message (header first), sealed when the session encrypts.
    pub(super) fn send_message(
        &mut self,
        msg: &[u8],
        payload: &[u8],
        op: &'static str,
    ) -> Result<()> {
        if let Some(sealer) = &mut self.sealer {
            let mut out = std::mem::take(&mut self.scratch);
            out.clear();
            sealer.seal(self.session_id, msg, payload, &mut out);
            let r = self.send_framed(&out, op);
            self.scratch = out;
            return r;
        }
        let mut framed = Vec::with_capacity(4 + msg.len() + payload.len());
        framed.extend_from_slice(&header::frame_len(msg.len() + payload.len()));
        framed.extend_from_slice(msg);
        framed.extend_from_slice(payload);
        self.frames_sent += 1;
        self.sock.write_all(&framed).map_err(|e| self.io_err(op, e))
    }

    /// Sends a message that is already complete (a TRANSFORM_HEADER message), framed.
    pub(super) fn send_framed(&mut self, msg: &[u8], op: &'static str) -> Result<()> {
        let fl = header::frame_len(msg.len());
        self.frames_sent += 1;
        self.iov.clear();
        self.iov.push(libc::iovec {
            iov_base: fl.as_ptr() as *mut libc::c_void,
            iov_len: 4,
        });
        self.iov.push(libc::iovec {
            iov_base: msg.as_ptr() as *mut libc::c_void,
            iov_len: msg.len(),
        });
        let r = self.writev_all(op);
        self.iov.clear();
        r
    }

    pub(super) fn writev_all(&mut self, op: &'static str) -> Result<()> {
        let fd = self.sock.as_raw_fd();
        let mut first = 0usize;
        while first < self.iov.len() {
            let n = (self.iov.len() - first).min(1024);
            // SAFETY: the iovecs describe live buffers (see `commit`).
            let w = unsafe { libc::writev(fd, self.iov[first..].as_ptr(), n as i32) };
            if w < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.io_err(op, e));
            }
            let mut w = w as usize;
            while w > 0 && first < self.iov.len() {
                let v = &mut self.iov[first];
                if w >= v.iov_len {
                    w -= v.iov_len;
                    first += 1;
                } else {
                    // SAFETY: advancing within the same buffer.
                    v.iov_base = unsafe { (v.iov_base as *mut u8).add(w) }.cast();
                    v.iov_len -= w;
                    w = 0;
                }
            }
            while first < self.iov.len() && self.iov[first].iov_len == 0 {
                first += 1;
            }
        }
        Ok(())
    }

    /// Fills `buf`. No byte for `timeout` is a [`SmbError::Timeout`]; after a stop request,
    /// waiting goes on for [`STOP_GRACE`] at most.
    pub(super) fn read_exact(&mut self, buf: &mut [u8], op: &'static str) -> Result<()> {
        let mut last_byte = Instant::now();
        let mut got = 0;
        while got < buf.len() {
            match self.sock.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(SmbError::Closed {
                        server: self.cfg.server.clone(),
                        op,
                    });
                }
                Ok(n) => {
                    got += n;
                    last_byte = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.check_stop(op)?,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.check_stop(op)?;
                    if last_byte.elapsed() >= self.cfg.timeout {
                        return Err(SmbError::Timeout {
                            server: self.cfg.server.clone(),
                            op,
                            secs: self.cfg.timeout.as_secs().max(1),
                        });
                    }
                }
                Err(e) => return Err(self.io_err(op, e)),
            }
        }
        Ok(())
    }

    /// Fails the wait once a stop was requested [`STOP_GRACE`] ago.
    pub(super) fn check_stop(&mut self, op: &'static str) -> Result<()> {
        if !(self.cfg.abort)() {
            return Ok(());
        }
        let since = *self.stopping.get_or_insert_with(Instant::now);
        if since.elapsed() >= STOP_GRACE {
            return Err(SmbError::Aborted {
                server: self.cfg.server.clone(),
                op,
            });
        }
        Ok(())
    }
}
