//! `psync`: one `pread`/`pwrite` per IO, completed inside `queue`.

use storbench_core::{Caps, Engine, EngineError, IoKind, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::local::{LocalFiles, SYNC_CAPS, delegate_local_files, retry_eintr};

#[derive(Debug, Default)]
pub struct Psync {
    files: LocalFiles,
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "psync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(Psync::default()))
}

impl Engine for Psync {
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
        let (fd, buf, len, off) = (f.raw(), io.buf.as_ptr(), io.len as usize, io.offset as i64);
        let moved = match io.kind {
            IoKind::Read => {
                f.check_direct(io)?;
                // SAFETY: `buf` points at `len` writable bytes of the worker's arena.
                retry_eintr(|| unsafe { libc::pread(fd, buf.cast(), len, off) })
            }
            IoKind::Write => {
                f.check_direct(io)?;
                // SAFETY: `buf` points at `len` readable bytes of the worker's arena.
                retry_eintr(|| unsafe { libc::pwrite(fd, buf.cast(), len, off) })
            }
            _ => return f.other_io(io),
        };
        moved
            .map(Queued::Done)
            .map_err(|errno| f.io_error(io.kind, errno))
    }
}
