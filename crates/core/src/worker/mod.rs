//! One job clone on one thread: set up its engine, wait at the group's start gate, then
//! queue → commit → reap until a stop rule fires.
//!
//! The IO path touches only this thread's own state: slots and buffers allocated at set-up,
//! plain counters and histograms, and a relaxed store into the worker's published counters.
//! `issue.rs` decides and queues the next IOs, `complete.rs` submits, reaps and accounts,
//! `passes.rs` decides, as fio does, when the end of a pass over a file drops its page cache.

mod cmdprio;
mod complete;
mod errors;
mod issue;
mod keeprun;
mod latency;
mod logging;
mod minrate;
mod openfiles;
mod passes;
mod preread;
mod pseudo;
mod strided;
mod think;
mod together;
mod verifying;

pub use passes::region_pass;

use std::sync::Arc;
use std::time::{Duration, Instant};

use storbench_job::{
    FadviseHint, JobSpec, RandomDistribution, RandomGenerator, RwKind, VerifyKind, ZoneMode,
};

use crate::buffers::{Arena, BufferFiller, unique_base};
use crate::clock::Clock;
use crate::cpu::Usage;
use crate::engine::{
    Access, Completion, Engine, EngineInfo, EngineSetup, FileId, FileSpec, IoKind,
};
use crate::error::EngineError;
use crate::gate::Gate;
use crate::offsets::{FioMap, MapAgain, OffsetGen, OffsetParams, SizeDraw, ZoneIndex};
use crate::progress::{WorkerCounters, WorkerState};
use crate::rate::RateLimiter;
use crate::server::ServerProcess;
use crate::stats::{Measure, WorkerStats};
use crate::stop;
use latency::LatStep;
use storbench_model::rng::{FIO_RAND_MIX_OFF, FioRand, Rng};
pub use together::{Flow, Together};

/// Builds one worker's engine in the worker's own thread, after it is pinned: the runner's
/// `storbench_engines::create` (storbench-run), a test's recording engine here.
pub type EngineFactory = dyn Fn(&JobSpec) -> Result<Box<dyn Engine>, EngineError> + Sync;

/// A file as one worker uses it: how to open it and which byte range to do IO in.
#[derive(Clone, Debug)]
pub struct WorkerFile {
    pub spec: FileSpec,
    pub start: u64,
    pub len: u64,
    /// The file's size.
    pub size: u64,
    /// The region runs to the end of the file: a random job's sequential run jumps there,
    /// where a shorter region ends the file.
    pub ends_file: bool,
    /// A skip (`rw=read:N`) past the region's last block wraps silently (see `passes.rs`).
    pub skip_wraps: bool,
}

/// Everything the runner prepared for one job clone.
pub struct WorkerPlan {
    pub job: Arc<JobSpec>,
    pub clone: u32,
    /// fio's thread number, from 0 over the whole run's clones (`cpus_allowed_policy`).
    pub thread: u32,
    pub seed: u64,
    pub files: Vec<WorkerFile>,
    /// Bytes to issue before stopping (size-bound jobs); None: time or count bound.
    pub io_limit: Option<u64>,
    pub counters: Arc<WorkerCounters>,
    /// The run's clock (zero at the run's start), shared by all workers and the sampler.
    pub clock: Clock,
    /// Where per-IO log records and histogram lines go, when the job writes such logs.
    pub log: Option<storbench_model::iolog::IoLogger>,
    /// The worker runs in a process of its own (`crates/run/src/forked.rs`): its process's other
    /// threads (glibc's AIO helpers) are its own, measured with it.
    pub own_process: bool,
    /// What the clone shares with the other jobs of its batch (`wait_for`, `flow`).
    pub together: Together,
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
    /// The queue depth a `latency_target` search ended at.
    pub latency_depth: Option<u32>,
    /// For a worker in a process of its own, the CPU of that process's other threads over
    /// its measurement; None for a thread, whose helpers the runner apportions.
    pub helper_ns: Option<u64>,
    /// The process it ran in, when not this one (fio's `pid=` of the job).
    pub pid: Option<u32>,
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
    /// A read of the verify phase: `piece` is its entry in the write log.
    verify: bool,
    piece: u32,
}

struct OpenFile {
    id: FileId,
    offsets: OffsetGen,
    written: bool,
    ends_file: bool,
    skip_wraps: bool,
    /// With fio's `openfiles` (`openfiles.rs`): whether the file is open now, whether its
    /// region was issued, the bytes issued to it and its region's bytes.
    open: bool,
    done: bool,
    issued: u64,
    pass: u64,
}

/// The access pattern announced for the job's files: fio's `fadvise_hint`, whose default
/// says random for rand* workloads and sequential otherwise.
fn access_hint(job: &JobSpec) -> Option<Access> {
    match job.fadvise_hint {
        FadviseHint::None => None,
        FadviseHint::Random => Some(Access::Random),
        FadviseHint::Sequential => Some(Access::Sequential),
        FadviseHint::Pattern if job.rw.kind.is_random() => Some(Access::Random),
        FadviseHint::Pattern => Some(Access::Sequential),
    }
}

/// Where the first of a size-bound job's loops ends, and each loop's bytes, when the job
/// ends each loop with its closing syncs (as fio does); else no boundary.
fn loop_bounds(job: &JobSpec, io_limit: Option<u64>) -> (u64, u64) {
    let loops = u64::from(job.loops.max(1));
    match io_limit {
        Some(limit) if loops > 1 && (job.end_fsync || job.fsync_on_close) => {
            (limit / loops, limit / loops)
        }
        _ => (u64::MAX, 0),
    }
}

/// Runs one job clone to completion. Never panics on IO errors: they end up in `error`.
pub fn run_worker(mut plan: WorkerPlan, factory: &EngineFactory, gate: &dyn Gate) -> WorkerOutput {
    let log = plan.log.take();
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
        latency_depth: None,
        helper_ns: None,
        pid: None,
    };
    let pinned = match plan.job.cpus_for_thread(plan.thread) {
        Some(cpus) => crate::cpu::run_on(&cpus),
        None => Ok(()),
    }
    .and_then(|()| crate::cpu::add_nice(plan.job.nice))
    .and_then(|()| crate::cpu::set_ioprio(plan.job.prioclass, plan.job.prio))
    .and_then(|()| match &plan.job.numa_cpu_nodes {
        Some(nodes) => crate::numa::run_on_nodes(nodes),
        None => Ok(()),
    })
    .and_then(|()| match &plan.job.numa_mem {
        Some(policy) => crate::numa::set_mem_policy(policy),
        None => Ok(()),
    });
    let mut worker = match pinned.and_then(|()| Worker::set_up(&plan, factory, log)) {
        Ok(w) => w,
        Err(e) => {
            gate.abandon();
            plan.counters.set_state(WorkerState::Error);
            out.error = Some(e);
            return out;
        }
    };
    out.engine_name = worker.engine.name();
    if let Some(addr) = worker.engine.server_addr() {
        // Reading every process's descriptors takes a while on a busy host: here, before
        // the start, not in the sampler while others measure.
        let process = ServerProcess::find(addr, worker.engine.client_addr());
        plan.counters.set_server(addr, process);
    }
    // A thread woken at the start waits for a CPU before it can read anything: its wait
    // counts from here (waiting at the gate is sleeping, not waiting for a CPU).
    let waiting_from = Usage::thread().wait_ns;
    let Some(start_ns) = gate.arrive_and_wait() else {
        let _ = worker.close_all();
        plan.counters.set_state(WorkerState::Done);
        return out;
    };
    let result = worker.run(start_ns, waiting_from);
    let close = worker.finish();
    if let Some(cmd) = &plan.job.coord.exec_postrun {
        // fio ignores how the command ends.
        let _ = together::exec(&plan.job, cmd, "postrun");
    }
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
    out.stats.dirs[0].drop_ios += worker.engine.dropped_reads();
    out.latency_depth = worker.lat.as_ref().map(|l| l.qd);
    out.helper_ns = worker.helper_ns;
    plan.counters.set_state(if out.error.is_some() {
        WorkerState::Error
    } else {
        WorkerState::Done
    });
    out
}

struct Worker<'p> {
    plan: &'p WorkerPlan,
    /// The plan's published counters, reached once: they sit behind the handle's pointer
    /// to their shared mapping, and every completion publishes.
    counters: &'p crate::progress::Cells,
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
    /// fio's rwmix state: its generator, the direction in force, the issues at which it
    /// is drawn again, and the IOs issued per direction (`issue.rs`, `next_ddir`).
    mix: FioRand,
    mix_ddir: u8,
    mix_issues: u64,
    dir_issues: [u64; 2],
    filler: BufferFiller,
    rate: [Option<RateLimiter>; 3],
    stats: WorkerStats,
    measure: Measure,
    depth: u32,
    synchronous: bool,
    no_data: bool,
    /// The engine does no IO on any file (cpuio, exec): the job runs `pseudo.rs`'s loop.
    no_file: bool,
    /// Completed reads until the next one is checked for never-written data (`zeros.rs`);
    /// u32::MAX for engines that move no data.
    zero_countdown: u32,
    /// When a pass over a file drops its page cache, as fio decides (`passes.rs`).
    cache: passes::CacheRule,
    /// Issued bytes at which the current round ends (fio reopens the files) and a
    /// round's bytes; u64::MAX when the job makes one round.
    round_end: u64,
    round_bytes: u64,
    /// Issued bytes at which the current loop ends, when a size-bound job of several
    /// loops ends each with its closing syncs (u64::MAX otherwise), and a loop's bytes.
    loop_end: u64,
    loop_bytes: u64,
    /// What `limit_reached` compares with: the lower of io_size and `loop_end`, and
    /// number_ios (u64::MAX where unset).
    stop_bytes: u64,
    stop_ios: u64,
    /// Each direction's block size when it is fixed (0 when drawn), and the writes
    /// between fsyncs or fdatasyncs (u32::MAX for none): read before every IO.
    fixed_bs: [u64; 3],
    /// Each direction's block size draws when its size varies (see `offsets::SizeDraw`).
    sizes: [Option<SizeDraw>; 3],
    sync_every: u32,
    /// The job verifies, is rate-limited, thinks, searches a latency target, checks
    /// rate_min, has a flow or limits its open files: the IO loop asks about each only
    /// when this is set (`with_flags`).
    extras: bool,
    /// max_latency or a latency target is checked on each completed read or write.
    lat_checks: bool,
    /// The job logs each IO or keeps per-priority latencies: `record_io` runs on each
    /// completed IO only when this is set.
    io_records: bool,
    /// Strided zones or a limited number of open files follow each IO's placement: the
    /// IO path asks about them only when this is set (`issue.rs`, `next_io`).
    shaped: bool,
    /// The job's IO is over and only its closing syncs run: fio times them into the
    /// runtime but does not count them as sync IOs.
    closing: bool,
    inflight: u32,
    /// fio's random map found no place for the next IO (`offsets::FioMap`): the job's
    /// file is done and it ends, as fio's does.
    files_done: bool,
    /// The clone keeps fewer files open than it has (`openfiles.rs`), and a file is done
    /// and waits to be closed before the next IO.
    limited_open: bool,
    rotate: bool,
    // Issue accounting for stop rules.
    issued_bytes: u64,
    issued_ios: u64,
    /// Bytes written, for fio's rule on another pass (`keeprun.rs`), which counts a
    /// verifying job's writes again as their reads.
    written_bytes: u64,
    /// fio's rule on another pass for a job with io_size (`keeprun.rs`).
    keep: Option<keeprun::KeepRunning>,
    writes_since_sync: u32,
    seq_run: u64,
    last_end: u64,
    trim_then_write: Option<(u32, u64, u32)>,
    /// An IO drawn (direction, file, offset, length) that the rate limiter held back; it is
    /// issued next, so the offset sequence and random map lose nothing while waiting.
    held: Option<(u8, u32, u64, u32)>,
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
    /// The whole process's usage at `cpu_start`, and its other threads' CPU over the
    /// measurement, for a worker in a process of its own.
    process_start: Usage,
    helper_ns: Option<u64>,
    /// fio's data verification, when the job verifies (`verifying.rs`).
    verify: Option<verifying::VerifyState>,
    /// fio's latency-target search (`latency.rs`), a quiesce it asked for on a
    /// completion, and the end of its final window.
    lat: Option<latency::LatSearch>,
    lat_quiesce: bool,
    lat_done: bool,
    /// fio's thinktime pauses (`think.rs`), when the job has them.
    think: Option<think::Think>,
    /// fio's rate_min and rate_iops_min (`minrate.rs`), when the job has them.
    min_rate: Option<minrate::MinRate>,
    /// The clone's share of its `flow` (`together.rs`), when the job has one.
    flow: Option<together::FlowShare>,
    /// fio's `iodepth_low`: the queue filled up and drains to this depth before more IO
    /// is queued (`draining`).
    depth_low: u32,
    draining: bool,
    /// fio's per-IO and histogram logs (`logging.rs`), when the job writes them.
    logging: Option<logging::Logging>,
    /// fio's strided zones over the job's one file (`strided.rs`).
    strided: Option<strided::Strided>,
    /// fio's per-IO priorities (`cmdprio.rs`), when the job gives them, and the job's own
    /// priority (0: none), which the IO log shows for an IO without one of its own.
    cmdprio: Option<Box<cmdprio::PrioDraw>>,
    own_ioprio: u16,
}

/// Opens the plan's files, advises them as fio does and sets up their offsets.
fn open_files(plan: &WorkerPlan, engine: &mut dyn Engine) -> Result<Vec<OpenFile>, EngineError> {
    let job = &*plan.job;
    // fio's blockalign, else the smallest block size: the unit offsets are multiples of.
    let block = job
        .bs
        .iter()
        .zip(job.blockalign)
        .map(|(b, ba)| ba.unwrap_or(b.min()))
        .filter(|&b| b > 0)
        .min()
        .unwrap_or(4096);
    let fixed = passes::job_block(job).1;
    let strided = job.zoning.mode == ZoneMode::Strided;
    let mut files = Vec::with_capacity(plan.files.len());
    let opened = job.openfiles.map_or(usize::MAX, |n| n as usize);
    for (i, f) in plan.files.iter().enumerate() {
        let open = i < opened;
        // Strided zones draw the offsets over one zone, never past it.
        let len = if strided {
            strided::Strided::zone_len(&job.zoning, f.len)
        } else {
            f.len
        };
        // A file beyond `openfiles` opens when its turn comes (`openfiles.rs`).
        let id = if open { engine.open(&f.spec)? } else { 0 };
        if let Some(access) = access_hint(job).filter(|_| open) {
            // As in fio, a refused hint is no reason to fail the job.
            let _ = engine.advise(id, access);
        }
        let offsets = OffsetGen::new(OffsetParams {
            start: f.start,
            len,
            block,
            hole: job.rw.hole,
            back: job.rw.back,
            cross_room: if fixed && !strided {
                f.size.saturating_sub(f.start)
            } else {
                0
            },
            random_map: !job.norandommap,
            distribution: job.random_distribution,
            zones: zone_index(job, len, block)?,
            // A target without a size (the null engine's) has room for its region.
            fio_map: fio_map(
                plan,
                len,
                Some(f.size.saturating_sub(f.start))
                    .filter(|&r| r > 0 && !strided)
                    .unwrap_or(len),
            ),
            seed: plan.seed ^ (i as u64).wrapping_mul(0x9E37_79B9),
        });
        files.push(OpenFile {
            id,
            offsets,
            written: false,
            ends_file: f.ends_file,
            skip_wraps: f.skip_wraps,
            open,
            done: false,
            issued: 0,
            pass: region_pass(job, f.start, f.len, f.size).bytes.max(1),
        });
    }
    Ok(files)
}

/// fio's own random map for a random mix whose directions have different fixed block
/// sizes, or for random IO whose block size varies (see [`FioMap`]): fio's arithmetic
/// decides how much such a job moves. One file,
/// fio's default generator and the uniform distribution; other jobs keep the permutation.
fn fio_map(plan: &WorkerPlan, len: u64, room: u64) -> Option<(FioMap, MapAgain)> {
    let job = &*plan.job;
    let kind = job.rw.kind;
    let fixed = job.bs.iter().all(|b| b.min() == b.max());
    let used: Vec<u64> = [kind.reads(), kind.writes(), kind.trims()]
        .iter()
        .zip(&job.bs)
        .filter(|(u, _)| **u)
        .map(|(_, b)| b.min())
        .collect();
    let differ = used.windows(2).any(|w| w[0] != w[1]);
    let eligible = kind.is_random()
        && !job.norandommap
        && job.random_distribution == RandomDistribution::Random
        && job.random_generator == RandomGenerator::Tausworthe
        && job.blockalign.iter().all(Option::is_none)
        && job.rw.nr <= 1
        && job.percentage_random.iter().all(|&p| p == 100)
        && plan.files.len() == 1
        && if fixed {
            differ
        } else {
            !matches!(kind, RwKind::TrimWrite | RwKind::RandTrimWrite)
        };
    if !eligible {
        return None;
    }
    let unit = std::array::from_fn(|d| job.bs[d].min());
    let thread = job.randrepeat.then_some(plan.thread + 1);
    // A done file: time_based goes on in place; loops and io_size open it again.
    let again = if job.time_based {
        MapAgain::InPlace
    } else if job.io_size.is_some() {
        MapAgain::Reopen { left: u32::MAX }
    } else {
        MapAgain::Reopen {
            left: job.loops.max(1) - 1,
        }
    };
    let map = FioMap::new(len, room, unit, thread, plan.seed).with_sizes(&job.bs, bs_seeds(plan));
    Some((map, again))
}

/// The seeds of fio's block size generators (`bsrange_state`), one per direction: with
/// `randrepeat` fio's slots 0 to 2 by thread number, the writes' taking the reads' when the
/// job verifies (so a read back draws the sizes written).
fn bs_seeds(plan: &WorkerPlan) -> [u64; 3] {
    let job = &*plan.job;
    let mut seeds: [u64; 3] = std::array::from_fn(|d| {
        if job.randrepeat {
            FioRand::seed_for(job.randseed, plan.thread + 1, d as u32)
        } else {
            plan.seed ^ (d as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        }
    });
    if job.verify.kind != VerifyKind::None {
        seeds[1] = seeds[0];
    }
    seeds
}

/// fio's zone table over one file's region, for a `zoned`/`zoned_abs` job; a zone past the
/// region's end is the job's error before any IO.
fn zone_index(job: &JobSpec, len: u64, block: u64) -> Result<Option<ZoneIndex>, EngineError> {
    let absolute = match job.random_distribution {
        RandomDistribution::Zoned => false,
        RandomDistribution::ZonedAbs => true,
        _ => return Ok(None),
    };
    ZoneIndex::new(&job.zones, absolute, (len / block).max(1), block)
        .map(Some)
        .map_err(EngineError::unsupported)
}

/// The buffer filler of the job, with every slot of `arena` filled once (engines that
/// move data only).
fn fill_buffers(plan: &WorkerPlan, arena: &mut Arena, no_data: bool) -> BufferFiller {
    let peers = &plan.together.dedupe_peers;
    let mut filler = match peers.iter().position(|&t| t == plan.thread) {
        Some(me) => {
            let bases = peers
                .iter()
                .map(|&t| unique_base(plan.job.randseed, t))
                .collect();
            let mut f = BufferFiller::new(
                plan.job.buffers.clone(),
                unique_base(plan.job.randseed, plan.thread),
            );
            f.share_working_set(bases, me);
            f
        }
        None => BufferFiller::new(plan.job.buffers.clone(), plan.seed.rotate_left(17)),
    };
    if !no_data {
        for i in 0..arena.slots() {
            filler.fill(arena.slot_mut(i));
        }
    }
    filler
}

impl<'p> Worker<'p> {
    fn set_up(
        plan: &'p WorkerPlan,
        factory: &EngineFactory,
        log: Option<storbench_model::iolog::IoLogger>,
    ) -> Result<Self, EngineError> {
        let job = &*plan.job;
        let mut engine = factory(job)?;
        let caps = engine.caps();
        let depth = if caps.synchronous {
            1
        } else {
            job.iodepth.max(1)
        };
        let max_bs = job.bs.iter().map(|b| b.max()).max().unwrap_or(4096).max(1);
        let mut arena = Arena::new(depth, max_bs as usize)
            .map_err(|e| EngineError::os("allocate IO buffers for", &job.name, e))?;
        engine.setup(&EngineSetup {
            iodepth: depth,
            arena: arena.base(),
            slot_len: arena.slot_len(),
            slots: arena.slots(),
        })?;
        let files = open_files(plan, engine.as_mut())?;
        let filler = fill_buffers(plan, &mut arena, caps.no_data);
        let mut stats = WorkerStats::default();
        let prio_draw = cmdprio::PrioDraw::new(job, plan.seed, depth)?.map(|(draw, lists)| {
            stats.set_prios(&lists);
            Box::new(draw)
        });
        let measure = Measure::new(
            !job.disable_slat && caps.has_slat,
            !job.disable_clat,
            !job.disable_lat,
        );
        let now = Instant::now();
        let (loop_end, loop_bytes) = loop_bounds(job, plan.io_limit);
        let region = plan
            .files
            .iter()
            .map(|f| region_pass(job, f.start, f.len, f.size).bytes)
            .sum();
        let round_bytes = passes::round_bytes(plan.io_limit.map(|_| region), caps.synchronous);
        let cache = passes::CacheRule::new(job, files.len());
        Ok(Worker {
            plan,
            counters: &plan.counters,
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
            // fio seeds the direction draws by thread number, not by name, so a mixed
            // job's directions are fio's own when runs are repeatable.
            mix: FioRand::seeded(if job.randrepeat {
                FioRand::seed_for(job.randseed, plan.thread + 1, FIO_RAND_MIX_OFF)
            } else {
                plan.seed
            }),
            mix_ddir: 0,
            mix_issues: 0,
            dir_issues: [0; 2],
            filler,
            rate: std::array::from_fn(|d| {
                RateLimiter::new(
                    job.rate[d],
                    job.rate_iops[d],
                    job.rate_process,
                    plan.seed ^ d as u64,
                )
            }),
            stats,
            measure,
            depth,
            synchronous: caps.synchronous,
            no_data: caps.no_data,
            no_file: job.has_no_file(),
            zero_countdown: if caps.no_data {
                u32::MAX
            } else {
                storbench_model::result::ZERO_SAMPLE_EVERY
            },
            cache,
            round_end: round_bytes,
            round_bytes,
            closing: false,
            loop_end,
            loop_bytes,
            stop_bytes: 0,
            stop_ios: job.number_ios.unwrap_or(u64::MAX),
            fixed_bs: std::array::from_fn(|d| match job.bs[d] {
                storbench_job::BlockSize::Fixed(b) => b,
                _ => 0,
            }),
            sizes: {
                let seeds = bs_seeds(plan);
                std::array::from_fn(|d| SizeDraw::new(&job.bs[d], seeds[d]))
            },
            extras: false,
            lat_checks: false,
            io_records: false,
            shaped: false,
            sync_every: match (job.fsync, job.fdatasync) {
                (0, 0) => u32::MAX,
                (0, n) | (n, _) => n,
            },
            inflight: 0,
            files_done: false,
            limited_open: job.openfiles.is_some(),
            rotate: false,
            issued_bytes: 0,
            issued_ios: 0,
            written_bytes: 0,
            keep: keeprun::KeepRunning::new(job, plan.files.len()),
            writes_since_sync: 0,
            seq_run: 0,
            last_end: 0,
            trim_then_write: None,
            held: None,
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
            process_start: Usage::default(),
            helper_ns: None,
            verify: verifying::VerifyState::new(plan, caps.no_data)?,
            lat: latency::LatSearch::new(&job.latency, depth),
            lat_quiesce: false,
            lat_done: false,
            think: think::Think::new(&job.think),
            min_rate: minrate::MinRate::new(job),
            flow: together::FlowShare::new(&plan.together, job),
            depth_low: low_mark(job.iodepth_low, depth),
            draining: false,
            logging: log.map(|l| logging::Logging::new(l, job)),
            strided: (job.zoning.mode == ZoneMode::Strided)
                .then(|| plan.files.first())
                .flatten()
                .map(|f| strided::Strided::new(&job.zoning, f.start, f.size.max(f.start + 1))),
            cmdprio: prio_draw,
            own_ioprio: cmdprio::own_ioprio(job),
        }
        .with_flags())
    }

    /// What the IO loop reads before each IO instead of asking each feature.
    fn with_flags(mut self) -> Worker<'p> {
        self.extras = self.verify.is_some()
            || self.rate.iter().any(Option::is_some)
            || self.think.is_some()
            || self.lat.is_some()
            || self.min_rate.is_some()
            || self.flow.is_some()
            || self.limited_open;
        self.lat_checks = self.lat.is_some() || self.job.max_latency_us.iter().any(Option::is_some);
        self.io_records = self.logging.is_some() || self.cmdprio.is_some();
        self.shaped = self.strided.is_some() || self.limited_open;
        self.set_marks();
        self
    }

    /// Folds io_size and the end of the loop into the threshold `limit_reached` compares
    /// with; again whenever a loop moves it.
    pub(super) fn set_marks(&mut self) {
        self.stop_bytes = self.plan.io_limit.unwrap_or(u64::MAX).min(self.loop_end);
    }

    /// Reads the clock (ns since the run epoch) and remembers it for the stop rules.
    #[inline]
    fn clock(&mut self) -> u64 {
        self.last_ns = self.clock.now_ns();
        self.last_ns
    }

    /// Runs the job from the group's start (`start_ns`, from the start gate): its start
    /// delay, ramp and runtime count on the wall clock from there, not from when this
    /// thread first got a CPU, so with more busy jobs than CPUs every job of a time-based
    /// group still ends on the group's deadline, and a size-bound job's runtime is the wall
    /// time it took to finish.
    fn run(&mut self, start_ns: u64, waiting_from: u64) -> Result<(), EngineError> {
        let job = self.job;
        let (lo, hi) = job.startdelay;
        let mut start = start_ns;
        if !self.plan.together.waitees.is_empty() {
            // fio's wait_for: the job starts when its waitee's clones have all ended.
            let engine = &mut self.engine;
            together::wait_for(&self.plan.together.waitees, IDLE_STEP, &mut || {
                engine.idle()
            })?;
            start = self.clock();
        }
        if let Some(cmd) = &job.coord.exec_prerun {
            // As fio's, once the clone has started and before its IO; a failure ends it.
            together::exec(job, cmd, "prerun")?;
            start = self.clock();
        }
        if job.pre_read {
            // As fio's, after the prerun command and before the IO, outside the times.
            preread::pre_read(self.plan)?;
            start = self.clock();
        }
        if hi > Duration::ZERO {
            let extra = if hi > lo {
                self.rng.below((hi - lo).as_nanos() as u64)
            } else {
                0
            };
            start += (lo + Duration::from_nanos(extra)).as_nanos() as u64;
            let now = self.clock();
            self.idle_sleep(Duration::from_nanos(start.saturating_sub(now)))?;
        }
        self.job_start = self.clock.epoch() + Duration::from_nanos(start);
        self.ramp_end_ns = start + job.ramp_time.as_nanos() as u64;
        self.clock();
        if let Some(t) = &mut self.think {
            t.start_at(start);
        }
        if let Some(m) = &mut self.min_rate {
            m.start_at(start);
        }
        if job.ramp_time.is_zero() {
            self.begin_measuring_at(start);
            if hi.is_zero() {
                self.cpu_start.wait_ns = waiting_from;
            }
        } else {
            self.start_cpu();
            self.plan.counters.set_state(WorkerState::Ramp);
        }
        let result = if self.no_file {
            self.pseudo_loop()
        } else {
            self.io_loop().and_then(|()| self.verify_phase())
        };
        if let Some(l) = &mut self.logging {
            l.finish();
        }
        self.save_verify_state();
        if !self.measuring {
            self.measure_whole_job(start);
        }
        self.measure_end = self.clock.epoch() + Duration::from_nanos(self.clock());
        let end = self
            .measure_end
            .saturating_duration_since(self.clock.epoch());
        self.plan.counters.set_measure_end(end.as_nanos() as u64);
        self.cpu = Usage::thread().since(&self.cpu_start);
        if self.plan.own_process {
            let process = Usage::process().since(&self.process_start).cpu_ns();
            self.helper_ns = Some(process.saturating_sub(self.cpu.cpu_ns()));
        }
        result
    }

    /// Reads the CPU the measurement counts from: this thread's, and the whole process's
    /// when the worker has a process of its own.
    fn start_cpu(&mut self) {
        self.cpu_start = Usage::thread();
        if self.plan.own_process {
            self.process_start = Usage::process();
        }
    }

    fn io_loop(&mut self) -> Result<(), EngineError> {
        if self.job.create_only {
            // fio's create_only: the lay-out was the job.
            return Ok(());
        }
        if self.verify.as_ref().is_some_and(|v| v.dry_run) {
            self.dry_run();
            return Ok(());
        }
        let mut checks = 0u32;
        loop {
            self.issue_until_stop(&mut checks)?;
            if self.limit_reached() && self.verify.is_some() {
                self.trailing_trims()?;
            }
            self.drain()?;
            if !self.another_loop_follows() {
                break;
            }
            // fio ends each of a job's loops as it ends the job (end_fsync,
            // fsync_on_close): an overwrite of the same region is written out per loop,
            // not absorbed by the page cache until a single sync at the end.
            self.closing_sync()?;
            self.closing = false;
            self.loop_end = self.loop_end.saturating_add(self.loop_bytes);
            self.set_marks();
        }
        self.plan.counters.set_state(WorkerState::Finishing);
        self.closing_sync()
    }

    /// The syncs that end a job (or one of its loops): timed into the runtime, not counted
    /// as sync IOs, as in fio. fio syncs for fsync_on_close here too, and again at close.
    fn closing_sync(&mut self) -> Result<(), EngineError> {
        self.closing = true;
        let job = self.job;
        if (job.end_fsync || job.fsync_on_close) && self.files.iter().any(|f| f.written) {
            self.sync_all(IoKind::Fsync)?;
        }
        Ok(())
    }

    /// True when the issuing stopped at the end of one of the job's loops (see
    /// `loop_end`) rather than for good.
    fn another_loop_follows(&self) -> bool {
        self.issued_bytes >= self.loop_end
            && self.plan.io_limit.is_some_and(|l| self.issued_bytes < l)
            && !stop::requested()
    }

    fn issue_until_stop(&mut self, checks: &mut u32) -> Result<(), EngineError> {
        let job = self.job;
        loop {
            if self.should_stop_issuing(checks) {
                break;
            }
            if !self.fill_queue()? {
                // Rate limiter asked us to wait.
                self.wait_for_rate()?;
            }
            self.commit()?;
            if self.inflight > 0 {
                let full = self.inflight >= self.depth_now() || self.free.is_empty();
                let min = if self.draining {
                    (self.inflight - self.depth_low.min(self.inflight)).max(1) as usize
                } else if full {
                    job.iodepth_batch_complete_min.max(1) as usize
                } else {
                    0
                };
                self.reap(min)?;
            }
            if self.extras {
                self.between_ios()?;
            }
        }
        Ok(())
    }

    /// The per-job extras that run between rounds of IO: the latency-target search,
    /// thinktime and rate_min.
    fn between_ios(&mut self) -> Result<(), EngineError> {
        if self.lat.is_some() {
            self.latency_step()?;
        }
        if self.think.is_some() {
            self.think_if_due()?;
        }
        if self.min_rate.as_ref().is_some_and(|m| m.due(self.last_ns)) {
            self.check_min_rate()?;
        }
        Ok(())
    }

    /// fio's check_min_rate, outside the ramp, on the measured totals.
    #[cold]
    fn check_min_rate(&mut self) -> Result<(), EngineError> {
        if !self.measuring {
            return Ok(());
        }
        let d = &self.stats.dirs;
        let bytes = [d[0].io_bytes, d[1].io_bytes];
        let ios = [d[0].total_ios, d[1].total_ios];
        let now = self.last_ns;
        match &mut self.min_rate {
            Some(m) => m.check(now, bytes, ios),
            None => Ok(()),
        }
    }

    /// Reads and writes done so far: issued, minus those still queued or in flight.
    fn completed_ios(&self) -> u64 {
        self.issued_ios
            .saturating_sub(u64::from(self.inflight) + self.queued.len() as u64)
    }

    /// Whether a thinktime pause is due now (checked after each IO queued too, so a deep
    /// queue does not run past it, as fio checks after each IO).
    fn think_due(&mut self) -> bool {
        let Some(t) = &self.think else { return false };
        let now = if t.needs_clock() {
            self.clock.now_ns()
        } else {
            0
        };
        t.due(self.issued_ios, self.completed_ios(), now)
    }

    /// fio's `handle_thinktime`: waits for the IOs in flight, spins, then sleeps the rest
    /// of the pause, never past the job's deadline.
    #[cold]
    fn think_if_due(&mut self) -> Result<(), EngineError> {
        if !self.think_due() {
            return Ok(());
        }
        self.drain()?;
        let (spin, sleep) = self.think.as_ref().map_or((0, 0), |t| t.pause_ns());
        let spin_end = self.clock().saturating_add(spin);
        while self.clock() < spin_end {
            std::hint::spin_loop();
        }
        let left = self.deadline_ns.saturating_sub(self.last_ns);
        self.idle_sleep(Duration::from_nanos(sleep.min(left)))?;
        let now = self.clock();
        let (issued, done) = (self.issued_ios, self.completed_ios());
        if let Some(t) = &mut self.think {
            t.paused(issued, done, now);
        }
        Ok(())
    }

    /// Sleeps `d` with nothing in flight (waking early on a stop), letting the engine keep
    /// its server's state alive at least every [`IDLE_STEP`].
    pub(super) fn idle_sleep(&mut self, d: Duration) -> Result<(), EngineError> {
        let end = Instant::now() + d;
        loop {
            self.engine.idle()?;
            let now = Instant::now();
            if now >= end || stop::requested() {
                return Ok(());
            }
            sleep_interruptible((end - now).min(IDLE_STEP));
        }
    }

    /// The queue depth in use: the job's, or where a latency-target search is.
    #[inline]
    pub(super) fn depth_now(&self) -> u32 {
        self.lat
            .as_ref()
            .map_or(self.depth, |l| l.qd.min(self.depth))
    }

    /// fio's `lat_target_check` after a round of completions (after the ramp only), and
    /// the quiesce a slow IO asked for.
    fn latency_step(&mut self) -> Result<(), EngineError> {
        if std::mem::take(&mut self.lat_quiesce) {
            self.drain()?;
        }
        if !self.measuring {
            return Ok(());
        }
        let now = self.clock();
        let step = self.lat.as_mut().map_or(LatStep::Nothing, |l| l.check(now));
        match step {
            LatStep::Quiesce => self.drain()?,
            LatStep::FinalRun => {
                self.drain()?;
                let now = self.clock();
                self.begin_measuring_at(now);
            }
            LatStep::Done => self.lat_done = true,
            LatStep::Nothing | LatStep::Fatal => {}
        }
        Ok(())
    }

    /// A job that ended inside its ramp (size-bound, or stopped): as in fio, whose ramp
    /// end never came to reset its statistics, it reports everything it did from its
    /// start (`start_ns`).
    fn measure_whole_job(&mut self, start_ns: u64) {
        self.measuring = true;
        self.measure_start = self.job_start;
        self.plan.counters.set_measure_start(start_ns);
        for d in 0..3 {
            self.publish_dir(d);
        }
    }

    /// Starts the measured phase at `now` (ns since the run epoch): the group's start or
    /// the end of its ramp, which a thread still waiting for a CPU may already have passed.
    fn begin_measuring_at(&mut self, now: u64) {
        self.measuring = true;
        let prios = self.stats.prio_values();
        self.stats = WorkerStats::default();
        self.stats.set_prios(&prios);
        // fio's reset_all_stats: the rwmix rule counts issues from here, and a latency
        // search starts over (unless in its final window).
        self.dir_issues = [0; 2];
        self.mix_issues = 0;
        if let Some(l) = &mut self.lat {
            l.init(now);
        }
        if let Some(l) = &mut self.logging {
            l.restart(now);
        }
        self.measure_start = self.clock.epoch() + Duration::from_nanos(now);
        self.start_cpu();
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
        if periodic && (stop::requested() || self.plan.counters.terminate_requested()) {
            return true;
        }
        if self.limit_reached() || self.lat_done {
            return true;
        }
        if periodic || !self.measure.any() && (*checks).is_multiple_of(4) {
            self.clock();
        }
        if !self.measuring && self.last_ns >= self.ramp_end_ns {
            self.begin_measuring_at(self.ramp_end_ns);
        }
        self.measuring && self.last_ns >= self.deadline_ns
    }

    /// End of job: fsync_on_close, the holes a server tells of, then close every file.
    fn finish(&mut self) -> Result<(), EngineError> {
        self.closing = true;
        let mut first_err = None;
        if self.stats.dirs[0].io_bytes > 0
            && !storbench_job::catalogue::fakes_io(&self.job.ioengine)
        {
            let _ = self.drain();
            self.stats.hole_bytes = self.server_holes();
        }
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

    /// Bytes in holes over the regions of files on a server that can tell them, asked
    /// through the engine; None when a file is local (`holes.rs` reads those) or its
    /// server cannot tell.
    fn server_holes(&mut self) -> Option<u64> {
        if self.files.len() != self.plan.files.len() {
            return None;
        }
        let mut total = 0u64;
        for (open, f) in self.files.iter().zip(&self.plan.files) {
            if matches!(f.spec.target, storbench_job::target::Target::Path(_)) {
                return None;
            }
            let end = f.start.saturating_add(f.len);
            total += self.engine.hole_bytes(open.id, f.start, end)?;
        }
        Some(total)
    }

    fn close_all(&mut self) -> Result<(), EngineError> {
        let mut first_err = None;
        let _ = self.drain();
        for f in self.files.iter().filter(|f| f.open) {
            if let Err(e) = self.engine.close(f.id) {
                first_err.get_or_insert(e);
            }
        }
        self.files.clear();
        first_err.map_or(Ok(()), Err)
    }
}

/// Longest sleep between two [`Engine::idle`] calls while a worker waits.
const IDLE_STEP: Duration = Duration::from_secs(1);

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

#[cfg(test)]
mod tests;

/// The depth a full queue drains to before it is filled again (fio's `iodepth_low`): 0, as
/// a job built in code (quick's, bonnie's, diagnose's) leaves it, keeps the queue full, as
/// fio's default (the depth itself) does.
fn low_mark(iodepth_low: u32, depth: u32) -> u32 {
    match iodepth_low {
        0 => depth,
        low => low.clamp(1, depth),
    }
}

#[cfg(test)]
mod low_mark_tests {
    #[test]
    fn an_unset_low_mark_keeps_the_queue_full() {
        assert_eq!(super::low_mark(0, 8), 8);
        assert_eq!(super::low_mark(2, 8), 2);
        assert_eq!(super::low_mark(16, 8), 8);
    }
}
