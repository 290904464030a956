//! `falloc`: fio's engine that allocates instead of moving data. A write is
//! `fallocate(mode 0)` over its range (the file grows to cover it), a read
//! `fallocate(FALLOC_FL_KEEP_SIZE)` (blocks reserved, size unchanged) and a trim a hole
//! punched (`PUNCH_HOLE | KEEP_SIZE`), as fio's `engines/falloc.c` maps them; each
//! completes inside `queue` and counts its length as moved.

use std::os::fd::RawFd;

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

use crate::syncio::{SyncEngine, SysCall};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "falloc";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(SyncEngine::boxed(Falloc))
}

#[derive(Debug, Default)]
pub struct Falloc;

/// `fallocate` over `len` bytes at `offset`, answering as a read or write call would.
#[inline(always)]
fn allocate(fd: RawFd, mode: libc::c_int, len: usize, offset: i64) -> isize {
    // SAFETY: plain syscall on an fd the engine's file owns.
    match unsafe { libc::fallocate(fd, mode, offset, len as i64) } {
        0 => len as isize,
        rc => rc as isize,
    }
}

impl SysCall for Falloc {
    const NAME: &'static str = NAME;

    #[inline(always)]
    fn read(&self, fd: RawFd, _buf: *mut u8, len: usize, offset: i64) -> isize {
        allocate(fd, libc::FALLOC_FL_KEEP_SIZE, len, offset)
    }

    #[inline(always)]
    fn write(&self, fd: RawFd, _buf: *const u8, len: usize, offset: i64) -> isize {
        allocate(fd, 0, len, offset)
    }
}
