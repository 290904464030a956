//! `vsync`: `lseek` + `readv`/`writev` of a single iovec per IO, completed inside `queue`.
//! fio's vsync also merges IOs queued together that are contiguous into one call (with
//! iodepth above 1); storbench's, like its other synchronous engines, issues one call per IO.

use storbench_core::{Caps, Engine, EngineError, IoKind, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::local::{LocalFiles, SYNC_CAPS, delegate_local_files, retry_eintr};
use crate::sync::seek;

#[derive(Debug, Default)]
pub struct Vsync {
    files: LocalFiles,
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "vsync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(Vsync::default()))
}

impl Engine for Vsync {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        SYNC_CAPS
    }

    delegate_local_files!();

    #[inline]
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let f = self.files.get_mut(io.file)?;
        if !matches!(io.kind, IoKind::Read | IoKind::Write) {
            return f.other_io(io);
        }
        f.check_direct(io)?;
        seek(f, io.offset, io.kind)?;
        let iov = libc::iovec {
            iov_base: io.buf.as_ptr().cast(),
            iov_len: io.len as usize,
        };
        let fd = f.raw();
        let moved = if io.kind == IoKind::Read {
            // SAFETY: one iovec over `len` writable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::readv(fd, &iov, 1) })
        } else {
            // SAFETY: one iovec over `len` readable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::writev(fd, &iov, 1) })
        };
        match moved {
            Ok(n) => {
                f.pos = io.offset + n;
                Ok(Queued::Done(n))
            }
            Err(errno) => {
                f.pos = u64::MAX;
                Err(f.io_error(io.kind, errno))
            }
        }
    }
}
