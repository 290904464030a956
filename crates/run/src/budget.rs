//! Memory a run will take, checked before anything is laid out or started: every clone maps
//! and pre-faults `iodepth` buffers of the largest block size, so `--bs=1G --numjobs=64`
//! asks for 64 GiB at once, and each clone's statistics take a fixed amount more. A run
//! that does not fit is refused in one line instead of meeting the OOM killer.

use std::sync::Arc;

use storbench_job::JobSpec;

use super::*;
use storbench_core::buffers::Arena;
use storbench_core::space::{MemoryRoom, human, memory_room};

/// Memory one clone takes besides its IO buffers: its histograms (slat, clat and lat per
/// direction), counters, sampler series and thread stack. Measured with the null engine:
/// 1000 clones took 447 MB more than 10 did (about 440 KiB each).
const PER_CLONE: u64 = 448 << 10;

/// What one job's clones need.
struct JobNeed {
    name: String,
    clones: u32,
    depth: u32,
    bs: u64,
    bytes: u64,
}

/// Refuses a run whose largest batch (batches run one after another) needs more memory
/// than is available (see [`memory_room`]).
pub(super) fn check_memory(batches: &[Vec<Arc<JobSpec>>]) -> Result<(), EngineError> {
    let Some(room) = memory_room() else {
        return Ok(());
    };
    check_against(batches, room)
}

fn check_against(batches: &[Vec<Arc<JobSpec>>], room: MemoryRoom) -> Result<(), EngineError> {
    for batch in batches {
        let needs: Vec<JobNeed> = batch.iter().map(|j| job_need(j)).collect();
        let total = needs.iter().fold(0u64, |t, n| t.saturating_add(n.bytes));
        if total <= room.bytes {
            continue;
        }
        let big = needs
            .iter()
            .max_by_key(|n| n.bytes)
            .expect("a batch has jobs");
        return Err(EngineError::new(
            ErrorKind::Refused,
            format!(
                "not enough memory: the run needs {} for IO buffers and statistics \
                 ({}: {} clone(s) x iodepth {} x bs {}) but only {} is available ({}); \
                 lower bs, iodepth or numjobs",
                human(total),
                big.name,
                big.clones,
                big.depth,
                human(big.bs),
                human(room.bytes),
                room.bound
            ),
        ));
    }
    Ok(())
}

/// A job's clones' buffers (as the worker maps them) and statistics. Engines the catalogue
/// calls synchronous use one buffer whatever the iodepth, as the worker does; an engine
/// the catalogue does not know is counted as queued (its own error comes later).
fn job_need(job: &JobSpec) -> JobNeed {
    let synchronous = storbench_job::catalogue::find(&job.ioengine).is_some_and(|e| e.synchronous);
    let depth = if synchronous { 1 } else { job.iodepth.max(1) };
    let bs = job.bs.iter().map(|b| b.max()).max().unwrap_or(4096).max(1);
    let clones = job.numjobs.max(1);
    let logs = if job.logs.streamed() {
        storbench_model::iolog::MEMORY_PER_CLONE
    } else {
        0
    };
    let per_clone = Arena::mapped_len(depth, bs).saturating_add(PER_CLONE + logs);
    JobNeed {
        name: job.name.clone(),
        clones,
        depth,
        bs,
        bytes: per_clone.saturating_mul(u64::from(clones)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn null_job(name: &str, bs: u64, iodepth: u32, numjobs: u32) -> Arc<JobSpec> {
        let mut job = JobSpec::new(name);
        job.ioengine = "null".into();
        job.bs = std::array::from_fn(|_| storbench_job::BlockSize::Fixed(bs));
        job.iodepth = iodepth;
        job.numjobs = numjobs;
        Arc::new(job)
    }

    #[test]
    fn refuses_the_largest_batch_naming_the_largest_job() {
        // A queued engine (null): each clone maps iodepth buffers.
        let room = MemoryRoom {
            bytes: 1 << 30,
            bound: "MemAvailable",
        };
        let small = vec![vec![null_job("s", 4096, 1, 4)]];
        check_against(&small, room).unwrap();
        let big = vec![
            vec![null_job("s", 4096, 1, 1)],
            vec![null_job("a", 4096, 1, 1), null_job("b", 64 << 20, 8, 4)],
        ];
        let e = check_against(&big, room).unwrap_err().to_string();
        assert!(
            e.starts_with("not enough memory: the run needs 2.0 GiB"),
            "{e}"
        );
        assert!(
            e.contains("(b: 4 clone(s) x iodepth 8 x bs 64.0 MiB)"),
            "{e}"
        );
        assert!(
            e.contains("only 1.0 GiB is available (MemAvailable)"),
            "{e}"
        );
        // Numbers that overflow saturate instead of wrapping to a small need.
        let huge = vec![vec![null_job("h", 1 << 40, u32::MAX, u32::MAX)]];
        assert!(check_against(&huge, room).is_err());
    }
}
