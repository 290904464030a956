//! A test-only engine over std::fs, so the suite's logic can be tested without the real
//! engines crate, plus a switch that makes it fail on purpose.

#![allow(dead_code)]

use std::fs::{self, File};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use storbench_core::{
    Attr, Caps, DirCursor, DirRef, Engine, EngineError, FileId, FileSpec, IoKind, IoUnit, MetaOps,
    MetaPath, NameList, OpenOptions, Queued,
};
use storbench_job::JobSpec;

/// Counts down creates shared by every engine instance; the create that reaches zero fails.
#[derive(Clone, Default)]
pub struct FailAfter(pub Arc<AtomicI64>);

impl FailAfter {
    pub fn creates(n: i64) -> FailAfter {
        FailAfter(Arc::new(AtomicI64::new(n)))
    }

    fn hit(&self) -> bool {
        self.0.load(Ordering::SeqCst) > 0 && self.0.fetch_sub(1, Ordering::SeqCst) == 1
    }
}

/// What every engine instance did, in order: `open <name> direct=..`, `fsync`, `sync_dir`.
pub type Log = Arc<Mutex<Vec<String>>>;

pub struct FsEngine {
    files: Vec<Option<File>>,
    fail: FailAfter,
    log: Option<Log>,
    /// The directory being listed, as read at the listing's start.
    listing: Vec<String>,
    /// Listing batch (0 = the first) that takes this long to read.
    slow_batch: Option<(u64, Duration)>,
}

/// Names per listing batch.
const LIST_BATCH: usize = 100;

/// An engine whose directory listings come in batches of 100 names, batch `batch` of each
/// listing taking `delay` to read.
pub fn factory_slow_listing(
    batch: u64,
    delay: Duration,
) -> impl Fn(&JobSpec) -> Result<Box<dyn Engine>, EngineError> + Sync {
    move |_job: &JobSpec| {
        Ok(FsEngine::boxed(
            FailAfter::default(),
            None,
            Some((batch, delay)),
        ))
    }
}

pub fn factory(
    fail: FailAfter,
) -> impl Fn(&JobSpec) -> Result<Box<dyn Engine>, EngineError> + Sync {
    factory_logged(fail, None)
}

pub fn factory_logged(
    fail: FailAfter,
    log: Option<Log>,
) -> impl Fn(&JobSpec) -> Result<Box<dyn Engine>, EngineError> + Sync {
    move |_job: &JobSpec| Ok(FsEngine::boxed(fail.clone(), log.clone(), None))
}

fn err(op: &str, path: &str) -> impl FnOnce(std::io::Error) -> EngineError {
    move |e| EngineError::os(op, path, e)
}

/// The local path a metadata call names.
fn local(path: MetaPath<'_>) -> String {
    let mut out = String::new();
    path.write_local(&mut out);
    out
}

impl FsEngine {
    fn create_path(&mut self, path: &str, open: &OpenOptions) -> Result<FileId, EngineError> {
        if self.fail.hit() {
            return Err(EngineError::protocol(format!(
                "create {path}: injected failure"
            )));
        }
        self.open_with(path, open, true)
    }
    fn boxed(
        fail: FailAfter,
        log: Option<Log>,
        slow_batch: Option<(u64, Duration)>,
    ) -> Box<dyn Engine> {
        Box::new(FsEngine {
            files: Vec::new(),
            fail,
            log,
            listing: Vec::new(),
            slow_batch,
        })
    }

    fn note(&self, what: impl FnOnce() -> String) {
        if let Some(log) = &self.log {
            log.lock().unwrap().push(what());
        }
    }

    fn add(&mut self, f: File) -> FileId {
        self.files.push(Some(f));
        (self.files.len() - 1) as FileId
    }

    fn open_with(
        &mut self,
        path: &str,
        o: &OpenOptions,
        create_new: bool,
    ) -> Result<FileId, EngineError> {
        let mut opts = fs::OpenOptions::new();
        opts.read(o.read || !o.write)
            .write(o.write)
            .create_new(create_new);
        if o.direct {
            opts.custom_flags(libc::O_DIRECT);
        }
        let f = opts.open(path).map_err(err("open", path))?;
        self.note(|| {
            let name = path.rsplit('/').next().unwrap_or(path);
            format!("open {name} direct={}", o.direct)
        });
        Ok(self.add(f))
    }

    fn file(&self, id: FileId) -> Result<&File, EngineError> {
        self.files
            .get(id as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| EngineError::protocol(format!("file {id} not open")))
    }
}

impl Engine for FsEngine {
    fn name(&self) -> &'static str {
        "testfs"
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: true,
            meta: true,
            ..Caps::default()
        }
    }

    fn open(&mut self, file: &FileSpec) -> Result<FileId, EngineError> {
        self.open_with(&file.path, &file.open, file.open.exclusive)
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        Ok(self
            .file(file)?
            .metadata()
            .map_err(err("stat", "file"))?
            .len())
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let f = self.file(io.file)?;
        let n = match io.kind {
            IoKind::Read => {
                // SAFETY: the suite hands a buffer of at least `len` bytes.
                let buf =
                    unsafe { std::slice::from_raw_parts_mut(io.buf.as_ptr(), io.len as usize) };
                f.read_at(buf, io.offset).map_err(err("read", "file"))?
            }
            IoKind::Write => {
                // SAFETY: as above.
                let buf = unsafe { std::slice::from_raw_parts(io.buf.as_ptr(), io.len as usize) };
                f.write_at(buf, io.offset).map_err(err("write", "file"))?
            }
            _ => {
                f.sync_all().map_err(err("fsync", "file"))?;
                self.note(|| "fsync".into());
                0
            }
        };
        Ok(Queued::Done(n as u64))
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        self.files[file as usize] = None;
        Ok(())
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(self)
    }
}

impl MetaOps for FsEngine {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        let path = &local(path);
        fs::create_dir(path).map_err(err("mkdir", path))
    }

    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        let path = &local(path);
        fs::remove_dir(path).map_err(err("rmdir", path))
    }

    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError> {
        self.create_path(&local(path), open)
    }

    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        self.open_with(&dir.join(name), open, false)
    }

    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        let open = OpenOptions {
            write: true,
            ..OpenOptions::default()
        };
        let file = self.create_path(&dir.join(name), &open)?;
        Engine::close(self, file)
    }

    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError> {
        let path = &local(path);
        let m = fs::metadata(path).map_err(err("stat", path))?;
        Ok(Attr {
            size: m.len(),
            is_dir: m.is_dir(),
        })
    }

    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        let path = &local(path);
        fs::remove_file(path).map_err(err("unlink", path))
    }

    /// Batches of LIST_BATCH names from the directory as it was when the listing began
    /// (so removing listed names does not shift the batches).
    fn read_dir(
        &mut self,
        path: MetaPath<'_>,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        if cursor.offset == 0 {
            let path = &local(path);
            self.listing.clear();
            for entry in fs::read_dir(path).map_err(err("readdir", path))? {
                let entry = entry.map_err(err("readdir", path))?;
                self.listing
                    .push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        let start = cursor.offset as usize;
        if let Some((batch, delay)) = self.slow_batch
            && batch == (start / LIST_BATCH) as u64
        {
            std::thread::sleep(delay);
        }
        let end = (start + LIST_BATCH).min(self.listing.len());
        for name in &self.listing[start..end] {
            names.push(name);
        }
        cursor.offset = end as u64;
        cursor.done = end == self.listing.len();
        Ok(())
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        self.file(file)?
            .set_len(size)
            .map_err(err("truncate", "file"))
    }

    fn sync_dir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        let path = &local(path);
        self.note(|| "sync_dir".into());
        File::open(path)
            .and_then(|d| d.sync_all())
            .map_err(err("fsync directory", path))
    }

    fn link(&mut self, existing: MetaPath<'_>, link: MetaPath<'_>) -> Result<(), EngineError> {
        let (existing, link) = (&local(existing), &local(link));
        fs::hard_link(existing, link).map_err(err("link", link))
    }

    fn symlink(&mut self, target: &str, link: MetaPath<'_>) -> Result<(), EngineError> {
        let link = &local(link);
        std::os::unix::fs::symlink(target, link).map_err(err("symlink", link))
    }
}
