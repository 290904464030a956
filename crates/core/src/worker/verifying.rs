//! fio's data verification in the worker: writes get fio's headers and checksums and are
//! logged; after the writes (fio's `do_verify`) the logged blocks are read back through
//! the same queue → commit → reap path and checked as they complete. Reads of a read job
//! are checked as they complete. `verify_only` walks a write job's offsets without
//! writing (fio's dry run) and then verifies them.
//!
//! The log is one entry per written block, reserved at set-up for a size-bound job, so
//! logging allocates nothing per IO; checking works in the slot's own buffer.

use storbench_job::JobSpec;

mod state_file;
mod trim;

use super::{Slot, Worker, WorkerPlan};
use crate::error::{EngineError, ErrorKind};
use crate::verify::state::StateFile;
use crate::verify::{Expect, Verifier, check_trimmed};
use storbench_model::rng::FioRand;

/// fio's seed slot of `verify_state` (`FIO_RAND_VER_OFF`).
const FIO_RAND_VER_OFF: u32 = 3;
use state_file::load_state;
use trim::TrimBacklog;

/// One logged write: what the verify phase reads back and expects.
#[derive(Clone, Copy, Debug)]
pub(super) struct Piece {
    file: u32,
    len: u32,
    offset: u64,
    numberio: u64,
    /// The seed its check expects (fio's, in a mix's final pass; see `verify_phase`).
    seed: u64,
    /// Chosen by `trim_percentage` and not yet trimmed or checked.
    on_trim: bool,
    /// Trimmed: must read back as zeros.
    trimmed: bool,
    /// Trimmed without `trim_verify_zero`: out of the verify list.
    dropped: bool,
}

impl Piece {
    /// The slot of the read that checks this piece, `index` in the write log.
    fn read_back(&self, index: usize) -> Slot {
        Slot {
            len: self.len,
            file: self.file,
            offset: self.offset,
            verify: true,
            piece: index as u32,
            ..Slot::default()
        }
    }
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
    /// fio's `verify_state`: each written block's seed is two of its draws multiplied,
    /// as fio's, so that fio's seed check of a mix (below) passes on storbench's data.
    seeds: FioRand,
    /// fio's `verify_backlog` (0: off) and `verify_backlog_batch`: `next` is the first
    /// logged block not yet checked, `batch_left` the checks left of the batch under way,
    /// `last_read` whether the last IO issued was such a check (fio's `last_ddir`).
    backlog: u64,
    backlog_batch: u64,
    next: usize,
    batch_left: u64,
    last_read: bool,
    /// fio's verify of trims (`trim_backlog.rs`), when `trim_percentage` is given;
    /// `dropped_waiting` counts the logged blocks after `next` a trim took out of the
    /// verify list, so that the list's length is fio's `io_hist_len`.
    trims: Option<TrimBacklog>,
    dropped_waiting: u64,
    /// fio reads a random job's blocks back in write order when it keeps a random map,
    /// else in offset order, a block written twice checked once (its rbtree).
    sorted: bool,
    /// The check of the k-th block of the final pass expects the k-th write's seed.
    seed_by_order: bool,
    /// The final pass (do_verify) is under way: log indices are its order.
    final_pass: bool,
    /// fio's verify state: what `verify_state_load` read, the verify reads completed
    /// (fio's `io_blocks[READ]`), and for `verify_state_save` the last `iodepth` write
    /// completions of each file (a ring per file, allocated at set-up) and their count.
    loaded: Option<StateFile>,
    reads_done: u64,
    save: bool,
    comps: Vec<u64>,
    comp_next: Vec<u32>,
    comp_depth: usize,
    writes_done: u64,
}

impl VerifyState {
    /// None when the job does not verify or the engine moves no data (fio's fake-IO
    /// engines pretend to verify).
    pub(super) fn new(
        plan: &WorkerPlan,
        no_data: bool,
    ) -> Result<Option<VerifyState>, EngineError> {
        let job: &JobSpec = &plan.job;
        let v = &job.verify;
        let thread = u16::try_from(plan.thread + 1).unwrap_or(u16::MAX);
        let Some(verifier) = Verifier::new(v, thread).filter(|_| !no_data) else {
            return Ok(None);
        };
        let verifier = verifier.with_seeded_data(v.dump && job.buffers.compress_percentage == 0);
        let writes = job.rw.kind.writes();
        let dry_run = writes && v.only;
        let log_writes = writes && (v.do_verify || v.only);
        let capacity = match plan.io_limit {
            Some(limit) if log_writes => (limit / job.bs[1].min().max(1)).min(1 << 24) + 1,
            // A time-based job checks its blocks as it goes: the log holds a backlog.
            _ if log_writes => (2 * v.backlog).min(1 << 24) + u64::from(plan.job.iodepth),
            _ => 0,
        };
        let loaded = if v.state_load {
            Some(load_state(&job.name, plan.thread)?)
        } else {
            None
        };
        let save = v.state_save && writes && !v.only;
        let comp_depth = if save { job.iodepth.max(1) as usize } else { 0 };
        let trim_seed = if job.randrepeat {
            TrimBacklog::seed(job.randseed, plan.thread + 1)
        } else {
            plan.seed ^ 0x7472_696d
        };
        let trims = TrimBacklog::new(&v.trim, trim_seed, capacity as usize)
            .filter(|_| log_writes && !v.only);
        let bs = job.bs.iter();
        let fixed = bs.clone().map(|b| b.min()).min() == bs.map(|b| b.max()).max();
        Ok(Some(VerifyState {
            trims,
            dropped_waiting: 0,
            sorted: !job.random_map(),
            // fio checks a block's seed only in a mixed job without verify_backlog, and
            // then against its generator replayed in the order the blocks are checked.
            seed_by_order: job.rw.kind.reads() && writes && v.backlog == 0,
            final_pass: false,
            loaded,
            reads_done: 0,
            save,
            comps: vec![0; comp_depth * plan.files.len()],
            comp_next: vec![0; plan.files.len()],
            comp_depth,
            writes_done: 0,
            verifier,
            log: Vec::with_capacity(capacity as usize),
            log_writes,
            // fio's td_min_bs == td_max_bs: over every direction, a mixed job's reads too.
            check_numberio: writes && fixed && !job.time_based && !v.only,
            dry_run,
            check_reads: !writes,
            writes: 0,
            seeds: FioRand::seeded(if job.randrepeat {
                FioRand::seed_for(job.randseed, plan.thread + 1, FIO_RAND_VER_OFF)
            } else {
                plan.seed
            }),
            backlog: if log_writes { v.backlog } else { 0 },
            backlog_batch: match v.backlog_batch {
                0 => v.backlog,
                n => u64::from(n),
            },
            next: 0,
            batch_left: 0,
            last_read: false,
        }))
    }

    /// fio's `check_get_verify`: a check of a logged block is due when a batch is under
    /// way, or when the blocks waiting are a multiple of `verify_backlog` and the last IO
    /// was a write.
    fn backlog_due(&mut self) -> bool {
        let waiting = self.waiting();
        if self.backlog == 0 || waiting == 0 {
            return false;
        }
        if self.batch_left == 0 && waiting.is_multiple_of(self.backlog) && !self.last_read {
            self.batch_left = self.backlog_batch;
        }
        self.batch_left > 0
    }

    /// Logged blocks waiting for their check: fio's `io_hist_len`.
    fn waiting(&self) -> u64 {
        (self.log.len() - self.next) as u64 - self.dropped_waiting
    }

    /// Drops the checked blocks from the log's front once they are many, moving the rest
    /// down (no allocation); only with no check in flight, whose slot names its entry.
    fn compact(&mut self) {
        if self.next >= 4096 && self.next * 2 >= self.log.len() {
            self.log.drain(..self.next);
            if let Some(t) = self.trims.as_mut() {
                t.shift(self.next);
            }
            self.next = 0;
        }
    }

    /// The next logged block to check during the writes, past those a trim took out of
    /// the list; it leaves the trim queue if it was waiting there.
    fn take_next(&mut self) -> Option<usize> {
        while self.next < self.log.len() {
            let i = self.next;
            self.next += 1;
            let p = &mut self.log[i];
            if p.dropped {
                self.dropped_waiting -= 1;
                continue;
            }
            if std::mem::take(&mut p.on_trim)
                && let Some(t) = self.trims.as_mut()
            {
                t.dropped();
            }
            return Some(i);
        }
        None
    }

    /// A fresh seed per block for its headers: fio's `rand_seed`, two draws of its
    /// `verify_state` multiplied.
    fn next_seed(&mut self) -> u64 {
        let a = u64::from(self.seeds.next_u32());
        a.wrapping_mul(u64::from(self.seeds.next_u32()))
    }

    fn log(&mut self, file: u32, offset: u64, len: u32, numberio: u64, seed: u64) {
        if self.log_writes {
            let on_trim = self
                .trims
                .as_mut()
                .is_some_and(|t| t.logged(self.log.len()));
            self.log.push(Piece {
                file,
                len,
                offset,
                numberio,
                seed,
                on_trim,
                trimmed: false,
                dropped: false,
            });
        }
    }

    /// The last IO completed (fio's `last_ddir`): whether it was a read.
    #[inline]
    pub(super) fn completed(&mut self, ddir: u8) {
        self.last_read = ddir == 0;
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
        v.reads_done += 1;
        let path = &self.plan.files[s.file as usize].spec.path;
        if s.verify && v.log[s.piece as usize].trimmed {
            // SAFETY: as below, the completed read's buffer.
            let buf = unsafe {
                std::slice::from_raw_parts(self.arena.slot_ptr(slot).as_ptr(), s.len as usize)
            };
            return check_trimmed(buf, s.offset, path).map_err(eilseq);
        }
        let expect = if s.verify {
            let p = v.log[s.piece as usize];
            Expect {
                offset: s.offset,
                numberio: v.check_numberio.then_some(p.numberio),
                seed: (v.seed_by_order && v.final_pass).then_some(p.seed),
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
        let checked = v.verifier.check(buf, &expect, path);
        if checked.is_err() && self.job.verify.dump {
            let now = self.clock.now_ns();
            let read = crate::verify::ReadStamp {
                time: ((now / 1_000_000_000) as u32, (now % 1_000_000_000) as u32),
                numberio: if s.verify {
                    v.log[s.piece as usize].numberio
                } else {
                    0
                },
            };
            dump(&mut v.verifier, buf, s.offset, path, read);
        }
        checked.map_err(eilseq)
    }

    /// fio's `verify_backlog`: when a check is due, `slot` reads back the oldest logged
    /// block instead of the next write (after the writes in flight completed, so the
    /// block is on the storage). False when none is due.
    pub(super) fn backlog_read(&mut self, slot: u32) -> Result<bool, EngineError> {
        if !self.verify.as_mut().is_some_and(|v| v.backlog_due()) {
            return Ok(false);
        }
        self.drain()?;
        let Some(v) = self.verify.as_mut() else {
            return Ok(false);
        };
        v.compact();
        let Some(piece) = v.take_next() else {
            return Ok(false);
        };
        let p = v.log[piece];
        v.batch_left -= 1;
        self.slots[slot as usize] = p.read_back(piece);
        if !self.issue(slot)? {
            // The engine was busy: the block stays due.
            if let Some(v) = self.verify.as_mut() {
                v.next = piece;
                v.batch_left += 1;
            }
        }
        Ok(true)
    }

    /// verify_only of a write job: the offsets the writes would take, logged, nothing
    /// written (fio's `do_dry_run`).
    pub(super) fn dry_run(&mut self) {
        while !self.limit_reached() && !crate::stop::requested() {
            let d = self.next_ddir();
            let (ddir, file, offset, len) = self.next_io(d);
            // Counted as fill_queue counts issued IO: a mix's directions follow fio's
            // rwmix rule, and a trimwrite's budget is its writes.
            if ddir != 2 || self.trim_then_write.is_none() {
                self.issued_bytes += u64::from(len);
            }
            self.issued_ios += 1;
            if let Some(n) = self.dir_issues.get_mut(usize::from(ddir)) {
                *n += 1;
            }
            // Only writes are logged: a mix's reads are not checked (fio's dry run).
            if ddir == 1
                && let Some(v) = self.verify.as_mut()
            {
                let seed = v.next_seed();
                v.log(file, offset, len, 0, seed);
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
        if v.log.len() == v.next {
            return Ok(());
        }
        let mut log = std::mem::take(&mut v.log);
        // What verify_backlog checked already is not checked again, and a time-based
        // job's writes were checked only that way (fio's verify phase never starts).
        log.drain(..std::mem::take(&mut v.next));
        v.dropped_waiting = 0;
        log.retain(|p| !p.dropped);
        if self.job.time_based {
            log.clear();
        }
        // fio replays its seeds in the order it checks: the k-th block checked expects
        // the k-th write's seed (once per pass, not per IO).
        let seeds: Vec<u64> = if v.seed_by_order {
            log.iter().map(|p| p.seed).collect()
        } else {
            Vec::new()
        };
        if v.sorted {
            log.sort_by_key(|p| (p.file, p.offset));
            // A block written twice (norandommap) is checked as last written.
            log.reverse();
            log.dedup_by_key(|p| (p.file, p.offset));
            log.reverse();
        }
        for (p, &seed) in log.iter_mut().zip(&seeds) {
            p.seed = seed;
        }
        let nothing_left = log.is_empty();
        if let Some(v) = self.verify.as_mut() {
            v.log = log;
            v.final_pass = true;
        }
        if nothing_left {
            return Ok(());
        }
        if !self.verify.as_ref().is_some_and(|v| v.dry_run) {
            self.drain()?;
            self.closing = true;
            self.sync_all(crate::engine::IoKind::Fsync)?;
            for f in self.files.iter().filter(|f| f.open) {
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
                let Some(p) = self.verify.as_ref().map(|v| v.log[next]) else {
                    self.free.push(slot);
                    break;
                };
                if self
                    .verify
                    .as_ref()
                    .is_some_and(|v| v.past_saved_writes(&p))
                {
                    self.free.push(slot);
                    return self.drain();
                }
                if self.limited_open && !self.files[p.file as usize].open {
                    self.open_for_verify(p.file as usize)?;
                }
                self.slots[slot as usize] = p.read_back(next);
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

/// fio's `verify_dump`: the failed interval's blocks to files in the working directory,
/// each announced on stderr as fio announces it; a file that cannot be written is said
/// and the job goes on to its verify error.
#[cold]
fn dump(
    verifier: &mut crate::verify::Verifier,
    buf: &[u8],
    offset: u64,
    path: &str,
    read: crate::verify::ReadStamp,
) {
    for d in verifier.dumps(buf, offset, path, read) {
        let kind = d.name.rsplit('.').next().unwrap_or("");
        match std::fs::write(&d.name, &d.bytes) {
            Ok(()) => eprintln!("       {kind} data dumped as {}", d.name),
            Err(e) => eprintln!("verify_dump: cannot write {}: {e}", d.name),
        }
    }
}

/// A block that did not verify: fio's EILSEQ with its message.
fn eilseq(message: String) -> EngineError {
    EngineError {
        kind: ErrorKind::Os,
        errno: Some(libc::EILSEQ),
        message,
    }
}
