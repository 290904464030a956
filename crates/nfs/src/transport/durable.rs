//! Keeping UNSTABLE writes safe across a server restart, the NFSv3 way (RFC 1813 §3.3.7,
//! §4.8): every WRITE and COMMIT reply carries the server's write verifier, which changes
//! when the server restarts; data acknowledged UNSTABLE under an old verifier may be lost
//! and must be written again by the client.
//!
//! * When a WRITE is acknowledged UNSTABLE, its bytes are copied from the caller's buffer
//!   into the retained-write ring before the caller gets the completion (the caller reuses
//!   its buffer right after). Writes the server reports as already stable are not copied,
//!   unless older data of the same file is still retained (its order must be kept).
//! * A COMMIT makes the entries it covers durable if the verifier matches theirs. When the
//!   ring is half full an automatic COMMIT of the files in it is sent, so the ring never
//!   fills in steady state; a write that finds it full waits for that COMMIT.
//! * A verifier change (in a WRITE or COMMIT reply) starts a *rewrite pass*: new requests
//!   are held back, writes in flight are let finish, then every retained entry is written
//!   again with FILE_SYNC, oldest first, overlapping ones one after the other (so newer data
//!   always lands last). A COMMIT that found stale entries completes after the pass.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::retain::{Entry, Retained, State};
use super::{NO_ENTRY, NO_OP, Req, SlotState, Transport, WriteAck};
use crate::proto::{Fh, Stable, Verf};

/// Rewrites in flight at once during a pass.
const REWRITE_DEPTH: usize = 32;
const UNSTABLE: u32 = Stable::Unstable as u32;

/// What the client did to keep unstable writes safe, for the result's details and notes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DurabilityStats {
    /// Size of the retained-write ring in bytes (0: nothing is kept).
    pub limit: usize,
    /// How often the server's write verifier changed (a restart).
    pub verifier_changes: u32,
    /// COMMITs sent because the ring was half full.
    pub auto_commits: u64,
    /// WRITE completions that waited for room in the ring.
    pub waits: u64,
    /// Rewrite passes, entries written again, and their bytes.
    pub passes: u32,
    pub rewrites: u64,
    pub rewritten_bytes: u64,
    /// Time spent in rewrite passes.
    pub pass_time: Duration,
    /// Bytes acknowledged UNSTABLE that could not be kept (larger than the ring).
    pub unprotected_bytes: u64,
}

struct Pass {
    /// Next entry to look at.
    next: u64,
    /// Ops (COMMITs) completing when the pass ends.
    waiters: Vec<u32>,
    started: Instant,
}

pub(crate) struct Durability {
    pub(crate) retained: Retained,
    verf: Option<Verf>,
    /// Caller WRITE RPCs not completed yet, and how many of them are held.
    pub(crate) writes_out: u32,
    held_writes: u32,
    /// Slots submitted during a pass, in order.
    pub(crate) held: Vec<u32>,
    /// Acknowledged writes waiting for room in the ring, in order.
    parked: VecDeque<u32>,
    auto_commits_out: u32,
    labels: Vec<(u32, Fh)>,
    pass: Option<Pass>,
    /// Entries being rewritten.
    rewriting: Vec<u64>,
    stats: DurabilityStats,
}

impl Durability {
    pub(crate) fn new(limit: usize) -> Durability {
        Durability {
            retained: Retained::new(limit),
            verf: None,
            writes_out: 0,
            held_writes: 0,
            held: Vec::new(),
            parked: VecDeque::new(),
            auto_commits_out: 0,
            labels: Vec::new(),
            pass: None,
            rewriting: Vec::with_capacity(REWRITE_DEPTH),
            stats: DurabilityStats {
                limit,
                ..DurabilityStats::default()
            },
        }
    }

    /// New requests wait while a rewrite pass runs.
    pub(crate) fn holding(&self) -> bool {
        self.pass.is_some()
    }

    /// Keeps a slot submitted during a pass for sending when it ends.
    pub(crate) fn hold(&mut self, idx: u32, is_write: bool) {
        self.held.push(idx);
        if is_write {
            self.held_writes += 1;
        }
    }
}

fn overlaps(a: &Entry, b: &Entry) -> bool {
    a.label == b.label
        && a.offset < b.offset + u64::from(b.len)
        && b.offset < a.offset + u64::from(a.len)
}

impl Transport {
    /// Keeps up to `bytes` of acknowledged UNSTABLE writes for re-sending after a server
    /// restart (0: keep nothing; callers then write FILE_SYNC). Set before the first write.
    pub fn set_uncommitted_limit(&mut self, bytes: usize) {
        self.dur = super::Durability::new(bytes);
    }

    pub fn durability(&self) -> DurabilityStats {
        self.dur.stats
    }

    /// How often the server's write verifier changed (a server restart).
    pub fn verifier_changes(&self) -> u32 {
        self.dur.stats.verifier_changes
    }

    /// Follow-up work after a batch of replies: writes waiting for room, the rewrite pass,
    /// and the automatic COMMIT.
    pub(super) fn after_replies(&mut self) {
        self.unpark();
        self.advance_pass();
        self.maybe_auto_commit();
    }

    pub(super) fn write_acked(&mut self, idx: u32, ack: WriteAck) {
        self.note_verifier(ack.verf);
        let s = &self.slots[idx as usize];
        if s.entry != NO_ENTRY {
            return self.rewrite_acked(idx, s.entry, ack);
        }
        let keep = self.dur.retained.capacity() > 0
            && (ack.committed == UNSTABLE || self.dur.retained.has_live(s.file));
        if keep && !self.keep(idx, ack) {
            self.slots[idx as usize].state = SlotState::Parked;
            self.slots[idx as usize].ack = ack;
            self.dur.parked.push_back(idx);
            self.dur.stats.waits += 1;
            return;
        }
        self.continue_write(idx, ack.count);
    }

    /// Copies the acknowledged bytes of a caller's WRITE into the ring; false if there is
    /// no room now.
    fn keep(&mut self, idx: u32, ack: WriteAck) -> bool {
        let s = &self.slots[idx as usize];
        let Req::Write {
            fh, offset, buf, ..
        } = s.req
        else {
            return true;
        };
        let n = ack.count as usize;
        if n > self.dur.retained.capacity() {
            self.dur.stats.unprotected_bytes += n as u64;
            return true;
        }
        // SAFETY: the caller's buffer holds the WRITE's bytes until its op completes,
        // which happens only after this.
        let data = unsafe { std::slice::from_raw_parts(buf, n) };
        self.dur
            .retained
            .keep(&fh, s.file, offset, data, ack.verf)
            .is_some()
    }

    /// After `count` bytes of a WRITE were acknowledged: the rest of a short write goes
    /// out again from the same slot, a complete one finishes.
    fn continue_write(&mut self, idx: u32, count: u32) {
        let s = &mut self.slots[idx as usize];
        let Req::Write {
            fh,
            offset,
            len,
            buf,
            stable,
        } = s.req
        else {
            return;
        };
        if count >= len {
            return self.finish_slot(idx, u64::from(count));
        }
        s.req = Req::Write {
            fh,
            offset: offset + u64::from(count),
            len: len - count,
            // SAFETY: still within the same buffer.
            buf: unsafe { buf.add(count as usize) },
            stable,
        };
        if s.op != NO_OP {
            self.ops[s.op as usize].bytes += u64::from(count);
        }
        self.send_slot(idx);
    }

    fn rewrite_acked(&mut self, idx: u32, seq: u64, ack: WriteAck) {
        let Req::Write { len, .. } = self.slots[idx as usize].req else {
            return;
        };
        if ack.count < len {
            return self.continue_write(idx, ack.count);
        }
        self.dur.stats.rewrites += 1;
        if let Some(e) = self.dur.retained.get(seq) {
            self.dur.stats.rewritten_bytes += u64::from(e.len);
        }
        // A server that ignores FILE_SYNC leaves the entry to the next COMMIT.
        let state = if ack.committed == UNSTABLE {
            State::Acked
        } else {
            State::Durable
        };
        self.dur.retained.settle(seq, state, ack.verf);
        self.dur.rewriting.retain(|&r| r != seq);
        self.finish_slot(idx, 0);
        self.dur.retained.trim();
    }

    pub(super) fn commit_acked(&mut self, idx: u32, verf: Verf) {
        let s = &self.slots[idx as usize];
        let (file, op) = (s.file, s.op);
        let Req::Commit { mark, .. } = s.req else {
            return;
        };
        let stale = self.dur.retained.committed(file, mark, &verf);
        self.note_verifier(verf);
        if stale > 0 {
            self.start_pass();
        }
        if op == NO_OP {
            self.dur.auto_commits_out -= 1;
        } else if let Some(pass) = self.dur.pass.as_mut() {
            // The caller's COMMIT means "durable": it completes when the pass has ended.
            pass.waiters.push(op);
            self.ops[op as usize].pending += 1;
        }
        self.finish_slot(idx, 0);
    }

    fn note_verifier(&mut self, verf: Verf) {
        match self.dur.verf {
            Some(v) if v == verf => {}
            Some(_) => {
                self.dur.verf = Some(verf);
                self.dur.stats.verifier_changes += 1;
                self.start_pass();
            }
            None => self.dur.verf = Some(verf),
        }
    }

    fn start_pass(&mut self) {
        if self.dur.pass.is_some() || self.dur.retained.live() == 0 {
            return;
        }
        self.dur.stats.passes += 1;
        self.dur.pass = Some(Pass {
            next: self.dur.retained.first_seq(),
            waiters: Vec::new(),
            started: Instant::now(),
        });
    }

    fn unpark(&mut self) {
        while let Some(&idx) = self.dur.parked.front() {
            let ack = self.slots[idx as usize].ack;
            if !self.keep(idx, ack) {
                return;
            }
            self.dur.parked.pop_front();
            self.continue_write(idx, ack.count);
        }
    }

    /// Rewrites retained entries in order, ends the pass when all are done and no caller
    /// write is still out, then releases what was held.
    fn advance_pass(&mut self) {
        loop {
            let Some(pass) = self.dur.pass.as_mut() else {
                return;
            };
            let r = &self.dur.retained;
            let next = pass.next.max(r.first_seq());
            pass.next = next;
            if next >= r.next_seq() || self.dur.rewriting.len() >= REWRITE_DEPTH {
                break;
            }
            let Some(&e) = r.get(next) else { break };
            if e.state == State::Acked {
                let blocked = self
                    .dur
                    .rewriting
                    .iter()
                    .any(|&s| r.get(s).is_some_and(|o| overlaps(o, &e)));
                if blocked {
                    break;
                }
                if let Err(err) = self.rewrite(next, &e) {
                    return self.fail(err);
                }
            }
            if let Some(pass) = self.dur.pass.as_mut() {
                pass.next = next + 1;
            }
        }
        let done = self.dur.pass.as_ref().is_some_and(|p| {
            p.next >= self.dur.retained.next_seq()
                && self.dur.rewriting.is_empty()
                && self.dur.writes_out == self.dur.held_writes
        });
        if done {
            self.end_pass();
        }
    }

    /// Writes retained entry `seq` again, FILE_SYNC, from the ring.
    fn rewrite(&mut self, seq: u64, e: &Entry) -> crate::error::Result<()> {
        let Some(buf) = self.dur.retained.data(seq) else {
            return Ok(());
        };
        let req = Req::Write {
            fh: e.fh,
            offset: e.offset,
            len: e.len,
            buf,
            stable: Stable::FileSync,
        };
        let idx = self.alloc_slot(NO_OP, e.label, req)?;
        self.slots[idx as usize].entry = seq;
        self.dur.retained.set_state(seq, State::Rewriting);
        self.dur.rewriting.push(seq);
        self.send_slot(idx);
        Ok(())
    }

    fn end_pass(&mut self) {
        let Some(pass) = self.dur.pass.take() else {
            return;
        };
        self.dur.stats.pass_time += pass.started.elapsed();
        self.dur.retained.trim();
        for op in pass.waiters {
            self.op_progress(op, 0);
        }
        self.dur.held_writes = 0;
        let held = std::mem::take(&mut self.dur.held);
        for &idx in &held {
            self.send_slot(idx);
        }
        self.dur.held = held;
        self.dur.held.clear();
    }

    /// Sends a COMMIT of every file with retained entries once the ring is half full (or a
    /// write waits for room), unless one is already out or a pass runs.
    fn maybe_auto_commit(&mut self) {
        let cap = self.dur.retained.capacity();
        if cap == 0 || self.dur.pass.is_some() || self.dur.auto_commits_out > 0 {
            return;
        }
        if self.dur.retained.used() < cap / 2 && self.dur.parked.is_empty() {
            return;
        }
        self.dur.retained.labels_to_commit(&mut self.dur.labels);
        let mark = self.dur.retained.next_seq();
        for i in 0..self.dur.labels.len() {
            let (label, fh) = self.dur.labels[i];
            match self.alloc_slot(NO_OP, label, Req::Commit { fh, mark }) {
                Ok(idx) => self.send_slot(idx),
                Err(e) => return self.fail(e),
            }
            self.dur.auto_commits_out += 1;
            self.dur.stats.auto_commits += 1;
        }
    }
}
