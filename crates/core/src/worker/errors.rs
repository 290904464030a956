//! fio's `continue_on_error` in the worker: an IO that failed, or a block that did not
//! verify, is either the job's error (it stops) or, when the job's policy goes past it,
//! counted as fio counts it: an IO issued that moved nothing and has no latency, and one
//! more in `total_err`. Everything here runs on the error path only.

use storbench_job::errors::ErrorPolicy;

use super::complete::check;
use super::{Slot, Worker};
use crate::error::EngineError;

const OPS: [&str; 3] = ["read", "write", "trim"];

impl Worker<'_> {
    /// An IO that completed with `errno`.
    #[cold]
    pub(super) fn io_failed(&mut self, s: &Slot, errno: i32) -> Result<(), EngineError> {
        if self.storage_full(errno, s.ddir as usize) {
            return Ok(());
        }
        let path = &self.plan.files[s.file as usize].spec.path;
        let op = OPS[s.ddir as usize];
        let kind = ErrorPolicy::kind_of(s.ddir as usize, errno);
        if !self.job.errors.non_fatal(kind, errno) {
            return check(-i64::from(errno), op, path);
        }
        let message = || EngineError::errno(op, path, errno).message;
        if self.job.errors.dump {
            eprintln!(
                "fio: io_u error on file {path}: {}: {op} offset={}, buflen={}",
                strerror(errno),
                s.offset,
                s.len
            );
        }
        let keep = self.job.errors.dump;
        self.stats.errors.count(errno, || keep.then(message));
        self.count_failed(s.ddir as usize);
        Ok(())
    }

    /// The engine refused to queue an IO (a synchronous engine's failed call): gone past
    /// as a failed IO when its errno allows, its slot free again.
    #[cold]
    pub(super) fn queue_failed(&mut self, slot: u32, e: EngineError) -> Result<bool, EngineError> {
        let s = self.slots[slot as usize];
        if e.errno
            .is_some_and(|n| self.storage_full(n, s.ddir as usize))
        {
            self.free.push(slot);
            self.issued_failed();
            return Ok(true);
        }
        let errno = match e.errno {
            Some(n) if self.job.errors.counts() => n,
            _ => return Err(e),
        };
        self.free.push(slot);
        self.issued_failed();
        self.io_failed(&s, errno).map(|()| true)
    }

    /// A block that did not verify: fio logs its message either way; the job goes past
    /// it under `continue_on_error=verify` (EILSEQ), else it is the job's error.
    #[cold]
    pub(super) fn verify_failed(&mut self, e: EngineError) -> Result<(), EngineError> {
        let errno = e.errno.unwrap_or(libc::EILSEQ);
        let kind = ErrorPolicy::kind_of(0, errno);
        if !self.job.errors.non_fatal(kind, errno) {
            return Err(e);
        }
        eprintln!("{}", e.message);
        let keep = self.job.errors.dump;
        self.stats
            .errors
            .count(errno, || keep.then(|| e.message.clone()));
        Ok(())
    }

    /// fio's `fill_device`: a write that found the storage full (ENOSPC, EDQUOT) is the
    /// end the job wrote towards. It ends the job's IO without an error and, as in fio,
    /// counts as an IO issued that moved nothing.
    fn storage_full(&mut self, errno: i32, d: usize) -> bool {
        let full = self.job.fill_device && matches!(errno, libc::ENOSPC | libc::EDQUOT);
        if full {
            self.files_done = true;
            self.count_failed(d);
        }
        full
    }

    /// fio's `fill_device` on a write the storage took only in part: fio issues the rest
    /// again, which finds the storage full, so the write and its rest count as two IOs
    /// whose bytes are not counted, and the job's IO ends.
    #[cold]
    pub(super) fn short_fill(&mut self) {
        self.count_failed(1);
        self.count_failed(1);
        self.files_done = true;
    }

    /// A failed IO counts as issued (fio's `total_ios`), with no bytes and no latency.
    fn count_failed(&mut self, d: usize) {
        self.stats.dirs[d].total_ios += 1;
        if self.measuring {
            self.publish_dir(d);
        }
    }

    /// A synchronous engine's failed call never reached `complete`: its depth and
    /// batch counts as fio's for a call made.
    fn issued_failed(&mut self) {
        if self.synchronous {
            self.stats.mark_depth(1, 1);
        }
    }
}

/// The C library's text of an errno, without Rust's "(os error N)".
fn strerror(errno: i32) -> String {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn strerror_is_the_c_text() {
        assert_eq!(super::strerror(5), "Input/output error");
        assert_eq!(super::strerror(28), "No space left on device");
    }
}
