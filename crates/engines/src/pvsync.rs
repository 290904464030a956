//! `pvsync`: one `preadv`/`pwritev` of a single iovec per IO, completed inside `queue`, as
//! fio's pvsync engine does.

use std::os::fd::RawFd;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

use crate::syncio::{SyncEngine, SysCall, iovec};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "pvsync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(SyncEngine::boxed(Pvsync))
}

#[derive(Debug, Default)]
pub struct Pvsync;

impl SysCall for Pvsync {
    const NAME: &'static str = NAME;

    #[inline(always)]
    fn read(&self, fd: RawFd, buf: *mut u8, len: usize, offset: i64) -> isize {
        // SAFETY: one iovec over `len` writable bytes of the worker's arena.
        unsafe { libc::preadv(fd, &iovec(buf, len), 1, offset) }
    }

    #[inline(always)]
    fn write(&self, fd: RawFd, buf: *const u8, len: usize, offset: i64) -> isize {
        // SAFETY: one iovec over `len` readable bytes of the worker's arena.
        unsafe { libc::pwritev(fd, &iovec(buf, len), 1, offset) }
    }
}
