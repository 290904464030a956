//! What the runner tells the UI while it works. Measurement never formats: the CLI turns
//! these plain values into fio's lines and status bar.

use std::time::{Duration, Instant};

use storbench_job::{JobSpec, RwKind};

use crate::progress::{WorkerCounters, WorkerState};
use crate::sampler::LogWindows;
use storbench_model::result::{JobHeader, ReportSettings};

/// A job as announced before it starts (fio's `name: (g=0): rw=…` line).
#[derive(Clone, Debug, PartialEq)]
pub struct JobHeaderLine {
    pub name: String,
    pub group: u32,
    pub header: JobHeader,
    pub settings: ReportSettings,
    /// The job does no IO on a file (cpuio, exec): fio prints no job line for it, and its
    /// engine's own lines come after the `Starting` line (`Observer::engine_lines`).
    pub no_file: bool,
    /// Its clones run in processes of their own (`crates/run/src/forked.rs`); set by the runner.
    pub processes: bool,
}

impl JobHeaderLine {
    pub fn of(job: &JobSpec) -> Self {
        JobHeaderLine {
            name: job.name.clone(),
            group: job.group,
            header: crate::collect::header_of(job, None),
            settings: crate::collect::settings_of(job),
            no_file: job.has_no_file(),
            processes: false,
        }
    }
}

/// Running totals over all workers of a batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub bytes: [u64; 3],
    pub ios: [u64; 3],
    pub lat_sum_ns: [u64; 3],
}

/// Live state of the running batch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Progress {
    pub elapsed: Duration,
    /// Names of the jobs running now (one batch between stonewalls).
    pub jobs: Vec<String>,
    /// One state per worker with its job's pattern, for fio's letters.
    pub workers: Vec<(WorkerState, RwKind)>,
    /// Files the running workers have open.
    pub files_open: u32,
    /// Rates since the previous report: bytes/s and IOs/s per direction.
    pub bw: [f64; 3],
    pub iops: [f64; 3],
    /// Mean completion latency since the previous report, ns (0 if none).
    pub mean_lat_ns: u64,
    /// 0..=100.
    pub percent_done: f64,
    /// Time left in this batch.
    pub eta: Option<Duration>,
    /// This batch's place in the run: 0-based index and the number of batches.
    pub batch: usize,
    pub batches: usize,
    /// The time the batches after this one will take, as far as their runtimes say: `None`
    /// when one of them ends by size only (its time is known only once it runs).
    pub later: Option<Duration>,
}

/// One worker as the progress report sees it: counters, job, size limit, files open.
pub type WorkerView<'a> = (&'a WorkerCounters, &'a JobSpec, Option<u64>, u32);

impl Progress {
    /// The time left in the whole run, when the later batches' times are known.
    pub fn run_eta(&self) -> Option<Duration> {
        Some(self.eta? + self.later?)
    }

    /// Builds a report from the workers' counters; `last` carries totals between calls.
    pub fn build<'a>(
        workers: impl Iterator<Item = WorkerView<'a>>,
        epoch: Instant,
        totals: &Totals,
        last: &mut (Totals, Instant),
    ) -> Progress {
        let now = Instant::now();
        let secs = now.duration_since(last.1).as_secs_f64().max(1e-3);
        let rate = |cur: [u64; 3], prev: [u64; 3]| {
            std::array::from_fn(|d| cur[d].saturating_sub(prev[d]) as f64 / secs)
        };
        let bw = rate(totals.bytes, last.0.bytes);
        let iops = rate(totals.ios, last.0.ios);
        let ios: u64 = (0..3)
            .map(|d| totals.ios[d].saturating_sub(last.0.ios[d]))
            .sum();
        let lat: u64 = (0..3)
            .map(|d| totals.lat_sum_ns[d].saturating_sub(last.0.lat_sum_ns[d]))
            .sum();
        *last = (*totals, now);
        let mut p = Progress {
            elapsed: epoch.elapsed(),
            bw,
            iops,
            mean_lat_ns: lat.checked_div(ios).unwrap_or(0),
            ..Default::default()
        };
        let mut fraction_sum = 0.0;
        let mut eta = Duration::ZERO;
        for (counters, job, limit, files) in workers {
            let state = counters.state();
            p.workers.push((state, job.rw.kind));
            if !p.jobs.contains(&job.name) {
                p.jobs.push(job.name.clone());
            }
            if !matches!(state, WorkerState::Done | WorkerState::Error) {
                p.files_open += files;
            }
            let (frac, left) = done_fraction(counters, job, limit, epoch);
            fraction_sum += frac;
            eta = eta.max(left);
        }
        let n = p.workers.len();
        p.percent_done = if n == 0 {
            100.0
        } else {
            fraction_sum / n as f64 * 100.0
        };
        p.eta = Some(eta);
        p
    }
}

/// Fraction done and time left for one worker.
fn done_fraction(
    c: &WorkerCounters,
    job: &JobSpec,
    limit: Option<u64>,
    epoch: Instant,
) -> (f64, Duration) {
    match c.state() {
        WorkerState::Done | WorkerState::Error => return (1.0, Duration::ZERO),
        WorkerState::Setup | WorkerState::LayingOut => {
            return (0.0, job.runtime.unwrap_or_default() + job.ramp_time);
        }
        _ => {}
    }
    let measured = c
        .measure_start_ns()
        .map(|s| epoch.elapsed().saturating_sub(Duration::from_nanos(s)))
        .unwrap_or_default();
    let snap = c.snapshot();
    let bytes: u64 = snap.bytes.iter().sum::<u64>() + snap.pre_bytes;
    let by_time = job.runtime.map(|rt| {
        let f = (measured.as_secs_f64() / rt.as_secs_f64().max(1e-9)).min(1.0);
        (f, rt.saturating_sub(measured))
    });
    let by_size = limit.filter(|&l| l > 0).map(|l| {
        let f = (bytes as f64 / l as f64).min(1.0);
        let left = if f > 0.0 {
            measured.mul_f64((1.0 - f) / f)
        } else {
            Duration::ZERO
        };
        (f, left)
    });
    match (by_time, by_size) {
        (Some(t), Some(s)) if !job.time_based => {
            if s.0 > t.0 {
                s
            } else {
                t
            }
        }
        (Some(t), _) => t,
        (None, Some(s)) => s,
        (None, None) => (0.0, Duration::ZERO),
    }
}

/// Receives announcements and progress; every method has a do-nothing default.
pub trait Observer {
    fn starting(&mut self, _jobs: &[JobHeaderLine]) {}
    fn laying_out(&mut self, _job: &str, _files: usize, _bytes: u64) {}
    /// Lay-out of a job's files so far (bytes written of `total`), about every MiB: the
    /// observer decides how often to show it.
    fn layout_progress(&mut self, _job: &str, _done: u64, _total: u64) {}
    fn progress(&mut self, _p: &Progress) {}
    /// A job clone's log windows, when its batch ends (fio writes a job's logs as it ends).
    /// `thread_number` is fio's: every clone of every job numbered from 1, in order.
    fn clone_logs(&mut self, _job: &JobSpec, _thread_number: u32, _logs: &LogWindows) {}
    /// Where a job clone's per-IO and histogram log lines go (`JobSpec::logs.streamed()`),
    /// asked before the batch starts; the sink runs on the batch's log writer thread.
    fn unit_log_sink(
        &mut self,
        _job: &JobSpec,
        _thread_number: u32,
    ) -> Option<Box<dyn storbench_model::iolog::IoLogSink>> {
        None
    }
    /// A log that could not be written, or an IO thread that waited for the log writer.
    fn log_warning(&mut self, _message: &str) {}
    /// What an engine says as one of its job's clones starts (`Engine::start_lines`),
    /// printed where fio prints it: after the `Starting` line, before the results.
    fn engine_lines(&mut self, _lines: &[String]) {}
}

/// An observer that ignores everything (tests, `--eta=never` pipelines).
pub struct NoObserver;

impl Observer for NoObserver {}
