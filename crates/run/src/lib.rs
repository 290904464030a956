//! Runs a whole workload: jobs in order, stonewalls between batches, `numjobs` worker threads
//! per job, lay-out and safety checks before, cleanup after, and one sampler (this thread)
//! while workers run. Produces the one [`RunResult`].
//!
//! The runner stands above the engines: it builds each job's engine through the engines'
//! one table (`storbench_engines::create`, which the catalogue names), so the front ends
//! hand it the workload only. Each worker makes its own engine in its own thread, after
//! it is pinned; the unit tests give the runner their recording engine instead.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use storbench_job::{DedupeMode, JobSpec, Workload};

use storbench_core::clock::Clock;
use storbench_core::cpu::{StatSample, Usage};
use storbench_core::disk::DiskSample;
use storbench_core::error::{EngineError, ErrorKind};
use storbench_core::gate::StartGate;
use storbench_core::layout;
use storbench_core::nic::NicSample;
use storbench_core::plan;
use storbench_core::progress::WorkerCounters;
use storbench_core::sampler::WorkerSamples;
use storbench_core::stop;
use storbench_core::worker::{
    EngineFactory, Flow, Together, WorkerFile, WorkerOutput, WorkerPlan, run_worker,
};
use storbench_model::iolog::{IoLogger, LogPipes, LogWriter};
use storbench_model::result::{
    DiskUtil, GroupResult, JobResult, Note, NoteLevel, RunMode, RunResult,
};

mod budget;
mod cleanup;
mod forked;
mod inventory;
mod prepare;
mod servers;
mod steady;

use cleanup::{Cleanup, Created};
use inventory::*;
use prepare::*;
use servers::ServerWatch;
use steady::SteadyWatch;

pub use storbench_core::observer::{JobHeaderLine, NoObserver, Observer, Progress, Totals};

/// Who is running and how it was asked for: goes into the result as is.
#[derive(Clone)]
pub struct RunRequest<'a> {
    pub workload: &'a Workload,
    pub mode: RunMode,
    pub command_line: Vec<String>,
    /// Remove files this run created even if the job does not say `unlink` (quick mode).
    pub always_remove_created: bool,
}

/// A run that stopped before any job measured anything, with warnings about what it could
/// not clean up (a file it created and could not remove), which the caller must still show.
#[derive(Debug)]
pub struct RunError {
    pub error: EngineError,
    pub notes: Vec<Note>,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RunError {}

/// Runs the workload to the end (or until a stop is requested). Set-up errors before any
/// job ran (missing directory, refused device, engine unavailable) return `Err`; errors
/// during IO end up in the jobs' `error` fields, and a later batch that cannot start (its
/// server gone) ends the run there: either way the run is returned with what finished.
pub fn run(req: RunRequest, observer: &mut dyn Observer) -> Result<RunResult, RunError> {
    run_with(req, &storbench_engines::create, observer)
}

/// [`run`] with the engines `factory` builds (the engines' table, or a test's recorder).
fn run_with(
    req: RunRequest,
    factory: &EngineFactory,
    observer: &mut dyn Observer,
) -> Result<RunResult, RunError> {
    let started_unix_ms = unix_ms();
    let epoch = Instant::now();
    let clock = Clock::new(epoch);
    let jobs: Vec<Arc<JobSpec>> = req.workload.jobs.iter().cloned().map(Arc::new).collect();
    // In a multi-host run every check's outcome goes into the agreement below, so a rank
    // whose check fails ends the run on every rank there, not after the others' timeout.
    let directories = check_directories(&jobs);
    if !storbench_core::coord::active() {
        directories.clone().map_err(RunError::alone)?;
    }
    observer.starting(
        &jobs
            .iter()
            .zip(forked::processes(&batches(&jobs)))
            .map(|(j, processes)| JobHeaderLine {
                processes,
                ..JobHeaderLine::of(j)
            })
            .collect::<Vec<_>>(),
    );

    let disks = local_devices(&jobs);
    let disk_start: Vec<DiskSample> = disks.iter().filter_map(|d| DiskSample::read(d)).collect();
    let stat_start = StatSample::read();
    let nic_start = all_nics();

    let mut cleanup = Cleanup {
        factory,
        files: Vec::new(),
        notes: Vec::new(),
    };
    let mut results: Vec<(u32, JobResult)> = Vec::new();
    let mut notes: Vec<Note> = Vec::new();
    let mut interfaces: Vec<String> = Vec::new();
    let all_batches = batches(&jobs);
    let checked = directories
        .and_then(|()| budget::check_memory(&all_batches))
        .and_then(|()| check_devices(&jobs, factory));
    // In a multi-host run no rank lays out before every rank passed its checks.
    let agreed =
        storbench_core::coord::agree(storbench_core::coord::Point::BeforeLayout, checked.is_ok());
    checked.and(agreed).map_err(RunError::alone)?;
    let mut first_thread = 0u32;
    for (i, batch) in all_batches.iter().enumerate() {
        if stop::requested() {
            break;
        }
        let ctx = BatchCtx {
            clock,
            first_thread,
            place: BatchPlace {
                index: i,
                count: all_batches.len(),
                later: all_batches[i + 1..].iter().map(|b| batch_time(b)).sum(),
            },
        };
        first_thread += batch.iter().map(|j| j.numjobs.max(1)).sum::<u32>();
        let outcome = match run_batch(batch, &req, factory, observer, ctx, &mut cleanup) {
            Ok(outcome) => outcome,
            Err(error) if results.is_empty() => {
                cleanup.run();
                let notes = std::mem::take(&mut cleanup.notes);
                return Err(RunError { error, notes });
            }
            Err(error) => {
                let later = all_batches[i + 1..].iter().map(Vec::len).sum();
                not_started(batch, error, later)
            }
        };
        let stopped = outcome.stopped;
        for (_, r) in &outcome.results {
            for (k, v) in &r.engine_details {
                if k == "interface" && !interfaces.contains(v) {
                    interfaces.push(v.clone());
                }
            }
        }
        results.extend(outcome.results);
        notes.extend(outcome.notes);
        if stopped {
            break;
        }
    }
    let wall_ms = epoch.elapsed().as_millis() as u64;
    // Before cleanup: the file system of a relative target is found from files that exist.
    let environment = storbench_core::env::collect(&targets_of(&jobs));
    cleanup.run();
    notes.append(&mut cleanup.notes);

    let mut run = RunResult {
        command_line: req.command_line,
        job_files: req.workload.job_files.clone(),
        global_options: req.workload.global_options.clone(),
        groups: group_results(results, &jobs),
        disks: disk_start
            .iter()
            .filter_map(|s| DiskSample::read(&s.name).map(|e| e.since(s, wall_ms)))
            .collect(),
        nics: nic_start
            .iter()
            .filter(|s| interfaces.contains(&s.name))
            .filter_map(|s| NicSample::read(&s.name).map(|e| e.since(s, wall_ms)))
            .collect(),
        system_cpu: stat_start
            .zip(StatSample::read())
            .map(|(a, b)| b.since(&a, b.machine_cpus())),
        notes,
        environment: Some(environment),
        interrupted: stop::requested(),
        ..RunResult::new(
            req.mode,
            format!("storbench-{}", env!("CARGO_PKG_VERSION")),
            started_unix_ms,
            unix_ms(),
        )
    };
    name_target_links(&mut run, &jobs);
    storbench_core::analysis::annotate(&mut run);
    Ok(run)
}

/// Fills each network target's interface and link speed from the jobs that reached it
/// (their engine's `interface` detail) and that interface's counters, so the environment
/// in reports says which link a figure crossed.
fn name_target_links(run: &mut RunResult, jobs: &[Arc<JobSpec>]) {
    let Some(env) = run.environment.as_mut() else {
        return;
    };
    for t in env.targets.iter_mut().filter(|t| t.server.is_some()) {
        let iface = jobs
            .iter()
            .filter(|j| {
                targets_of(std::slice::from_ref(j))
                    .iter()
                    .any(|jt| jt.to_string() == t.target)
            })
            .flat_map(|j| {
                run.groups
                    .iter()
                    .flat_map(|g| &g.jobs)
                    .filter(|r| r.name == j.name)
            })
            .find_map(|r| {
                r.engine_details
                    .iter()
                    .find(|(k, _)| k == "interface")
                    .map(|(_, v)| v.clone())
            });
        let Some(iface) = iface else { continue };
        t.link_speed_mbps = run
            .nics
            .iter()
            .find(|n| n.name == iface)
            .and_then(|n| n.speed_mbps);
        t.interface = Some(iface);
    }
}

struct BatchOutcome {
    results: Vec<(u32, JobResult)>,
    notes: Vec<Note>,
    /// The batch could not start, or a job's `exit_what=all` ended the run: the run ends
    /// with it.
    stopped: bool,
}

impl RunError {
    fn alone(error: EngineError) -> RunError {
        RunError {
            error,
            notes: Vec::new(),
        }
    }
}

/// How a clone of a batch starts: as a thread, or in the process forked for it.
enum Start {
    Thread(Box<WorkerPlan>),
    Process(forked::Child),
    Failed(EngineError),
}

/// Forks the clones of a batch that run in processes of their own, here on the runner's
/// thread before any thread of the batch exists (`forked.rs`); the others start as threads.
fn start_clones(
    plans: impl Iterator<Item = WorkerPlan>,
    batch: &[Arc<JobSpec>],
    factory: &EngineFactory,
) -> Vec<Start> {
    let plans: Vec<WorkerPlan> = plans.collect();
    let shared = plans.iter().all(|p| p.counters.shared());
    let fork = forked::batch_forks(batch.iter().map(|j| &**j), shared);
    plans
        .into_iter()
        .map(|plan| {
            if !(fork && forked::is_per_process(&plan)) {
                return Start::Thread(Box::new(plan));
            }
            match forked::start(plan, factory) {
                Ok(child) => Start::Process(child),
                Err(e) => Start::Failed(e),
            }
        })
        .collect()
}

/// A batch that cannot start still makes its group's agreement, as not ready: the other
/// ranks of a multi-host run then end at that group's start with this rank, instead of
/// matching its next collective (the results) against their group start, which MPI takes
/// for a truncated message and which never completes. A no-op in a single-host run.
fn not_ready_for_the_group() {
    let _ = storbench_core::coord::agree(storbench_core::coord::Point::GroupStart, false);
}

/// A batch that could not start after earlier ones ran (the server went away, the disk
/// filled): as fio does, each of its jobs is reported failed with no IO, so what finished is
/// still printed, saved and judged, and the exit code says the run failed.
fn not_started(batch: &[Arc<JobSpec>], error: EngineError, later: usize) -> BatchOutcome {
    let error = EngineError {
        message: format!("could not start: {}", error.message),
        ..error
    };
    let results = batch
        .iter()
        .map(|job| {
            let counters = Arc::new(WorkerCounters::default());
            let mut samples = WorkerSamples::new(counters, job.bwavgtime_ms, job.iopsavgtime_ms);
            let out = failed_output(error.clone());
            let r = storbench_core::collect::job_result(job, 0, out, &mut samples, 0, &[]);
            (job.group, r)
        })
        .collect();
    let names: Vec<&str> = batch.iter().map(|j| j.name.as_str()).collect();
    let notes = vec![Note {
        level: NoteLevel::Warning,
        code: "warn.stopped".into(),
        message: format!(
            "the run stopped at {} (it could not start); {later} later job(s) did not run",
            names.join(", ")
        ),
    }];
    BatchOutcome {
        results,
        notes,
        stopped: true,
    }
}

/// One worker thread's bookkeeping on the sampler side.
struct CloneSlot {
    job_index: usize,
    clone: u32,
    /// fio's thread number, from 0 over the whole run's clones.
    thread: u32,
    files: Vec<WorkerFile>,
    io_limit: Option<u64>,
    counters: Arc<WorkerCounters>,
    samples: WorkerSamples,
    seed: u64,
}

/// What a batch needs from the whole run: the clock, and how many clones ran before it
/// (fio numbers its log files by clone).
#[derive(Clone, Copy)]
struct BatchCtx {
    clock: Clock,
    first_thread: u32,
    place: BatchPlace,
}

/// A per-IO logger for each clone whose job streams logs and whose observer takes them,
/// and the writer thread's body that serves them all.
fn log_pipes(
    clones: &[CloneSlot],
    batch: &[Arc<JobSpec>],
    observer: &mut dyn Observer,
) -> (Vec<Option<IoLogger>>, Option<LogWriter>) {
    let mut pipes = LogPipes::new(clones.len());
    let loggers = clones
        .iter()
        .map(|c| {
            let job = &batch[c.job_index];
            if !job.logs.streamed() {
                return None;
            }
            // fio numbers its threads from 1 over the whole run.
            let sink = observer.unit_log_sink(job, c.thread + 1)?;
            Some(pipes.add(format!("{}.{}", job.name, c.clone), sink))
        })
        .collect();
    (loggers, pipes.writer())
}

/// Where a batch stands in the run, for the whole run's progress and ETA.
#[derive(Clone, Copy)]
struct BatchPlace {
    index: usize,
    count: usize,
    /// The time the later batches will take, if their runtimes say.
    later: Option<Duration>,
}

/// How long a batch will run by its jobs' times (start delay, ramp, runtime), or `None`
/// when a job ends by size only. A size-bound job with a runtime may end sooner.
fn batch_time(batch: &[Arc<JobSpec>]) -> Option<Duration> {
    batch
        .iter()
        .map(|j| Some(j.startdelay.1 + j.ramp_time + j.runtime?))
        .try_fold(Duration::ZERO, |acc, t| Some(acc.max(t?)))
}

fn run_batch(
    batch: &[Arc<JobSpec>],
    req: &RunRequest,
    factory: &EngineFactory,
    observer: &mut dyn Observer,
    ctx: BatchCtx,
    cleanup: &mut Cleanup,
) -> Result<BatchOutcome, EngineError> {
    let clock = ctx.clock;
    let mut clones = Vec::new();
    for (job_index, job) in batch.iter().enumerate() {
        let prepared = prepare_job(job, req, factory, observer, cleanup)
            .inspect_err(|_| not_ready_for_the_group())?;
        for clone in 0..job.numjobs.max(1) {
            let files = prepared.files_for(job, clone);
            let region: u64 = files.iter().map(|f| pass_bytes(job, f)).sum();
            // fio's io_issue_bytes_exceeded: io_size (else size) times the loops.
            let per_loop = job.io_size.unwrap_or_else(|| size_budget(job, region));
            // A job without files (cpuio, exec) ends by time only, as in fio.
            let io_limit = (!job.time_based && !job.has_no_file())
                .then(|| per_loop * u64::from(job.loops.max(1)));
            let counters = Arc::new(WorkerCounters::default());
            clones.push(CloneSlot {
                job_index,
                clone,
                thread: ctx.first_thread + clones.len() as u32,
                files,
                io_limit,
                samples: WorkerSamples::new(counters.clone(), job.bwavgtime_ms, job.iopsavgtime_ms)
                    .with_logs(&job.logs),
                counters,
                seed: seed_for(job, clone),
            });
        }
    }
    let together = together_of(&clones, batch);
    let (loggers, log_writer) = log_pipes(&clones, batch, observer);
    let mut steady = SteadyWatch::new(&clones, batch, clock.now_ns());
    let gate = StartGate::new(clones.len(), clock);
    let disks = BatchDisks::start(batch);
    let mut host = storbench_core::host::HostWatch::start();
    let sampler_start = Usage::thread();
    let proc_start = Usage::process();
    let mut servers = ServerWatch::default();
    let mut exit_run = false;
    let finished = Finished::new(clones.len());
    let mut log_report = None;
    // By value: a logger left behind by a failed spawn is dropped, which ends it.
    let plans = clones
        .iter()
        .zip(loggers)
        .zip(together)
        .map(|((c, log), together)| WorkerPlan {
            job: batch[c.job_index].clone(),
            clone: c.clone,
            thread: c.thread,
            seed: c.seed,
            files: c.files.clone(),
            io_limit: c.io_limit,
            counters: c.counters.clone(),
            own_process: false,
            clock,
            log,
            together,
        });
    let starts = start_clones(plans, batch, factory);
    let outputs: Vec<WorkerOutput> = std::thread::scope(|s| {
        let writer = log_writer.map(|w| s.spawn(move || w.run()));
        let mut handles = Vec::with_capacity(clones.len());
        for (c, start) in clones.iter().zip(starts) {
            let (gate, finished) = (&gate, &finished);
            let spawned = std::thread::Builder::new()
                .name(format!("sb-{}-{}", batch[c.job_index].name, c.clone))
                .spawn_scoped(s, move || {
                    let _tell = finished.on_exit();
                    match start {
                        Start::Thread(plan) => run_worker(*plan, factory, gate),
                        Start::Process(child) => child.serve(gate),
                        Start::Failed(e) => {
                            gate.abandon();
                            failed_output(e)
                        }
                    }
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => return Err(spawn_failed(gate, handles, clones.len(), e)),
            }
        }
        exit_run = sample_until_done(
            (&handles, &finished),
            &mut clones,
            batch,
            (clock, ctx.place),
            observer,
            (&mut servers, &mut steady),
            &mut host,
        );
        let outputs = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| panic_output()))
            .collect();
        log_report = writer.and_then(|w| w.join().ok());
        Ok(outputs)
    })?;
    for w in log_report.iter().flat_map(|r| &r.warnings) {
        observer.log_warning(w);
    }
    // Another rank of a multi-host run did not start the group: this one did no IO either.
    if let Some(e) = gate.coordination_error()
        && outputs.iter().all(|o| o.error.is_none())
    {
        return Err(e);
    }
    let helper_ns = helper_cpu(proc_start, sampler_start, &outputs);
    let mut notes = Vec::new();
    let mut results = Vec::new();
    let active_ms = active_span_ms(&outputs);
    // The devices under each job's own files: a job is judged only on those.
    let job_devices: Vec<Vec<TreeDevice>> = batch
        .iter()
        .map(|job| device_tree(std::slice::from_ref(job)))
        .collect();
    // The helpers of this process go to its threads' jobs; a worker in a process of its
    // own measured its own.
    let shares_helpers = |o: &WorkerOutput| o.helper_ns.is_none() && uses_helpers(o.engine_name);
    let total_ios: u64 = outputs
        .iter()
        .filter(|o| shares_helpers(o))
        .map(total_ios_of)
        .sum();
    for (c, out) in clones.iter_mut().zip(outputs) {
        let job = &batch[c.job_index];
        let share = match out.helper_ns {
            Some(own) => own,
            None if shares_helpers(&out) && total_ios > 0 => {
                (helper_ns as f64 * total_ios_of(&out) as f64 / total_ios as f64) as u64
            }
            None => 0,
        };
        for n in &out.engine_info.notes {
            notes.push(Note {
                level: NoteLevel::Warning,
                code: "warn.engine".into(),
                message: format!("{}: {n}", job.name),
            });
        }
        c.samples.finish_logs(out.measure_end.as_nanos() as u64);
        if job.logs.averaged() {
            // fio numbers its threads from 1 over the whole run.
            observer.clone_logs(job, c.thread + 1, &c.samples.logs);
        }
        // Each timeline ends with its own worker's measurement (the sampler has mostly
        // closed it already), not with another's or after closing the files.
        c.samples.finish(out.measure_end.as_nanos() as u64);
        let result =
            storbench_core::collect::job_result(job, c.clone, out, &mut c.samples, share, &c.files);
        results.push((job.group, result));
    }
    let batch_disks = disks.finish(active_ms);
    let machine_disks = disks.machine(active_ms);
    let host = host.finish();
    storbench_core::collect::apportion_reads(&mut results, host.own_read_bytes);
    // Results are in the clones' order.
    for (i, ((_, r), c)) in results.iter_mut().zip(&clones).enumerate() {
        r.steadystate = steady.result_for(i);
        let devices = &job_devices[c.job_index];
        r.disks = batch_disks
            .iter()
            .filter_map(|d| {
                let (_, leaf, below) = devices.iter().find(|(n, _, _)| *n == d.name)?;
                Some(DiskUtil {
                    leaf: *leaf,
                    below: *below,
                    ..d.clone()
                })
            })
            .collect();
        r.server_cpu = servers.of(&c.counters);
        // The worker found its server among this host's processes before the start; a run
        // too short for the sampler to read that server's CPU still had it on this host.
        if c.counters.server_process().is_some() || r.server_cpu.iter().any(|s| s.same_host) {
            r.measured.server_disks = machine_disks.clone();
        }
        r.measured.host = Some(host.clone());
    }
    Ok(BatchOutcome {
        results,
        notes,
        // exit_what=all: the later batches do not run.
        stopped: exit_run,
    })
}

/// The counters of the block devices under one batch's files, from just before its workers
/// start (after lay-out, which is not the batch's IO) to when the last one has finished.
struct BatchDisks {
    start: Vec<DiskSample>,
    /// This machine's disks, when a job reaches a network target: a server on this host
    /// reads and writes them (see [`storbench_core::disk::machine_disks`]).
    machine: Vec<DiskSample>,
    at: Instant,
}

impl BatchDisks {
    fn start(batch: &[Arc<JobSpec>]) -> BatchDisks {
        let remote = targets_of(batch).iter().any(|t| t.caps().network);
        BatchDisks {
            start: device_tree(batch)
                .iter()
                .filter_map(|(d, _, _)| DiskSample::read(d))
                .collect(),
            machine: if remote {
                storbench_core::disk::machine_disks()
                    .iter()
                    .filter_map(|d| DiskSample::read(d))
                    .collect()
            } else {
                Vec::new()
            },
            at: Instant::now(),
        }
    }

    /// This machine's disks over the batch (see `machine`).
    fn machine(&self, active_ms: Option<u64>) -> Vec<DiskUtil> {
        let wall = self.at.elapsed().as_millis() as u64;
        let ms = active_ms.filter(|&m| m > 0).map_or(wall, |m| m.min(wall));
        self.machine
            .iter()
            .filter_map(|s| DiskSample::read(&s.name).map(|e| e.since(s, ms)))
            .map(|d| DiskUtil { leaf: true, ..d })
            .collect()
    }

    /// Utilisation over the time the batch's jobs were doing IO (`active_ms`, see
    /// [`active_span_ms`]), not the batch's wall time: starting workers (engines, buffers,
    /// opening files) and reaping them does no IO and would make a device kept busy
    /// throughout look idle for a tenth of a one-second test.
    fn finish(&self, active_ms: Option<u64>) -> Vec<DiskUtil> {
        let wall = self.at.elapsed().as_millis() as u64;
        let ms = active_ms.filter(|&m| m > 0).map_or(wall, |m| m.min(wall));
        self.start
            .iter()
            .filter_map(|s| DiskSample::read(&s.name).map(|e| e.since(s, ms)))
            .collect()
    }
}

/// From the first job's start to the last one's end, ramp and start delays included: the
/// device counters are read around the whole batch, so busy time during a ramp counts, and
/// dividing it by the measured runtime alone would make a half-busy device look full.
fn active_span_ms(outputs: &[WorkerOutput]) -> Option<u64> {
    let ran = outputs.iter().filter(|o| !o.elapsed.is_zero());
    let first = ran
        .clone()
        .map(|o| o.measure_end.saturating_sub(o.elapsed))
        .min()?;
    let last = ran.map(|o| o.measure_end).max()?;
    Some(last.saturating_sub(first).as_millis() as u64)
}

/// Samples counters and reports progress until every worker thread has finished; reads
/// the CPU of servers on this host around the measured phase. True when a job's
/// `exitall` with `exit_what=all` ended the run.
fn sample_until_done(
    (handles, finished): (
        &[std::thread::ScopedJoinHandle<'_, WorkerOutput>],
        &Finished,
    ),
    clones: &mut [CloneSlot],
    batch: &[Arc<JobSpec>],
    (clock, place): (Clock, BatchPlace),
    observer: &mut dyn Observer,
    (servers, steady): (&mut ServerWatch, &mut SteadyWatch),
    host: &mut storbench_core::host::HostWatch,
) -> bool {
    let epoch = clock.epoch();
    let mut exit_run = false;
    let mut last_ui = Instant::now();
    let mut last_totals = (Totals::default(), Instant::now());
    loop {
        let now_ns = clock.now_ns();
        let mut totals = Totals::default();
        for c in clones.iter_mut() {
            let snap = c.samples.poll(now_ns);
            for d in 0..3 {
                totals.bytes[d] += snap.bytes[d];
                totals.ios[d] += snap.ios[d];
                totals.lat_sum_ns[d] += snap.lat_sum_ns[d];
            }
        }
        let all_done = finished.count() >= handles.len();
        servers.poll(clones);
        host.poll();
        steady.poll(now_ns, clones);
        exit_run |= steady::exit_all(clones, batch);
        steady::exit_on_io_done(clones, batch);
        if last_ui.elapsed() >= Duration::from_millis(500) || all_done {
            let mut progress = Progress::build(
                clones.iter().map(|c| {
                    (
                        c.counters.as_ref(),
                        &*batch[c.job_index],
                        c.io_limit,
                        c.files.len() as u32,
                    )
                }),
                epoch,
                &totals,
                &mut last_totals,
            );
            progress.batch = place.index;
            progress.batches = place.count;
            progress.later = place.later;
            observer.progress(&progress);
            last_ui = Instant::now();
        }
        if all_done {
            // Timelines not yet closed are closed in run_batch, at each worker's own
            // measurement end.
            servers.finish();
            return exit_run;
        }
        let next_due = clones.iter().filter_map(|c| c.samples.next_due_ns()).min();
        let now_ns = clock.now_ns();
        let sleep = next_due
            .map_or(50_000_000, |t| t.saturating_sub(now_ns))
            .clamp(1_000_000, 50_000_000);
        // Woken early by the last worker to finish (see `Finished`).
        std::thread::park_timeout(Duration::from_nanos(sleep));
    }
}

/// Counts the batch's worker threads that have finished, and the last of `expected` wakes
/// the sampling thread, so a batch ends when its last worker does, not at the sampler's
/// next tick: a plain 50 ms sleep added up to 50 ms to every stonewall group, which in a
/// job file of many short groups (and in every rank of a multi-host run) was most of its
/// time. Only the last one wakes it: during the batch the sampler keeps its own cadence.
struct Finished {
    count: AtomicUsize,
    expected: usize,
    sampler: std::thread::Thread,
}

impl Finished {
    /// Made on the sampling thread, which is the one woken, for `expected` workers.
    fn new(expected: usize) -> Finished {
        Finished {
            count: AtomicUsize::new(0),
            expected,
            sampler: std::thread::current(),
        }
    }

    /// A guard a worker holds for its whole life: dropped on return or unwinding, it
    /// counts the worker as finished and, for the last one, wakes the sampler.
    fn on_exit(&self) -> impl Drop + '_ {
        struct Tell<'a>(&'a Finished);
        impl Drop for Tell<'_> {
            fn drop(&mut self) {
                let done = self.0.count.fetch_add(1, Ordering::AcqRel) + 1;
                if done >= self.0.expected {
                    self.0.sampler.unpark();
                }
            }
        }
        Tell(self)
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

/// A worker thread could not be started (the thread or process limit, memory for its
/// stack): the threads already started are released from the start gate before any IO,
/// joined, and the batch fails with one line saying how far it got.
fn spawn_failed(
    gate: &StartGate,
    started: Vec<std::thread::ScopedJoinHandle<'_, WorkerOutput>>,
    wanted: usize,
    e: std::io::Error,
) -> EngineError {
    gate.abandon();
    let n = started.len();
    for h in started {
        let _ = h.join();
    }
    let mut error = EngineError::os(
        "cannot start worker thread",
        &format!("{} of {wanted}", n + 1),
        e,
    );
    error.message.push_str("; lower numjobs");
    error
}

fn panic_output() -> WorkerOutput {
    failed_output(EngineError::new(
        ErrorKind::Os,
        "internal error: a worker thread panicked",
    ))
}

/// What a worker that did no IO because of `error` hands back.
fn failed_output(error: EngineError) -> WorkerOutput {
    WorkerOutput {
        stats: Default::default(),
        cpu: Usage::default(),
        measure_start: Duration::ZERO,
        measure_end: Duration::ZERO,
        elapsed: Duration::ZERO,
        error: Some(error),
        engine_name: "",
        engine_info: Default::default(),
        latency_depth: None,
        helper_ns: None,
        pid: None,
    }
}

/// What each clone shares with the rest of its batch: the counters of the clones of its
/// `wait_for` job when that runs in the batch (an earlier batch has ended already), and
/// its `flow_id`'s flow, weighed by the batch's jobs of that flow.
fn together_of(clones: &[CloneSlot], batch: &[Arc<JobSpec>]) -> Vec<Together> {
    let mut flows: Vec<(u32, Arc<Flow>)> = Vec::new();
    for job in batch.iter().filter(|j| j.coord.flow > 0) {
        if flows.iter().all(|(id, _)| *id != job.coord.flow_id) {
            let weight = batch
                .iter()
                .filter(|j| j.coord.flow > 0 && j.coord.flow_id == job.coord.flow_id)
                .map(|j| u64::from(j.coord.flow))
                .sum();
            flows.push((job.coord.flow_id, Arc::new(Flow::new(weight))));
        }
    }
    let shares_dedupe = |j: &JobSpec| {
        let b = &j.buffers;
        b.dedupe_global && b.dedupe_percentage > 0 && b.dedupe_mode == DedupeMode::WorkingSet
    };
    let dedupe_peers: Vec<u32> = clones
        .iter()
        .filter(|c| shares_dedupe(&batch[c.job_index]))
        .map(|c| c.thread)
        .collect();
    clones
        .iter()
        .map(|c| {
            let job = &batch[c.job_index];
            let dedupe_peers = if shares_dedupe(job) {
                dedupe_peers.clone()
            } else {
                Vec::new()
            };
            let waitees = match &job.coord.wait_for {
                Some(name) => clones
                    .iter()
                    .filter(|w| batch[w.job_index].name == *name)
                    .map(|w| w.counters.clone())
                    .collect(),
                None => Vec::new(),
            };
            let flow = (job.coord.flow > 0)
                .then(|| flows.iter().find(|(id, _)| *id == job.coord.flow_id))
                .flatten()
                .map(|(_, f)| f.clone());
            Together {
                waitees,
                flow,
                dedupe_peers,
            }
        })
        .collect()
}

/// Splits jobs into batches that run together: a job with `stonewall` starts a new batch.
fn batches(jobs: &[Arc<JobSpec>]) -> Vec<Vec<Arc<JobSpec>>> {
    let mut out: Vec<Vec<Arc<JobSpec>>> = Vec::new();
    for job in jobs {
        if job.stonewall || out.is_empty() {
            out.push(Vec::new());
        }
        out.last_mut().expect("a batch").push(job.clone());
    }
    out
}

fn group_results(results: Vec<(u32, JobResult)>, jobs: &[Arc<JobSpec>]) -> Vec<GroupResult> {
    let mut groups: Vec<GroupResult> = Vec::new();
    for (gid, r) in results {
        match groups.iter_mut().find(|g| g.id == gid) {
            Some(g) => g.jobs.push(r),
            None => groups.push(GroupResult {
                id: gid,
                group_reporting: jobs.iter().any(|j| j.group == gid && j.group_reporting),
                jobs: vec![r],
            }),
        }
    }
    groups.sort_by_key(|g| g.id);
    groups
}

#[cfg(test)]
mod tests;

/// A loop's bytes without io_size: the files' region, or with filesize= given a smaller
/// size=, which fio then takes as the job's budget over files of filesize bytes
/// (`--filesize=64m --size=8m` does 8 MiB of IO in a 64 MiB file).
fn size_budget(job: &JobSpec, region: u64) -> u64 {
    match (job.filesize, job.size) {
        (Some(_), Some(storbench_job::SizeSpec::Bytes(size))) => size.min(region),
        _ => region,
    }
}
