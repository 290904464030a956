//! Pipelined READ and WRITE: up to one request per session slot in flight on the
//! connection, each a COMPOUND of SEQUENCE, PUTFH and the READ or WRITE. Submitting
//! encodes into the client's reused buffer and queues the call; reaping decodes replies
//! where they arrived. Short transfers are continued, DELAY/GRACE retried, and requests
//! caught by a lost session sent again under the new one.

use std::time::Instant;

use crate::error::{DecodeError, NfsError, Result};
use crate::rpc::PROG_NFS;
use crate::transport::Sink;

use super::client::Client4;
use super::decode::{Reply, V4Error, V4Result, locate_read};
use super::retry::Retries;
use super::wire::{Compound, NFS_V4, PROC_COMPOUND, Stable4, op};

/// Session re-establishments one request may go through before it fails.
const RECOVERIES_PER_REQUEST: u8 = 2;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Read(*mut u8),
    Write(*const u8, Stable4),
}

/// A request in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    ticket: u32,
    slot: u32,
    /// The session it was sent under.
    generation: u32,
    user: u64,
    file: u32,
    offset: u64,
    len: u32,
    /// Bytes already transferred (by earlier short replies).
    done: u32,
    /// DELAY/GRACE answered so far.
    retries: Retries,
    recoveries: u8,
    kind: Kind,
}

impl Kind {
    /// The kind for the part of a request from byte `done` on.
    fn advanced(self, done: u32) -> Kind {
        // SAFETY (both arms): `done` is below the request's length, within its buffer.
        match self {
            Kind::Read(b) => Kind::Read(unsafe { b.add(done as usize) }),
            Kind::Write(b, s) => Kind::Write(unsafe { b.add(done as usize) }, s),
        }
    }
}

impl Pending {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Read(_) => "READ",
            Kind::Write(..) => "WRITE",
        }
    }
}

impl Client4 {
    /// Queues a READ of `len` (at most [`rsize`](Self::rsize)) bytes at `offset` of the
    /// open file `label` into `buf`; completes through [`reap`](Self::reap) with `user`.
    ///
    /// # Safety
    /// `buf` must be valid for writes of `len` bytes and untouched by the caller until the
    /// completion for `user` is handed out (or the client is dropped).
    pub unsafe fn submit_read(
        &mut self,
        label: u32,
        offset: u64,
        buf: *mut u8,
        len: u32,
        user: u64,
    ) -> Result<()> {
        self.check_submit(label, len, self.rsize())?;
        self.send(new_pending(label, offset, len, user, Kind::Read(buf)))
    }

    /// Queues a WRITE; the same contract as [`submit_read`](Self::submit_read) for a
    /// buffer that is read.
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes until the completion for `user`.
    pub unsafe fn submit_write(
        &mut self,
        label: u32,
        offset: u64,
        buf: *const u8,
        len: u32,
        stable: Stable4,
        user: u64,
    ) -> Result<()> {
        self.check_submit(label, len, self.wsize())?;
        let kind = Kind::Write(buf, stable);
        self.send(new_pending(label, offset, len, user, kind))
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    fn check_submit(&self, label: u32, len: u32, max: u32) -> Result<()> {
        self.file(label)?;
        if len > max {
            return Err(NfsError::Unsupported(format!(
                "{}: a request of {len} bytes exceeds the session's {max}",
                self.server()
            )));
        }
        Ok(())
    }

    /// Encodes and queues `p` (what is left of it) on a free slot of the current session.
    fn send(&mut self, mut p: Pending) -> Result<()> {
        let Some((slot, seq)) = self.slots.take() else {
            return Err(NfsError::Unsupported(format!(
                "{}: more requests in flight than the session's {} slots",
                self.server(),
                self.slots.width()
            )));
        };
        let f = &self.files[p.file as usize];
        self.args.clear();
        let mut c = Compound::new(&mut self.args, self.minor);
        c.sequence(&self.sid, seq, slot, self.slots.highest());
        c.putfh(&f.fh);
        let (at, left) = (p.offset + u64::from(p.done), p.len - p.done);
        match p.kind {
            Kind::Read(_) => c.read(&f.stateid, at, left),
            Kind::Write(buf, stable) => {
                // SAFETY: the submitter keeps `len` bytes at `buf` valid until completion.
                let data =
                    unsafe { std::slice::from_raw_parts(buf.add(p.done as usize), left as usize) };
                c.write(&f.stateid, at, stable, data);
            }
        }
        let sink = match p.kind.advanced(p.done) {
            Kind::Read(dst) => Some(Sink {
                dst,
                cap: left,
                locate: locate_read,
            }),
            Kind::Write(..) => None,
        };
        // SAFETY: a READ's sink is the rest of the submitter's buffer, valid until the
        // request completes (the ticket is released before that).
        let started = unsafe {
            self.nfs
                .start_call_into(p.name(), PROG_NFS, NFS_V4, PROC_COMPOUND, &self.args, sink)
        };
        match started {
            Ok(ticket) => p.ticket = ticket,
            Err(e) => {
                self.slots.put(slot, false);
                return Err(e);
            }
        }
        p.slot = slot;
        p.generation = self.generation;
        self.last_sent = Instant::now();
        self.pending.push(p);
        Ok(())
    }

    /// Writes queued requests to the connection without waiting.
    pub fn flush(&mut self) -> Result<()> {
        self.nfs.flush()
    }

    /// Hands completed requests to `on_done(user, bytes)` until at least `min` were handed
    /// over (0: only those complete now, without waiting). Returns how many were.
    pub fn reap(&mut self, min: usize, on_done: &mut dyn FnMut(u64, u64)) -> Result<usize> {
        let mut handed = 0;
        if min == 0 {
            self.nfs.wait(0, &mut |_, _| {})?;
            return self.collect(&mut handed, on_done).map(|()| handed);
        }
        loop {
            self.collect(&mut handed, on_done)?;
            if handed >= min || self.pending.is_empty() {
                return Ok(handed);
            }
            self.nfs.drain_one()?;
        }
    }

    fn collect(&mut self, handed: &mut usize, on_done: &mut dyn FnMut(u64, u64)) -> Result<()> {
        let mut i = 0;
        while i < self.pending.len() {
            if !self.nfs.answered(self.pending[i].ticket) {
                i += 1;
                continue;
            }
            let p = self.pending.swap_remove(i);
            if let Some(bytes) = self.complete(p)? {
                on_done(p.user, bytes);
                *handed += 1;
            }
        }
        Ok(())
    }

    /// Decodes the reply of `p`: the bytes of a finished request, or `None` if it was sent
    /// again (the rest of a short transfer, a retry, or under a new session).
    fn complete(&mut self, mut p: Pending) -> Result<Option<u64>> {
        if p.generation != self.generation {
            // Sent under a session that is gone: its slot belongs to the old table.
            self.nfs.release(p.ticket);
            return self.send(p).map(|()| None);
        }
        let left = p.len - p.done;
        let body = self.nfs.reply(p.ticket);
        let placed = self.nfs.placed(p.ticket);
        let (seq_ok, got) = decode(body, &self.sid, p.kind.advanced(p.done), left, placed);
        self.nfs.release(p.ticket);
        self.slots.put(p.slot, seq_ok);
        match got {
            Ok(Done::Read { count, eof }) => {
                p.done += count;
                if eof || count == 0 || p.done == p.len {
                    return Ok(Some(u64::from(p.done)));
                }
            }
            Ok(Done::Write(w)) => {
                if let Kind::Write(buf, _) = p.kind {
                    // SAFETY: the submitter keeps the request's `len` bytes at `buf` valid
                    // until it completes; the server acknowledged `w.count <= left` of them
                    // from byte `done` on.
                    let data = unsafe {
                        std::slice::from_raw_parts(buf.add(p.done as usize), w.count as usize)
                    };
                    self.acked(p.file, p.offset + u64::from(p.done), data, &w);
                }
                p.done += w.count;
                if p.done == p.len {
                    return Ok(Some(u64::from(p.done)));
                }
            }
            Err(V4Error::Status { status, .. }) if p.retries.again(status, &self.limits) => {}
            Err(V4Error::Status { status, .. })
                if status.session_lost() && p.recoveries < RECOVERIES_PER_REQUEST =>
            {
                p.recoveries += 1;
                self.recover()?;
            }
            Err(e) => {
                let path = self.files[p.file as usize].path.clone();
                let e = match e {
                    V4Error::Status { status, .. } if status.retry_later() => {
                        self.busy(p.name(), "", status, &p.retries)
                    }
                    e => self.error(p.name(), "", e),
                };
                return Err(e.with_path(path));
            }
        }
        self.send(p).map(|()| None)
    }
}

enum Done {
    Read { count: u32, eof: bool },
    Write(super::decode::WriteRes),
}

/// Decodes a READ or WRITE COMPOUND reply (a READ's data into its buffer, unless the
/// transport placed it there already);
/// whether SEQUENCE succeeded comes first, as the slot's sequence id depends on it.
/// `placed` is the length of READ data the transport put in the buffer already (the body
/// then ends where the data began).
fn decode(
    body: &[u8],
    sid: &super::SessionId,
    kind: Kind,
    left: u32,
    placed: Option<u32>,
) -> (bool, V4Result<Done>) {
    let mut r = match Reply::parse(body) {
        Ok(r) => r,
        Err(e) => return (false, Err(e.into())),
    };
    if let Err(e) = r.sequence(Some(sid)) {
        return (false, Err(e));
    }
    let rest = (|| {
        r.status_only(op::PUTFH, "PUTFH")?;
        match kind {
            Kind::Read(_) if placed.is_some() => {
                let (eof, count) = r.read_head()?;
                if Some(count) != placed {
                    return Err(
                        DecodeError::Invalid("READ length differs from the data placed").into(),
                    );
                }
                Ok(Done::Read { count, eof })
            }
            Kind::Read(buf) => {
                let (eof, data) = r.read()?;
                if data.len() > left as usize {
                    return Err(DecodeError::Invalid("READ returned more than asked").into());
                }
                // SAFETY: `buf` points at the `left` bytes of the request still to be
                // filled, at least the data's length (checked above).
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, data.len()) };
                Ok(Done::Read {
                    count: data.len() as u32,
                    eof,
                })
            }
            Kind::Write(..) => {
                let w = r.write()?;
                if w.count == 0 || w.count > left {
                    return Err(
                        DecodeError::Invalid("WRITE count is zero or more than sent").into(),
                    );
                }
                Ok(Done::Write(w))
            }
        }
    })();
    (true, rest)
}

fn new_pending(file: u32, offset: u64, len: u32, user: u64, kind: Kind) -> Pending {
    Pending {
        ticket: 0,
        slot: 0,
        generation: 0,
        user,
        file,
        offset,
        len,
        done: 0,
        retries: Retries::default(),
        recoveries: 0,
        kind,
    }
}
