//! `pvsync`: one `preadv`/`pwritev` of a single iovec per IO, completed inside `queue`, as
//! fio's pvsync engine does.

use storbench_core::{Caps, Engine, EngineError, IoKind, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::local::{LocalFiles, SYNC_CAPS, delegate_local_files, retry_eintr};

#[derive(Debug, Default)]
pub struct Pvsync {
    files: LocalFiles,
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "pvsync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(Pvsync::default()))
}

impl Engine for Pvsync {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        SYNC_CAPS
    }

    delegate_local_files!();

    #[inline]
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let f = self.files.get(io.file)?;
        if !matches!(io.kind, IoKind::Read | IoKind::Write) {
            return f.other_io(io);
        }
        f.check_direct(io)?;
        let iov = libc::iovec {
            iov_base: io.buf.as_ptr().cast(),
            iov_len: io.len as usize,
        };
        let (fd, off) = (f.raw(), io.offset as i64);
        let moved = if io.kind == IoKind::Read {
            // SAFETY: one iovec over `len` writable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::preadv(fd, &iov, 1, off) })
        } else {
            // SAFETY: one iovec over `len` readable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::pwritev(fd, &iov, 1, off) })
        };
        moved
            .map(Queued::Done)
            .map_err(|errno| f.io_error(io.kind, errno))
    }
}
