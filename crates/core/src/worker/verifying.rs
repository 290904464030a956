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
use crate::verify::state::{StateFile, file_name};
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
    seed: u64,
    /// fio's `verify_backlog` (0: off) and `verify_backlog_batch`: `next` is the first
    /// logged block not yet checked, `batch_left` the checks left of the batch under way,
    /// `last_read` whether the last IO issued was such a check (fio's `last_ddir`).
    backlog: u64,
    backlog_batch: u64,
    next: usize,
    batch_left: u64,
    last_read: bool,
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
        Ok(Some(VerifyState {
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
            check_numberio: writes
                && job.bs[1].min() == job.bs[1].max()
                && !job.time_based
                && !v.only,
            dry_run,
            check_reads: !writes,
            writes: 0,
            seed: plan.seed,
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

    /// A write completed: into its file's ring of the last completions (fio's
    /// `file_log_write_comp`), for the state file.
    #[inline]
    fn wrote(&mut self, file: u32, offset: u64) {
        if self.comp_depth == 0 {
            return;
        }
        self.writes_done += 1;
        let f = file as usize;
        let at = self.comp_next[f] as usize;
        self.comps[f * self.comp_depth + at] = offset;
        self.comp_next[f] = ((at + 1) % self.comp_depth) as u32;
    }

    /// fio's state of this job clone (`get_all_io_list`): per file, the last
    /// completions, newest first.
    fn state(&self, job: &JobSpec, thread: u32) -> StateFile {
        let per_file = self.writes_done.min(self.comp_depth as u64) as usize;
        let mut comps = Vec::with_capacity(per_file * self.comp_next.len());
        for (f, &next) in self.comp_next.iter().enumerate() {
            let ring = &self.comps[f * self.comp_depth..(f + 1) * self.comp_depth];
            for i in 0..per_file {
                let at = (next as usize + self.comp_depth - 1 - i) % self.comp_depth;
                comps.push((f as u64, ring[at]));
            }
        }
        StateFile {
            depth: job.iodepth,
            nofiles: self.comp_next.len() as u32,
            numberio: self.writes,
            index: u64::from(thread),
            name: job.name.clone(),
            comps,
        }
    }

    /// fio's `check_get_verify`: a check of a logged block is due when a batch is under
    /// way, or when the blocks waiting are a multiple of `verify_backlog` and the last IO
    /// was a write.
    fn backlog_due(&mut self) -> bool {
        let waiting = (self.log.len() - self.next) as u64;
        if self.backlog == 0 || waiting == 0 {
            return false;
        }
        if self.batch_left == 0 && waiting.is_multiple_of(self.backlog) && !self.last_read {
            self.batch_left = self.backlog_batch;
        }
        self.batch_left > 0
    }

    /// Drops the checked blocks from the log's front once they are many, moving the rest
    /// down (no allocation); only with no check in flight, whose slot names its entry.
    fn compact(&mut self) {
        if self.next >= 4096 && self.next * 2 >= self.log.len() {
            self.log.drain(..self.next);
            self.next = 0;
        }
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
        v.last_read = false;
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
        let piece = v.next;
        let p = v.log[piece];
        v.next += 1;
        v.batch_left -= 1;
        v.last_read = true;
        self.slots[slot as usize] = p.read_back(piece);
        if !self.issue(slot)? {
            // The engine was busy: the block stays due.
            if let Some(v) = self.verify.as_mut() {
                v.next -= 1;
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
        if v.log.len() == v.next {
            return Ok(());
        }
        let mut log = std::mem::take(&mut v.log);
        // What verify_backlog checked already is not checked again, and a time-based
        // job's writes were checked only that way (fio's verify phase never starts).
        log.drain(..std::mem::take(&mut v.next));
        if self.job.time_based {
            log.clear();
        }
        if self.job.rw.kind == RwKind::RandWrite {
            log.sort_by_key(|p| (p.file, p.offset));
            // A block written twice (norandommap) is checked as last written.
            log.reverse();
            log.dedup_by_key(|p| (p.file, p.offset));
            log.reverse();
        }
        let nothing_left = log.is_empty();
        if let Some(v) = self.verify.as_mut() {
            v.log = log;
        }
        if nothing_left {
            return Ok(());
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
                if self
                    .verify
                    .as_ref()
                    .is_some_and(|v| v.past_saved_writes(&p))
                {
                    self.free.push(slot);
                    return self.drain();
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

impl VerifyState {
    /// With a loaded state: whether `p` is past where the writes stopped.
    fn past_saved_writes(&self, p: &Piece) -> bool {
        self.loaded
            .as_ref()
            .is_some_and(|st| st.should_stop(self.reads_done, u64::from(p.file), p.offset))
    }
}

impl Worker<'_> {
    /// A write completed (its bytes all moved): logged for the state file.
    #[inline]
    pub(super) fn verify_wrote(&mut self, s: &Slot) {
        if let Some(v) = self.verify.as_mut() {
            v.wrote(s.file, s.offset);
        }
    }

    /// fio's `verify_save_state` at the end of a verifying write job: its state file in
    /// the working directory. A file that cannot be written is a warning, as in fio.
    pub(super) fn save_verify_state(&self) {
        let Some(v) = self.verify.as_ref().filter(|v| v.save) else {
            return;
        };
        let name = file_name(&self.job.name, self.plan.thread);
        let bytes = v.state(self.job, self.plan.thread).encode();
        if let Err(e) = write_state(&name, &bytes) {
            eprintln!("storbench: verify state file {name}: {e}");
        }
    }
}

/// Writes a state file, never through a symbolic link planted at its name.
fn write_state(name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(name)?;
    f.write_all(bytes)
}

/// `verify_state_load`: this clone's state file from the working directory, read with a
/// bound; a missing or foreign file is the job's one-line error.
fn load_state(job: &str, thread: u32) -> Result<StateFile, EngineError> {
    use std::io::Read;
    let name = file_name(job, thread);
    let fail =
        |why: String| EngineError::new(ErrorKind::Os, format!("verify_state_load: {name}: {why}"));
    let f = std::fs::File::open(&name).map_err(|e| fail(e.to_string()))?;
    let mut bytes = Vec::new();
    f.take(crate::verify::state::MAX_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    StateFile::decode(&bytes).map_err(fail)
}
