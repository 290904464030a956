//! One job clone on one thread: set up its engine, wait at the group's start gate, then
//! queue → commit → reap until a stop rule fires.
//!
//! The IO path touches only this thread's own state: slots and buffers allocated at set-up,
//! plain counters and histograms, and a relaxed store into the worker's published counters.

use std::sync::Arc;
use std::time::{Duration, Instant};

use storbench_job::{FileService, JobSpec, RwKind};

use crate::buffers::{Arena, BufferFiller};
use crate::clock::Clock;
use crate::cpu::Usage;
use crate::engine::{
    Completion, Engine, EngineInfo, EngineSetup, FileId, FileSpec, IoKind, IoUnit, Queued,
};
use crate::error::EngineError;
use crate::gate::StartGate;
use crate::offsets::{OffsetGen, OffsetParams};
use crate::progress::{WorkerCounters, WorkerState};
use crate::rate::RateLimiter;
use crate::rng::Rng;
use crate::stats::{Measure, WorkerStats};
use crate::stop;

/// Builds one engine for one worker.
pub type EngineFactory = dyn Fn(&JobSpec) -> Result<Box<dyn Engine>, EngineError> + Sync;

/// A file as one worker uses it: how to open it and which byte range to do IO in.
#[derive(Clone, Debug)]
pub struct WorkerFile {
    pub spec: FileSpec,
    pub start: u64,
    pub len: u64,
}

/// Everything the runner prepared for one job clone.
pub struct WorkerPlan {
    pub job: Arc<JobSpec>,
    pub clone: u32,
    pub seed: u64,
    pub files: Vec<WorkerFile>,
    /// Bytes to issue before stopping (size-bound jobs); None: time or count bound.
    pub io_limit: Option<u64>,
    pub counters: Arc<WorkerCounters>,
    /// The run's clock (zero at the run's start), shared by all workers and the sampler.
    pub clock: Clock,
}

/// What a worker hands back when it ends.
pub struct WorkerOutput {
    pub stats: WorkerStats,
    pub cpu: Usage,
    /// Measurement window relative to the run epoch.
    pub measure_start: Duration,
    pub measure_end: Duration,
    /// From job start (after the gate) to the end, including ramp.
    pub elapsed: Duration,
    pub error: Option<EngineError>,
    pub engine_name: &'static str,
    pub engine_info: EngineInfo,
}

/// In-flight bookkeeping for one IO slot.
#[derive(Clone, Copy, Default)]
struct Slot {
    ddir: u8,
    sync: bool,
    len: u32,
    file: u32,
    offset: u64,
    t_start: u64,
    t_issue: u64,
}

struct OpenFile {
    id: FileId,
    offsets: OffsetGen,
    written: bool,
}

/// Runs one job clone to completion. Never panics on IO errors: they end up in `error`.
pub fn run_worker(plan: WorkerPlan, factory: &EngineFactory, gate: &StartGate) -> WorkerOutput {
    plan.counters.set_state(WorkerState::Setup);
    let mut out = WorkerOutput {
        stats: WorkerStats::default(),
        cpu: Usage::default(),
        measure_start: Duration::ZERO,
        measure_end: Duration::ZERO,
        elapsed: Duration::ZERO,
        error: None,
        engine_name: "",
        engine_info: EngineInfo::default(),
    };
    let mut worker = match Worker::set_up(&plan, factory) {
        Ok(w) => w,
        Err(e) => {
            gate.abandon();
            plan.counters.set_state(WorkerState::Error);
            out.error = Some(e);
            return out;
        }
    };
    out.engine_name = worker.engine.name();
    if !gate.arrive_and_wait() {
        let _ = worker.close_all();
        plan.counters.set_state(WorkerState::Done);
        return out;
    }
    let result = worker.run();
    let close = worker.finish();
    out.error = result.err().or(close.err());
    out.stats = std::mem::take(&mut worker.stats);
    out.cpu = worker.cpu;
    out.measure_start = worker
        .measure_start
        .saturating_duration_since(plan.clock.epoch());
    out.measure_end = worker
        .measure_end
        .saturating_duration_since(plan.clock.epoch());
    out.elapsed = worker
        .measure_end
        .saturating_duration_since(worker.job_start);
    out.engine_info = worker.engine.info();
    plan.counters.set_state(if out.error.is_some() {
        WorkerState::Error
    } else {
        WorkerState::Done
    });
    out
}

struct Worker<'p> {
    plan: &'p WorkerPlan,
    job: &'p JobSpec,
    engine: Box<dyn Engine>,
    arena: Arena,
    slots: Vec<Slot>,
    free: Vec<u32>,
    queued: Vec<u32>,
    /// Completions reaped but not yet accounted (iodepth_batch_complete_max).
    completions: Vec<Completion>,
    /// When the held-back completions completed.
    backlog_at: u64,
    files: Vec<OpenFile>,
    next_file: usize,
    rng: Rng,
    filler: BufferFiller,
    rate: [Option<RateLimiter>; 3],
    stats: WorkerStats,
    measure: Measure,
    depth: u32,
    synchronous: bool,
    no_data: bool,
    inflight: u32,
    // Issue accounting for stop rules.
    issued_bytes: u64,
    issued_ios: u64,
    writes_since_sync: u32,
    seq_run: u64,
    last_end: u64,
    trim_then_write: Option<(u32, u64, u32)>,
    // Time.
    clock: Clock,
    job_start: Instant,
    measuring: bool,
    /// Latest clock reading, ns since the epoch; stop rules compare against it.
    last_ns: u64,
    ramp_end_ns: u64,
    deadline_ns: u64,
    measure_start: Instant,
    measure_end: Instant,
    cpu_start: Usage,
    cpu: Usage,
}

impl<'p> Worker<'p> {
    fn set_up(plan: &'p WorkerPlan, factory: &EngineFactory) -> Result<Self, EngineError> {
        let job = &*plan.job;
        let mut engine = factory(job)?;
        let caps = engine.caps();
        let depth = if caps.synchronous {
            1
        } else {
            job.iodepth.max(1)
        };
        let max_bs = job.bs.iter().map(|b| b.max()).max().unwrap_or(4096).max(1);
        let arena = Arena::new(depth, max_bs as usize)
            .map_err(|e| EngineError::os("allocate IO buffers for", &job.name, e))?;
        engine.setup(&EngineSetup {
            iodepth: depth,
            arena: arena.base(),
            slot_len: arena.slot_len(),
            slots: arena.slots(),
        })?;
        let mut files = Vec::with_capacity(plan.files.len());
        for (i, f) in plan.files.iter().enumerate() {
            let id = engine.open(&f.spec)?;
            let block = job
                .bs
                .iter()
                .map(|b| b.min())
                .filter(|&b| b > 0)
                .min()
                .unwrap_or(4096);
            let offsets = OffsetGen::new(OffsetParams {
                start: f.start,
                len: f.len,
                block,
                hole: job.rw.hole,
                random_map: !job.norandommap,
                distribution: job.random_distribution,
                seed: plan.seed ^ (i as u64).wrapping_mul(0x9E37_79B9),
            });
            files.push(OpenFile {
                id,
                offsets,
                written: false,
            });
        }
        let mut filler = BufferFiller::new(job.buffers.clone(), plan.seed.rotate_left(17));
        let mut arena = arena;
        if !caps.no_data {
            for i in 0..arena.slots() {
                filler.fill(arena.slot_mut(i));
            }
        }
        let measure = Measure {
            slat: !job.disable_slat && caps.has_slat,
            clat: !job.disable_clat,
            lat: !job.disable_lat,
        };
        let now = Instant::now();
        Ok(Worker {
            plan,
            job,
            engine,
            arena,
            slots: vec![Slot::default(); depth as usize],
            free: (0..depth).rev().collect(),
            queued: Vec::with_capacity(depth as usize),
            completions: Vec::with_capacity(depth as usize),
            backlog_at: 0,
            files,
            next_file: 0,
            rng: Rng::seeded(plan.seed),
            filler,
            rate: std::array::from_fn(|d| {
                RateLimiter::new(
                    job.rate[d],
                    job.rate_iops[d],
                    job.rate_process,
                    plan.seed ^ d as u64,
                )
            }),
            stats: WorkerStats::default(),
            measure,
            depth,
            synchronous: caps.synchronous,
            no_data: caps.no_data,
            inflight: 0,
            issued_bytes: 0,
            issued_ios: 0,
            writes_since_sync: 0,
            seq_run: 0,
            last_end: 0,
            trim_then_write: None,
            clock: plan.clock,
            job_start: now,
            measuring: false,
            last_ns: 0,
            ramp_end_ns: 0,
            deadline_ns: u64::MAX,
            measure_start: now,
            measure_end: now,
            cpu_start: Usage::default(),
            cpu: Usage::default(),
        })
    }

    /// Reads the clock (ns since the run epoch) and remembers it for the stop rules.
    #[inline]
    fn clock(&mut self) -> u64 {
        self.last_ns = self.clock.now_ns();
        self.last_ns
    }

    fn run(&mut self) -> Result<(), EngineError> {
        let job = self.job;
        let (lo, hi) = job.startdelay;
        if hi > Duration::ZERO {
            let extra = if hi > lo {
                self.rng.below((hi - lo).as_nanos() as u64)
            } else {
                0
            };
            sleep_interruptible(lo + Duration::from_nanos(extra));
        }
        self.job_start = Instant::now();
        if job.ramp_time.is_zero() {
            self.begin_measuring();
        } else {
            self.plan.counters.set_state(WorkerState::Ramp);
        }
        let result = self.io_loop();
        if !self.measuring {
            self.begin_measuring();
        }
        self.measure_end = Instant::now();
        self.cpu = Usage::thread().since(&self.cpu_start);
        result
    }

    fn io_loop(&mut self) -> Result<(), EngineError> {
        let job = self.job;
        self.ramp_end_ns = self.clock() + job.ramp_time.as_nanos() as u64;
        let mut checks = 0u32;
        loop {
            if self.should_stop_issuing(&mut checks) {
                break;
            }
            if !self.fill_queue()? {
                // Rate limiter asked us to wait.
                self.wait_for_rate()?;
            }
            self.commit()?;
            if self.inflight > 0 {
                let full = self.inflight >= self.depth || self.free.is_empty();
                let min = if full {
                    job.iodepth_batch_complete_min.max(1) as usize
                } else {
                    0
                };
                self.reap(min)?;
            }
        }
        self.drain()?;
        self.plan.counters.set_state(WorkerState::Finishing);
        if job.end_fsync && self.files.iter().any(|f| f.written) {
            self.sync_all(IoKind::Fsync)?;
        }
        Ok(())
    }

    fn begin_measuring(&mut self) {
        self.measuring = true;
        self.stats = WorkerStats::default();
        self.measure_start = Instant::now();
        self.cpu_start = Usage::thread();
        let now = self.clock();
        self.deadline_ns = self
            .job
            .runtime
            .map_or(u64::MAX, |rt| now.saturating_add(rt.as_nanos() as u64));
        self.plan.counters.set_measure_start(now);
        self.plan.counters.set_state(WorkerState::Running);
    }

    /// The stop rules, cheap enough to check before every IO: the clock is the latest
    /// reading the IO path already took (read here only when latencies are not measured).
    fn should_stop_issuing(&mut self, checks: &mut u32) -> bool {
        *checks = checks.wrapping_add(1);
        let periodic = (*checks).is_multiple_of(32);
        if periodic && stop::requested() {
            return true;
        }
        if self.limit_reached() {
            return true;
        }
        if periodic || !self.measure.any() && (*checks).is_multiple_of(4) {
            self.clock();
        }
        if !self.measuring && self.last_ns >= self.ramp_end_ns {
            self.begin_measuring();
        }
        self.measuring && self.last_ns >= self.deadline_ns
    }

    /// Queues IOs until the depth is reached. False if the rate limiter holds us back.
    fn fill_queue(&mut self) -> Result<bool, EngineError> {
        let batch = self.job.iodepth_batch_submit.max(1) as usize;
        // At most one queue's worth per call, so the stop rules run between IOs even when
        // a synchronous engine completes each IO at once.
        for _ in 0..self.depth {
            if self.inflight + (self.queued.len() as u32) >= self.depth {
                break;
            }
            if self.limit_reached() {
                return Ok(true);
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
            let t_start = if self.measure.any() { self.clock() } else { 0 };
            let (ddir, file, offset, len) = self.next_io();
            if let Some(rl) = &mut self.rate[ddir as usize] {
                if !rl.ready(self.clock.now_ns()) {
                    self.free.push(slot);
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
                t_start,
                t_issue: 0,
            };
            if !self.issue(slot)? {
                break;
            }
            self.issued_bytes += len as u64;
            self.issued_ios += 1;
            if ddir == 1 {
                self.files[file as usize].written = true;
                self.writes_since_sync += 1;
            }
            if self.queued.len() >= batch {
                self.commit()?;
            }
        }
        Ok(true)
    }

    fn limit_reached(&self) -> bool {
        self.plan.io_limit.is_some_and(|l| self.issued_bytes >= l)
            || self.job.number_ios.is_some_and(|n| self.issued_ios >= n)
    }

    fn sync_due(&self) -> bool {
        let every = if self.job.fsync > 0 {
            self.job.fsync
        } else {
            self.job.fdatasync
        };
        every > 0 && self.writes_since_sync >= every
    }

    /// Hands slot `slot` to the engine. False if the engine is busy (slot returned).
    fn issue(&mut self, slot: u32) -> Result<bool, EngineError> {
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
        }
        let io = IoUnit {
            file: self.files[s.file as usize].id,
            kind,
            offset: s.offset,
            len: s.len,
            buf,
            buf_index: slot,
            tag: slot,
        };
        if self.synchronous {
            let t_issue = if self.measure.any() { self.clock() } else { 0 };
            self.slots[slot as usize].t_issue = t_issue;
            return match self.engine.queue(&io)? {
                Queued::Done(n) => {
                    if self.measuring {
                        self.stats.mark_depth(1, 1);
                    }
                    if self.measuring && !self.no_data {
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
            };
        }
        match self.engine.queue(&io)? {
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
        }
    }

    /// Picks direction, file, offset and length of the next IO.
    #[inline]
    fn next_io(&mut self) -> (u8, u32, u64, u32) {
        let job = self.job;
        if let Some((file, offset, len)) = self.trim_then_write.take() {
            return (1, file, offset, len);
        }
        let ddir: u8 = match job.rw.kind {
            RwKind::Read | RwKind::RandRead => 0,
            RwKind::Write | RwKind::RandWrite => 1,
            RwKind::Trim | RwKind::RandTrim | RwKind::TrimWrite | RwKind::RandTrimWrite => 2,
            RwKind::ReadWrite | RwKind::RandRw => {
                if self.rng.percent(job.rwmixread) {
                    0
                } else {
                    1
                }
            }
        };
        let bs = self.block_size(ddir as usize);
        let len = self.fit_to_limit(ddir as usize, bs);
        let file = self.pick_file();
        let random =
            job.rw.kind.is_random() && self.rng.percent(job.percentage_random[ddir as usize]);
        let offsets = &mut self.files[file].offsets;
        let len = len.min(offsets.len()).max(1);
        let offset = if random {
            if self.seq_run > 0 {
                self.seq_run -= 1;
                offsets.next_sequential(len)
            } else {
                self.seq_run = job.rw.nr.saturating_sub(1);
                let off = offsets.next_random(&mut self.rng, len);
                offsets.continue_from(off);
                offsets.next_sequential(len)
            }
        } else {
            offsets.next_sequential(len)
        };
        self.last_end = offset + len;
        if matches!(job.rw.kind, RwKind::TrimWrite | RwKind::RandTrimWrite) {
            self.trim_then_write = Some((file as u32, offset, len as u32));
        }
        (ddir, file as u32, offset, len as u32)
    }

    /// Like fio, never issues more than a size-bound job's bytes: with mixed block sizes the
    /// last IO shrinks to what is left, in whole minimum blocks.
    #[inline]
    fn fit_to_limit(&self, d: usize, len: u64) -> u64 {
        let Some(limit) = self.plan.io_limit else {
            return len;
        };
        let left = limit.saturating_sub(self.issued_bytes);
        if len <= left {
            return len;
        }
        // Less than this direction's smallest block left (rw with bs=4k,8k): finish with
        // what is left, which is whole blocks of the job's smallest size.
        let min = self.job.bs[d].min().max(1);
        if left >= min { left / min * min } else { left }
    }

    #[inline]
    fn block_size(&mut self, d: usize) -> u64 {
        use storbench_job::BlockSize;
        match &self.job.bs[d] {
            BlockSize::Fixed(b) => *b,
            BlockSize::Range { min, max } => {
                let steps = (max - min) / min;
                min + self.rng.below(steps + 1) * min
            }
            BlockSize::Split(parts) => {
                let mut pick = self.rng.below(100) as u32;
                for (bs, weight) in parts {
                    if pick < *weight {
                        return *bs;
                    }
                    pick -= weight;
                }
                parts.last().map_or(4096, |p| p.0)
            }
        }
    }

    #[inline]
    fn pick_file(&mut self) -> usize {
        let n = self.files.len();
        if n == 1 {
            return 0;
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

    fn commit(&mut self) -> Result<(), EngineError> {
        if self.queued.is_empty() {
            return Ok(());
        }
        self.engine.commit()?;
        let nr = self.queued.len() as u64;
        let t_issue = if self.measure.any() { self.clock() } else { 0 };
        self.inflight += nr as u32;
        if self.measuring {
            self.stats.mark_submit(nr);
            self.stats.mark_depth(self.inflight, nr);
        }
        for i in 0..self.queued.len() {
            let slot = self.queued[i] as usize;
            self.slots[slot].t_issue = t_issue;
            let s = self.slots[slot];
            if self.measuring && self.measure.slat && !s.sync {
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
    fn reap(&mut self, min: usize) -> Result<(), EngineError> {
        let mut done = std::mem::take(&mut self.completions);
        let mut result = Ok(());
        if done.is_empty() {
            result = self.engine.reap(min, &mut done);
            self.backlog_at = if self.measure.any() { self.clock() } else { 0 };
        }
        let t_done = self.backlog_at;
        let max = match self.job.iodepth_batch_complete_max {
            0 => done.len(),
            m => (m as usize).min(done.len()),
        };
        if self.measuring && max > 0 {
            self.stats.mark_complete(max as u64);
        }
        for c in done.drain(..max) {
            self.inflight = self.inflight.saturating_sub(1);
            if result.is_ok() {
                result = self.complete(c.tag, c.result, t_done);
            } else {
                self.free.push(c.tag);
            }
        }
        self.completions = done;
        result
    }

    /// Accounts one finished IO and frees its slot.
    #[inline]
    fn complete(&mut self, slot: u32, result: i64, t_done: u64) -> Result<(), EngineError> {
        self.free.push(slot);
        let s = self.slots[slot as usize];
        if s.sync {
            self.stats
                .sync_done(self.measure.clat.then(|| t_done.saturating_sub(s.t_issue)));
            return check(result, "fsync", &self.plan.files[s.file as usize].spec.path);
        }
        if result < 0 {
            let op = ["read", "write", "trim"][s.ddir as usize];
            return check(result, op, &self.plan.files[s.file as usize].spec.path);
        }
        if result == 0 && s.len > 0 && s.ddir == 0 {
            return Err(EngineError::new(
                crate::error::ErrorKind::Os,
                format!(
                    "read {} at offset {}: unexpected end of file",
                    self.plan.files[s.file as usize].spec.path, s.offset
                ),
            ));
        }
        if !self.measuring {
            self.plan.counters.publish_pre(self.issued_bytes);
            return Ok(());
        }
        let d = s.ddir as usize;
        let clat = self.measure.clat.then(|| t_done.saturating_sub(s.t_issue));
        let lat = self.measure.lat.then(|| t_done.saturating_sub(s.t_start));
        self.stats
            .complete(d, result as u64, (result as u64) < s.len as u64, clat, lat);
        let dir = &self.stats.dirs[d];
        self.plan
            .counters
            .publish(d, dir.io_bytes, dir.total_ios, dir.clat.sum_ns as u64);
        Ok(())
    }

    fn wait_for_rate(&mut self) -> Result<(), EngineError> {
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
            self.commit()?;
            return self.reap(0);
        }
        if wait > 0 {
            sleep_interruptible(Duration::from_nanos(wait.min(50_000_000)));
        }
        Ok(())
    }

    /// Waits for every in-flight IO.
    fn drain(&mut self) -> Result<(), EngineError> {
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
    fn sync_all(&mut self, kind: IoKind) -> Result<(), EngineError> {
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
            };
            let io = IoUnit {
                file: self.files[f].id,
                kind,
                offset: 0,
                len: 0,
                buf: self.arena.slot_ptr(slot),
                buf_index: slot,
                tag: slot,
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
            }
        }
        Ok(())
    }

    /// End of job: fsync_on_close, then close every file.
    fn finish(&mut self) -> Result<(), EngineError> {
        let mut first_err = None;
        if self.job.fsync_on_close
            && self.files.iter().any(|f| f.written)
            && let Err(e) = self.drain().and_then(|_| self.sync_all(IoKind::Fsync))
        {
            first_err = Some(e);
        }
        if let Err(e) = self.close_all() {
            first_err.get_or_insert(e);
        }
        first_err.map_or(Ok(()), Err)
    }

    fn close_all(&mut self) -> Result<(), EngineError> {
        let mut first_err = None;
        let _ = self.drain();
        for f in &self.files {
            if let Err(e) = self.engine.close(f.id) {
                first_err.get_or_insert(e);
            }
        }
        self.files.clear();
        first_err.map_or(Ok(()), Err)
    }
}

fn check(result: i64, op: &str, path: &str) -> Result<(), EngineError> {
    if result < 0 {
        Err(EngineError::errno(op, path, (-result) as i32))
    } else {
        Ok(())
    }
}

/// Sleeps, waking early if a stop is requested.
pub fn sleep_interruptible(d: Duration) {
    let end = Instant::now() + d;
    while !stop::requested() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}
