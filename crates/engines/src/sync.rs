//! `sync`: `lseek` + `read`/`write`, completed inside `queue`. The seek is skipped when the
//! descriptor already sits at the offset (sequential IO), as fio does.

use storbench_core::{Caps, Engine, EngineError, IoKind, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::local::{
    LocalFile, LocalFiles, SYNC_CAPS, delegate_local_files, last_errno, retry_eintr,
};

#[derive(Debug, Default)]
pub struct Sync {
    files: LocalFiles,
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "sync";

pub fn create(_job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(Sync::default()))
}

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

impl Engine for Sync {
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
        let (fd, buf, len) = (f.raw(), io.buf.as_ptr(), io.len as usize);
        let moved = if io.kind == IoKind::Read {
            // SAFETY: `buf` points at `len` writable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::read(fd, buf.cast(), len) })
        } else {
            // SAFETY: `buf` points at `len` readable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::write(fd, buf.cast(), len) })
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
