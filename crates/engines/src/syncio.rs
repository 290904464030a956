//! The body every one-call-per-IO local engine shares (`sync`, `psync`, `vsync`, `pvsync`,
//! `pvsync2`, `falloc`, `ftruncate`): files through [`LocalFiles`], each IO completed inside
//! `queue`, trims and syncs as [`LocalFile::other_io`] runs them. An engine's file gives
//! only its system calls, as a [`SysCall`]; the body is generic over it, so each engine's
//! `queue` is compiled with its calls inlined and costs what a hand-written one did.

use std::fmt;
use std::os::fd::RawFd;

use storbench_core::{Caps, Engine, EngineError, IoKind, IoUnit, Queued};

use crate::local::{
    LocalFile, LocalFiles, SYNC_CAPS, delegate_local_files, last_errno, retry_eintr,
};

/// One engine's system calls for a read and a write of `len` bytes at `offset` of `fd`
/// to or from `buf`: each returns what the call returns (bytes moved, or -1 with errno).
pub trait SysCall: fmt::Debug + Send + 'static {
    /// The engine's catalogue name.
    const NAME: &'static str;
    /// The calls use the descriptor's position (`read`/`write` after an `lseek`, skipped
    /// when the descriptor already sits at the offset, as fio does).
    const SEEKS: bool = false;
    const CAPS: Caps = SYNC_CAPS;
    /// Once per worker, before any file is opened (e4defrag opens its donor here).
    fn setup(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    fn read(&self, fd: RawFd, buf: *mut u8, len: usize, offset: i64) -> isize;
    fn write(&self, fd: RawFd, buf: *const u8, len: usize, offset: i64) -> isize;
}

/// A local engine completing each IO with one call of `S`.
#[derive(Debug, Default)]
pub struct SyncEngine<S> {
    files: LocalFiles,
    calls: S,
}

impl<S: SysCall> SyncEngine<S> {
    pub fn boxed(calls: S) -> Box<dyn Engine> {
        Box::new(SyncEngine {
            files: LocalFiles::default(),
            calls,
        })
    }
}

/// Moves the descriptor to `offset` unless it is there already.
pub(crate) fn seek(f: &mut LocalFile, offset: u64, kind: IoKind) -> Result<(), EngineError> {
    if f.pos == offset {
        return Ok(());
    }
    // SAFETY: plain syscall on an fd the file owns.
    if unsafe { libc::lseek(f.raw(), offset as i64, libc::SEEK_SET) } < 0 {
        f.pos = u64::MAX;
        return Err(f.io_error(kind, last_errno()));
    }
    f.pos = offset;
    Ok(())
}

impl<S: SysCall> Engine for SyncEngine<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn caps(&self) -> Caps {
        S::CAPS
    }

    delegate_local_files!();

    fn setup(&mut self, _setup: &storbench_core::EngineSetup) -> Result<(), EngineError> {
        self.calls.setup()
    }

    #[inline]
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let f = self.files.get_mut(io.file)?;
        if !matches!(io.kind, IoKind::Read | IoKind::Write) {
            return f.other_io(io);
        }
        f.check_direct(io)?;
        if S::SEEKS {
            seek(f, io.offset, io.kind)?;
        }
        let (fd, buf, len, off) = (f.raw(), io.buf.as_ptr(), io.len as usize, io.offset as i64);
        let calls = &self.calls;
        let moved = if io.kind == IoKind::Read {
            retry_eintr(|| calls.read(fd, buf, len, off))
        } else {
            retry_eintr(|| calls.write(fd, buf, len, off))
        };
        match moved {
            Ok(n) => {
                if S::SEEKS {
                    f.pos = io.offset + n;
                }
                Ok(Queued::Done(n))
            }
            Err(errno) => {
                f.pos = u64::MAX;
                Err(f.io_error(io.kind, errno))
            }
        }
    }
}

/// The one iovec over an IO's buffer that the vectored calls take.
#[inline(always)]
pub fn iovec(buf: *const u8, len: usize) -> libc::iovec {
    libc::iovec {
        iov_base: buf as *mut libc::c_void,
        iov_len: len,
    }
}
