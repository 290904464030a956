//! What engines read of a job beyond its typed engine options (`JobSpec::engine_options`).

use storbench_job::{JobSpec, SizeSpec};

/// The size of each of the job's files when the job states one: the largest `filesize`, or
/// `size` split over `nrfiles`, as fio sizes files it lays out.
pub fn file_size(job: &JobSpec) -> Option<u64> {
    if let Some((_, max)) = job.filesize {
        return Some(max);
    }
    match job.size {
        Some(SizeSpec::Bytes(total)) => Some(total / u64::from(job.nrfiles.max(1))),
        _ => None,
    }
}
