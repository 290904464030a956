//! The one IO engine interface. Every engine (local syscalls, io_uring, NFS, iSCSI, null)
//! lives in its own file in `storbench-engines` and implements [`Engine`].
//!
//! The shape follows fio's `ioengine_ops`: `queue` hands one IO to the engine, `commit`
//! submits what was queued, `reap` collects completions. Synchronous engines complete inside
//! `queue` and return [`Queued::Done`]. One engine instance belongs to one worker thread, so
//! nothing here needs locking.

use std::ops::ControlFlow;
use std::ptr::NonNull;

use crate::error::EngineError;
use crate::names::{DirCursor, NameList};
use storbench_job::relpath::RelPath;

pub use crate::metapath::{DirRef, MetaPath};

/// Index of an open file inside one engine instance (the order of `open` calls).
pub type FileId = u32;

/// What one IO does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoKind {
    Read,
    Write,
    Trim,
    /// `fsync` of the whole file (NFS: COMMIT, iSCSI: SYNCHRONIZE CACHE).
    Fsync,
    /// `fdatasync`; engines without the distinction treat it as `Fsync`.
    Fdatasync,
}

impl IoKind {
    /// Index of the data direction in per-direction arrays (read, write, trim); syncs have none.
    pub fn ddir(self) -> Option<usize> {
        match self {
            IoKind::Read => Some(0),
            IoKind::Write => Some(1),
            IoKind::Trim => Some(2),
            IoKind::Fsync | IoKind::Fdatasync => None,
        }
    }
}

/// One IO handed to an engine. The buffer belongs to the worker's aligned arena and stays
/// valid and untouched by the worker until the IO with this `tag` completes.
#[derive(Clone, Copy, Debug)]
pub struct IoUnit {
    pub file: FileId,
    pub kind: IoKind,
    pub offset: u64,
    pub len: u32,
    /// Start of `len` bytes: the source of a write, the destination of a read.
    pub buf: NonNull<u8>,
    /// Index of the buffer slot in the worker's arena (for registered buffers).
    pub buf_index: u32,
    /// The worker's in-flight slot; echoed back in the [`Completion`].
    pub tag: u32,
    /// The IO's priority (`class << 13 | level`), 0 for none: io_uring and libaio pass it
    /// to the kernel (fio's `cmdprio*`); other engines ignore it.
    pub ioprio: u16,
}

// SAFETY: the buffer pointer refers to the owning worker's arena and is only used by the
// engine instance that the same worker owns.
unsafe impl Send for IoUnit {}

/// The outcome of one IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub tag: u32,
    /// Bytes transferred (0 for syncs), or a negative errno.
    pub result: i64,
}

/// What `queue` did with an IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queued {
    /// Finished synchronously; the value is bytes transferred.
    Done(u64),
    /// Accepted; it completes through `reap` (after `commit`).
    Pending,
    /// The engine cannot take more IOs now; reap first, then queue the same IO again.
    Busy,
    /// The IO was not done because the peer ended the stream (fio's net engine: the
    /// sender closed its connection or sent its close message): the job ends as if its
    /// size were reached.
    End,
}

/// How a file is opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    pub read: bool,
    pub write: bool,
    /// Create the file if it does not exist.
    pub create: bool,
    /// Fail if it exists (used for files storbench creates, so it never takes over a
    /// file it did not create).
    pub exclusive: bool,
    /// Bypass caches: O_DIRECT locally, FILE_SYNC-free uncached access over the network.
    pub direct: bool,
    /// Synchronous writes: O_SYNC locally, FILE_SYNC over NFS, FUA for iSCSI.
    pub sync: bool,
    /// Truncate to zero length on open.
    pub truncate: bool,
    /// Refuse a symbolic link at the last component (O_NOFOLLOW): for names storbench
    /// generates in a directory it was given, so a planted link is never followed.
    pub nofollow: bool,
}

/// The access pattern a job announces for an open file (fio's `fadvise_hint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Random,
    Sequential,
}

/// A file or device to open, as the engine sees it: a local path or a URL, with the typed
/// target it names (a URL already parsed by its protocol's parser, which a network engine
/// connects with instead of parsing `path` again).
#[derive(Clone, PartialEq, Eq)]
pub struct FileSpec {
    /// Path, block device or URL, as typed (file names joined to it); secrets included, so
    /// never printed: show `target`, which masks them.
    pub path: String,
    /// What `path` names, parsed once (the plan's, when the runner opens a planned file).
    pub target: storbench_job::target::Target,
    pub open: OpenOptions,
}

impl std::fmt::Debug for FileSpec {
    /// The target, masked: `path` may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSpec")
            .field("target", &self.target)
            .field("open", &self.open)
            .finish()
    }
}

impl FileSpec {
    /// The spec for `target`, parsed already (a plan's file, a probe, bonnie's file).
    pub fn new(target: storbench_job::target::Target, open: OpenOptions) -> FileSpec {
        FileSpec {
            path: target.expose().to_string(),
            target,
            open,
        }
    }
}

/// Facts an engine states about itself; the runner adapts to them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    /// IOs complete inside `queue`; iodepth has no effect (fio prints the same warning).
    pub synchronous: bool,
    /// The engine records its own submission latency (slat) meaningfully.
    pub has_slat: bool,
    /// Supports [`IoKind::Trim`].
    pub trim: bool,
    /// Offers metadata operations through [`Engine::meta`].
    pub meta: bool,
    /// Moves no data (the null engine): buffers need not be filled.
    pub no_data: bool,
}

impl Caps {
    /// An engine of a job without files (cpuio, exec): each "IO" completes inside `queue`
    /// and moves no data.
    pub const NO_FILE: Caps = Caps {
        synchronous: true,
        has_slat: false,
        trim: false,
        meta: false,
        no_data: true,
    };
}

/// Per-worker set-up that engines may use to pre-register resources.
#[derive(Clone, Debug)]
pub struct EngineSetup {
    pub iodepth: u32,
    /// The worker's buffer arena: `slots` buffers of `slot_len` bytes each, page aligned.
    pub arena: NonNull<u8>,
    pub slot_len: usize,
    pub slots: u32,
}

// SAFETY: as for IoUnit, the arena belongs to the worker that owns this engine.
unsafe impl Send for EngineSetup {}

/// File attributes the metadata tests need.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    pub size: u64,
    pub is_dir: bool,
}

/// What a directory entry itself is, a link not followed ([`MetaOps::kind_nofollow`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    /// A symbolic link, reparse point, device or anything else.
    Other,
}

/// What [`MetaOps::unlink_listed`] or [`MetaOps::stat_listed`] has just done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listed {
    /// Read the next batch of the listing.
    Batch,
    /// Removed one file.
    Removed,
    /// Stat-ed one file.
    Stat(Attr),
}

/// The `*_listed` calls by name: lists `dir` with `read_dir` into `batch` (an engine may
/// keep one, so a listing allocates nothing) and does `op` on each name not starting with
/// `.`. The default of those calls.
pub fn each_listed_by_name<M: MetaOps + ?Sized>(
    meta: &mut M,
    dir: &DirRef,
    batch: &mut NameList,
    step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    op: fn(&mut M, &DirRef, &str) -> Result<Listed, EngineError>,
) -> Result<usize, EngineError> {
    let (mut cursor, mut done) = (DirCursor::default(), 0);
    while !cursor.done {
        batch.clear();
        meta.read_dir(dir.path(), &mut cursor, batch)?;
        if step(Listed::Batch).is_break() {
            break;
        }
        for name in batch.iter().filter(|n| !n.starts_with('.')) {
            let what = op(meta, dir, name)?;
            done += 1;
            if step(what).is_break() {
                return Ok(done);
            }
        }
    }
    Ok(done)
}

/// `unlink_in` as a `*_listed` operation.
pub fn unlink_named<M: MetaOps + ?Sized>(
    meta: &mut M,
    dir: &DirRef,
    name: &str,
) -> Result<Listed, EngineError> {
    meta.unlink_in(dir, name).map(|()| Listed::Removed)
}

/// `stat_in` as a `*_listed` operation.
pub fn stat_named<M: MetaOps + ?Sized>(
    meta: &mut M,
    dir: &DirRef,
    name: &str,
) -> Result<Listed, EngineError> {
    meta.stat_in(dir, name).map(Listed::Stat)
}

/// Metadata operations used by file lay-out, fio's filecreate/filestat/filedelete engines and
/// the bonnie suite. The path calls take a [`MetaPath`]: a typed root and a checked name
/// below it (or the root alone), so no engine parses URL text per call.
pub trait MetaOps {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError>;
    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError>;
    /// Create a new file (fails if it exists) and open it.
    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError>;
    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError>;
    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError>;
    /// What `path` itself is, a link at it not followed (lstat(2)): so a tree can be removed
    /// without ever leaving it through a link. The default cannot tell, and refuses.
    fn kind_nofollow(&mut self, path: MetaPath<'_>) -> Result<EntryKind, EngineError> {
        Err(EngineError::unsupported(format!(
            "{path}: this engine cannot tell a link from what it points to"
        )))
    }
    /// Appends the next batch of names in the directory (without `.` and `..`) to `names`
    /// and moves `cursor` on; sets `cursor.done` once the listing has ended. A batch is
    /// what one system call or RPC returns, so callers can time them one by one.
    fn read_dir(
        &mut self,
        path: MetaPath<'_>,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError>;
    /// Appends every name in the directory (without `.` and `..`) to `names`.
    fn read_dir_all(
        &mut self,
        path: MetaPath<'_>,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        let mut cursor = DirCursor::default();
        while !cursor.done {
            self.read_dir(path, &mut cursor, names)?;
        }
        Ok(())
    }
    /// Removes the files of `dir` as a listing of it comes, batch by batch, as bonnie++'s
    /// sequential delete does (readdir(3) and unlink(2) of each name), and returns how many
    /// were removed. `step` hears of each batch read and each removal, and stops the loop
    /// by returning `Break`. Names starting with `.` are left. The default lists with
    /// `read_dir` and removes with `unlink_in`; the local engine removes names straight from
    /// its listing buffer, and the NFS engine lists by the directory's handle into a list
    /// it keeps.
    fn unlink_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        each_listed_by_name(self, dir, &mut NameList::default(), step, unlink_named)
    }
    /// Stats the files of `dir` as a listing of it comes (bonnie++'s sequential stat of
    /// empty files), handing each one's attributes to `step`, as `unlink_listed` does.
    fn stat_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        each_listed_by_name(self, dir, &mut NameList::default(), step, stat_named)
    }
    /// Set the size of an open file (truncate or extend).
    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError>;
    /// Flush a directory's metadata (bonnie++ `-b`); a no-op where it means nothing.
    fn sync_dir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError>;
    /// Flush everything the file system holding `path` has not yet written (bonnie++'s
    /// `sync()` at the end of its create and delete tests): `sync(2)` locally, as bonnie++.
    /// The default flushes only the directory.
    fn sync_fs(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.sync_dir(path)
    }
    /// Opens directory `path` for the `*_in` calls, which name entries relative to it as
    /// openat(2) does (a name may hold further `/`-separated components): loops over
    /// thousands of files in one directory then do not resolve its path per call, as
    /// bonnie++ works in its directory by bare names. The default keeps the path only.
    fn open_dir(&mut self, path: MetaPath<'_>) -> Result<DirRef, EngineError> {
        Ok(DirRef::of(0, path))
    }
    /// Releases what `open_dir` holds for `dir`.
    fn close_dir(&mut self, dir: DirRef) {
        let _ = dir;
    }
    /// [`create`](MetaOps::create) of `name` in `dir`.
    fn create_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        let rel = dir.rel_of(checked_name(dir, name)?);
        self.create(MetaPath::new(&dir.root, &rel), open)
    }
    /// Opens the existing file `name` in `dir` for IO, as [`Engine::open`] opens a path:
    /// bonnie++'s stat-and-read of files with data, with no path to resolve or keep per
    /// file. New files are `create_in`'s, so options asking to create are refused
    /// ([`refuse_create_in_open`]).
    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError>;
    /// Creates the new, empty file `name` in `dir` (fails if it exists) without keeping it
    /// open: bonnie++'s small files of size 0, created and closed.
    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError>;
    /// Creates the new file `name` in `dir` (fails if it exists), writes `len` bytes to it
    /// in writes of up to `data.len()` bytes, each from the start of `data`, and closes it:
    /// bonnie++'s small files with data, in one call where the engine has one (locally:
    /// `openat`, `write`, `close`, as bonnie++ makes them, with no file table entry; the
    /// general path through `create_in` and the engine's IO costs 2-3 % of a tmpfs create).
    /// Returns false, having done nothing, where the engine has no such call: the caller
    /// then creates the file with `create_in` and writes it through the engine.
    fn create_written_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        data: &[u8],
        len: u64,
    ) -> Result<bool, EngineError> {
        let _ = (dir, name, data, len);
        Ok(false)
    }
    /// [`stat`](MetaOps::stat) of `name` in `dir`.
    fn stat_in(&mut self, dir: &DirRef, name: &str) -> Result<Attr, EngineError> {
        let rel = dir.rel_of(checked_name(dir, name)?);
        self.stat(MetaPath::new(&dir.root, &rel))
    }
    /// [`unlink`](MetaOps::unlink) of `name` in `dir`.
    fn unlink_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        let rel = dir.rel_of(checked_name(dir, name)?);
        self.unlink(MetaPath::new(&dir.root, &rel))
    }
    /// Make `link` a hard link to `existing` (bonnie++ `-n N:-1`).
    fn link(&mut self, existing: MetaPath<'_>, link: MetaPath<'_>) -> Result<(), EngineError> {
        let _ = existing;
        Err(EngineError::unsupported(format!(
            "link {link}: this engine cannot make hard links"
        )))
    }
    /// Make `link` a symbolic link holding `target` (bonnie++ `-n N:-2`).
    fn symlink(&mut self, target: &str, link: MetaPath<'_>) -> Result<(), EngineError> {
        let _ = target;
        Err(EngineError::unsupported(format!(
            "symlink {link}: this engine cannot make symbolic links"
        )))
    }
    /// [`link`](MetaOps::link) of `existing` in `dir` as `name` in `dir`: bonnie's timed
    /// loop of hard links, with no path to resolve or build per link.
    fn link_in(&mut self, dir: &DirRef, existing: &str, name: &str) -> Result<(), EngineError> {
        let existing = dir.rel_of(checked_name(dir, existing)?);
        let rel = dir.rel_of(checked_name(dir, name)?);
        self.link(
            MetaPath::new(&dir.root, &existing),
            MetaPath::new(&dir.root, &rel),
        )
    }
    /// [`symlink`](MetaOps::symlink) of `name` in `dir`, holding `target` as given.
    fn symlink_in(&mut self, dir: &DirRef, target: &str, name: &str) -> Result<(), EngineError> {
        let rel = dir.rel_of(checked_name(dir, name)?);
        self.symlink(target, MetaPath::new(&dir.root, &rel))
    }
}

/// `name` of a name-relative call ([`MetaOps::create_in`] and the others) checked as a
/// [`RelPath`]: an engine takes its components instead of splitting a string, and a name
/// with `..`, an empty or `.` component, a NUL or a leading `/` is refused in one line
/// instead of reaching outside `dir`. Checking allocates nothing.
#[inline]
pub fn checked_name<'a>(dir: &DirRef, name: &'a str) -> Result<&'a RelPath, EngineError> {
    RelPath::new(name).map_err(|e| bad_name(dir, e))
}

#[cold]
fn bad_name(dir: &DirRef, e: String) -> EngineError {
    EngineError::new(
        crate::error::ErrorKind::Refused,
        format!("{}: {e}", dir.path()),
    )
}

/// What [`MetaOps::open_in`] answers to options asking it to create: a caller's mistake,
/// named, rather than a file created or not depending on the engine.
pub fn refuse_create_in_open(
    open: &OpenOptions,
    dir: &DirRef,
    name: &str,
) -> Result<(), EngineError> {
    if open.create || open.exclusive || open.truncate {
        return Err(EngineError::unsupported(format!(
            "open {}: open_in opens existing files as they are; create_in makes new ones",
            dir.join(name)
        )));
    }
    Ok(())
}

/// What [`Engine::preallocate`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reserved {
    /// The blocks are reserved.
    Yes,
    /// The file system or server cannot reserve blocks, for the reason given (fallocate's
    /// EOPNOTSUPP, NFSv3, NFSv4.1, a 4.2 server without ALLOCATE): the lay-out does what
    /// fio does for the job's `fallocate=` mode.
    Unsupported(String),
}

/// Protocol and path details a result should carry, stated by the engine after opening.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EngineInfo {
    /// `key = value` facts that matter for comparison (e.g. `nfs_version = 3`,
    /// `rsize = 1048576`, `server = 127.0.0.1:2049`).
    pub details: Vec<(String, String)>,
    /// Events worth a note in the result (e.g. "reconnected after 1.2 s outage at 4.1 s").
    pub notes: Vec<String>,
    /// Local network interface used, for NIC statistics and link speed.
    pub interface: Option<String>,
}

/// One IO engine instance, owned by one worker thread.
pub trait Engine: Send {
    /// fio's name for the engine (`psync`, `io_uring`, …): shown in job headers.
    fn name(&self) -> &'static str;
    fn caps(&self) -> Caps;
    /// Called once before any `open`.
    fn setup(&mut self, _setup: &EngineSetup) -> Result<(), EngineError> {
        Ok(())
    }
    fn open(&mut self, file: &FileSpec) -> Result<FileId, EngineError>;
    /// Size in bytes of an open file or device.
    fn size(&mut self, file: FileId) -> Result<u64, EngineError>;
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError>;
    /// Submit everything queued since the last commit.
    fn commit(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    /// Wait for at least `min` completions (0: only collect what is ready) and append them.
    fn reap(&mut self, _min: usize, _out: &mut Vec<Completion>) -> Result<(), EngineError> {
        Ok(())
    }
    fn close(&mut self, file: FileId) -> Result<(), EngineError>;
    /// Drop cached pages of a file before a job (fio's `invalidate`).
    fn invalidate(&mut self, _file: FileId) -> Result<(), EngineError> {
        Ok(())
    }
    /// Drop the cached pages of `len` bytes from `offset` (0: to the end): a worker
    /// starting a new pass over its region leaves the rest of the file alone, as fio does.
    fn invalidate_range(
        &mut self,
        file: FileId,
        _offset: u64,
        _len: u64,
    ) -> Result<(), EngineError> {
        self.invalidate(file)
    }
    /// Tell the kernel how the job will access a file, so its readahead matches fio's
    /// (posix_fadvise); engines without a local page cache keep the default no-op.
    fn advise(&mut self, _file: FileId, _access: Access) -> Result<(), EngineError> {
        Ok(())
    }
    /// fio's `fallocate=`: reserves the blocks of the open `file`'s first `size` bytes
    /// before lay-out, growing the file to `size` unless `keep_size`. `target` is what
    /// `file` was opened as. The default reserves a local file's blocks with fallocate(2)
    /// by its path; other targets answer `Unsupported`.
    fn preallocate(
        &mut self,
        file: FileId,
        target: &storbench_job::target::Target,
        size: u64,
        keep_size: bool,
    ) -> Result<Reserved, EngineError> {
        let _ = file;
        crate::layout::fallocate_path(target, size, keep_size)
    }
    /// Bytes of `[start, end)` of the open `file` that are holes, as its server tells
    /// (NFSv4.2 SEEK): asked once after a job that read, never on the IO path. `None`
    /// where the engine cannot ask; local files are measured by the runner (`holes.rs`).
    fn hole_bytes(&mut self, file: FileId, start: u64, end: u64) -> Option<u64> {
        let _ = (file, start, end);
        None
    }
    /// The capacity of the file system on the server that holds `file` (which need not
    /// exist yet), for engines whose files live on a server; `None` where the runner
    /// measures the file system itself (local files) or nothing can tell.
    fn free_space(
        &mut self,
        _file: &FileSpec,
    ) -> Result<Option<crate::space::FsSpace>, EngineError> {
        Ok(None)
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        None
    }
    /// Details and notes for the result; called after the job ends.
    fn info(&mut self) -> EngineInfo {
        EngineInfo::default()
    }
    /// The address of the server a network engine's connection reaches (its socket's
    /// peer), asked once the files are open: when it is on this host, the runner measures
    /// that server's CPU alongside the client's.
    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
    /// This end of the same connection: with it, the runner finds the process serving
    /// this very connection, not merely the one holding the listening socket.
    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
    /// The lines fio prints when such a job starts (cpuio's mode and load, exec's
    /// program), printed after the run's `Starting` line, once per job clone.
    fn start_lines(&self) -> Vec<String> {
        Vec::new()
    }
    /// Engines without files (`Serves::NoFile`): ns to stay idle after the IO just
    /// completed, as fio's thinktime after each of its IOs (cpuio's idle share of a busy
    /// period, exec's 50 ms between looks at the program). Not asked of other engines.
    fn pause_ns(&mut self) -> u64 {
        0
    }
    /// Reads the peer sent that never arrived (a UDP reader's gaps in the writer's
    /// sequence numbers): fio's `drop_ios` of the read direction. Asked once, at the end.
    fn dropped_reads(&self) -> u64 {
        0
    }
    /// The worker waits with nothing in flight (thinktime, a rate limit, a start delay,
    /// another job's end for `wait_for`; in bonnie, the other copies or the seekers): an
    /// engine whose server keeps its state on a lease (NFSv4) renews it here when it is
    /// due. Called at least once a second while waiting, never per IO.
    fn idle(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
    /// The job is over (its runtime, a stop, an error): ends what the engine started
    /// (exec's program), before `info` is asked for the result.
    fn end(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use storbench_job::target::Target;

    #[test]
    fn names_of_name_relative_calls_stay_in_their_directory() {
        let export = Target::parse("nfs://h/export").unwrap();
        let dir = DirRef::of(0, MetaPath::new(&export, RelPath::new("d").unwrap()));
        assert_eq!(
            checked_name(&dir, "00001/0000abc").unwrap().as_str(),
            "00001/0000abc"
        );
        for bad in ["../x", "/x", "a//b", "", "a\0b"] {
            let err = checked_name(&dir, bad).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Refused);
            assert!(
                err.message.starts_with("nfs://h/export/d: ") && !err.message.contains('\n'),
                "{err}"
            );
        }
    }

    #[test]
    fn open_in_refuses_only_the_options_that_would_make_or_change_a_file() {
        let dir = DirRef::of(0, MetaPath::whole(&Target::Path("/d".into())));
        let plain = OpenOptions {
            read: true,
            write: true,
            direct: true,
            sync: true,
            ..OpenOptions::default()
        };
        assert!(refuse_create_in_open(&plain, &dir, "f").is_ok());
        let makes = [
            OpenOptions {
                create: true,
                ..plain.clone()
            },
            OpenOptions {
                exclusive: true,
                ..plain.clone()
            },
            OpenOptions {
                truncate: true,
                ..plain.clone()
            },
        ];
        for open in makes {
            let err = refuse_create_in_open(&open, &dir, "f").unwrap_err();
            assert_eq!(err.kind, ErrorKind::Unsupported);
            assert!(err.message.starts_with("open /d/f: "), "{err}");
        }
    }
}
