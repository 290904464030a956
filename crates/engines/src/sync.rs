//! `sync`: `lseek` + `read`/`write`, completed inside `queue`. The seek is skipped when the
//! descriptor already sits at the offset (sequential IO), as fio does.

use std::os::fd::RawFd;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

use crate::syncio::{SyncEngine, SysCall};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "sync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(SyncEngine::boxed(Sync))
}

#[derive(Debug, Default)]
pub struct Sync;

impl SysCall for Sync {
    const NAME: &'static str = NAME;
    const SEEKS: bool = true;

    #[inline(always)]
    fn read(&self, fd: RawFd, buf: *mut u8, len: usize, _offset: i64) -> isize {
        // SAFETY: `buf` points at `len` writable bytes of the worker's arena.
        unsafe { libc::read(fd, buf.cast(), len) }
    }

    #[inline(always)]
    fn write(&self, fd: RawFd, buf: *const u8, len: usize, _offset: i64) -> isize {
        // SAFETY: `buf` points at `len` readable bytes of the worker's arena.
        unsafe { libc::write(fd, buf.cast(), len) }
    }
}
