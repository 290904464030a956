//! `vsync`: `lseek` + `readv`/`writev` of a single iovec per IO, completed inside `queue`.
//! fio's vsync also merges IOs queued together that are contiguous into one call (with
//! iodepth above 1); storbench's, like its other synchronous engines, issues one call per IO.

use std::os::fd::RawFd;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

use crate::syncio::{SyncEngine, SysCall, iovec};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "vsync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(SyncEngine::boxed(Vsync))
}

#[derive(Debug, Default)]
pub struct Vsync;

impl SysCall for Vsync {
    const NAME: &'static str = NAME;
    const SEEKS: bool = true;

    #[inline(always)]
    fn read(&self, fd: RawFd, buf: *mut u8, len: usize, _offset: i64) -> isize {
        // SAFETY: one iovec over `len` writable bytes of the worker's arena.
        unsafe { libc::readv(fd, &iovec(buf, len), 1) }
    }

    #[inline(always)]
    fn write(&self, fd: RawFd, buf: *const u8, len: usize, _offset: i64) -> isize {
        // SAFETY: one iovec over `len` readable bytes of the worker's arena.
        unsafe { libc::writev(fd, &iovec(buf, len), 1) }
    }
}
