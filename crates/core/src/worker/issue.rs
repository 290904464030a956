//! Choosing and queueing the next IOs: direction, block size, file and offset, the stop
//! budget, rate limits and periodic syncs.

use storbench_job::{FileService, RwKind};

use super::{Slot, Worker};
use crate::engine::{IoKind, IoUnit, Queued};
use crate::error::EngineError;
use crate::offsets::PassEnd;

impl Worker<'_> {
    /// Queues IOs until the depth is reached. False if the rate limiter holds us back.
    pub(super) fn fill_queue(&mut self) -> Result<bool, EngineError> {
        let batch = self.job.iodepth_batch_submit.max(1) as usize;
        if self.draining {
            if self.inflight > self.depth_low {
                return Ok(true);
            }
            self.draining = false;
        }
        // At most one queue's worth per call, so the stop rules run between IOs even when
        // a synchronous engine completes each IO at once.
        for _ in 0..self.depth {
            if self.inflight + (self.queued.len() as u32) >= self.depth_now() {
                // fio's iodepth_low: a full queue drains to it before it is filled again.
                self.draining = self.depth_low < self.depth;
                break;
            }
            if self.limit_reached() {
                return Ok(true);
            }
            if self.extras && self.flow_held()? {
                return Ok(true);
            }
            // A round ends between IOs, never between a held IO or a trim and its write.
            if self.issued_bytes >= self.round_end
                && self.held.is_none()
                && self.trim_then_write.is_none()
            {
                self.new_round()?;
            }
            // As in fio, a due fsync takes the place of the next IO: a job that ends right
            // after a multiple of fsync= writes does not sync again (256 writes at fsync=4
            // make 63 syncs).
            if self.sync_due() {
                self.drain()?;
                self.sync_all(if self.job.fsync > 0 {
                    IoKind::Fsync
                } else {
                    IoKind::Fdatasync
                })?;
                self.writes_since_sync = 0;
            }
            let Some(slot) = self.free.pop() else { break };
            if self.extras && self.held.is_none() && self.before_io(slot)? {
                continue;
            }
            let io = match self.held.take() {
                Some(io) => io,
                None => {
                    let d = self.next_ddir();
                    self.next_io(d)
                }
            };
            if self.files_done {
                self.free.push(slot);
                return Ok(true);
            }
            let (ddir, file, offset, len) = io;
            if self.extras
                && let Some(rl) = &mut self.rate[ddir as usize]
            {
                if !rl.ready(self.clock.now_ns()) {
                    self.free.push(slot);
                    self.held = Some(io);
                    return Ok(false);
                }
                rl.charge(len as u64);
            }
            self.slots[slot as usize] = Slot {
                ddir,
                sync: false,
                len,
                file,
                offset,
                t_start: 0,
                t_issue: 0,
                verify: false,
                piece: 0,
            };
            if !self.issue(slot)? {
                break;
            }
            // fio's budget of a trimwrite job is its writes: each block is trimmed, then
            // written, and the trims come on top.
            if ddir != 2 || self.trim_then_write.is_none() {
                self.issued_bytes += len as u64;
            }
            self.issued_ios += 1;
            if let Some(n) = self.dir_issues.get_mut(ddir as usize) {
                *n += 1;
            }
            if ddir == 1 {
                self.written_bytes += len as u64;
                self.files[file as usize].written = true;
                self.writes_since_sync += 1;
            }
            if self.queued.len() >= batch {
                self.commit()?;
            }
            if self.extras && self.think.is_some() && self.think_due() {
                break;
            }
        }
        Ok(true)
    }

    /// The per-job extras before an IO that the rate limiter did not hold back: done
    /// files are closed and the next ones opened (`openfiles.rs`; never between a trim and
    /// its write), then a due verify backlog read or trim takes `slot` (true).
    #[inline(never)]
    fn before_io(&mut self, slot: u32) -> Result<bool, EngineError> {
        if self.rotate && self.trim_then_write.is_none() {
            self.rotate_files()?;
        }
        Ok(self.verify.is_some() && (self.backlog_read(slot)? || self.backlog_trim(slot)?))
    }

    /// fio's flow: whether this clone is above its share of its flow and waits (after its
    /// IOs in flight complete and its `flow_sleep`), else one IO counted into the flow.
    fn flow_held(&mut self) -> Result<bool, EngineError> {
        let Some(flow) = &mut self.flow else {
            return Ok(false);
        };
        if !flow.exceeded() {
            return Ok(false);
        }
        let sleep = flow.sleep();
        if !sleep.is_zero() {
            self.drain()?;
            std::thread::sleep(sleep);
        }
        Ok(true)
    }

    /// Checked before every IO, so the job's byte bounds (io_size, the end of this loop)
    /// and number_ios are folded into two thresholds when they change (`set_marks`).
    #[inline]
    pub(super) fn limit_reached(&self) -> bool {
        self.files_done || self.issued_bytes >= self.stop_bytes || self.issued_ios >= self.stop_ios
    }

    #[inline]
    pub(super) fn sync_due(&self) -> bool {
        self.writes_since_sync >= self.sync_every
    }

    /// Hands slot `slot` to the engine. False if the engine is busy (slot returned).
    pub(super) fn issue(&mut self, slot: u32) -> Result<bool, EngineError> {
        let s = self.slots[slot as usize];
        let kind = match s.ddir {
            0 => IoKind::Read,
            1 => IoKind::Write,
            _ => IoKind::Trim,
        };
        let buf = self.arena.slot_ptr(slot);
        if kind == IoKind::Write && !self.no_data {
            // SAFETY: the slot is not in flight, so its buffer is ours to modify.
            let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), s.len as usize) };
            self.filler.before_write(bytes, s.offset);
            self.verify_fill(slot, bytes);
        }
        // Latency starts here, with the IO ready to go, as fio's start_time does: choosing
        // its offset (which may drop a pass's page cache) and filling its buffer are not
        // the storage's time.
        let t_start = if self.measure.any() { self.clock() } else { 0 };
        self.slots[slot as usize].t_start = t_start;
        let ioprio = match &mut self.cmdprio {
            Some(c) => c.draw(slot, s.ddir, s.len, s.sync),
            None => 0,
        };
        let io = IoUnit {
            file: self.files[s.file as usize].id,
            kind,
            offset: s.offset,
            len: s.len,
            buf,
            buf_index: slot,
            tag: slot,
            ioprio,
        };
        if self.synchronous {
            self.slots[slot as usize].t_issue = t_start;
            let queued = match self.engine.queue(&io) {
                Ok(q) => q,
                Err(e) => return self.queue_failed(slot, e),
            };
            return match queued {
                Queued::Done(n) => {
                    self.stats.mark_depth(1, 1);
                    if !self.no_data {
                        // fio counts submit/complete batches for real syscalls only.
                        self.stats.mark_submit(1);
                        self.stats.mark_complete(1);
                    }
                    let t_done = if self.measure.any() { self.clock() } else { 0 };
                    self.complete(slot, n as i64, t_done)?;
                    Ok(true)
                }
                Queued::Pending => {
                    self.queued.push(slot);
                    Ok(true)
                }
                Queued::Busy => {
                    self.free.push(slot);
                    Ok(false)
                }
                Queued::End => Ok(self.stream_ended(slot)),
            };
        }
        let queued = match self.engine.queue(&io) {
            Ok(q) => q,
            Err(e) => return self.queue_failed(slot, e),
        };
        match queued {
            Queued::Done(n) => {
                let t_done = if self.measure.any() { self.clock() } else { 0 };
                self.slots[slot as usize].t_issue = t_done;
                self.complete(slot, n as i64, t_done)?;
                Ok(true)
            }
            Queued::Pending => {
                self.queued.push(slot);
                Ok(true)
            }
            Queued::Busy => {
                self.free.push(slot);
                Ok(false)
            }
            Queued::End => Ok(self.stream_ended(slot)),
        }
    }

    /// The engine's peer ended the stream: the slot is free and no further IO is issued.
    #[cold]
    fn stream_ended(&mut self, slot: u32) -> bool {
        self.free.push(slot);
        self.files_done = true;
        false
    }

    /// The direction of the next IO. A mixed job follows fio's `get_rw_ddir`: a direction
    /// drawn (`rwmixread` percent reads) stays until its issues reach a bound set when the
    /// direction last changed, and each drawn direction goes to fio's `rate_ddir`, so the
    /// sequence of directions is fio's own.
    #[inline(always)]
    pub(super) fn next_ddir(&mut self) -> u8 {
        match self.job.rw.kind {
            RwKind::Read | RwKind::RandRead => 0,
            RwKind::Write | RwKind::RandWrite => 1,
            RwKind::Trim | RwKind::RandTrim | RwKind::TrimWrite | RwKind::RandTrimWrite => 2,
            RwKind::ReadWrite | RwKind::RandRw => self.next_mixed_ddir(),
        }
    }

    /// A mixed job's direction, out of line so that a one-direction job's IO path stays
    /// a single match.
    #[inline(never)]
    fn next_mixed_ddir(&mut self) -> u8 {
        let cur = self.mix_ddir as usize;
        if self.dir_issues[cur] >= self.mix_issues {
            let d = u8::from(self.mix.between(1, 100) > self.job.rwmixread);
            if d != self.mix_ddir {
                // fio's set_rwmix_bytes: the old direction's issues scaled by the new
                // direction's share.
                self.mix_issues = self.dir_issues[cur] * u64::from(self.mix_share(d)) / 100;
            }
            self.mix_ddir = d;
        }
        self.mix_ddir = self.rate_ddir(self.mix_ddir);
        self.mix_ddir
    }

    fn mix_share(&self, d: u8) -> u32 {
        if d == 0 {
            self.job.rwmixread
        } else {
            100 - self.job.rwmixread.min(100)
        }
    }

    /// fio's `rate_ddir`: when the drawn direction is ahead of its rate and the other one
    /// (if the mix has any of it) is not, the other goes instead; when both are ahead, the
    /// one due first. So each direction keeps its own rate, as in fio, rather than the
    /// slower one holding the faster back to keep the mix.
    #[inline]
    fn rate_ddir(&mut self, d: u8) -> u8 {
        if self.rate[0].is_none() && self.rate[1].is_none() {
            return d;
        }
        let now = self.clock.now_ns();
        let o = d ^ 1;
        let behind =
            |r: &mut Option<crate::rate::RateLimiter>| r.as_mut().is_none_or(|r| r.ready(now));
        if behind(&mut self.rate[d as usize]) || self.mix_share(o) == 0 {
            return d;
        }
        if behind(&mut self.rate[o as usize]) {
            return o;
        }
        let due = |r: &Option<crate::rate::RateLimiter>| r.as_ref().map_or(0, |r| r.next_ns());
        if due(&self.rate[o as usize]) < due(&self.rate[d as usize]) {
            o
        } else {
            d
        }
    }

    /// Picks file, offset and length of the next IO in direction `ddir`.
    #[inline]
    pub(super) fn next_io(&mut self, ddir: u8) -> (u8, u32, u64, u32) {
        if self.shaped {
            return self.next_shaped_io(ddir);
        }
        self.place_io::<false>(ddir)
    }

    /// The next IO of a job whose strided zones or limited open files follow each IO's
    /// placement, out of line so that other jobs' IO path asks once.
    #[inline(never)]
    fn next_shaped_io(&mut self, ddir: u8) -> (u8, u32, u64, u32) {
        self.place_io::<true>(ddir)
    }

    /// `next_io`'s work; `SHAPED` keeps strided zones and open files' accounting in step.
    #[inline(always)]
    fn place_io<const SHAPED: bool>(&mut self, ddir: u8) -> (u8, u32, u64, u32) {
        let job = self.job;
        if let Some((file, offset, len)) = self.trim_then_write.take() {
            return (1, file, offset, len);
        }
        if SHAPED && let Some(z) = &mut self.strided {
            z.before_io(&mut self.files[0].offsets);
        }
        if self.fixed_bs[ddir as usize] == 0 && self.files[0].offsets.draws_sizes() {
            return self.next_mapped_io(ddir);
        }
        let file = self.pick_file();
        self.files[file].offsets.aim(ddir);
        let bs = self.block_size(ddir as usize, file);
        let len = self.fit_to_limit(ddir as usize, bs);
        let random =
            job.rw.kind.is_random() && self.rng.percent(job.percentage_random[ddir as usize]);
        let len = len.min(self.files[file].offsets.len()).max(1);
        if SHAPED && let Some(z) = &mut self.strided {
            z.placed(len);
        }
        let offset = self.next_offset(file, len, random);
        if SHAPED && self.limited_open {
            self.count_open_file(file, len);
        }
        self.files_done |= self.files[file].offsets.done();
        self.last_end = offset + len;
        if matches!(job.rw.kind, RwKind::TrimWrite | RwKind::RandTrimWrite) {
            self.trim_then_write = Some((file as u32, offset, len as u32));
        }
        (ddir, file as u32, offset, len as u32)
    }

    /// The next IO of a random job whose block sizes vary, from fio's map: fio draws the
    /// size after the offset and shortens a block that runs into blocks already done.
    #[inline(never)]
    fn next_mapped_io(&mut self, ddir: u8) -> (u8, u32, u64, u32) {
        let offsets = &mut self.files[0].offsets;
        offsets.aim(ddir);
        let (offset, len) = offsets.next_mapped();
        let reopened = offsets.take_pass_end() == PassEnd::MapFull;
        if let Some(z) = &mut self.strided {
            z.placed(len);
        }
        self.files_done |= self.files[0].offsets.done();
        if reopened {
            self.file_pass_over();
        }
        self.last_end = offset + len;
        (ddir, 0, offset, len.max(1) as u32)
    }

    /// The offset of the next IO of `len` bytes in `file`; where a pass over the file
    /// ends, fio's rule decides about its page cache (and may move the offset).
    #[inline(always)]
    fn next_offset(&mut self, file: usize, len: u64, random: bool) -> u64 {
        let offsets = &mut self.files[file].offsets;
        let offset = if !random {
            offsets.next_sequential(len)
        } else if self.seq_run > 0 {
            self.seq_run -= 1;
            offsets.next_sequential(len)
        } else {
            self.seq_run = self.job.rw.nr.saturating_sub(1);
            let off = offsets.next_random(&mut self.rng, len);
            offsets.continue_from(off);
            offsets.next_sequential(len)
        };
        match offsets.take_pass_end() {
            PassEnd::None => offset,
            end => self.pass_ended(file, end, len, offset),
        }
    }

    /// fio issues whole blocks until a size-bound job's bytes are reached, even when the
    /// last one goes past them (`get_next_buflen` looks at the region, not at the bytes
    /// left). One kind of job is cut short here instead: random IO with a random map and
    /// a varying block size that fio's own map does not serve (several files), where fio
    /// shortens each block that runs into blocks already done, so its bytes end at the
    /// region's; the last IO then takes what is left, in whole smallest blocks.
    #[inline]
    pub(super) fn fit_to_limit(&self, d: usize, len: u64) -> u64 {
        if self.fixed_bs[d] != 0 || self.job.norandommap || !self.job.rw.kind.is_random() {
            return len;
        }
        let Some(limit) = self.plan.io_limit else {
            return len;
        };
        let left = limit.min(self.loop_end).saturating_sub(self.issued_bytes);
        if len <= left {
            return len;
        }
        let min = self.job.bs[d].min().max(1);
        (left / min * min).max(min.min(len))
    }

    #[inline(always)]
    pub(super) fn block_size(&mut self, d: usize, file: usize) -> u64 {
        match self.fixed_bs[d] {
            0 => self.drawn_block_size(d, file),
            b => b,
        }
    }

    /// A block size drawn from a range or a split (bsrange, bssplit) by fio's arithmetic
    /// and generator (see `offsets::SizeDraw`). A sequential IO's size must fit between
    /// its offset and the region's end, as in fio; when no size fits there, the size fits
    /// the region and the sequential run starts over, as fio does with a file that is done.
    #[inline(never)]
    fn drawn_block_size(&mut self, d: usize, file: usize) -> u64 {
        let offsets = &self.files[file].offsets;
        let whole = offsets.len();
        let room = if self.job.rw.kind.is_random() || self.job.rw.back > 0 {
            whole
        } else {
            offsets.seq_room()
        };
        let Some(sizes) = self.sizes[d].as_mut() else {
            return self.job.bs[d].min();
        };
        sizes
            .draw(room)
            .or_else(|| sizes.draw(whole))
            .unwrap_or_else(|| self.job.bs[d].min())
    }

    #[inline(always)]
    pub(super) fn pick_file(&mut self) -> usize {
        let n = self.files.len();
        if n == 1 {
            return 0;
        }
        if self.limited_open {
            return self.pick_open_file();
        }
        match self.job.file_service {
            FileService::RoundRobin => {
                let f = self.next_file;
                self.next_file = (f + 1) % n;
                f
            }
            FileService::Random => self.rng.below(n as u64) as usize,
            FileService::Sequential => {
                // Stay on a file for one region's worth of bytes, then move on.
                let f = self.next_file;
                let region = self.files[f].offsets.len().max(1);
                if self.issued_bytes > 0 && self.issued_bytes.is_multiple_of(region) {
                    self.next_file = (f + 1) % n;
                }
                self.next_file
            }
        }
    }
}
