//! Small facts about a run: seeds, targets, devices, interfaces, helper-thread CPU, time.

use std::sync::Arc;

use storbench_job::target::Target;
use storbench_job::{JobSpec, catalogue};

use super::*;
/// Repeatable per-clone seed when `randrepeat`, else fresh entropy.
pub(super) fn seed_for(job: &JobSpec, clone: u32) -> u64 {
    if job.randrepeat {
        storbench_model::rng::mix64(job.randseed ^ (u64::from(clone) << 32) ^ name_hash(&job.name))
    } else {
        storbench_model::rng::Rng::from_entropy().next_u64() ^ u64::from(clone)
    }
}

pub(super) fn name_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Each job's target (its first file, else its first directory, else the working
/// directory), without repeats.
pub(super) fn targets_of(jobs: &[Arc<JobSpec>]) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for job in jobs.iter().filter(|j| !j.has_no_file()) {
        let t = match job.filenames.first().or(job.directories.first()) {
            Some(t) => t.clone(),
            None => Target::Path(".".into()),
        };
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Block devices under the jobs' local targets (none for the null engine, which does no IO).
pub(super) fn local_devices(jobs: &[Arc<JobSpec>]) -> Vec<String> {
    let mut out = Vec::new();
    let real: Vec<Arc<JobSpec>> = jobs
        .iter()
        .filter(|j| !catalogue::find(&j.ioengine).is_some_and(|e| e.does_no_io()))
        .cloned()
        .collect();
    for t in targets_of(&real) {
        if t.caps().network {
            continue;
        }
        if let Some(dev) = storbench_core::disk::device_of(std::path::Path::new(t.expose()))
            && !out.contains(&dev)
        {
            out.push(dev);
        }
    }
    out
}

/// A device under a job's files: (name, holds the data, found below the file's device).
pub(super) type TreeDevice = (String, bool, bool);

/// The jobs' devices and the disks below them (see [`storbench_core::disk::underlying`]), each once.
pub(super) fn device_tree(jobs: &[Arc<JobSpec>]) -> Vec<TreeDevice> {
    let mut out: Vec<TreeDevice> = Vec::new();
    for top in local_devices(jobs) {
        let leaves = storbench_core::disk::underlying(&top);
        let top_is_leaf = leaves.contains(&top);
        let below: Vec<TreeDevice> = leaves
            .into_iter()
            .filter(|l| *l != top)
            .map(|l| (l, true, true))
            .collect();
        for (name, leaf, under) in std::iter::once((top, top_is_leaf, false)).chain(below) {
            match out.iter_mut().find(|(n, _, _)| *n == name) {
                Some(e) => {
                    e.1 |= leaf;
                    e.2 &= under;
                }
                None => out.push((name, leaf, under)),
            }
        }
    }
    out
}

pub(super) fn all_nics() -> Vec<NicSample> {
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
pub(super) fn helper_cpu(proc_start: Usage, sampler_start: Usage, outputs: &[WorkerOutput]) -> u64 {
    let process = Usage::process().since(&proc_start).cpu_ns();
    let sampler = Usage::thread().since(&sampler_start).cpu_ns();
    // A worker in a process of its own spent its CPU outside this process.
    let workers: u64 = outputs
        .iter()
        .filter(|o| o.helper_ns.is_none())
        .map(|o| o.cpu.cpu_ns())
        .sum();
    process.saturating_sub(workers + sampler)
}

pub(super) fn uses_helpers(engine: &str) -> bool {
    catalogue::find(engine).is_some_and(|e| e.helper_threads)
}

pub(super) fn total_ios_of(o: &WorkerOutput) -> u64 {
    o.stats.dirs.iter().map(|d| d.total_ios).sum()
}

pub(super) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
