//! Runs a whole workload: jobs in order, stonewalls between batches, `numjobs` worker threads
//! per job, lay-out and safety checks before, cleanup after, and one sampler (this thread)
//! while workers run. Produces the one [`RunResult`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use storbench_job::{JobSpec, SizeSpec, Workload};

use crate::clock::Clock;
use crate::cpu::{StatSample, Usage};
use crate::disk::DiskSample;
use crate::error::{EngineError, ErrorKind};
use crate::gate::StartGate;
use crate::layout;
use crate::nic::NicSample;
use crate::plan;
use crate::progress::WorkerCounters;
use crate::result::{GroupResult, JobResult, Note, NoteLevel, RESULT_SCHEMA, RunMode, RunResult};
use crate::sampler::WorkerSamples;
use crate::stop;
use crate::worker::{EngineFactory, WorkerFile, WorkerOutput, WorkerPlan, run_worker};

pub use crate::observer::{JobHeaderLine, NoObserver, Observer, Progress, Totals};

/// Who is running and how it was asked for: goes into the result as is.
pub struct RunRequest<'a> {
    pub workload: &'a Workload,
    pub mode: RunMode,
    pub command_line: Vec<String>,
    /// Remove files this run created even if the job does not say `unlink` (quick mode).
    pub always_remove_created: bool,
}

/// One file a batch created, to remove afterwards when asked to.
struct Created {
    job: Arc<JobSpec>,
    path: String,
    remove: bool,
}

/// Removes created files on every exit path, including errors and interruption.
struct Cleanup<'f> {
    factory: &'f EngineFactory,
    files: Vec<Created>,
    notes: Vec<Note>,
}

impl Cleanup<'_> {
    fn run(&mut self) {
        for c in self.files.drain(..).filter(|c| c.remove) {
            let result =
                (self.factory)(&c.job).and_then(|mut e| layout::remove(e.as_mut(), &c.path));
            if let Err(e) = result {
                self.notes.push(Note {
                    level: NoteLevel::Warning,
                    code: "warn.cleanup".into(),
                    message: format!("could not remove {}: {e}", c.path),
                });
            }
        }
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        self.run();
    }
}

/// Runs the workload to the end (or until a stop is requested). Set-up errors (missing
/// directory, refused device, engine unavailable) return `Err` before any IO; errors during
/// IO end up in the jobs' `error` fields and the run is still returned.
pub fn run(
    req: RunRequest,
    factory: &EngineFactory,
    observer: &mut dyn Observer,
) -> Result<RunResult, EngineError> {
    let started_unix_ms = unix_ms();
    let epoch = Instant::now();
    let clock = Clock::new(epoch);
    let jobs: Vec<Arc<JobSpec>> = req.workload.jobs.iter().cloned().map(Arc::new).collect();
    check_directories(&jobs)?;
    observer.starting(
        &jobs
            .iter()
            .map(|j| JobHeaderLine::of(j))
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
    check_devices(&jobs, factory)?;
    for batch in batches(&jobs) {
        if stop::requested() {
            break;
        }
        let outcome = run_batch(&batch, &req, factory, observer, clock, &mut cleanup)?;
        for (_, r) in &outcome.results {
            for (k, v) in &r.engine_details {
                if k == "interface" && !interfaces.contains(v) {
                    interfaces.push(v.clone());
                }
            }
        }
        results.extend(outcome.results);
        notes.extend(outcome.notes);
    }
    let wall_ms = epoch.elapsed().as_millis() as u64;
    // Before cleanup: the file system of a relative target is found from files that exist.
    let environment = crate::env::collect(&targets_of(&jobs));
    cleanup.run();
    notes.append(&mut cleanup.notes);

    let mut run = RunResult {
        schema: RESULT_SCHEMA,
        mode: req.mode,
        tool_version: format!("storbench-{}", env!("CARGO_PKG_VERSION")),
        started_unix_ms,
        finished_unix_ms: unix_ms(),
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
            .map(|(a, b)| b.since(&a, crate::cpu::ncpus())),
        notes,
        environment: Some(environment),
        bonnie: None,
        interrupted: stop::requested(),
    };
    crate::analysis::annotate(&mut run);
    Ok(run)
}

struct BatchOutcome {
    results: Vec<(u32, JobResult)>,
    notes: Vec<Note>,
}

/// One worker thread's bookkeeping on the sampler side.
struct CloneSlot {
    job_index: usize,
    clone: u32,
    files: Vec<WorkerFile>,
    io_limit: Option<u64>,
    counters: Arc<WorkerCounters>,
    samples: WorkerSamples,
    seed: u64,
}

fn run_batch(
    batch: &[Arc<JobSpec>],
    req: &RunRequest,
    factory: &EngineFactory,
    observer: &mut dyn Observer,
    clock: Clock,
    cleanup: &mut Cleanup,
) -> Result<BatchOutcome, EngineError> {
    let mut clones = Vec::new();
    for (job_index, job) in batch.iter().enumerate() {
        let prepared = prepare_job(job, req, factory, observer, cleanup)?;
        for clone in 0..job.numjobs.max(1) {
            let files = prepared.files_for(job, clone);
            let region: u64 = files.iter().map(|f| pass_bytes(job, f.len)).sum();
            let io_limit = (!job.time_based).then(|| region * u64::from(job.loops.max(1)));
            let counters = Arc::new(WorkerCounters::default());
            clones.push(CloneSlot {
                job_index,
                clone,
                files,
                io_limit,
                samples: WorkerSamples::new(counters.clone(), job.bwavgtime_ms, job.iopsavgtime_ms),
                counters,
                seed: seed_for(job, clone),
            });
        }
    }
    let gate = StartGate::new(clones.len());
    let sampler_start = Usage::thread();
    let proc_start = Usage::process();
    let outputs: Vec<WorkerOutput> = std::thread::scope(|s| {
        let handles: Vec<_> = clones
            .iter()
            .map(|c| {
                let plan = WorkerPlan {
                    job: batch[c.job_index].clone(),
                    clone: c.clone,
                    seed: c.seed,
                    files: c.files.clone(),
                    io_limit: c.io_limit,
                    counters: c.counters.clone(),
                    clock,
                };
                let gate = &gate;
                std::thread::Builder::new()
                    .name(format!("sb-{}-{}", batch[c.job_index].name, c.clone))
                    .spawn_scoped(s, move || run_worker(plan, factory, gate))
                    .expect("spawn worker thread")
            })
            .collect();
        sample_until_done(&handles, &mut clones, batch, clock, observer);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| panic_output()))
            .collect()
    });
    let helper_ns = helper_cpu(proc_start, sampler_start, &outputs);
    let mut notes = Vec::new();
    let mut results = Vec::new();
    let total_ios: u64 = outputs
        .iter()
        .filter(|o| uses_helpers(o.engine_name))
        .map(total_ios_of)
        .sum();
    for (c, out) in clones.iter_mut().zip(outputs) {
        let job = &batch[c.job_index];
        let share = if uses_helpers(out.engine_name) && total_ios > 0 {
            (helper_ns as f64 * total_ios_of(&out) as f64 / total_ios as f64) as u64
        } else {
            0
        };
        for n in &out.engine_info.notes {
            notes.push(Note {
                level: NoteLevel::Warning,
                code: "warn.engine".into(),
                message: format!("{}: {n}", job.name),
            });
        }
        let result = crate::collect::job_result(job, c.clone, out, &mut c.samples, share, &c.files);
        results.push((job.group, result));
    }
    Ok(BatchOutcome { results, notes })
}

/// Samples counters and reports progress until every worker thread has finished.
fn sample_until_done(
    handles: &[std::thread::ScopedJoinHandle<'_, WorkerOutput>],
    clones: &mut [CloneSlot],
    batch: &[Arc<JobSpec>],
    clock: Clock,
    observer: &mut dyn Observer,
) {
    let epoch = clock.epoch();
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
        let all_done = handles.iter().all(|h| h.is_finished());
        if last_ui.elapsed() >= Duration::from_millis(500) || all_done {
            let progress = Progress::build(
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
            observer.progress(&progress);
            last_ui = Instant::now();
        }
        if all_done {
            let end_ns = clock.now_ns();
            for c in clones.iter_mut() {
                c.samples.finish(end_ns);
            }
            return;
        }
        let next_due = clones.iter().filter_map(|c| c.samples.next_due_ns()).min();
        let now_ns = clock.now_ns();
        let sleep = next_due
            .map_or(50_000_000, |t| t.saturating_sub(now_ns))
            .clamp(1_000_000, 50_000_000);
        std::thread::sleep(Duration::from_nanos(sleep));
    }
}

fn panic_output() -> WorkerOutput {
    WorkerOutput {
        stats: Default::default(),
        cpu: Usage::default(),
        measure_start: Duration::ZERO,
        measure_end: Duration::ZERO,
        elapsed: Duration::ZERO,
        error: Some(EngineError::new(
            ErrorKind::Os,
            "internal error: a worker thread panicked",
        )),
        engine_name: "",
        engine_info: Default::default(),
    }
}

/// Files of one job after lay-out: per-clone regions.
struct PreparedJob {
    /// By path: shared by clones for explicit files, one per clone otherwise.
    files: std::collections::HashMap<String, PreparedFile>,
}

/// One file after lay-out.
#[derive(Clone, Copy, Debug, Default)]
struct PreparedFile {
    /// Its size now.
    size: u64,
    /// Bytes a clone does IO over.
    len: u64,
    /// Its size before this run (None: it did not exist). Percentages (`size=50%`,
    /// `offset=25%`) are of this size, as in fio: a new file has its IO at offset 0.
    basis: Option<u64>,
}

impl PreparedJob {
    fn files_for(&self, job: &JobSpec, clone: u32) -> Vec<WorkerFile> {
        let open = open_options(job);
        plan::files_for_clone(job, clone)
            .into_iter()
            .map(|f| {
                let p = self.files.get(&f.path).copied().unwrap_or_default();
                let align = job.bs.iter().map(|b| b.min()).min().unwrap_or(4096).max(1);
                let start = plan::start_offset(job, clone, p.basis, align);
                let len = p.len.min(p.size.saturating_sub(start));
                WorkerFile {
                    spec: crate::engine::FileSpec {
                        path: f.path,
                        open: open.clone(),
                    },
                    start,
                    len,
                }
            })
            .collect()
    }
}

/// The bytes a size-bound job issues over a file region. Whole blocks only: fio never
/// issues a block that does not fit, so a 1398101-byte file (4 MiB over 3 files) takes 341
/// blocks of 4 KiB. With holes (`rw=read:8k`) fio makes one pass, one block per block+hole
/// step (1366 reads of 4 KiB in 16 MiB), unless the hole after the last block reaches past
/// the end: then it wraps to the start and goes on until it has issued size= bytes.
fn pass_bytes(job: &JobSpec, len: u64) -> u64 {
    let kind = job.rw.kind;
    let used = [kind.reads(), kind.writes(), kind.trims()];
    let block = (0..3)
        .filter(|&d| used[d])
        .map(|d| job.bs[d].min())
        .min()
        .unwrap_or(4096)
        .max(1);
    let whole = len / block * block;
    let hole = if kind.is_random() { 0 } else { job.rw.hole };
    if hole == 0 || len < block {
        return whole;
    }
    let steps = (len - block) / (block + hole) + 1;
    let last_end = (steps - 1) * (block + hole) + block;
    let wraps = last_end < len && last_end + hole >= len;
    if wraps { whole } else { steps * block }
}

fn open_options(job: &JobSpec) -> crate::engine::OpenOptions {
    crate::engine::OpenOptions {
        read: true,
        write: job.rw.kind.writes(),
        create: job.create_on_open,
        exclusive: false,
        direct: job.direct,
        sync: job.sync,
        truncate: false,
    }
}

/// Lays out a job's files, checks devices before writes, and records what it created.
fn prepare_job(
    job: &Arc<JobSpec>,
    req: &RunRequest,
    factory: &EngineFactory,
    observer: &mut dyn Observer,
    cleanup: &mut Cleanup,
) -> Result<PreparedJob, EngineError> {
    let mut engine = factory(job)?;
    let no_data = engine.caps().no_data;
    let mut files: std::collections::HashMap<String, PreparedFile> = Default::default();
    for clone in 0..job.numjobs.max(1) {
        // fio says "Laying out IO file" once for every clone that lays files out.
        let mut announced = false;
        let planned = plan::files_for_clone(job, clone);
        let nfiles = planned.len();
        for (i, f) in planned.iter().enumerate() {
            // A file shared by clones (filename=) is prepared by the first and extended
            // when a later clone's sized slice (offset_increment) reaches past its end.
            let known = files.get(&f.path).copied();
            let basis = match known {
                Some(p) => p.basis,
                None => layout::probe(engine.as_mut(), &f.path),
            };
            let Some(len) = plan::resolve_len(job, f.len, basis, nfiles) else {
                return Err(EngineError::new(
                    ErrorKind::Refused,
                    format!(
                        "{}: no size given and {} does not exist (set size= or filesize=)",
                        job.name, f.path
                    ),
                ));
            };
            let align = job.bs.iter().map(|b| b.min()).min().unwrap_or(4096).max(1);
            let start = plan::start_offset(job, clone, basis, align);
            // Without size=, a clone's slice runs from its offset to the end (fio's io_size).
            let slice = match (f.len, job.size) {
                (None, Some(SizeSpec::Percent(_))) | (Some(_), _) => len,
                (None, _) => len.min(basis.unwrap_or(len).saturating_sub(start)),
            };
            let need = start + slice;
            if known.is_some_and(|p| p.size >= need || f.len.is_none()) {
                continue;
            }
            if no_data {
                // Engines that move no data (null, metadata engines) need no lay-out.
                let size = need.max(known.map_or(0, |p| p.size));
                files.insert(f.path.clone(), PreparedFile { size, len, basis });
                continue;
            }
            let mut announce = || {
                if !announced {
                    let total: u64 = planned.iter().filter_map(|p| p.len).sum::<u64>().max(len);
                    observer.laying_out(&job.name, nfiles, total);
                    announced = true;
                }
            };
            let laid_out = layout::prepare_file(
                engine.as_mut(),
                job,
                &f.path,
                need,
                seed_for(job, clone) ^ i as u64,
                &mut announce,
            );
            // A file whose lay-out failed half-way (ENOSPC, Ctrl-C) was still created by
            // us: clean it up like any other.
            let created = match &laid_out {
                Ok(p) => p.created,
                Err(_) => {
                    known.is_none()
                        && basis.is_none()
                        && layout::probe(engine.as_mut(), &f.path).is_some()
                }
            };
            if created {
                cleanup.files.push(Created {
                    job: job.clone(),
                    path: f.path.clone(),
                    remove: job.unlink || req.always_remove_created,
                });
            }
            let prepared = laid_out?;
            if job.invalidate && !plan::is_device_like(&f.path) {
                invalidate(engine.as_mut(), &f.path);
            }
            let size = prepared.size;
            files.insert(f.path.clone(), PreparedFile { size, len, basis });
        }
    }
    Ok(PreparedJob { files })
}

fn invalidate(engine: &mut dyn crate::engine::Engine, path: &str) {
    let spec = crate::engine::FileSpec {
        path: path.to_string(),
        open: crate::engine::OpenOptions {
            read: true,
            ..Default::default()
        },
    };
    if let Ok(id) = engine.open(&spec) {
        let _ = engine.invalidate(id);
        let _ = engine.close(id);
    }
}

/// Before any IO of the run: every device-like target (block device, LUN) that a job will
/// write or trim is checked once for data, so a later job never mistakes what an earlier
/// job of the same run wrote for the user's data, and a refusal comes before anything ran.
fn check_devices(jobs: &[Arc<JobSpec>], factory: &EngineFactory) -> Result<(), EngineError> {
    let mut checked: Vec<String> = Vec::new();
    for job in jobs
        .iter()
        .filter(|j| j.rw.kind.writes() && !j.allow_destructive)
    {
        for clone in 0..job.numjobs.max(1) {
            for f in plan::files_for_clone(job, clone) {
                if !plan::is_device_like(&f.path) || checked.contains(&f.path) {
                    continue;
                }
                let mut engine = factory(job)?;
                let Some(size) = layout::probe(engine.as_mut(), &f.path) else {
                    return Err(layout::open_error(engine.as_mut(), &f.path));
                };
                layout::check_device_before_write(engine.as_mut(), &f.path, size)?;
                checked.push(f.path);
            }
        }
    }
    Ok(())
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

/// Repeatable per-clone seed when `randrepeat`, else fresh entropy.
fn seed_for(job: &JobSpec, clone: u32) -> u64 {
    if job.randrepeat {
        crate::rng::mix64(job.randseed ^ (u64::from(clone) << 32) ^ name_hash(&job.name))
    } else {
        crate::rng::Rng::from_entropy().next_u64() ^ u64::from(clone)
    }
}

fn name_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Local directories of generated file names must exist: say so before anything runs.
fn check_directories(jobs: &[Arc<JobSpec>]) -> Result<(), EngineError> {
    for job in jobs {
        if !job.filenames.is_empty() {
            continue;
        }
        for dir in &job.directories {
            if dir.contains("://") {
                continue;
            }
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(EngineError::new(
                        ErrorKind::Refused,
                        format!("{}: directory={dir} is not a directory", job.name),
                    ));
                }
                Err(e) => {
                    return Err(EngineError::os(
                        &format!("{}: directory=", job.name),
                        dir,
                        e,
                    ));
                }
            }
        }
    }
    Ok(())
}

fn targets_of(jobs: &[Arc<JobSpec>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for job in jobs {
        let t = if let Some(f) = job.filenames.first() {
            f.clone()
        } else {
            job.directories
                .first()
                .cloned()
                .unwrap_or_else(|| ".".into())
        };
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Block devices under the jobs' local targets (none for the null engine, which does no IO).
fn local_devices(jobs: &[Arc<JobSpec>]) -> Vec<String> {
    let mut out = Vec::new();
    let real: Vec<Arc<JobSpec>> = jobs
        .iter()
        .filter(|j| j.ioengine != "null")
        .cloned()
        .collect();
    for t in targets_of(&real) {
        if t.contains("://") {
            continue;
        }
        if let Some(dev) = crate::disk::device_of(std::path::Path::new(&t))
            && !out.contains(&dev)
        {
            out.push(dev);
        }
    }
    out
}

fn all_nics() -> Vec<NicSample> {
    std::fs::read_dir("/sys/class/net")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| NicSample::read(&e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default()
}

/// CPU the process spent outside the worker threads and this sampler thread during the
/// batch: io_uring workers and AIO helper threads that fio leaves out.
fn helper_cpu(proc_start: Usage, sampler_start: Usage, outputs: &[WorkerOutput]) -> u64 {
    let process = Usage::process().since(&proc_start).cpu_ns();
    let sampler = Usage::thread().since(&sampler_start).cpu_ns();
    let workers: u64 = outputs.iter().map(|o| o.cpu.cpu_ns()).sum();
    process.saturating_sub(workers + sampler)
}

fn uses_helpers(engine: &str) -> bool {
    matches!(engine, "io_uring" | "posixaio")
}

fn total_ios_of(o: &WorkerOutput) -> u64 {
    o.stats.dirs.iter().map(|d| d.total_ios).sum()
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stonewall_splits_batches() {
        let mut a = JobSpec::new("a");
        let b = JobSpec::new("b");
        let mut c = JobSpec::new("c");
        c.stonewall = true;
        a.group = 0;
        let jobs: Vec<Arc<JobSpec>> = [a, b, c].into_iter().map(Arc::new).collect();
        let bs = batches(&jobs);
        assert_eq!(bs.len(), 2);
        assert_eq!(bs[0].len(), 2);
        assert_eq!(bs[1][0].name, "c");
    }
}
