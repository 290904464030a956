//! `ftruncate`: fio's engine where each write sets the file's size to the write's offset
//! (`ftruncate(fd, offset)`, as fio's `engines/ftruncate.c` does, so a sequential pass
//! leaves the file one block short of its size) and counts its length as moved. Reads and
//! trims fail with EINVAL, as in fio; syncs are run.

use std::os::fd::RawFd;

use storbench_core::{Caps, Engine, EngineError};
use storbench_job::JobSpec;

use crate::local::SYNC_CAPS;
use crate::syncio::{SyncEngine, SysCall};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "ftruncate";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(SyncEngine::boxed(Ftruncate))
}

#[derive(Debug, Default)]
pub struct Ftruncate;

impl SysCall for Ftruncate {
    const NAME: &'static str = NAME;
    const CAPS: Caps = Caps {
        trim: false,
        ..SYNC_CAPS
    };

    fn read(&self, _fd: RawFd, _buf: *mut u8, _len: usize, _offset: i64) -> isize {
        // SAFETY: errno is this thread's; the caller reads it back as the call's error.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        -1
    }

    #[inline(always)]
    fn write(&self, fd: RawFd, _buf: *const u8, len: usize, offset: i64) -> isize {
        // SAFETY: plain syscall on an fd the engine's file owns.
        match unsafe { libc::ftruncate(fd, offset) } {
            0 => len as isize,
            rc => rc as isize,
        }
    }
}
