//! Preparing files before a job ("Laying out IO file"), checking device-like targets for
//! data before writes, and removing what storbench created. Everything goes through the
//! job's engine, so it works the same on local files, NFS exports and iSCSI LUNs.

use std::time::Instant;

use storbench_job::target::Target;
use storbench_job::{Fallocate, JobSpec};

use crate::buffers::{Arena, BufferFiller};
use crate::engine::{Engine, FileId, FileSpec, IoKind, IoUnit, OpenOptions, Queued, Reserved};
use crate::error::{EngineError, ErrorKind};
use crate::safety;
use crate::stop;

const LAYOUT_BS: usize = 1 << 20;

/// A lay-out that failed, and whether it had created its file (which then holds nothing
/// usable and is removed whatever `unlink` says).
#[derive(Debug)]
pub struct LayoutError {
    pub error: EngineError,
    pub created: bool,
}

impl From<EngineError> for LayoutError {
    /// A failure before the file was created (or where it already existed).
    fn from(error: EngineError) -> Self {
        LayoutError {
            error,
            created: false,
        }
    }
}

/// What the layout step found or did for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// Size of the file or device after preparation.
    pub size: u64,
    /// storbench created the file in this run (so it may remove it).
    pub created: bool,
    /// Bytes written to lay the file out.
    pub written: u64,
}

/// Size of an existing file or device, or None if it cannot be opened for reading.
pub fn probe(engine: &mut dyn Engine, target: &Target) -> Option<u64> {
    let id = engine
        .open(&FileSpec::new(
            target.clone(),
            OpenOptions {
                read: true,
                ..Default::default()
            },
        ))
        .ok()?;
    let size = engine.size(id).ok();
    let _ = engine.close(id);
    size
}

/// Makes sure `path` exists with at least `need` bytes. New files are created exclusively;
/// data is written when the job will read it (or asks to overwrite), otherwise the file is
/// only extended. `on_layout` is told `None` when real lay-out starts (for fio's message),
/// then `Some(bytes written)` as the data goes out (for the live display).
pub fn prepare_file(
    engine: &mut dyn Engine,
    job: &JobSpec,
    target: &Target,
    need: u64,
    seed: u64,
    on_layout: &mut dyn FnMut(Option<u64>),
) -> Result<Prepared, LayoutError> {
    if crate::plan::is_char_device(target) {
        // /dev/null, /dev/zero, /dev/full: no end and nothing to lay out.
        return Ok(Prepared {
            size: need,
            created: false,
            written: 0,
        });
    }
    let existing = probe(engine, target);
    match lay_out(engine, job, target, (existing, need), seed, on_layout) {
        // A file the job named was created by someone else between the probe and the
        // exclusive open: in a multi-host run, another rank laying out the same shared file
        // (offset_increment). It is prepared as the existing file it now is, which fio does
        // too; storbench did not create it, so it never removes it. A name storbench
        // generates stays refused (another process's file), and a second probe that still
        // finds nothing (a dangling link) keeps the error.
        Err(e)
            if existing.is_none()
                && e.error.errno == Some(libc::EEXIST)
                && !job.names_generated() =>
        {
            match probe(engine, target) {
                Some(now) => lay_out(engine, job, target, (Some(now), need), seed, on_layout),
                None => Err(e),
            }
        }
        other => other,
    }
}

/// [`prepare_file`] once the file's size (`None`: it does not exist) was probed.
fn lay_out(
    engine: &mut dyn Engine,
    job: &JobSpec,
    target: &Target,
    (existing, need): (Option<u64>, u64),
    seed: u64,
    on_layout: &mut dyn FnMut(Option<u64>),
) -> Result<Prepared, LayoutError> {
    let path = target.expose();
    if target.caps().device_like {
        let size = existing.ok_or_else(|| open_error(engine, target))?;
        if need > size {
            return Err(EngineError::new(
                ErrorKind::Refused,
                format!("{path}: the job needs {need} bytes but the device has {size}"),
            )
            .into());
        }
        return Ok(Prepared {
            size,
            created: false,
            written: 0,
        });
    }
    let write_data = job.rw.kind.reads() || job.overwrite || job.rw.kind.trims();
    let current = existing.unwrap_or(0);
    if existing.is_some() && current >= need {
        return Ok(Prepared {
            size: current,
            created: false,
            written: 0,
        });
    }
    // fio neither truncates nor preallocates a file it fills: the writes make it.
    let fills = job.fill_device && !write_data;
    if fills && existing.is_some() {
        return Ok(Prepared {
            size: need,
            created: false,
            written: 0,
        });
    }
    if job.create_on_open && existing.is_none() && !write_data {
        return Ok(Prepared {
            size: 0,
            created: false,
            written: 0,
        });
    }
    on_layout(None);
    let open = OpenOptions {
        read: true,
        write: true,
        create: existing.is_none(),
        exclusive: existing.is_none(),
        direct: job.direct && direct_fits(current, need),
        nofollow: job.names_generated(),
        ..Default::default()
    };
    let id = match engine.open(&FileSpec::new(target.clone(), open)) {
        Ok(id) => id,
        Err(error) => {
            // The open was exclusive: a file there now, after any error but EEXIST, was
            // made by it (O_DIRECT refused after the create, as on tmpfs).
            let created = existing.is_none()
                && error.errno != Some(libc::EEXIST)
                && probe(engine, target).is_some();
            return Err(LayoutError { error, created });
        }
    };
    let created = existing.is_none();
    let failed = |error| LayoutError { error, created };
    let result = if write_data {
        let mut filler = BufferFiller::new(job.buffers.clone(), seed);
        write_range(
            engine,
            id,
            path,
            (current, need),
            Some(&mut filler),
            fills_for_reads(job),
            on_layout,
        )
    } else if fills {
        Ok(0)
    } else {
        let range = (id, current, need);
        preallocate(engine, target, range, job.fallocate, on_layout)
            .and_then(|written| extend(engine, id, need).map(|()| written))
    };
    let close = engine.close(id);
    let written = result.map_err(failed)?;
    close.map_err(failed)?;
    // A file filled for a reading job is as large as the storage let it grow.
    let size = if fills_for_reads(job) {
        current + written
    } else {
        need.max(current)
    };
    Ok(Prepared {
        size,
        created,
        written,
    })
}

/// fio's `fill_device` in a job that reads and does not write: its files are laid out
/// until the storage is full (without size=) or size= is reached, and it reads what they
/// hold then (`extend_file` stops at ENOSPC and reads the file's size again).
pub fn fills_for_reads(job: &JobSpec) -> bool {
    job.fill_device && !job.rw.kind.writes()
}

/// Whether lay-out of [`from`, `to`) can go with O_DIRECT: both ends on 4 KiB, the
/// largest logical block of common devices. A file whose size is no multiple of it (fio's
/// `filesize=24105000`) is laid out through the page cache and flushed, as fio lays out
/// every file.
fn direct_fits(from: u64, to: u64) -> bool {
    from.is_multiple_of(4096) && to.is_multiple_of(4096)
}

/// Refuses a symbolic link at a name storbench generates in a directory it was given (fio
/// mode's jobname.N.M): following it would lay out, write and perhaps remove a file
/// somewhere else, planted by whoever can write to that directory. fio follows it.
pub fn refuse_symlink(job: &str, target: &Target) -> Result<(), EngineError> {
    let Target::Path(path) = target else {
        return Ok(());
    };
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(EngineError::new(
            ErrorKind::Refused,
            format!(
                "{job}: {path} is a symbolic link; storbench does not follow links at the file \
                 names it makes (remove it, or name the target with filename=)"
            ),
        )),
        _ => Ok(()),
    }
}

/// The error opening `target` gives (for a target that could not be probed).
pub fn open_error(engine: &mut dyn Engine, target: &Target) -> EngineError {
    let spec = FileSpec::new(
        target.clone(),
        OpenOptions {
            read: true,
            ..Default::default()
        },
    );
    match engine.open(&spec) {
        Err(e) => e,
        Ok(id) => {
            let _ = engine.close(id);
            EngineError::new(ErrorKind::Os, format!("{target}: cannot read its size"))
        }
    }
}

/// fio's `fallocate=`: reserves the blocks of `[0, need)` of the open file `id` through
/// the engine (local fallocate(2), NFSv4.2 ALLOCATE) and returns the bytes written. Where
/// blocks cannot be reserved, each mode does what fio's does: `native` goes on silently,
/// `posix` writes zeros over `[current, need)` as posix_fallocate(3) does where the file
/// system has no fallocate, and `keep` ends the job in one line.
fn preallocate(
    engine: &mut dyn Engine,
    target: &Target,
    (id, current, need): (FileId, u64, u64),
    mode: Fallocate,
    on_layout: &mut dyn FnMut(Option<u64>),
) -> Result<u64, EngineError> {
    let keep_size = match mode {
        Fallocate::None | Fallocate::Truncate => return Ok(0),
        Fallocate::Keep => true,
        Fallocate::Native | Fallocate::Posix => false,
    };
    let why = match engine.preallocate(id, target, need, keep_size)? {
        Reserved::Yes => return Ok(0),
        Reserved::Unsupported(why) => why,
    };
    match mode {
        Fallocate::Posix => write_range(
            engine,
            id,
            target.expose(),
            (current, need),
            None,
            false,
            on_layout,
        ),
        Fallocate::Keep => Err(EngineError::unsupported(format!(
            "fallocate=keep: {target}: {why}"
        ))),
        _ => Ok(0),
    }
}

/// fallocate(2) of a local file's `[0, size)` by its path: the default of
/// [`Engine::preallocate`]. Any other target answers `Unsupported`.
pub fn fallocate_path(
    target: &Target,
    size: u64,
    keep_size: bool,
) -> Result<Reserved, EngineError> {
    use std::os::fd::AsRawFd;
    let Target::Path(path) = target else {
        return Ok(Reserved::Unsupported(
            "this engine cannot reserve blocks".into(),
        ));
    };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| EngineError::os("open for fallocate", path, e))?;
    let flags = if keep_size {
        libc::FALLOC_FL_KEEP_SIZE
    } else {
        0
    };
    // SAFETY: plain syscall on an open descriptor.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), flags, 0, size as libc::off_t) };
    if rc == 0 {
        return Ok(Reserved::Yes);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(Reserved::Unsupported(
            "the file system cannot reserve blocks (fallocate: operation not supported)".into(),
        )),
        _ => Err(EngineError::os("fallocate", path, err)),
    }
}

fn extend(engine: &mut dyn Engine, id: FileId, size: u64) -> Result<(), EngineError> {
    match engine.meta() {
        Some(meta) => meta.set_size(id, size),
        None => Err(EngineError::unsupported(
            "this engine cannot extend files; lay them out with a write job first",
        )),
    }
}

/// Writes [from, to) sequentially with 1 MiB IOs and flushes, through the engine: the
/// job's buffer contents from `filler`, or zeros without one.
fn write_range(
    engine: &mut dyn Engine,
    id: FileId,
    path: &str,
    (from, to): (u64, u64),
    mut filler: Option<&mut BufferFiller>,
    until_full: bool,
    on_layout: &mut dyn FnMut(Option<u64>),
) -> Result<u64, EngineError> {
    let mut arena = Arena::new(1, LAYOUT_BS)
        .map_err(|e| EngineError::os("allocate lay-out buffer for", path, e))?;
    if let Some(f) = filler.as_deref_mut() {
        f.fill(arena.slot_mut(0));
    }
    let mut off = from;
    while off < to {
        if stop::requested() {
            return Err(EngineError::new(
                ErrorKind::Refused,
                format!("lay-out of {path} interrupted"),
            ));
        }
        let len = (to - off).min(LAYOUT_BS as u64) as u32;
        if let Some(f) = filler.as_deref_mut() {
            f.before_write(&mut arena.slot_mut(0)[..len as usize], off);
        }
        let written = io_sync(
            engine,
            IoUnit {
                file: id,
                kind: IoKind::Write,
                offset: off,
                len,
                buf: arena.slot_ptr(0),
                buf_index: 0,
                tag: 0,
                ioprio: 0,
            },
            path,
        );
        let n = match written {
            // fio's lay-out for a reading job that fills the storage ends where it is full.
            Err(e) if until_full && matches!(e.errno, Some(libc::ENOSPC | libc::EDQUOT)) => {
                break;
            }
            other => other?,
        };
        if n == 0 {
            return Err(EngineError::new(
                ErrorKind::Os,
                format!("write {path} at offset {off}: no progress"),
            ));
        }
        off += n;
        on_layout(Some(off - from));
    }
    io_sync(
        engine,
        IoUnit {
            file: id,
            kind: IoKind::Fsync,
            offset: 0,
            len: 0,
            buf: arena.slot_ptr(0),
            buf_index: 0,
            tag: 0,
            ioprio: 0,
        },
        path,
    )?;
    Ok(off - from)
}

/// Runs one IO to completion on any engine (synchronous or queued).
pub fn io_sync(engine: &mut dyn Engine, io: IoUnit, path: &str) -> Result<u64, EngineError> {
    let op = match io.kind {
        IoKind::Read => "read",
        IoKind::Write => "write",
        IoKind::Trim => "trim",
        IoKind::Fsync | IoKind::Fdatasync => "fsync",
    };
    let res = match engine.queue(&io)? {
        Queued::Done(n) => return Ok(n),
        Queued::Busy => {
            return Err(EngineError::protocol(format!(
                "{op} {path}: engine busy with no IO in flight"
            )));
        }
        Queued::End => {
            return Err(EngineError::protocol(format!(
                "{op} {path}: the peer ended the stream"
            )));
        }
        Queued::Pending => {
            engine.commit()?;
            let mut out = Vec::with_capacity(1);
            let deadline = Instant::now() + std::time::Duration::from_secs(300);
            while out.is_empty() {
                engine.reap(1, &mut out)?;
                if Instant::now() > deadline {
                    return Err(EngineError::protocol(format!(
                        "{op} {path}: no completion after 300 s"
                    )));
                }
            }
            out[0].result
        }
    };
    if res < 0 {
        Err(EngineError::errno(op, path, (-res) as i32))
    } else {
        Ok(res as u64)
    }
}

/// Refuses to write to a device-like target that is in use (a mounted, swap or held local
/// device: always) or that holds data (unless `allow_destructive`): a partition table or a
/// file-system/volume signature in its first or last MiB or at a sampled MiB boundary of
/// `region` (`(start, len)`, the bytes the job writes), and for LUNs any non-zero byte read.
pub fn check_device_before_write(
    engine: &mut dyn Engine,
    target: &Target,
    size: u64,
    region: (u64, u64),
    allow_destructive: bool,
) -> Result<(), EngineError> {
    let path = target.expose();
    if let Target::Path(local) | Target::Device(local) = target
        && let Some(why) = safety::device_in_use(std::path::Path::new(local))
    {
        return Err(EngineError::new(
            ErrorKind::Refused,
            format!("refusing to write to {path}: {why}; unmount or release it first"),
        ));
    }
    let probe = (safety::PROBE_BYTES as u64).min(size) as usize;
    if probe == 0 || allow_destructive {
        return Ok(());
    }
    let mut arena =
        Arena::new(2, probe).map_err(|e| EngineError::os("allocate probe buffer for", path, e))?;
    let id = engine
        .open(&FileSpec::new(
            target.clone(),
            OpenOptions {
                read: true,
                direct: true,
                ..Default::default()
            },
        ))
        .or_else(|_| {
            engine.open(&FileSpec::new(
                target.clone(),
                OpenOptions {
                    read: true,
                    ..Default::default()
                },
            ))
        })?;
    let found = scan_device(engine, id, &mut arena, target, size, probe, region);
    let _ = engine.close(id);
    match found? {
        Some(found) => Err(EngineError::new(
            ErrorKind::Refused,
            format!(
                "refusing to write to {path}: it holds {found} (read: {}); pass \
                 --allow-destructive to write anyway",
                safety::SAMPLING_RULE
            ),
        )),
        None => Ok(()),
    }
}

/// Reads the ends and the samples of `region` through the open `id`: what it holds, if
/// anything.
fn scan_device(
    engine: &mut dyn Engine,
    id: FileId,
    arena: &mut Arena,
    target: &Target,
    size: u64,
    probe: usize,
    region: (u64, u64),
) -> Result<Option<String>, EngineError> {
    let path = target.expose();
    let read = |engine: &mut dyn Engine, arena: &Arena, slot: u32, offset: u64, len: usize| {
        io_sync(
            engine,
            IoUnit {
                file: id,
                kind: IoKind::Read,
                offset,
                len: len as u32,
                buf: arena.slot_ptr(slot),
                buf_index: slot,
                tag: slot,
                ioprio: 0,
            },
            path,
        )
    };
    read(engine, arena, 0, 0, probe)?;
    read(engine, arena, 1, size - probe as u64, probe)?;
    // A LUN a server exports: any non-zero data is someone's (a local device may hold
    // stale bytes that are no signature).
    let strict_zero = {
        let caps = target.caps();
        caps.device_like && caps.network
    };
    let head = arena.slot_mut(0)[..probe].to_vec();
    if let Some(found) = safety::scan(&head, &arena.slot_mut(1)[..probe], strict_zero) {
        return Ok(Some(found));
    }
    for at in safety::region_samples(region.0, region.1, size) {
        // Whole sectors: a sample is cut at the device's end, which is sector-aligned.
        let len = (safety::SAMPLE_BYTES as u64).min(size - at) as usize;
        read(engine, arena, 0, at, len)?;
        if let Some(found) = safety::scan_sample(&arena.slot_mut(0)[..len], at, strict_zero) {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Removes a file storbench created, through the engine's metadata operations (or the
/// local file system when the engine has none), as the plan typed it.
pub fn remove(engine: &mut dyn Engine, target: &Target) -> Result<(), EngineError> {
    if let Some(meta) = engine.meta() {
        return meta.unlink(crate::MetaPath::whole(target));
    }
    match target {
        Target::Path(path) => {
            std::fs::remove_file(path).map_err(|e| EngineError::os("remove", path, e))
        }
        _ => Err(EngineError::unsupported(format!(
            "cannot remove {target}: the engine has no metadata operations"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::testing::Recorder;

    /// A file that does not exist until the exclusive open, which finds it created by
    /// another process in between (another rank laying out the same shared file).
    struct CreatedMeanwhile {
        inner: Recorder,
        created: bool,
    }

    impl Engine for CreatedMeanwhile {
        fn name(&self) -> &'static str {
            "created-meanwhile"
        }
        fn caps(&self) -> crate::engine::Caps {
            self.inner.caps()
        }
        fn open(&mut self, file: &FileSpec) -> Result<FileId, EngineError> {
            if !self.created {
                if file.open.exclusive {
                    self.created = true;
                    return Err(EngineError::errno("open", &file.path, libc::EEXIST));
                }
                return Err(EngineError::errno("open", &file.path, libc::ENOENT));
            }
            self.inner.open(file)
        }
        fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
            self.inner.size(file)
        }
        fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
            self.inner.queue(io)
        }
        fn close(&mut self, file: FileId) -> Result<(), EngineError> {
            self.inner.close(file)
        }
    }

    fn prepare(named: bool) -> Result<Prepared, LayoutError> {
        let mut engine = CreatedMeanwhile {
            inner: Recorder::new(Arc::new(Mutex::new(Vec::new())), 1 << 20),
            created: false,
        };
        let mut job = JobSpec::new("w");
        if named {
            job.filenames = vec![Target::Path("shared".into())];
        }
        let target = Target::Path("shared".into());
        prepare_file(&mut engine, &job, &target, 1 << 20, 1, &mut |_| {})
    }

    #[test]
    fn a_named_file_created_by_another_process_meanwhile_is_taken_as_existing() {
        let prepared = prepare(true).unwrap();
        assert_eq!(
            prepared,
            Prepared {
                size: 1 << 20,
                created: false,
                written: 0
            }
        );
    }

    #[test]
    fn a_generated_name_created_by_another_process_meanwhile_stays_refused() {
        let e = prepare(false).unwrap_err();
        assert_eq!(e.error.errno, Some(libc::EEXIST), "{}", e.error);
        assert!(!e.created, "another process's file is never ours to remove");
    }
}
