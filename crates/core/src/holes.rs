//! Holes in a local file's region (SEEK_DATA/SEEK_HOLE): reads there return zeros without
//! a disk moving them, so the verdicts weigh what the disks moved against the rest, and
//! name a sparse file only when it has holes. Read once per job after it ran, never on the
//! IO path.

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use crate::worker::WorkerFile;

/// Bytes in holes over the regions of the job's files; None when one of them is not a
/// local regular file whose holes can be asked for.
pub fn hole_bytes(files: &[WorkerFile]) -> Option<u64> {
    let mut total = 0u64;
    for f in files {
        let storbench_job::target::Target::Path(path) = &f.spec.target else {
            return None;
        };
        let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
        if f.spec.open.nofollow {
            flags |= libc::O_NOFOLLOW;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(path)
            .ok()?;
        let kind = file.metadata().ok()?.file_type();
        if !kind.is_file() {
            return None;
        }
        total += holes_in(&file, f.start, f.start.saturating_add(f.len))?;
    }
    Some(total)
}

/// Bytes of `[start, end)` that are holes. A file system without SEEK_HOLE reports the
/// whole file as data, which reads as no holes.
fn holes_in(file: &std::fs::File, start: u64, end: u64) -> Option<u64> {
    let fd = file.as_raw_fd();
    let size = file.metadata().ok()?.len();
    let end = end.min(size);
    let mut at = start;
    let mut holes = 0u64;
    while at < end {
        // SAFETY: lseek on a descriptor we own; it moves only that descriptor's offset.
        let data = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            // ENXIO: no data from here to the end of the file.
            let errno = std::io::Error::last_os_error().raw_os_error();
            return (errno == Some(libc::ENXIO)).then_some(holes + (end - at));
        }
        let data = (data as u64).min(end);
        holes += data - at;
        if data >= end {
            break;
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data as libc::off_t, libc::SEEK_HOLE) };
        if hole < 0 {
            return None;
        }
        at = hole as u64;
    }
    Some(holes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    #[test]
    fn a_file_with_its_first_half_written_has_the_rest_as_holes() {
        let dir = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
        let path = dir.path().join("half");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![1u8; 4 << 20]).unwrap();
        f.set_len(8 << 20).unwrap();
        f.sync_all().unwrap();
        let f = std::fs::File::open(&path).unwrap();
        assert_eq!(holes_in(&f, 0, 8 << 20), Some(4 << 20));
        assert_eq!(holes_in(&f, 0, 4 << 20), Some(0));
        assert_eq!(holes_in(&f, 6 << 20, 8 << 20), Some(2 << 20));
        let mut g = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        g.seek(SeekFrom::Start(4 << 20)).unwrap();
        g.write_all(&vec![0u8; 4 << 20]).unwrap();
        g.sync_all().unwrap();
        // Written zeros are data.
        assert_eq!(holes_in(&f, 0, 8 << 20), Some(0));
    }
}
