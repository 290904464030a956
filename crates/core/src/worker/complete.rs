//! Submitting what was queued, reaping completions and accounting them, syncs and draining.

use std::time::{Duration, Instant};

use super::latency::LatStep;
use super::{Slot, Worker};
use crate::engine::{IoKind, IoUnit, Queued};
use crate::error::EngineError;
use crate::stop;

impl Worker<'_> {
    /// Submits what was queued. Called after every IO, where a synchronous engine has
    /// queued nothing: that check stays inline, the work out of line.
    #[inline(always)]
    pub(super) fn commit(&mut self) -> Result<(), EngineError> {
        if self.queued.is_empty() {
            return Ok(());
        }
        self.commit_queued()
    }

    #[inline(never)]
    fn commit_queued(&mut self) -> Result<(), EngineError> {
        self.engine.commit()?;
        let nr = self.queued.len() as u64;
        let t_issue = if self.measure.any() { self.clock() } else { 0 };
        self.inflight += nr as u32;
        self.stats.mark_submit(nr);
        self.stats.mark_depth(self.inflight, nr);
        for i in 0..self.queued.len() {
            let slot = self.queued[i] as usize;
            self.slots[slot].t_issue = t_issue;
            let s = self.slots[slot];
            if self.measure.slat && !s.sync {
                self.stats
                    .slat(s.ddir as usize, t_issue.saturating_sub(s.t_start));
            }
        }
        self.queued.clear();
        Ok(())
    }

    /// Collects completions (at least `min`) and accounts at most
    /// `iodepth_batch_complete_max` of them per round; the rest wait for the next round
    /// with the time they completed at, so their latency stays exact.
    pub(super) fn reap(&mut self, min: usize) -> Result<(), EngineError> {
        let mut done = std::mem::take(&mut self.completions);
        let mut result = Ok(());
        // An engine that says which IO failed (a negative result) and also fails the
        // reap: under continue_on_error each failed IO decides, and the engine's fuller
        // message stands for one that stops the job.
        let mut engine_err = None;
        if done.is_empty() {
            result = self.engine.reap(min, &mut done);
            if self.job.errors.counts() && result.is_err() && !done.is_empty() {
                // An error no completion explains still ends the job, after them.
                let explained = done.iter().any(|c| c.result < 0);
                engine_err = result.err().map(|e| (e, explained));
                result = Ok(());
            }
            self.backlog_at = if self.measure.any() { self.clock() } else { 0 };
        }
        let t_done = self.backlog_at;
        let max = match self.job.iodepth_batch_complete_max {
            0 => done.len(),
            m => (m as usize).min(done.len()),
        };
        if max > 0 {
            self.stats.mark_complete(max as u64);
        }
        for c in done.drain(..max) {
            self.inflight = self.inflight.saturating_sub(1);
            if result.is_ok() {
                result = self.complete(c.tag, c.result, t_done);
                if result.is_err() && c.result < 0 {
                    result = result.map_err(|e| engine_err.take().map_or(e, |(full, _)| full));
                }
            } else {
                self.free.push(c.tag);
            }
        }
        self.completions = done;
        match engine_err {
            Some((e, false)) if result.is_ok() => Err(e),
            _ => result,
        }
    }

    /// Accounts one finished IO and frees its slot.
    #[inline]
    pub(super) fn complete(
        &mut self,
        slot: u32,
        result: i64,
        t_done: u64,
    ) -> Result<(), EngineError> {
        self.free.push(slot);
        let s = self.slots[slot as usize];
        if s.sync {
            if self.closing {
                self.stats.closing_sync_done();
            } else {
                let data_only = self.job.fsync == 0;
                self.stats.sync_done(
                    self.measure.clat.then(|| t_done.saturating_sub(s.t_issue)),
                    data_only,
                );
            }
            return check(result, "fsync", &self.plan.files[s.file as usize].spec.path);
        }
        if let Some(v) = self.verify.as_mut() {
            v.completed(s.ddir);
        }
        if result < 0 {
            return self.io_failed(&s, (-result) as i32);
        }
        if result as u64 != u64::from(s.len)
            && let Some(end) = self.short_io(&s, result)
        {
            return end;
        }
        // A bad block is still a read done: counted, then the job stops on it (as fio).
        let checked = if result as u64 == s.len as u64 {
            self.verify_check(&s, slot)
        } else {
            Ok(())
        };
        // Counted in the ramp too (the ramp's end starts the statistics over), so a job
        // that ends inside its ramp reports all it did, as fio's does.
        let d = s.ddir as usize;
        let clat = self.measure.clat.then(|| t_done.saturating_sub(s.t_issue));
        let lat = self.measure.lat.then(|| t_done.saturating_sub(s.t_start));
        self.stats
            .complete(d, result as u64, (result as u64) < s.len as u64, clat, lat);
        if self.io_records {
            self.record_io(&s, slot, result as u64, t_done, [clat, lat]);
        }
        if d == 0 {
            self.sample_zeros(slot, result as usize);
        } else if d == 1 && self.verify.is_some() && result as u64 == u64::from(s.len) {
            self.verify_wrote(&s);
        }
        if self.lat_checks && d < 2 && (self.lat.is_some() || self.job.max_latency_us[d].is_some())
        {
            self.check_latency(&s, t_done)?;
        }
        if !self.measuring {
            self.counters.publish_pre(self.issued_bytes);
        } else {
            self.publish_dir(d);
        }
        match checked {
            Ok(()) => Ok(()),
            Err(e) => self.verify_failed(e),
        }
    }

    /// An IO that moved fewer bytes than asked: with `fill_device` a write that found
    /// the storage full ends the job's IO, and a read that found the end of its file is
    /// the job's error; None for other short IOs, which are counted as such.
    #[cold]
    fn short_io(&mut self, s: &Slot, result: i64) -> Option<Result<(), EngineError>> {
        if self.job.fill_device && s.ddir == 1 && (result as u64) < u64::from(s.len) {
            self.short_fill();
            return Some(Ok(()));
        }
        if result == 0 && s.len > 0 && s.ddir == 0 {
            return Some(Err(EngineError::new(
                crate::error::ErrorKind::Os,
                format!(
                    "read {} at offset {}: unexpected end of file",
                    self.plan.files[s.file as usize].spec.path, s.offset
                ),
            )));
        }
        None
    }

    /// The per-priority latency (fio's `clat_prio`: total latency with
    /// `lat_percentiles`, else completion latency) and the IO log of one completed IO in
    /// `slot`, for a job that keeps them.
    #[inline(never)]
    fn record_io(&mut self, s: &Slot, slot: u32, bytes: u64, t_done: u64, lats: [Option<u64>; 2]) {
        let d = s.ddir as usize;
        if let Some(c) = &self.cmdprio
            && d < 2
            && let Some(ns) = lats[usize::from(self.job.lat_percentiles)]
        {
            self.stats.prio_sample(d, c.entry(slot), ns);
        }
        if self.logging.is_some() {
            self.log_io(s, slot, bytes, t_done);
        }
    }

    /// fio's `max_latency` and `latency_target` on one completed read or write: an IO
    /// over max_latency, or over the target where none may be at depth 1, ends the job
    /// with fio's ETIMEDOUT and message.
    #[cold]
    fn check_latency(&mut self, s: &Slot, t_done: u64) -> Result<(), EngineError> {
        let lat_ns = t_done.saturating_sub(s.t_start);
        let d = s.ddir as usize;
        if let Some(max) = self.job.max_latency_us[d].map(|us| us.saturating_mul(1000))
            && lat_ns > max
        {
            return Err(self.too_slow(s, lat_ns, max));
        }
        let Some(l) = self.lat.as_mut() else {
            return Ok(());
        };
        match l.completed(lat_ns, t_done) {
            LatStep::Fatal => {
                let target = l.target_ns();
                Err(self.too_slow(s, lat_ns, target))
            }
            LatStep::Quiesce => {
                self.lat_quiesce = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn too_slow(&self, s: &Slot, lat_ns: u64, max_ns: u64) -> EngineError {
        EngineError {
            kind: crate::error::ErrorKind::Os,
            errno: Some(libc::ETIMEDOUT),
            message: format!(
                "latency of {lat_ns} nsec exceeds specified max ({max_ns} nsec): {} {} {} {}",
                self.plan.files[s.file as usize].spec.path,
                ["read", "write", "trim"][s.ddir as usize],
                s.offset,
                s.len
            ),
        }
    }

    /// Publishes direction `d`'s running totals for the sampler.
    #[inline]
    pub(super) fn publish_dir(&self, d: usize) {
        let dir = &self.stats.dirs[d];
        self.counters
            .publish(d, dir.io_bytes, dir.total_ios, dir.clat.sum_ns as u64);
        self.counters.publish_lat(
            d,
            dir.lat.sum_ns as u64,
            dir.slat.sum_ns as u64,
            dir.slat.samples,
        );
    }

    /// Checks one completed read in `ZERO_SAMPLE_EVERY` for never-written data; the others
    /// cost one decrement.
    #[inline]
    fn sample_zeros(&mut self, slot: u32, len: usize) {
        self.zero_countdown -= 1;
        if self.zero_countdown > 0 {
            return;
        }
        self.check_zeros(slot, len);
    }

    #[cold]
    fn check_zeros(&mut self, slot: u32, len: usize) {
        self.zero_countdown = storbench_model::result::ZERO_SAMPLE_EVERY;
        let len = len.min(self.arena.slot_len());
        // SAFETY: the slot's IO has completed, so nothing writes its buffer, and `len` is
        // within the slot.
        let buf = unsafe { std::slice::from_raw_parts(self.arena.slot_ptr(slot).as_ptr(), len) };
        self.stats.sampled_reads += 1;
        if crate::zeros::looks_unwritten(buf) {
            self.stats.zero_reads += 1;
        }
    }

    pub(super) fn wait_for_rate(&mut self) -> Result<(), EngineError> {
        let now = self.clock.now_ns();
        let next = self
            .rate
            .iter()
            .flatten()
            .map(|r| r.next_ns())
            .min()
            .unwrap_or(now);
        let wait = next.saturating_sub(now);
        if self.inflight > 0 {
            // As fio does before a rate sleep: let what is in flight complete first, waiting
            // in the engine, so completions are seen when they happen (a busy loop that never
            // enters the kernel would see io_uring's late) and latency stays exact.
            self.commit()?;
            while self.inflight > 0 && !stop::requested() {
                self.reap(1)?;
            }
            return Ok(());
        }
        if wait > 0 {
            self.idle_sleep(Duration::from_nanos(wait.min(50_000_000)))?;
        }
        Ok(())
    }

    /// Waits for every in-flight IO.
    pub(super) fn drain(&mut self) -> Result<(), EngineError> {
        self.commit()?;
        let deadline = Instant::now() + Duration::from_secs(300);
        while self.inflight > 0 {
            self.reap(1)?;
            if Instant::now() > deadline {
                return Err(EngineError::protocol(format!(
                    "{} IOs still in flight after 300 s; giving up",
                    self.inflight
                )));
            }
        }
        Ok(())
    }

    /// fsync (or fdatasync) every written file, synchronously, timing each call.
    pub(super) fn sync_all(&mut self, kind: IoKind) -> Result<(), EngineError> {
        for f in 0..self.files.len() {
            if !self.files[f].written {
                continue;
            }
            let Some(slot) = self.free.pop() else {
                return Ok(());
            };
            let t = self.clock();
            self.slots[slot as usize] = Slot {
                ddir: 1,
                sync: true,
                len: 0,
                file: f as u32,
                offset: 0,
                t_start: t,
                t_issue: t,
                verify: false,
                piece: 0,
            };
            let io = IoUnit {
                file: self.files[f].id,
                kind,
                offset: 0,
                len: 0,
                buf: self.arena.slot_ptr(slot),
                buf_index: slot,
                tag: slot,
                ioprio: 0,
            };
            match self.engine.queue(&io)? {
                Queued::Done(_) => {
                    let t_done = self.clock();
                    self.complete(slot, 0, t_done)?;
                }
                Queued::Pending => {
                    self.queued.push(slot);
                    self.drain()?;
                }
                Queued::Busy => {
                    self.free.push(slot);
                    self.drain()?;
                }
                Queued::End => self.free.push(slot),
            }
        }
        Ok(())
    }
}

pub(super) fn check(result: i64, op: &str, path: &str) -> Result<(), EngineError> {
    if result < 0 {
        Err(EngineError::errno(op, path, (-result) as i32))
    } else {
        Ok(())
    }
}
