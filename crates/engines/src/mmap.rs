//! `mmap`: each file is mapped shared; reads and writes are memcpy to and from the mapping,
//! fsync is `msync(MS_SYNC)`. Files opened for writing are first extended to the job's file
//! size, so stores never fault past the end. Like fio, the mapping is advised MADV_RANDOM or
//! MADV_SEQUENTIAL after the workload.

use std::ptr::NonNull;

use storbench_core::{
    Access, Caps, Engine, EngineError, FileId, FileSpec, IoKind, IoUnit, MetaOps, Queued,
};
use storbench_job::JobSpec;

use crate::local::{LocalFile, LocalFiles, SYNC_CAPS, last_errno};
use crate::options;

/// One shared mapping of a whole file.
#[derive(Debug)]
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    fn new(f: &LocalFile, len: u64, writable: bool, advice: i32) -> Result<Mapping, EngineError> {
        let len = usize::try_from(len)
            .map_err(|_| EngineError::unsupported(format!("mmap {}: file too large", f.path)))?;
        let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
        // SAFETY: a fresh shared mapping of `len` bytes of an open file.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                f.raw(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(EngineError::errno("mmap", &f.path, last_errno()));
        }
        let ptr = NonNull::new(ptr.cast())
            .ok_or_else(|| EngineError::errno("mmap", &f.path, libc::EFAULT))?;
        let mapping = Mapping { ptr, len };
        mapping.advise(advice);
        Ok(mapping)
    }

    fn advise(&self, advice: i32) {
        // SAFETY: the range this Mapping owns; advice is only a hint.
        unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, advice) };
    }

    /// Bytes of an IO at `offset` that lie inside the mapping (short at the end of file).
    #[inline]
    fn span(&self, offset: u64, len: u32) -> usize {
        let left = (self.len as u64).saturating_sub(offset);
        left.min(u64::from(len)) as usize
    }

    fn msync(&self, f: &LocalFile, kind: IoKind) -> Result<(), EngineError> {
        // SAFETY: syncs the range this Mapping owns.
        if unsafe { libc::msync(self.ptr.as_ptr().cast(), self.len, libc::MS_SYNC) } < 0 {
            return Err(f.io_error(kind, last_errno()));
        }
        Ok(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[derive(Debug)]
pub struct Mmap {
    files: LocalFiles,
    /// Mapping of each FileId; made at open, or at the first IO for files made by `meta()`.
    maps: Vec<Option<Mapping>>,
    /// Size files opened for writing are extended to.
    file_size: Option<u64>,
    advice: i32,
}

// SAFETY: the mappings belong to this instance and are used only by its owner thread.
unsafe impl Send for Mmap {}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "mmap";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(Mmap {
        files: LocalFiles::default(),
        maps: Vec::new(),
        file_size: options::file_size(job),
        advice: libc::MADV_NORMAL,
    }))
}

impl Mmap {
    /// Maps file `id` whole, after extending a writable file to the job's file size and to
    /// at least `min_len` (a write past the end grows the file, as pwrite would).
    #[cold]
    fn map(&mut self, id: FileId, min_len: u64) -> Result<(), EngineError> {
        let f = self.files.get(id)?;
        let writable = f.writable;
        let mut size = f.size()?;
        let want = self.file_size.unwrap_or(0).max(min_len);
        if writable && !f.block_dev && want > size {
            f.set_size(want)?;
            size = want;
        }
        let mapping = if size == 0 {
            None
        } else {
            Some(Mapping::new(f, size, writable, self.advice)?)
        };
        let slot = id as usize;
        if self.maps.len() <= slot {
            self.maps.resize_with(slot + 1, || None);
        }
        self.maps[slot] = mapping;
        Ok(())
    }
}

impl Engine for Mmap {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        SYNC_CAPS
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        let id = self.files.open(spec)?;
        if let Err(e) = self.map(id, 0) {
            let _ = self.files.close(id);
            return Err(e);
        }
        Ok(id)
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        self.files.get(file)?.size()
    }

    #[inline]
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let slot = io.file as usize;
        let end = io.offset + u64::from(io.len);
        let remap = match self.maps.get(slot) {
            Some(Some(m)) => io.kind == IoKind::Write && end > m.len as u64,
            _ => true,
        };
        if remap {
            let grow_to = if io.kind == IoKind::Write { end } else { 0 };
            self.map(io.file, grow_to)?;
        }
        let f = self.files.get(io.file)?;
        let Some(map) = self.maps.get(slot).and_then(Option::as_ref) else {
            // An empty file: nothing to read, nowhere to write.
            return match io.kind {
                IoKind::Read | IoKind::Write => Ok(Queued::Done(0)),
                _ => f.other_io(io),
            };
        };
        let n = map.span(io.offset, io.len);
        // SAFETY: `offset + n` lies inside the mapping and `buf` holds `len >= n` bytes; the
        // arena and the mapping never overlap.
        unsafe {
            let at = map.ptr.as_ptr().add(io.offset.min(map.len as u64) as usize);
            match io.kind {
                IoKind::Read => std::ptr::copy_nonoverlapping(at, io.buf.as_ptr(), n),
                IoKind::Write => std::ptr::copy_nonoverlapping(io.buf.as_ptr(), at, n),
                IoKind::Fsync | IoKind::Fdatasync => {
                    map.msync(f, io.kind)?;
                    return Ok(Queued::Done(0));
                }
                IoKind::Trim => return f.other_io(io),
            }
        }
        Ok(Queued::Done(n as u64))
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        if let Some(m) = self.maps.get_mut(file as usize) {
            *m = None;
        }
        self.files.close(file).map(drop)
    }

    fn invalidate(&mut self, file: FileId) -> Result<(), EngineError> {
        self.files.get(file)?.invalidate()
    }

    fn invalidate_range(&mut self, file: FileId, offset: u64, len: u64) -> Result<(), EngineError> {
        self.files.get(file)?.invalidate_range(offset, len)
    }

    /// The job's access pattern (fio's `fadvise_hint`, which fio's mmap engine also turns
    /// into madvise): for the file's mapping and the ones made after it, and posix_fadvise
    /// on the descriptor, as fio does for every file it opens. Without it mappings keep
    /// the kernel's default read-ahead.
    fn advise(&mut self, file: FileId, access: Access) -> Result<(), EngineError> {
        self.advice = match access {
            Access::Random => libc::MADV_RANDOM,
            Access::Sequential => libc::MADV_SEQUENTIAL,
        };
        if let Some(Some(mapping)) = self.maps.get(file as usize) {
            mapping.advise(self.advice);
        }
        self.files.get(file)?.advise(access)
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(&mut self.files)
    }
}

#[cfg(test)]
mod tests {
    use storbench_core::OpenOptions;

    use super::*;

    /// Mappings keep the kernel's default read-ahead until the job's hint arrives, which
    /// then sets the advice for later mappings too (a file grown by a write is remapped).
    #[test]
    fn mappings_take_the_advice_the_job_gives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, [7u8; 8192]).unwrap();
        let mut engine = Mmap {
            files: LocalFiles::default(),
            maps: Vec::new(),
            file_size: None,
            advice: libc::MADV_NORMAL,
        };
        let spec = FileSpec::new(storbench_job::target::Target::classify(&path.display().to_string()), OpenOptions {
                read: true,
                ..OpenOptions::default()
            });
        let id = engine.open(&spec).unwrap();
        assert_eq!(engine.advice, libc::MADV_NORMAL, "no hint: fadvise_hint=0");
        engine.advise(id, Access::Random).unwrap();
        assert_eq!(engine.advice, libc::MADV_RANDOM);
        engine.advise(id, Access::Sequential).unwrap();
        assert_eq!(engine.advice, libc::MADV_SEQUENTIAL);
        engine.close(id).unwrap();
    }
}
