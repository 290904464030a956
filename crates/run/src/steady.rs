//! The sampler's side of fio's steady state: once a second it turns the published
//! counters of each watched job clone (or, under group_reporting, of its whole group) into
//! the last second's IOPS and bandwidth, feeds them to the window (`storbench_core::steady`) and,
//! when the window meets its criterion, ends those jobs as fio's `steadystate_check` does.
//! `exitall` and `exitall_on_error` end a batch's jobs the same way, and `exit_on_io_done`
//! a cpuio job once the IO jobs beside it have ended.

use std::sync::Arc;

use storbench_job::JobSpec;

use super::CloneSlot;
use storbench_core::steady::{SAMPLE_MS, SteadyWindow};
use storbench_model::result::SteadyResult;

/// One window and the clones whose IO feeds it.
struct Tracker {
    clones: Vec<usize>,
    window: SteadyWindow,
    ramp_ns: u64,
    /// Time and totals at the previous sample; none before the clones start measuring.
    prev: Option<(u64, u64, u64)>,
}

pub(super) struct SteadyWatch {
    trackers: Vec<Tracker>,
    next_ns: u64,
}

impl SteadyWatch {
    pub(super) fn new(clones: &[CloneSlot], batch: &[Arc<JobSpec>], now_ns: u64) -> Self {
        let mut trackers: Vec<(Option<u32>, Tracker)> = Vec::new();
        for (i, c) in clones.iter().enumerate() {
            let job = &batch[c.job_index];
            if !job.steadystate.enabled() {
                continue;
            }
            // group_reporting: the group's clones share one window (fio keeps it in the
            // group's last job).
            let key = job.group_reporting.then_some(job.group);
            match trackers
                .iter_mut()
                .find(|(k, _)| key.is_some() && *k == key)
            {
                Some((_, t)) => t.clones.push(i),
                None => trackers.push((
                    key,
                    Tracker {
                        clones: vec![i],
                        window: SteadyWindow::new(job.steadystate),
                        ramp_ns: job.steadystate.ramp.as_nanos() as u64,
                        prev: None,
                    },
                )),
            }
        }
        SteadyWatch {
            trackers: trackers.into_iter().map(|(_, t)| t).collect(),
            next_ns: now_ns + SAMPLE_MS * 1_000_000,
        }
    }

    /// Takes a sample when one is due; ends the jobs whose window became steady.
    pub(super) fn poll(&mut self, now_ns: u64, clones: &[CloneSlot]) {
        if self.trackers.is_empty() || now_ns < self.next_ns {
            return;
        }
        self.next_ns = now_ns + SAMPLE_MS * 1_000_000;
        for t in &mut self.trackers {
            t.sample(now_ns, clones);
        }
    }

    /// The window that clone `index` belonged to, as the result reports it.
    pub(super) fn result_for(&self, index: usize) -> Option<SteadyResult> {
        self.trackers
            .iter()
            .find(|t| t.clones.contains(&index))
            .map(|t| t.window.result())
    }
}

/// fio's `exitall` and `exitall_on_error`: once a job that has them has ended (or failed),
/// the jobs its `exit_what` names are asked to end: those of its reporting group, every
/// clone of the batch, or (`all`) the batch and the run's later batches, for which this
/// returns true.
pub(super) fn exit_all(clones: &[CloneSlot], batch: &[Arc<JobSpec>]) -> bool {
    use storbench_core::progress::WorkerState::{Done, Error};
    use storbench_job::errors::ExitWhat;
    let trigger = clones
        .iter()
        .map(|c| &batch[c.job_index])
        .zip(clones)
        .find(|(job, c)| match c.counters.state() {
            Done => job.exitall,
            Error => job.exitall || job.exitall_on_error,
            _ => false,
        });
    let Some((job, _)) = trigger else {
        return false;
    };
    let what = job.errors.exit_what;
    for c in clones {
        if what != ExitWhat::Group || batch[c.job_index].group == job.group {
            c.counters.terminate();
        }
    }
    what == ExitWhat::All
}

/// fio's `exit_on_io_done` (a cpuio option): once every clone of the batch's IO jobs (jobs
/// with files) has ended, the clones that asked for it are ended too. A batch of such jobs
/// alone ends by their runtime, as fio's.
pub(super) fn exit_on_io_done(clones: &[CloneSlot], batch: &[Arc<JobSpec>]) {
    use storbench_core::progress::WorkerState::{Done, Error};
    let job = |c: &CloneSlot| &batch[c.job_index];
    if !clones.iter().any(|c| job(c).engine_options.exit_on_io_done) {
        return;
    }
    let mut io = clones.iter().filter(|c| !job(c).has_no_file()).peekable();
    if io.peek().is_none() || !io.all(|c| matches!(c.counters.state(), Done | Error)) {
        return;
    }
    for c in clones
        .iter()
        .filter(|c| job(c).engine_options.exit_on_io_done)
    {
        c.counters.terminate();
    }
}

impl Tracker {
    fn sample(&mut self, now_ns: u64, clones: &[CloneSlot]) {
        let counters = || self.clones.iter().map(|&i| &clones[i].counters);
        if self.window.attained() || counters().all(|c| c.measure_end_ns().is_some()) {
            return;
        }
        let Some(start) = counters().filter_map(|c| c.measure_start_ns()).min() else {
            return;
        };
        let (mut bytes, mut ios) = (0u64, 0u64);
        for c in counters() {
            let s = c.snapshot();
            bytes += s.bytes.iter().sum::<u64>();
            ios += s.ios.iter().sum::<u64>();
        }
        // As fio: the first second counts from the start of measurement, and with
        // ss_ramp samples are taken from one second after it.
        let (prev_ns, prev_bytes, prev_ios) = self.prev.unwrap_or((start, 0, 0));
        self.prev = Some((now_ns, bytes, ios));
        let ms = now_ns.saturating_sub(prev_ns) / 1_000_000;
        let ramp_over = self.ramp_ns == 0 || now_ns >= start + self.ramp_ns + 1_000_000_000;
        if ms == 0 || !ramp_over {
            return;
        }
        let bw = 1000 * bytes.saturating_sub(prev_bytes) / ms;
        let iops = 1000 * ios.saturating_sub(prev_ios) / ms;
        if self.window.push(iops, bw) {
            for c in counters() {
                c.terminate();
            }
        }
    }
}
