//! fio's `keep_running` for a size-bound job with `io_size`: whether another pass over the
//! files follows the one that just ended.
//!
//! fio runs a job as passes (`thread_main`): each pass issues IO until its files are done
//! or the job has issued `io_size` times `loops` bytes in its directions
//! (`io_bytes_exceeded`), then verifies that pass's writes. The first `loops` passes always
//! run; after them another pass follows while the bytes the job moved in every direction,
//! verify reads included (`td->io_bytes`), are below `io_size` by at least the largest
//! block. So a region smaller than `io_size` is gone over until `io_size` is reached or
//! `loops` passes are done, whichever takes more IO, and a verifying job's reads count
//! towards it: `size=1m, io_size=4m, loops=2` writes 4 MiB; with `verify=crc32c` and
//! `loops=1`, 2 MiB (two passes, each written and read back).

use storbench_job::JobSpec;

/// The pass count and fio's rule for a job with `io_size` that is not time-based.
#[derive(Clone, Copy, Debug)]
pub(super) struct KeepRunning {
    io_size: u64,
    loops: u64,
    /// Files the job goes over: each is done once per pass.
    files: u64,
    /// Passes of the job that ended.
    passes: u64,
    /// Files still to end the pass already counted: the first file found done ends the
    /// job's pass, as the files are taken in turn and each has issued its last block by
    /// then (fio ends the pass when the last is done, before the first IO of the next).
    pending: u64,
    max_bs: u64,
    /// Each write is read back by the job's verify, in its pass.
    verify_writes: bool,
}

impl KeepRunning {
    pub(super) fn new(job: &JobSpec, files: usize) -> Option<KeepRunning> {
        let io_size = job.io_size.filter(|_| !job.time_based)?;
        let verify = &job.verify;
        Some(KeepRunning {
            io_size,
            loops: u64::from(job.loops.max(1)),
            files: (files as u64).max(1),
            passes: 0,
            pending: 0,
            max_bs: job.bs.iter().map(|b| b.max()).max().unwrap_or(1),
            verify_writes: verify.active() && verify.do_verify && job.rw.kind.writes(),
        })
    }

    /// A pass over one file ended: `None` when it belongs to a pass of the job already
    /// counted, else whether the job makes another pass, from the bytes it issued (reads,
    /// writes and trims, not its verify reads) and wrote.
    pub(super) fn file_pass_over(&mut self, issued: u64, written: u64) -> Option<bool> {
        if self.pending > 0 {
            self.pending -= 1;
            return None;
        }
        self.pending = self.files - 1;
        Some(self.job_pass_over_with(issued, written))
    }

    /// Every file's pass ended at once (a new round): whether the job makes another.
    pub(super) fn job_pass_over(&mut self, issued: u64, written: u64) -> bool {
        self.pending = 0;
        self.job_pass_over_with(issued, written)
    }

    fn job_pass_over_with(&mut self, issued: u64, written: u64) -> bool {
        self.passes += 1;
        self.goes_on(issued, written)
    }

    fn goes_on(&self, issued: u64, written: u64) -> bool {
        if self.passes < self.loops {
            return true;
        }
        let moved = issued + if self.verify_writes { written } else { 0 };
        moved < self.io_size && self.io_size - moved >= self.max_bs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keep(io_size: u64, loops: u32, files: usize) -> KeepRunning {
        let mut job = JobSpec::new("k");
        job.io_size = Some(io_size);
        job.loops = loops;
        KeepRunning::new(&job, files).unwrap()
    }

    #[test]
    fn the_first_loops_passes_always_run() {
        let mut k = keep(1 << 20, 3, 1);
        assert_eq!(k.file_pass_over(4 << 20, 0), Some(true));
        assert_eq!(k.file_pass_over(8 << 20, 0), Some(true));
        assert_eq!(k.file_pass_over(12 << 20, 0), Some(false));
    }

    #[test]
    fn more_passes_follow_until_io_size_is_within_a_block() {
        let mut k = keep(4 << 20, 2, 1);
        assert_eq!(k.file_pass_over(1 << 20, 0), Some(true));
        assert_eq!(k.file_pass_over(2 << 20, 0), Some(true));
        assert_eq!(k.file_pass_over(3 << 20, 0), Some(true));
        assert_eq!(k.file_pass_over(4 << 20, 0), Some(false));
        let mut k = keep((2 << 20) + 2048, 1, 1);
        assert_eq!(k.file_pass_over(2 << 20, 0), Some(false), "2 KiB left < bs");
    }

    #[test]
    fn a_pass_ends_when_every_file_is_done() {
        let mut k = keep(8 << 20, 1, 2);
        assert_eq!(k.file_pass_over(2 << 20, 0), Some(true));
        assert_eq!(k.file_pass_over(2 << 20, 0), None);
        assert!(k.job_pass_over(4 << 20, 0));
        assert_eq!(k.file_pass_over(6 << 20, 0), Some(true));
        assert_eq!(k.file_pass_over(6 << 20, 0), None);
        assert_eq!(k.file_pass_over(8 << 20, 0), Some(false));
    }

    #[test]
    fn verify_reads_count_towards_io_size() {
        let mut job = JobSpec::new("v");
        job.io_size = Some(4 << 20);
        job.rw.kind = storbench_job::RwKind::Write;
        job.verify.kind = storbench_job::VerifyKind::Crc32c;
        let mut k = KeepRunning::new(&job, 1).unwrap();
        assert_eq!(k.file_pass_over(1 << 20, 1 << 20), Some(true));
        assert_eq!(k.file_pass_over(2 << 20, 2 << 20), Some(false));
    }

    #[test]
    fn time_based_jobs_and_jobs_without_io_size_have_no_rule() {
        let mut job = JobSpec::new("t");
        assert!(KeepRunning::new(&job, 1).is_none());
        job.io_size = Some(1);
        job.time_based = true;
        assert!(KeepRunning::new(&job, 1).is_none());
    }
}
