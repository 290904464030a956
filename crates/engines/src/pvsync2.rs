//! `pvsync2`: `preadv2`/`pwritev2` with per-IO flags, completed inside `queue`.
//! Options as fio's: `hipri` (RWF_HIPRI, polled completion on O_DIRECT files of devices with
//! poll queues), `nowait` (RWF_NOWAIT: fail with EAGAIN instead of blocking) and `uncached`
//! (RWF_DONTCACHE: buffered IO that drops its pages afterwards, Linux 6.14+).

use std::os::fd::RawFd;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

use crate::syncio::{SyncEngine, SysCall, iovec};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "pvsync2";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(SyncEngine::boxed(Pvsync2 {
        rw_flags: rw_flags(job),
    }))
}

/// The RWF_* flags the job's engine options ask for.
pub fn rw_flags(job: &JobSpec) -> libc::c_int {
    let mut flags = 0;
    let o = &job.engine_options;
    if o.hipri {
        flags |= libc::RWF_HIPRI;
    }
    if o.nowait {
        flags |= libc::RWF_NOWAIT;
    }
    if o.uncached {
        flags |= libc::RWF_DONTCACHE;
    }
    flags
}

#[derive(Debug, Default)]
pub struct Pvsync2 {
    /// RWF_* flags applied to every read and write.
    rw_flags: libc::c_int,
}

impl SysCall for Pvsync2 {
    const NAME: &'static str = NAME;

    #[inline(always)]
    fn read(&self, fd: RawFd, buf: *mut u8, len: usize, offset: i64) -> isize {
        // SAFETY: one iovec over `len` writable bytes of the worker's arena.
        unsafe { libc::preadv2(fd, &iovec(buf, len), 1, offset, self.rw_flags) }
    }

    #[inline(always)]
    fn write(&self, fd: RawFd, buf: *const u8, len: usize, offset: i64) -> isize {
        // SAFETY: one iovec over `len` readable bytes of the worker's arena.
        unsafe { libc::pwritev2(fd, &iovec(buf, len), 1, offset, self.rw_flags) }
    }
}
