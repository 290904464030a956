//! What every local engine shares: opening files and block devices, their size, O_DIRECT
//! alignment, cache invalidation, trim, preallocation; the local [`MetaOps`] are in
//! `local/meta.rs`.
//!
//! [`MetaOps`]: storbench_core::MetaOps
//!
//! Engines keep their open files in a [`LocalFiles`] table, so a file created through
//! `meta().create` is an ordinary [`FileId`] for `queue` afterwards.

use std::ffi::{CStr, CString};
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

mod meta;

use crate::dirfds::{DirSlots, ParentDirs};
use crate::listing::DirLister;
use storbench_core::{
    Access, EngineError, ErrorKind, FileId, FileSpec, IoKind, IoUnit, OpenOptions, Queued,
};

/// `_IOR(0x12, 114, u64)`: size of a block device in bytes (absent from the libc crate).
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
/// `_IO(0x12, 97)`: flush a block device's buffer cache.
const BLKFLSBUF: libc::c_ulong = 0x1261;
/// `_IO(0x12, 119)`: discard a byte range `[u64 start, u64 len]` of a block device.
const BLKDISCARD: libc::c_ulong = 0x1277;
/// `_IO(0x12, 104)`: logical block size of a block device.
const BLKSSZGET: libc::c_ulong = 0x1268;
/// Fallback O_DIRECT alignment when statx cannot tell: covers every 512e and 4Kn device.
const FALLBACK_DIO_ALIGN: u32 = 4096;

/// One open local file or block device.
#[derive(Debug)]
pub struct LocalFile {
    fd: OwnedFd,
    pub path: String,
    pub block_dev: bool,
    pub direct: bool,
    /// Opened for writing (the mmap engine maps it so).
    pub writable: bool,
    /// Required buffer address alignment minus one (0 when not direct).
    pub mem_mask: u64,
    /// Required offset and length alignment minus one (0 when not direct).
    pub off_mask: u64,
    /// File position the `sync` engine last left the descriptor at (saves an lseek).
    pub pos: u64,
}

impl LocalFile {
    /// Opens `spec` with O_DIRECT/O_SYNC/O_CREAT|O_EXCL/O_TRUNC as asked.
    pub fn open(spec: &FileSpec) -> Result<LocalFile, EngineError> {
        let fd = open_fd(&spec.path, &spec.open)?;
        let block_dev = is_block_dev(&fd, &spec.path)?;
        Ok(LocalFile::from_fd(
            fd,
            spec.path.clone(),
            block_dev,
            &spec.open,
        ))
    }

    fn from_fd(fd: OwnedFd, path: String, block_dev: bool, open: &OpenOptions) -> LocalFile {
        let (mem_align, off_align) = if open.direct {
            dio_alignment(&fd, block_dev)
        } else {
            (1, 1)
        };
        LocalFile {
            fd,
            path,
            block_dev,
            direct: open.direct,
            writable: open.write,
            mem_mask: u64::from(mem_align) - 1,
            off_mask: u64::from(off_align) - 1,
            pos: 0,
        }
    }

    #[inline]
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Size in bytes: BLKGETSIZE64 for block devices, st_size for files.
    pub fn size(&self) -> Result<u64, EngineError> {
        if self.block_dev {
            let mut size: u64 = 0;
            // SAFETY: BLKGETSIZE64 writes one u64 into `size`.
            let rc = unsafe { libc::ioctl(self.raw(), BLKGETSIZE64, &mut size) };
            if rc < 0 {
                return Err(self.os_error("BLKGETSIZE64"));
            }
            return Ok(size);
        }
        let meta = fstat(self.raw()).map_err(|e| EngineError::os("stat", &self.path, e))?;
        Ok(meta.st_size as u64)
    }

    /// Rejects an O_DIRECT IO the kernel would refuse with EINVAL, with a message that says
    /// why. Costs one OR and two ANDs per IO.
    #[inline]
    pub fn check_direct(&self, io: &IoUnit) -> Result<(), EngineError> {
        if self.direct
            && (((io.offset | u64::from(io.len)) & self.off_mask) != 0
                || (io.buf.as_ptr() as u64 & self.mem_mask) != 0)
        {
            return Err(self.misaligned(io));
        }
        Ok(())
    }

    #[cold]
    fn misaligned(&self, io: &IoUnit) -> EngineError {
        EngineError {
            kind: ErrorKind::Unsupported,
            errno: Some(libc::EINVAL),
            message: format!(
                "O_DIRECT on {} needs offsets and lengths in multiples of {} bytes and buffers \
                 aligned to {} bytes, got offset {} length {} buffer {:p}; use such a bs/offset \
                 or run with --direct=0",
                self.path,
                self.off_mask + 1,
                self.mem_mask + 1,
                io.offset,
                io.len,
                io.buf.as_ptr()
            ),
        }
    }

    /// The error for a failed IO syscall, naming the file and the operation.
    #[cold]
    pub fn io_error(&self, kind: IoKind, errno: i32) -> EngineError {
        let op = match kind {
            IoKind::Read => "read",
            IoKind::Write => "write",
            IoKind::Trim => "trim",
            IoKind::Fsync => "fsync",
            IoKind::Fdatasync => "fdatasync",
        };
        let mut err = EngineError::errno(op, &self.path, errno);
        if self.direct && errno == libc::EINVAL {
            err.message.push_str(
                " (O_DIRECT: offset, length or buffer not aligned as the file system needs; \
                 try a larger bs or --direct=0)",
            );
        }
        err
    }

    #[cold]
    fn os_error(&self, op: &str) -> EngineError {
        EngineError::os(op, &self.path, io::Error::last_os_error())
    }

    /// fsync or fdatasync, synchronously.
    pub fn sync(&self, kind: IoKind) -> Result<(), EngineError> {
        // SAFETY: plain syscalls on an fd we own.
        let rc = unsafe {
            if kind == IoKind::Fdatasync {
                libc::fdatasync(self.raw())
            } else {
                libc::fsync(self.raw())
            }
        };
        if rc < 0 {
            return Err(self.io_error(kind, last_errno()));
        }
        Ok(())
    }

    /// Discards a range: hole punch for files, BLKDISCARD for block devices.
    pub fn trim(&self, offset: u64, len: u64) -> Result<(), EngineError> {
        let rc = if self.block_dev {
            let range = [offset, len];
            // SAFETY: BLKDISCARD reads two u64 values.
            unsafe { libc::ioctl(self.raw(), BLKDISCARD, range.as_ptr()) }
        } else {
            let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            // SAFETY: plain syscall on an fd we own.
            unsafe { libc::fallocate(self.raw(), mode, offset as i64, len as i64) }
        };
        if rc < 0 {
            let errno = last_errno();
            if errno == libc::EOPNOTSUPP {
                return Err(EngineError::unsupported(format!(
                    "trim {}: the file system or device does not support discard (EOPNOTSUPP)",
                    self.path
                )));
            }
            return Err(self.io_error(IoKind::Trim, errno));
        }
        Ok(())
    }

    /// Drops cached pages: posix_fadvise(DONTNEED) for files, BLKFLSBUF for devices.
    pub fn invalidate(&self) -> Result<(), EngineError> {
        self.invalidate_range(0, 0)
    }

    /// Drops the cached pages of `len` bytes from `offset` (0: to the end of the file); a
    /// device's whole cache goes, as BLKFLSBUF has no range.
    pub fn invalidate_range(&self, offset: u64, len: u64) -> Result<(), EngineError> {
        if self.block_dev {
            // SAFETY: BLKFLSBUF takes no argument.
            if unsafe { libc::ioctl(self.raw(), BLKFLSBUF, 0) } < 0 {
                let errno = last_errno();
                if errno == libc::EACCES || errno == libc::EPERM {
                    return Err(EngineError {
                        kind: ErrorKind::Unsupported,
                        errno: Some(errno),
                        message: format!(
                            "invalidate {}: only root may drop a block device's cache \
                             (BLKFLSBUF); run as root or with --invalidate=0",
                            self.path
                        ),
                    });
                }
                return Err(EngineError::errno(
                    "invalidate (BLKFLSBUF)",
                    &self.path,
                    errno,
                ));
            }
            return Ok(());
        }
        // SAFETY: plain syscall on an fd we own.
        let rc = unsafe {
            libc::posix_fadvise(
                self.raw(),
                offset as libc::off_t,
                len as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            )
        };
        if rc != 0 {
            return Err(EngineError::errno("invalidate (fadvise)", &self.path, rc));
        }
        Ok(())
    }

    /// Announces the job's access pattern (posix_fadvise RANDOM or SEQUENTIAL), as fio
    /// does on open: without it buffered random reads get readahead fio's runs do not.
    pub fn advise(&self, access: Access) -> Result<(), EngineError> {
        let advice = match access {
            Access::Random => libc::POSIX_FADV_RANDOM,
            Access::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        };
        // SAFETY: plain syscall on an fd we own.
        let rc = unsafe { libc::posix_fadvise(self.raw(), 0, 0, advice) };
        if rc != 0 {
            return Err(EngineError::errno("fadvise", &self.path, rc));
        }
        Ok(())
    }

    /// Reserves `len` bytes from `offset` (fio's `fallocate=native|keep`).
    pub fn allocate(&self, offset: u64, len: u64, keep_size: bool) -> Result<(), EngineError> {
        let mode = if keep_size {
            libc::FALLOC_FL_KEEP_SIZE
        } else {
            0
        };
        // SAFETY: plain syscall on an fd we own.
        let rc = unsafe { libc::fallocate(self.raw(), mode, offset as i64, len as i64) };
        if rc < 0 {
            return Err(self.os_error("fallocate"));
        }
        Ok(())
    }

    /// Truncates or extends the file.
    pub fn set_size(&self, size: u64) -> Result<(), EngineError> {
        // SAFETY: plain syscall on an fd we own.
        if unsafe { libc::ftruncate(self.raw(), size as i64) } < 0 {
            return Err(self.os_error("truncate"));
        }
        Ok(())
    }

    /// Runs a trim or sync IO synchronously: what the synchronous engines do for non-data IOs.
    pub fn other_io(&self, io: &IoUnit) -> Result<Queued, EngineError> {
        match io.kind {
            IoKind::Trim => self
                .trim(io.offset, u64::from(io.len))
                .map(|()| Queued::Done(u64::from(io.len))),
            _ => self.sync(io.kind).map(|()| Queued::Done(0)),
        }
    }
}

/// Runs a read/write syscall, retrying on EINTR: bytes moved, or the errno.
#[inline]
pub fn retry_eintr(mut call: impl FnMut() -> isize) -> Result<u64, i32> {
    loop {
        let ret = call();
        if ret >= 0 {
            return Ok(ret as u64);
        }
        let errno = last_errno();
        if errno != libc::EINTR {
            return Err(errno);
        }
    }
}

/// The `Engine` methods a local engine delegates to its `files: LocalFiles` field.
macro_rules! delegate_local_files {
    () => {
        fn open(
            &mut self,
            file: &storbench_core::FileSpec,
        ) -> Result<storbench_core::FileId, storbench_core::EngineError> {
            self.files.open(file)
        }
        fn size(
            &mut self,
            file: storbench_core::FileId,
        ) -> Result<u64, storbench_core::EngineError> {
            self.files.get(file)?.size()
        }
        fn close(
            &mut self,
            file: storbench_core::FileId,
        ) -> Result<(), storbench_core::EngineError> {
            self.files.close(file).map(drop)
        }
        fn invalidate(
            &mut self,
            file: storbench_core::FileId,
        ) -> Result<(), storbench_core::EngineError> {
            self.files.get(file)?.invalidate()
        }
        fn invalidate_range(
            &mut self,
            file: storbench_core::FileId,
            offset: u64,
            len: u64,
        ) -> Result<(), storbench_core::EngineError> {
            self.files.get(file)?.invalidate_range(offset, len)
        }
        fn advise(
            &mut self,
            file: storbench_core::FileId,
            access: storbench_core::Access,
        ) -> Result<(), storbench_core::EngineError> {
            self.files.get(file)?.advise(access)
        }
        fn meta(&mut self) -> Option<&mut dyn storbench_core::MetaOps> {
            Some(&mut self.files)
        }
    };
}
pub(crate) use delegate_local_files;

/// Capabilities of the local engines that complete inside `queue`.
pub const SYNC_CAPS: storbench_core::Caps = storbench_core::Caps {
    synchronous: true,
    has_slat: false,
    trim: true,
    meta: true,
    no_data: false,
};

/// The errno of the last failed libc call.
#[inline]
pub fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

pub(crate) fn cstring(path: &str) -> Result<CString, EngineError> {
    CString::new(path).map_err(|_| nul_in_path(path))
}

#[cold]
pub(crate) fn nul_in_path(path: &str) -> EngineError {
    EngineError::new(
        ErrorKind::Os,
        format!("open {}: the path contains a NUL byte", path.escape_debug()),
    )
}

fn open_flags(open: &OpenOptions) -> libc::c_int {
    let mut flags = libc::O_CLOEXEC;
    flags |= match (open.read, open.write) {
        (_, false) => libc::O_RDONLY,
        (false, true) => libc::O_WRONLY,
        (true, true) => libc::O_RDWR,
    };
    if open.create {
        flags |= libc::O_CREAT;
    }
    if open.create && open.exclusive {
        flags |= libc::O_EXCL;
    }
    if open.truncate {
        flags |= libc::O_TRUNC;
    }
    if open.direct {
        flags |= libc::O_DIRECT;
    }
    if open.sync {
        flags |= libc::O_SYNC;
    }
    if open.nofollow {
        flags |= libc::O_NOFOLLOW;
    }
    flags
}

fn open_fd(path: &str, open: &OpenOptions) -> Result<OwnedFd, EngineError> {
    open_at(libc::AT_FDCWD, &cstring(path)?, path, open, "open")
}

/// openat(2) of `name` under `dir` as `open` asks, retried on EINTR; errors name `path`
/// and `op`.
fn open_at(
    dir: RawFd,
    name: &CStr,
    path: &str,
    open: &OpenOptions,
    op: &str,
) -> Result<OwnedFd, EngineError> {
    openat_retry(dir, name, open_flags(open)).map_err(|errno| open_error(open, op, path, errno))
}

/// openat(2) retried on EINTR; the errno on failure.
fn openat_retry(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<OwnedFd, i32> {
    loop {
        // SAFETY: a directory descriptor (or AT_FDCWD) and a valid C string; the mode
        // applies only with O_CREAT.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags, 0o644 as libc::c_uint) };
        if fd >= 0 {
            // SAFETY: openat just returned this descriptor to us.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        match last_errno() {
            libc::EINTR => continue,
            errno => return Err(errno),
        }
    }
}

#[cold]
fn open_error(open: &OpenOptions, op: &str, path: &str, errno: i32) -> EngineError {
    if errno == libc::EINVAL && open.direct {
        direct_refused(path)
    } else {
        EngineError::errno(op, path, errno)
    }
}

/// The error for a file system that refuses O_DIRECT at open.
pub fn direct_refused(path: &str) -> EngineError {
    let dir = std::path::Path::new(path)
        .parent()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".into());
    EngineError {
        kind: ErrorKind::Unsupported,
        errno: Some(libc::EINVAL),
        message: format!(
            "the file system under {dir} refuses O_DIRECT (EINVAL); run with --direct=0 \
             (buffered, page cache in play)"
        ),
    }
}

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: `stat` is plain data; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and out pointer.
    if unsafe { libc::fstat(fd, &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

fn is_block_dev(fd: &OwnedFd, path: &str) -> Result<bool, EngineError> {
    let st = fstat(fd.as_raw_fd()).map_err(|e| EngineError::os("stat", path, e))?;
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFBLK)
}

/// O_DIRECT (buffer, offset) alignment: statx STATX_DIOALIGN where the kernel and file system
/// report it (Linux 6.1+); else the logical block size of the device (the file's own, or the
/// one under its file system); else 4096. File systems without a device (tmpfs, FUSE, NFS
/// mounts) get no pre-check: the kernel's own answer then stands.
pub fn dio_alignment(fd: &OwnedFd, block_dev: bool) -> (u32, u32) {
    if let Some(pair) = statx_dio_align(fd.as_raw_fd()) {
        return pair;
    }
    if block_dev {
        let mut lbs: libc::c_int = 0;
        // SAFETY: BLKSSZGET writes one int.
        if unsafe { libc::ioctl(fd.as_raw_fd(), BLKSSZGET, &mut lbs) } == 0 && lbs > 0 {
            return (lbs as u32, lbs as u32);
        }
        return (FALLBACK_DIO_ALIGN, FALLBACK_DIO_ALIGN);
    }
    let Ok(st) = fstat(fd.as_raw_fd()) else {
        return (FALLBACK_DIO_ALIGN, FALLBACK_DIO_ALIGN);
    };
    let (major, minor) = (libc::major(st.st_dev), libc::minor(st.st_dev));
    if major == 0 {
        return (1, 1);
    }
    let lbs = sysfs_logical_block_size(major, minor).unwrap_or(FALLBACK_DIO_ALIGN);
    (lbs, lbs)
}

/// `queue/logical_block_size` of device `major:minor` (a partition reads its disk's).
fn sysfs_logical_block_size(major: u32, minor: u32) -> Option<u32> {
    let dev = format!("/sys/dev/block/{major}:{minor}");
    ["queue", "../queue"].iter().find_map(|q| {
        let text = fs::read_to_string(format!("{dev}/{q}/logical_block_size")).ok()?;
        text.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| n.is_power_of_two())
    })
}

fn statx_dio_align(fd: RawFd) -> Option<(u32, u32)> {
    // SAFETY: `statx` is plain data.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: empty path with AT_EMPTY_PATH stats the fd itself.
    let rc = unsafe {
        libc::statx(
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    let valid = rc == 0
        && stx.stx_mask & libc::STATX_DIOALIGN != 0
        && stx.stx_dio_mem_align.is_power_of_two()
        && stx.stx_dio_offset_align.is_power_of_two();
    valid.then_some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
}

/// The open files of one local engine instance, indexed by [`FileId`]; also the local
/// [`MetaOps`](storbench_core::MetaOps), so files it creates are usable for IO through
/// the same ids.
#[derive(Debug, Default)]
pub struct LocalFiles {
    files: Vec<Option<LocalFile>>,
    /// Parent directories of the metadata operations' paths, kept open.
    dirs: ParentDirs,
    /// Directories opened for the name-relative calls.
    slots: DirSlots,
    /// The directory being listed in batches.
    lister: DirLister,
    /// A closed file's path buffer, reused by the next create so creating files does not
    /// allocate per file.
    spare_path: String,
    /// The local path of the current path call, its root and name joined (reused: no
    /// allocation per call).
    joined: String,
}

impl LocalFiles {
    pub fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        let file = LocalFile::open(spec)?;
        Ok(self.insert(file))
    }

    pub fn insert(&mut self, file: LocalFile) -> FileId {
        if let Some(free) = self.files.iter().position(Option::is_none) {
            self.files[free] = Some(file);
            return free as FileId;
        }
        self.files.push(Some(file));
        (self.files.len() - 1) as FileId
    }

    #[inline]
    pub fn get(&self, id: FileId) -> Result<&LocalFile, EngineError> {
        match self.files.get(id as usize) {
            Some(Some(f)) => Ok(f),
            _ => Err(not_open(id)),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: FileId) -> Result<&mut LocalFile, EngineError> {
        match self.files.get_mut(id as usize) {
            Some(Some(f)) => Ok(f),
            _ => Err(not_open(id)),
        }
    }

    /// Closes the descriptor; the id may be reused by a later open.
    pub fn close(&mut self, id: FileId) -> Result<LocalFile, EngineError> {
        match self.files.get_mut(id as usize).and_then(Option::take) {
            Some(mut f) => {
                self.spare_path = std::mem::take(&mut f.path);
                Ok(f)
            }
            None => Err(not_open(id)),
        }
    }

    /// Open files with their ids.
    pub fn iter(&self) -> impl Iterator<Item = (FileId, &LocalFile)> {
        self.files
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.as_ref().map(|f| (i as FileId, f)))
    }
}

#[cold]
fn not_open(id: FileId) -> EngineError {
    EngineError::new(
        ErrorKind::Os,
        format!("file id {id} is not open in this engine"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::ptr::NonNull;

    fn direct_file(mem: u64, off: u64) -> LocalFile {
        let fd = fs::File::open("/dev/null").unwrap().into();
        LocalFile {
            fd,
            path: "/x".into(),
            block_dev: false,
            direct: true,
            writable: false,
            mem_mask: mem - 1,
            off_mask: off - 1,
            pos: 0,
        }
    }

    fn io(offset: u64, len: u32, addr: usize) -> IoUnit {
        IoUnit {
            file: 0,
            kind: IoKind::Read,
            offset,
            len,
            buf: NonNull::new(addr as *mut u8).unwrap(),
            buf_index: 0,
            tag: 0,
            ioprio: 0,
        }
    }

    proptest! {
        /// The mask test accepts exactly the IOs whose offset, length and buffer address are
        /// multiples of the required alignments.
        #[test]
        fn check_direct_agrees_with_modulo(
            mem_shift in 0u32..13, off_shift in 0u32..13,
            offset in 0u64..(1 << 40), len in 1u32..(1 << 24), addr in 1usize..(1 << 46),
        ) {
            let (mem, off) = (1u64 << mem_shift, 1u64 << off_shift);
            let f = direct_file(mem, off);
            let aligned = offset.is_multiple_of(off)
                && u64::from(len).is_multiple_of(off)
                && (addr as u64).is_multiple_of(mem);
            prop_assert_eq!(f.check_direct(&io(offset, len, addr)).is_ok(), aligned);
        }
    }

    #[test]
    fn buffered_files_accept_any_alignment() {
        let mut f = direct_file(4096, 4096);
        f.direct = false;
        assert!(f.check_direct(&io(1, 3, 7)).is_ok());
    }

    #[test]
    fn open_flags_follow_the_options() {
        let o = OpenOptions {
            read: true,
            write: true,
            create: true,
            exclusive: true,
            direct: true,
            sync: true,
            truncate: true,
            nofollow: true,
        };
        let flags = open_flags(&o);
        for f in [
            libc::O_NOFOLLOW,
            libc::O_RDWR,
            libc::O_CREAT,
            libc::O_EXCL,
            libc::O_DIRECT,
            libc::O_SYNC,
            libc::O_TRUNC,
            libc::O_CLOEXEC,
        ] {
            assert_eq!(flags & f, f);
        }
        let ro = open_flags(&OpenOptions {
            read: true,
            exclusive: true,
            ..Default::default()
        });
        assert_eq!(ro & libc::O_ACCMODE, libc::O_RDONLY);
        assert_eq!(ro & libc::O_EXCL, 0, "O_EXCL only with O_CREAT");
    }

    #[test]
    fn dio_alignment_is_reported_for_ext4_and_tmpfs() {
        for base in ["/tmp", "/dev/shm"] {
            let dir = tempfile::tempdir_in(base).unwrap();
            let path = dir.path().join("f");
            let spec = FileSpec::new(
                storbench_job::target::Target::classify(path.to_str().unwrap()),
                OpenOptions {
                    read: true,
                    write: true,
                    create: true,
                    direct: true,
                    ..Default::default()
                },
            );
            match LocalFile::open(&spec) {
                Ok(f) => {
                    let (mem, off) = (f.mem_mask + 1, f.off_mask + 1);
                    assert!(mem.is_power_of_two() && off.is_power_of_two());
                    assert!(
                        (1..=4096).contains(&mem) && (1..=4096).contains(&off),
                        "{base}: {mem} {off}"
                    );
                }
                Err(e) => eprintln!("skip {base}: {e}"),
            }
        }
    }
}
