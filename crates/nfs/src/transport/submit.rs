//! Submitting calls: slots and ops, encoding a call onto a connection, and the data
//! requests (READ and WRITE split to rsize/wsize, COMMIT).

use std::time::Instant;

use super::{MAX_SLOTS, NO_ENTRY, NO_OP, Op, Req, SLOT_BITS, Slot, SlotState, Transport, WriteAck};
use crate::conn::INLINE_MAX;
use crate::error::{NfsError, Result};
use crate::proto::{self, Fh, Stable, nfsproc};
use crate::rpc::{self, PROG_NFS};

impl Transport {
    fn alloc_op(&mut self, user: u64) -> u32 {
        let op = Op {
            busy: true,
            internal: false,
            user,
            pending: 0,
            bytes: 0,
        };
        match self.free_ops.pop() {
            Some(i) => {
                self.ops[i as usize] = op;
                i
            }
            None => {
                self.ops.push(op);
                (self.ops.len() - 1) as u32
            }
        }
    }

    pub(crate) fn alloc_slot(&mut self, op: u32, file: u32, req: Req) -> Result<u32> {
        if self.inflight() == 0 {
            // An idle spell (or a loss found while idle and recovered) is no stall.
            self.stall = super::Stall::default();
        }
        let idx = match self.free_slots.pop() {
            Some(i) => i,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(Slot {
                    xid: 0,
                    state: SlotState::Free,
                    conn: 0,
                    op: NO_OP,
                    file: 0,
                    req,
                    entry: NO_ENTRY,
                    ack: WriteAck::default(),
                    sent_end: 0,
                    args: Vec::new(),
                    reply: Vec::new(),
                    sink: None,
                    placed: None,
                });
                (self.slots.len() - 1) as u32
            }
            None => {
                return Err(NfsError::Unsupported(format!(
                    "{}: more than {MAX_SLOTS} calls in flight",
                    self.cfg.server
                )));
            }
        };
        let s = &mut self.slots[idx as usize];
        s.state = SlotState::Held;
        s.op = op;
        s.file = file;
        s.req = req;
        s.entry = NO_ENTRY;
        s.sink = None;
        if op != NO_OP {
            self.ops[op as usize].pending += 1;
        }
        Ok(idx)
    }

    /// Sends a newly submitted data call, or holds it while a rewrite pass runs (so no new
    /// request overtakes data being written again).
    fn submit(&mut self, idx: u32) {
        if self.dur.holding() {
            let s = &mut self.slots[idx as usize];
            s.state = SlotState::Held;
            self.dur.hold(idx, matches!(s.req, Req::Write { .. }));
        } else {
            self.send_slot(idx);
        }
    }

    /// Gives a slot a fresh XID and appends its call to the next connection's send queue.
    pub(crate) fn send_slot(&mut self, idx: u32) {
        self.generation = self.generation.wrapping_add(1);
        let xid = (self.generation << SLOT_BITS) | idx;
        let c = self.next_conn % self.conns.len();
        self.next_conn = self.next_conn.wrapping_add(1);
        let s = &mut self.slots[idx as usize];
        s.xid = xid;
        s.conn = c;
        s.state = SlotState::Sent;
        self.encode(idx, c);
    }

    pub(super) fn encode(&mut self, idx: u32, c: usize) {
        let slot = &self.slots[idx as usize];
        let conn = &mut self.conns[c];
        let (prog, vers, proc_) = match slot.req {
            Req::Read { .. } => (PROG_NFS, 3, nfsproc::READ),
            Req::Write { .. } => (PROG_NFS, 3, nfsproc::WRITE),
            Req::Commit { .. } => (PROG_NFS, 3, nfsproc::COMMIT),
            Req::Call {
                prog, vers, proc_, ..
            } => (prog, vers, proc_),
        };
        let out = conn.out();
        let mark = rpc::start_call(out, slot.xid, prog, vers, proc_, &self.auth);
        match slot.req {
            Req::Read {
                fh, offset, len, ..
            } => proto::args_read(out, &fh, offset, len),
            Req::Write {
                fh,
                offset,
                len,
                buf,
                stable,
            } => {
                proto::args_write_head(out, &fh, offset, stable, len);
                let n = len as usize;
                let pad = proto::xdr_pad(n);
                let record = out.len() - mark - 4 + n + pad.len();
                rpc::set_record_len(out, mark, record);
                if n <= INLINE_MAX {
                    // SAFETY: the submitter guaranteed `buf` holds `len` bytes until completion.
                    out.extend_from_slice(unsafe { std::slice::from_raw_parts(buf, n) });
                } else {
                    // SAFETY: as above; the bytes stay valid until the call is answered.
                    unsafe { conn.attach(buf, n) };
                }
                conn.out().extend_from_slice(pad);
            }
            Req::Commit { fh, .. } => proto::args_commit(out, &fh, 0, 0),
            Req::Call { .. } => out.extend_from_slice(&slot.args),
        }
        if !matches!(slot.req, Req::Write { .. }) {
            rpc::finish_record(conn.out(), mark);
        }
        conn.close_out();
        if conn.inflight == 0 {
            // The silence timeout counts from the first call after an idle spell.
            conn.last_rx = Instant::now();
        }
        conn.inflight += 1;
        self.slots[idx as usize].sent_end = conn.queued_total;
    }

    /// Queues a READ of `len` bytes at `offset` into `buf`, split into `chunk`-sized RPCs.
    ///
    /// # Safety
    /// `buf` must be valid for writes of `len` bytes and untouched by the caller until the
    /// completion for `user` is returned by [`Transport::wait`] (or the transport is dropped).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn read(
        &mut self,
        fh: &Fh,
        file: u32,
        offset: u64,
        buf: *mut u8,
        len: u32,
        chunk: u32,
        user: u64,
    ) -> Result<()> {
        let op = self.alloc_op(user);
        for (at, n) in chunks(len, chunk) {
            let req = Req::Read {
                fh: *fh,
                offset: offset + u64::from(at),
                len: n,
                // SAFETY: within the caller's buffer of `len` bytes.
                buf: unsafe { buf.add(at as usize) },
            };
            let idx = self.alloc_slot(op, file, req)?;
            self.submit(idx);
        }
        Ok(())
    }

    /// Queues a WRITE; the same contract as [`Transport::read`] for a buffer that is read.
    /// UNSTABLE data is copied into the retained-write ring when the server acknowledges it
    /// (see [`Transport::set_uncommitted_limit`]).
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes until the completion for `user`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn write(
        &mut self,
        fh: &Fh,
        file: u32,
        offset: u64,
        buf: *const u8,
        len: u32,
        chunk: u32,
        stable: Stable,
        user: u64,
    ) -> Result<()> {
        let op = self.alloc_op(user);
        for (at, n) in chunks(len, chunk) {
            let req = Req::Write {
                fh: *fh,
                offset: offset + u64::from(at),
                len: n,
                // SAFETY: within the caller's buffer of `len` bytes.
                buf: unsafe { buf.add(at as usize) },
                stable,
            };
            let idx = self.alloc_slot(op, file, req)?;
            self.dur.writes_out += 1;
            self.submit(idx);
        }
        Ok(())
    }

    /// Queues a COMMIT of the whole file. It completes once everything written to the file
    /// and acknowledged before it is on stable storage (written again first if needed).
    pub fn commit(&mut self, fh: &Fh, file: u32, user: u64) -> Result<()> {
        let op = self.alloc_op(user);
        let mark = self.dur.retained.next_seq();
        let idx = self.alloc_slot(op, file, Req::Commit { fh: *fh, mark })?;
        self.submit(idx);
        Ok(())
    }

    /// A COMMIT of the whole file that returns when it is done (closing a file).
    pub fn commit_wait(&mut self, fh: &Fh, file: u32) -> Result<()> {
        let op = self.alloc_op(u64::MAX);
        self.ops[op as usize].internal = true;
        let mark = self.dur.retained.next_seq();
        let idx = self.alloc_slot(op, file, Req::Commit { fh: *fh, mark })?;
        self.submit(idx);
        // Ops are only allocated by submissions, never while replies are processed, so
        // `op` stays ours until it completes.
        while self.ops[op as usize].busy {
            if let Some(e) = self.fatal.take() {
                return Err(e);
            }
            self.pump(true)?;
        }
        Ok(())
    }
}

/// Splits `len` bytes into (offset, length) pieces of at most `chunk` (one empty piece
/// for an empty IO).
fn chunks(len: u32, chunk: u32) -> impl Iterator<Item = (u32, u32)> {
    let chunk = chunk.max(1);
    let n = len.div_ceil(chunk).max(1);
    (0..n).map(move |i| {
        let at = i * chunk;
        (at, (len - at).min(chunk))
    })
}

#[cfg(test)]
mod tests {
    use super::chunks;

    #[test]
    fn chunks_cover_the_io() {
        assert_eq!(chunks(0, 4).collect::<Vec<_>>(), vec![(0, 0)]);
        assert_eq!(
            chunks(10, 4).collect::<Vec<_>>(),
            vec![(0, 4), (4, 4), (8, 2)]
        );
        assert_eq!(chunks(8, 4).collect::<Vec<_>>(), vec![(0, 4), (4, 4)]);
    }
}
