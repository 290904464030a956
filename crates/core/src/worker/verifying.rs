//! fio's data verification in the worker: writes get fio's headers and checksums and are
//! logged; after the writes (fio's `do_verify`) the logged blocks are read back through
//! the same queue → commit → reap path and checked as they complete. Reads of a read job
//! are checked as they complete. `verify_only` walks a write job's offsets without
//! writing (fio's dry run) and then verifies them.
//!
//! The log is one entry per written block, reserved at set-up for a size-bound job, so
//! logging allocates nothing per IO; checking works in the slot's own buffer.

use storbench_job::{JobSpec, RwKind};

use super::{Slot, Worker, WorkerPlan};
use crate::error::{EngineError, ErrorKind};
use crate::verify::{Expect, Verifier};

/// One logged write: what the verify phase reads back and expects.
#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    file: u32,
    len: u32,
    offset: u64,
    numberio: u64,
    seed: u64,
}

pub(super) struct VerifyState {
    verifier: Verifier,
    /// Logged writes to read back (do_verify, verify_only).
    log: Vec<Piece>,
    log_writes: bool,
    /// fio checks a block's sequence number only when it is certain: a job that writes
    /// fixed-size blocks, not time based, not verify_only.
    check_numberio: bool,
    /// verify_only of a write job: no writes, only their offsets.
    pub dry_run: bool,
    /// Reads of a read job are checked as they complete.
    check_reads: bool,
    /// Writes issued so far (fio's `numberio`).
    writes: u64,
    seed: u64,
}

impl VerifyState {
    /// None when the job does not verify or the engine moves no data (fio's fake-IO
    /// engines pretend to verify).
    pub(super) fn new(plan: &WorkerPlan, no_data: bool) -> Option<VerifyState> {
        let job: &JobSpec = &plan.job;
        let v = &job.verify;
        let thread = u16::try_from(plan.thread + 1).unwrap_or(u16::MAX);
        let verifier = Verifier::new(v, thread).filter(|_| !no_data)?;
        let writes = job.rw.kind.writes();
        let dry_run = writes && v.only;
        let log_writes = writes && (v.do_verify || v.only);
        let capacity = match plan.io_limit {
            Some(limit) if log_writes => (limit / job.bs[1].min().max(1)).min(1 << 24) + 1,
            _ => 0,
        };
        Some(VerifyState {
            verifier,
            log: Vec::with_capacity(capacity as usize),
            log_writes,
            check_numberio: writes
                && job.bs[1].min() == job.bs[1].max()
                && !job.time_based
                && !v.only,
            dry_run,
            check_reads: !writes,
            writes: 0,
            seed: plan.seed,
        })
    }

    /// A fresh seed per block for its headers (fio's `rand_seed`), from a counter.
    fn next_seed(&mut self) -> u64 {
        let mut z = self
            .seed
            .wrapping_add(self.writes.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn log(&mut self, file: u32, offset: u64, len: u32, numberio: u64, seed: u64) {
        if self.log_writes {
            self.log.push(Piece {
                file,
                len,
                offset,
                numberio,
                seed,
            });
        }
    }
}

impl Worker<'_> {
    /// Before a write is issued: fio's headers and checksums into its buffer, and the
    /// block into the log.
    #[inline]
    pub(super) fn verify_fill(&mut self, slot: u32, bytes: &mut [u8]) {
        let Some(v) = self.verify.as_mut() else {
            return;
        };
        let s = self.slots[slot as usize];
        let numberio = v.writes;
        let seed = v.next_seed();
        v.writes += 1;
        let now = self.clock.now_ns();
        let time = ((now / 1_000_000_000) as u32, (now % 1_000_000_000) as u32);
        v.verifier.fill(bytes, s.offset, numberio, seed, time);
        v.log(s.file, s.offset, s.len, numberio, seed);
    }

    /// After a read completed in full: checks it when it is a verify read or the read of
    /// a verifying read job. The error is fio's message, with fio's EILSEQ.
    #[inline]
    pub(super) fn verify_check(&mut self, s: &Slot, slot: u32) -> Result<(), EngineError> {
        let Some(v) = self.verify.as_mut() else {
            return Ok(());
        };
        if s.ddir != 0 || !(s.verify || v.check_reads) {
            return Ok(());
        }
        let expect = if s.verify {
            let p = v.log[s.piece as usize];
            Expect {
                offset: s.offset,
                numberio: v.check_numberio.then_some(p.numberio),
                seed: (!v.dry_run).then_some(p.seed),
            }
        } else {
            Expect {
                offset: s.offset,
                numberio: None,
                seed: None,
            }
        };
        // SAFETY: the IO completed, so the slot's buffer is ours until it is reissued.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(self.arena.slot_ptr(slot).as_ptr(), s.len as usize)
        };
        let path = &self.plan.files[s.file as usize].spec.path;
        v.verifier
            .check(buf, &expect, path)
            .map_err(|msg| EngineError {
                kind: ErrorKind::Os,
                errno: Some(libc::EILSEQ),
                message: msg,
            })
    }

    /// verify_only of a write job: the offsets the writes would take, logged, nothing
    /// written (fio's `do_dry_run`).
    pub(super) fn dry_run(&mut self) {
        while !self.limit_reached() && !crate::stop::requested() {
            let d = self.next_ddir();
            let (_, file, offset, len) = self.next_io(d);
            self.issued_bytes += u64::from(len);
            self.issued_ios += 1;
            if let Some(v) = self.verify.as_mut() {
                v.log(file, offset, len, 0, 0);
            }
        }
    }

    /// fio's `do_verify`: sync what was written, drop its cache, then read every logged
    /// block back (in offset order for random writes, as fio's tree gives them) and check
    /// it as it completes.
    pub(super) fn verify_phase(&mut self) -> Result<(), EngineError> {
        let Some(v) = self.verify.as_mut() else {
            return Ok(());
        };
        if v.log.is_empty() {
            return Ok(());
        }
        let mut log = std::mem::take(&mut v.log);
        if self.job.rw.kind == RwKind::RandWrite {
            log.sort_by_key(|p| (p.file, p.offset));
            // A block written twice (norandommap) is checked as last written.
            log.reverse();
            log.dedup_by_key(|p| (p.file, p.offset));
            log.reverse();
        }
        if let Some(v) = self.verify.as_mut() {
            v.log = log;
        }
        if !self.verify.as_ref().is_some_and(|v| v.dry_run) {
            self.drain()?;
            self.closing = true;
            self.sync_all(crate::engine::IoKind::Fsync)?;
            for f in &self.files {
                let _ = self.engine.invalidate(f.id);
            }
            self.closing = false;
        }
        let total = self.verify.as_ref().map_or(0, |v| v.log.len());
        let batch = self.job.iodepth_batch_submit.max(1) as usize;
        let mut next = 0usize;
        while next < total && !crate::stop::requested() {
            while next < total && self.inflight + (self.queued.len() as u32) < self.depth {
                let Some(slot) = self.free.pop() else { break };
                let p = self.verify.as_ref().map(|v| v.log[next]).unwrap_or(Piece {
                    file: 0,
                    len: 0,
                    offset: 0,
                    numberio: 0,
                    seed: 0,
                });
                self.slots[slot as usize] = Slot {
                    ddir: 0,
                    sync: false,
                    len: p.len,
                    file: p.file,
                    offset: p.offset,
                    t_start: 0,
                    t_issue: 0,
                    verify: true,
                    piece: next as u32,
                };
                if !self.issue(slot)? {
                    break;
                }
                next += 1;
                if self.queued.len() >= batch {
                    self.commit()?;
                }
            }
            self.commit()?;
            if self.inflight > 0 {
                let full = self.inflight >= self.depth || self.free.is_empty();
                self.reap(usize::from(full))?;
            }
        }
        self.drain()
    }
}
