//! `psync`: one `pread`/`pwrite` per IO, completed inside `queue`.

use std::os::fd::RawFd;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

use crate::syncio::{SyncEngine, SysCall};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "psync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(SyncEngine::boxed(Psync))
}

#[derive(Debug, Default)]
pub struct Psync;

impl SysCall for Psync {
    const NAME: &'static str = NAME;

    #[inline(always)]
    fn read(&self, fd: RawFd, buf: *mut u8, len: usize, offset: i64) -> isize {
        // SAFETY: `buf` points at `len` writable bytes of the worker's arena.
        unsafe { libc::pread(fd, buf.cast(), len, offset) }
    }

    #[inline(always)]
    fn write(&self, fd: RawFd, buf: *const u8, len: usize, offset: i64) -> isize {
        // SAFETY: `buf` points at `len` readable bytes of the worker's arena.
        unsafe { libc::pwrite(fd, buf.cast(), len, offset) }
    }
}
