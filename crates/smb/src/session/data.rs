//! Data IOs across connections: each IO in flight is kept by its caller's tag until it
//! completes, so that a new connection sends it again; completions that arrived on a lost
//! connection are handed out by the next `reap`. No allocation per IO: the table is sized
//! once by [`Session::set_slots`].

use super::Session;
use crate::conn::{Completion, Submit};
use crate::error::{Result, SmbError};

/// One data IO, as it is sent and, after a loss, sent again.
#[derive(Clone, Copy, Debug)]
pub struct Io {
    /// The file, by the number [`Session::add_file`] gave it.
    pub file: u32,
    pub write: bool,
    pub offset: u64,
    /// The caller's buffer of `len` bytes: the source of a write, the destination of a read.
    pub buf: *mut u8,
    pub len: u32,
}

/// An [`Io`] in flight (its buffer as an address: the session must stay `Send`).
#[derive(Clone, Copy)]
pub(super) struct InFlight {
    file: u32,
    write: bool,
    offset: u64,
    buf: usize,
    len: u32,
}

impl From<&Io> for InFlight {
    fn from(io: &Io) -> InFlight {
        InFlight {
            file: io.file,
            write: io.write,
            offset: io.offset,
            buf: io.buf as usize,
            len: io.len,
        }
    }
}

/// How deep the server's credits let the queue be.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueueStats {
    /// IOs that could not be queued for want of credits.
    pub credit_waits: u64,
    /// Most IOs in flight at once.
    pub peak_in_flight: usize,
    /// IOs in flight just after each IO was queued, summed, and the IOs queued: their
    /// mean is the queue depth the server's credits allowed.
    pub in_flight_sum: u64,
    pub queued: u64,
}

impl QueueStats {
    /// The mean number of IOs in flight just after one was queued.
    pub fn mean_in_flight(&self) -> f64 {
        self.in_flight_sum as f64 / self.queued.max(1) as f64
    }
}

impl Session {
    /// Room for IOs tagged below `slots` (the caller's queue), made once.
    pub fn set_slots(&mut self, slots: usize) {
        self.in_flight = vec![None; slots];
    }

    pub fn queue_stats(&self) -> QueueStats {
        self.stats
    }

    /// Queues `io`, completing as `tag`. A lost connection is recovered and the IO sent
    /// with the others in flight on the new one.
    ///
    /// # Safety
    /// `io.buf` must stay valid (and, for a read, unaliased) for `io.len` bytes until `tag`
    /// is reaped, also while it is sent again after a reconnect.
    pub unsafe fn submit(&mut self, io: &Io, tag: u32) -> Result<Submit> {
        self.given_up()?;
        let r = InFlight::from(io);
        let slot = tag as usize;
        if slot >= self.in_flight.len() {
            // Only without `set_slots` (tests): grown once per new tag, not per IO.
            self.in_flight.resize(slot + 1, None);
        }
        match self.send(&r, u64::from(tag)) {
            Ok(Submit::Queued) => {
                self.in_flight[slot] = Some(r);
                let n = self.client.outstanding();
                self.stats.peak_in_flight = self.stats.peak_in_flight.max(n);
                self.stats.in_flight_sum += n as u64;
                self.stats.queued += 1;
                Ok(Submit::Queued)
            }
            Ok(Submit::Busy) => {
                self.stats.credit_waits += 1;
                Ok(Submit::Busy)
            }
            Err(e) if e.is_disconnect() => {
                self.in_flight[slot] = Some(r);
                self.recover(e)?;
                Ok(Submit::Queued)
            }
            Err(e) => Err(e),
        }
    }

    /// Sends what was queued; a lost connection is recovered (which sends it again).
    pub fn commit(&mut self) -> Result<()> {
        self.given_up()?;
        match self.client.commit() {
            Err(e) if e.is_disconnect() => self.recover(e),
            r => r,
        }
    }

    /// Collects at least `min` completions into `out`, the ones salvaged from a lost
    /// connection first; a lost connection is recovered and the wait goes on.
    pub fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<()> {
        self.given_up()?;
        let before = out.len();
        let r = loop {
            let from = out.len();
            out.append(&mut self.salvaged);
            self.forget(&out[from..]);
            let need = min.saturating_sub(out.len() - before);
            let from = out.len();
            let r = self.client.reap(need, out);
            self.forget(&out[from..]);
            match r {
                Err(e) if e.is_disconnect() => {
                    if let Err(e) = self.recover(e) {
                        break Err(e);
                    }
                }
                r => break r,
            }
        };
        if out.len() > before {
            self.lost_since = None; // progress: the next loss starts a new window
        }
        r
    }

    /// Drops completed IOs from the table of those to send again.
    fn forget(&mut self, done: &[Completion]) {
        for d in done {
            if let Some(slot) = self.in_flight.get_mut(d.user as usize) {
                *slot = None;
            }
        }
    }

    /// Moves what already arrived on the current connection to `salvaged`, completing it
    /// as it is (before the connection is replaced).
    pub(super) fn salvage(&mut self) {
        let mut done = std::mem::take(&mut self.salvaged);
        self.client.take_done(&mut done);
        self.forget(&done);
        self.salvaged = done;
    }

    /// Sends every IO in flight again on the current (new) connection, reaping into
    /// `salvaged` where its credits are too few so far; returns how many.
    pub(super) fn resend(&mut self) -> Result<usize> {
        let mut resent = 0;
        for tag in 0..self.in_flight.len() {
            let Some(io) = self.in_flight[tag] else {
                continue;
            };
            while self.send(&io, tag as u64)? == Submit::Busy {
                let mut done = std::mem::take(&mut self.salvaged);
                let r = self.client.reap(1, &mut done);
                self.forget(&done);
                self.salvaged = done;
                r?;
            }
            resent += 1;
        }
        self.client.commit()?;
        Ok(resent)
    }

    /// Queues one IO on the current connection.
    fn send(&mut self, r: &InFlight, user: u64) -> Result<Submit> {
        let Some(id) = self.file(r.file).map(|f| f.id) else {
            return Err(SmbError::Protocol {
                server: self.cfg.conn.server.clone(),
                op: "submit",
                reason: format!("file {} is not open", r.file),
            });
        };
        let buf = r.buf as *mut u8;
        // SAFETY: `Session::submit`'s contract: `buf` holds `len` bytes that the caller
        // leaves alone until this tag completes.
        unsafe {
            if r.write {
                self.client.submit_write(id, r.offset, buf, r.len, user)
            } else {
                self.client.submit_read(id, r.offset, buf, r.len, user)
            }
        }
    }
}
