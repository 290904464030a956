//! `pvsync2`: `preadv2`/`pwritev2` with per-IO flags, completed inside `queue`.
//! Options as fio's: `hipri` (RWF_HIPRI, polled completion on O_DIRECT files of devices with
//! poll queues), `nowait` (RWF_NOWAIT: fail with EAGAIN instead of blocking) and `uncached`
//! (RWF_DONTCACHE: buffered IO that drops its pages afterwards, Linux 6.14+).

use storbench_core::{Caps, Engine, EngineError, IoKind, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::local::{LocalFiles, SYNC_CAPS, delegate_local_files, retry_eintr};
use crate::options;

#[derive(Debug, Default)]
pub struct Pvsync2 {
    files: LocalFiles,
    /// RWF_* flags applied to every read and write.
    rw_flags: libc::c_int,
}

/// The RWF_* flags the job's engine options ask for.
pub fn rw_flags(job: &JobSpec) -> Result<libc::c_int, EngineError> {
    let mut flags = 0;
    if options::flag(job, "hipri")? {
        flags |= libc::RWF_HIPRI;
    }
    if options::flag(job, "nowait")? {
        flags |= libc::RWF_NOWAIT;
    }
    if options::flag(job, "uncached")? {
        flags |= libc::RWF_DONTCACHE;
    }
    Ok(flags)
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "pvsync2";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(Pvsync2 {
        files: LocalFiles::default(),
        rw_flags: rw_flags(job)?,
    }))
}

impl Engine for Pvsync2 {
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
        let (fd, off, flags) = (f.raw(), io.offset as i64, self.rw_flags);
        let moved = if io.kind == IoKind::Read {
            // SAFETY: one iovec over `len` writable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::preadv2(fd, &iov, 1, off, flags) })
        } else {
            // SAFETY: one iovec over `len` readable bytes of the worker's arena.
            retry_eintr(|| unsafe { libc::pwritev2(fd, &iov, 1, off, flags) })
        };
        moved
            .map(Queued::Done)
            .map_err(|errno| f.io_error(io.kind, errno))
    }
}
