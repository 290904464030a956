//! `e4defrag`: fio's engine that drives ext4's online defragmenter, as fio's
//! `engines/e4defrag.c` does. Each write is one EXT4_IOC_MOVE_EXT that moves the blocks
//! under it to blocks of a donor file (the file's data stays, its layout changes) and
//! counts the bytes moved; reads fail with EINVAL, as in fio. The donor (`donorname=`,
//! under `directory=`) is created by the runner before the job and removed after the
//! run (`JobSpec::scratch_files`); each worker opens it and, without `inplace=1`,
//! allocates its blocks once from `offset=` to the end of `filesize=`. With `inplace=1`
//! each write allocates the donor's blocks under it first and truncates the donor after.
//! Jobs whose files are not on ext4 are refused before the run, naming the file system.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use storbench_core::{Caps, Engine, EngineError, ErrorKind};
use storbench_job::JobSpec;
use storbench_job::target::Target;

use crate::local::{SYNC_CAPS, last_errno};
use crate::syncio::{SyncEngine, SysCall};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "e4defrag";

/// ext4's `struct move_extent`, the argument of EXT4_IOC_MOVE_EXT.
#[repr(C)]
#[derive(Default)]
struct MoveExtent {
    reserved: u32,
    donor_fd: u32,
    orig_start: u64,
    donor_start: u64,
    len: u64,
    moved_len: u64,
}

/// `_IOWR('f', 15, struct move_extent)`.
const EXT4_IOC_MOVE_EXT: libc::c_ulong = 0xc028_660f;

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    for dir in job_dirs(job) {
        refuse_other_fs(&dir)?;
    }
    let Some((donor, _)) = job.scratch_files().into_iter().next() else {
        return Err(EngineError::new(
            ErrorKind::Refused,
            "the e4defrag engine needs donorname= (the donor file)",
        ));
    };
    let Target::Path(donor) = donor else {
        return Err(EngineError::new(
            ErrorKind::Refused,
            format!("donorname: the donor {donor} must be a local file"),
        ));
    };
    let start = match job.offset {
        storbench_job::SizeSpec::Bytes(b) => b,
        storbench_job::SizeSpec::Percent(_) => 0,
    };
    let end = job.filesize.map_or(0, |(_, high)| high);
    Ok(SyncEngine::boxed(E4defrag {
        donor_path: donor,
        donor: None,
        block: 4096,
        inplace: job.engine_options.inplace,
        whole: (start, end.saturating_sub(start)),
    }))
}

/// The directories the job's files are in (an explicit file's, the job's `directory=`,
/// or the current one).
fn job_dirs(job: &JobSpec) -> Vec<PathBuf> {
    let parent = |p: &str| match Path::new(p).parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !job.filenames.is_empty() {
        return job.filenames.iter().map(|f| parent(f.expose())).collect();
    }
    if job.directories.is_empty() {
        return vec![PathBuf::from(".")];
    }
    job.directories
        .iter()
        .map(|d| PathBuf::from(d.expose()))
        .collect()
}

/// Refuses a directory whose file system is not ext4, naming the one it is.
fn refuse_other_fs(dir: &Path) -> Result<(), EngineError> {
    let Some(real) = dir.ancestors().find_map(|p| std::fs::canonicalize(p).ok()) else {
        return Ok(()); // The lay-out says why the directory cannot be reached.
    };
    match storbench_core::env::mount_of(&real) {
        Some((fs, _)) if fs != "ext4" => Err(EngineError::new(
            ErrorKind::Refused,
            format!(
                "ioengine=e4defrag needs an ext4 file system (EXT4_IOC_MOVE_EXT): {} is on {fs}",
                real.display()
            ),
        )),
        _ => Ok(()),
    }
}

#[derive(Debug)]
pub struct E4defrag {
    donor_path: String,
    /// Opened by `setup`, once per worker.
    donor: Option<OwnedFd>,
    /// The donor's block size (st_blksize), the unit of a move.
    block: u64,
    inplace: bool,
    /// Offset and length the donor is allocated over without `inplace`.
    whole: (u64, u64),
}

impl E4defrag {
    fn donor_fd(&self) -> RawFd {
        self.donor.as_ref().map_or(-1, AsRawFd::as_raw_fd)
    }

    fn os_error(&self, op: &str) -> EngineError {
        EngineError::errno(op, &self.donor_path, last_errno())
    }
}

/// Fails the call as fio's engine fails it: -1 with `errno` set.
fn fail(errno: i32) -> isize {
    // SAFETY: errno is this thread's; the caller reads it back as the call's error.
    unsafe { *libc::__errno_location() = errno };
    -1
}

impl SysCall for E4defrag {
    const NAME: &'static str = NAME;
    const CAPS: Caps = Caps {
        trim: false,
        ..SYNC_CAPS
    };

    fn setup(&mut self) -> Result<(), EngineError> {
        let path = CString::new(self.donor_path.as_str())
            .map_err(|_| EngineError::new(ErrorKind::Refused, "donorname holds a NUL byte"))?;
        let flags = libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a NUL-terminated path; the descriptor is owned below.
        let fd = unsafe { libc::open(path.as_ptr(), flags) };
        if fd < 0 {
            return Err(self.os_error("open the donor"));
        }
        // SAFETY: a descriptor just opened and owned by nobody else.
        self.donor = Some(unsafe { OwnedFd::from_raw_fd(fd) });
        if !self.inplace {
            let (start, len) = self.whole;
            // SAFETY: plain syscall on the donor's descriptor.
            if unsafe { libc::fallocate(fd, 0, start as i64, len as i64) } != 0 {
                return Err(self.os_error("allocate the donor"));
            }
        }
        // SAFETY: fstat fills the zeroed struct it is given.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(self.os_error("stat the donor"));
        }
        self.block = (st.st_blksize as u64).max(1);
        Ok(())
    }

    fn read(&self, _fd: RawFd, _buf: *mut u8, _len: usize, _offset: i64) -> isize {
        fail(libc::EINVAL)
    }

    #[inline]
    fn write(&self, fd: RawFd, _buf: *const u8, len: usize, offset: i64) -> isize {
        let donor = self.donor_fd();
        // SAFETY: plain syscall on the donor's descriptor.
        if self.inplace && unsafe { libc::fallocate(donor, 0, offset, len as i64) } != 0 {
            return -1;
        }
        let (offset, bytes) = (offset as u64, len as u64);
        let start = offset / self.block;
        let mut me = MoveExtent {
            donor_fd: donor as u32,
            orig_start: start,
            donor_start: start,
            len: (offset + bytes).div_ceil(self.block) - start,
            ..MoveExtent::default()
        };
        // SAFETY: EXT4_IOC_MOVE_EXT reads and fills the struct it is given.
        let rc = unsafe { libc::ioctl(fd, EXT4_IOC_MOVE_EXT, &mut me) };
        let errno = if rc != 0 { last_errno() } else { 0 };
        let moved = (me.moved_len * self.block).min(bytes);
        // SAFETY: plain syscall on the donor's descriptor.
        let truncated = !self.inplace || unsafe { libc::ftruncate(donor, 0) } == 0;
        match (errno, moved) {
            (0, 0) => fail(libc::EINVAL), // beyond the file's end, as fio says
            (0, _) if !truncated => -1,
            (0, n) => n as isize,
            (e, _) => fail(e),
        }
    }
}
