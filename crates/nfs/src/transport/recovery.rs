//! Noticing a lost connection (socket error, close, or silence past the timeout) and
//! recovering from it: reconnect with back-off within the reconnect window, send every call
//! that was outstanding on it again, and record the outage.

use std::time::{Duration, Instant};

use super::{JUKEBOX_DELAY, Outage, SlotState, Transport};
use crate::conn::{self, Broken};
use crate::error::{NfsError, Result};

impl Transport {
    pub(super) fn poll_sockets(&mut self, tick: Duration) -> Result<()> {
        self.pollfds.clear();
        for c in &self.conns {
            let mut events = libc::POLLIN;
            if c.has_unsent() {
                events |= libc::POLLOUT;
            }
            self.pollfds.push(libc::pollfd {
                fd: c.fd(),
                events,
                revents: 0,
            });
        }
        let wait = if self.delayed.is_empty() {
            tick
        } else {
            JUKEBOX_DELAY.min(tick)
        };
        // SAFETY: `pollfds` is a valid array of `len` pollfd structures.
        let rc = unsafe {
            libc::poll(
                self.pollfds.as_mut_ptr(),
                self.pollfds.len() as libc::nfds_t,
                wait.as_millis() as i32,
            )
        };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(NfsError::Io {
                    server: self.cfg.server.clone(),
                    op: "poll",
                    source: e,
                });
            }
        }
        Ok(())
    }

    pub(super) fn check_timeouts(&mut self) {
        let now = Instant::now();
        for c in &mut self.conns {
            // A connection given up on by an earlier failed reconnect has no socket to
            // wait on: a new call there tries to reconnect at once, not after the timeout.
            if c.inflight > 0 && c.broken.is_none() && c.sock.is_none() {
                c.broken = Some(Broken::Closed);
            }
            if c.inflight > 0
                && c.broken.is_none()
                && now.duration_since(c.last_rx) > self.cfg.timeout
            {
                c.broken = Some(Broken::Timeout(self.cfg.timeout));
            }
        }
    }

    /// Re-makes broken connections and sends their outstanding calls again; fails after
    /// the reconnect window.
    pub(super) fn recover(&mut self) -> Result<()> {
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        for c in 0..self.conns.len() {
            if let Some(reason) = self.conns[c].broken.take() {
                self.reconnect(c, reason)?;
            }
        }
        Ok(())
    }

    fn reconnect(&mut self, c: usize, reason: Broken) -> Result<()> {
        let started = Instant::now();
        let op = self.oldest_op_name();
        self.conns[c].sock = None;
        if self.cfg.reconnect_window.is_zero() {
            return Err(match reason {
                Broken::Timeout(t) => NfsError::Timeout {
                    server: self.cfg.server.clone(),
                    op,
                    secs: t.as_secs(),
                },
                Broken::Io(source) => NfsError::Io {
                    server: self.cfg.server.clone(),
                    op,
                    source,
                },
                Broken::Closed => NfsError::Io {
                    server: self.cfg.server.clone(),
                    op,
                    source: std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "connection closed by the server",
                    ),
                },
            });
        }
        let mut backoff = Duration::from_millis(50);
        let mut last = reason.to_string();
        let sock = loop {
            if (self.abort)() {
                return Err(NfsError::Aborted {
                    server: self.cfg.server.clone(),
                    op,
                });
            }
            let left = self.cfg.reconnect_window.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(NfsError::Disconnected {
                    server: self.cfg.server.clone(),
                    op,
                    secs: self.cfg.reconnect_window.as_secs(),
                    last,
                });
            }
            match conn::connect(&self.cfg.addrs, left.min(self.cfg.timeout)) {
                Ok(s) => break s,
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(backoff.min(left));
            backoff = (backoff * 2).min(Duration::from_secs(1));
        };
        self.conns[c].reset(sock);
        let mut resent = 0;
        for idx in 0..self.slots.len() {
            let s = &self.slots[idx];
            if s.state == SlotState::Sent && s.conn == c {
                self.encode(idx as u32, c);
                resent += 1;
            }
        }
        self.outages.push(Outage {
            started,
            duration: started.elapsed(),
            resent,
            reason: reason.to_string(),
        });
        Ok(())
    }
}
