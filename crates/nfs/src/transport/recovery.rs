//! Noticing a lost connection (socket error, close, or silence past the timeout) and
//! recovering from it: reconnect with back-off within the reconnect window, send every call
//! that was outstanding on it again, and record the outage.
//!
//! The window bounds the whole loss, not each attempt: it counts from when the server was
//! first found lost (a broken connection, or calls outstanding with no complete reply for
//! the timeout) until a complete reply other than JUKEBOX arrives. A server that accepts
//! connections but never answers, answers a byte at a time, or answers JUKEBOX forever is
//! given up on after at most `timeout + reconnect_window` without progress, and one whose
//! connections are refused after `reconnect_window` from the loss. Once given up on, every
//! later call fails at once with the same message.

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

    pub(super) fn check_timeouts(&mut self) -> Result<()> {
        let now = Instant::now();
        if self.inflight() == 0 {
            self.stall.waiting_since = None;
            return Ok(());
        }
        let waiting = *self.stall.waiting_since.get_or_insert(now);
        if now.duration_since(waiting) > self.cfg.timeout {
            // Replies may still trickle in, or say JUKEBOX: no call completes all the same.
            self.stall.lost_since.get_or_insert(now);
        }
        let lost = &mut self.stall.lost_since;
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
                lost.get_or_insert(now);
            }
        }
        // A broken connection is left to `recover`, which says why it could not be re-made.
        let broken = self.conns.iter().any(|c| c.broken.is_some());
        match self.stall.lost_since {
            Some(at) if !broken && now.duration_since(at) >= self.cfg.reconnect_window => {
                Err(self.give_up_stalled(now))
            }
            _ => Ok(()),
        }
    }

    /// The error for a loss that outlasted the reconnect window although connections were
    /// made (or never broke), saying why no call completed; later calls fail with it too.
    fn give_up_stalled(&mut self, now: Instant) -> NfsError {
        let waiting = self
            .stall
            .waiting_since
            .or(self.stall.lost_since)
            .unwrap_or(now);
        let why = if self.stall.jukeboxes > 0 {
            format!(
                "the server answered NFS3ERR_JUKEBOX (try later) {} time(s)",
                self.stall.jukeboxes
            )
        } else if self.stall.trickled {
            "reply bytes arrived, too slowly to complete a reply".to_string()
        } else {
            format!(
                "no reply, {} reconnect(s) made meanwhile",
                self.stall.reconnects
            )
        };
        let e = NfsError::Stalled {
            server: self.cfg.server.clone(),
            op: self.oldest_op_name(),
            secs: now.duration_since(waiting).as_secs(),
            why,
            timeout: self.cfg.timeout.as_secs(),
            window: self.cfg.reconnect_window.as_secs(),
        };
        self.gave_up = Some(e.to_string());
        e
    }

    /// Re-makes broken connections and sends their outstanding calls again; fails after
    /// the reconnect window.
    pub(super) fn recover(&mut self) -> Result<()> {
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        if let Some(why) = &self.gave_up {
            return Err(NfsError::GaveUp(why.clone()));
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
        let lost = *self.stall.lost_since.get_or_insert(started);
        let op = self.oldest_op_name();
        self.conns[c].sock = None;
        if self.cfg.reconnect_window.is_zero() {
            let e = match reason {
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
            };
            self.gave_up = Some(e.to_string());
            return Err(e);
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
            let left = self.cfg.reconnect_window.saturating_sub(lost.elapsed());
            if left.is_zero() && self.stall.reconnects > 0 {
                // Connections were made, yet no reply came through them.
                return Err(self.give_up_stalled(Instant::now()));
            }
            if left.is_zero() {
                let e = NfsError::Disconnected {
                    server: self.cfg.server.clone(),
                    op,
                    secs: self.cfg.reconnect_window.as_secs(),
                    last,
                };
                self.gave_up = Some(e.to_string());
                return Err(e);
            }
            match conn::connect(&self.cfg.addrs, left.min(self.cfg.timeout)) {
                Ok(s) => break s,
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(backoff.min(left));
            backoff = (backoff * 2).min(Duration::from_secs(1));
        };
        self.conns[c].reset(sock);
        self.stall.reconnects += 1;
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
        if self.inflight() == 0 {
            // Found lost while idle and back: nothing is waiting, so nothing is stalled.
            self.stall = super::Stall::default();
        }
        Ok(())
    }
}
