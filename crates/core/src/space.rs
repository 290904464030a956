//! How much room a run has: the free space of the file system under a directory (statfs) and
//! the memory this process may still take (MemAvailable, and the limit of its cgroup when
//! one is set). quick, bonnie and fio mode ask here before they write or allocate, so a run
//! that cannot fit is refused in one line instead of ending at ENOSPC or the OOM killer.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// statfs(2)'s f_type for tmpfs.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// A file system's capacity as statfs(2) reports it, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct FsSpace {
    /// Total blocks; 0 for file systems without a capacity (ramfs, some FUSE).
    pub blocks: u64,
    /// Bytes an unprivileged writer may still use (f_bavail).
    pub free: u64,
    /// Block size.
    pub block: u64,
    pub inodes: u64,
    pub free_inodes: u64,
    /// tmpfs keeps its files in RAM: MemAvailable bounds it too.
    pub tmpfs: bool,
}

impl FsSpace {
    /// A capacity a server reports (NFS FSSTAT, SMB FileFsFullSizeInformation): `total`
    /// and `free` bytes, counted in bytes, with no inode figures.
    pub fn capacity(total: u64, free: u64) -> FsSpace {
        FsSpace {
            blocks: total,
            free,
            block: 1,
            inodes: 0,
            free_inodes: 0,
            tmpfs: false,
        }
    }

    /// Whether `need` more bytes fit (always true where no capacity is reported).
    pub fn fits(&self, need: u64) -> bool {
        self.blocks == 0 || self.free >= need
    }
}

/// statfs(2) of `dir`.
pub fn statfs(dir: &Path) -> std::io::Result<FsSpace> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: statfs fills the zeroed struct for a valid C string path.
    let st = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut st) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        st
    };
    Ok(FsSpace {
        blocks: st.f_blocks,
        free: st.f_bavail.saturating_mul(st.f_bsize as u64),
        block: st.f_bsize as u64,
        inodes: st.f_files,
        free_inodes: st.f_ffree,
        tmpfs: st.f_type as i64 == TMPFS_MAGIC,
    })
}

/// A field of /proc/meminfo in bytes.
fn meminfo(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// MemAvailable plus free swap, in bytes: what tmpfs pages can still take.
pub fn mem_and_swap_available() -> Option<u64> {
    Some(meminfo("MemAvailable:")? + meminfo("SwapFree:").unwrap_or(0))
}

/// Memory this process can still take without swapping or meeting the OOM killer, and
/// what bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRoom {
    pub bytes: u64,
    /// "MemAvailable" or "the cgroup's memory limit".
    pub bound: &'static str,
}

/// The smaller of MemAvailable and the room left under this process's cgroup limits
/// (v2 memory.max or v1 memory.limit_in_bytes, on the cgroup and its ancestors; the
/// cgroup's inactive page cache counts as free, as the kernel reclaims it first). Swap is
/// not counted: IO buffers that get swapped out measure the swap device.
pub fn memory_room() -> Option<MemoryRoom> {
    let host = meminfo("MemAvailable:").map(|bytes| MemoryRoom {
        bytes,
        bound: "MemAvailable",
    });
    let cgroup = cgroup_room().map(|bytes| MemoryRoom {
        bytes,
        bound: "the cgroup's memory limit",
    });
    match (host, cgroup) {
        (Some(h), Some(c)) => Some(if c.bytes < h.bytes { c } else { h }),
        (h, c) => h.or(c),
    }
}

/// The least room under any memory limit of this process's cgroup or its ancestors.
fn cgroup_room() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<u64> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let room = if id == "0" && controllers.is_empty() {
            ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                .iter()
                .find_map(|m| limits_room(Path::new(m), path, V2))
        } else if controllers.split(',').any(|c| c == "memory") {
            limits_room(Path::new("/sys/fs/cgroup/memory"), path, V1)
        } else {
            None
        };
        if let Some(r) = room {
            best = Some(best.map_or(r, |b| b.min(r)));
        }
    }
    best
}

/// File names of one cgroup version: limit, usage, and the memory.stat key of the
/// inactive page cache.
struct Files {
    limit: &'static str,
    usage: &'static str,
    inactive: &'static str,
}

const V2: Files = Files {
    limit: "memory.max",
    usage: "memory.current",
    inactive: "inactive_file",
};
const V1: Files = Files {
    limit: "memory.limit_in_bytes",
    usage: "memory.usage_in_bytes",
    inactive: "total_inactive_file",
};

/// The least room under the limits from the cgroup at `path` (under `mount`) up to the
/// root. In a cgroup namespace the mount shows only our own subtree, so the path is also
/// tried as the mount's root.
fn limits_room(mount: &Path, path: &str, files: Files) -> Option<u64> {
    let leaf: PathBuf = mount.join(path.trim_start_matches('/'));
    let start = if leaf.join(files.usage).exists() {
        leaf
    } else if mount.join(files.usage).exists() || mount.join(files.limit).exists() {
        mount.to_path_buf()
    } else {
        return None;
    };
    let mut best: Option<u64> = None;
    let mut dir = Some(start.as_path());
    while let Some(d) = dir.filter(|d| d.starts_with(mount)) {
        if let Some(room) = room_in(d, &files) {
            best = Some(best.map_or(room, |b| b.min(room)));
        }
        dir = d.parent();
    }
    best
}

/// Limit minus the usage that cannot be reclaimed, for one cgroup with a limit.
fn room_in(dir: &Path, files: &Files) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let limit: u64 = read(files.limit)?.trim().parse().ok()?;
    // "max" (v2) does not parse; v1 says "no limit" with a number near 2^63.
    if limit >= 1 << 60 {
        return None;
    }
    let usage: u64 = read(files.usage)?.trim().parse().ok()?;
    let inactive = read("memory.stat")
        .and_then(|s| {
            s.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == files.inactive).then(|| v.trim().parse::<u64>().ok())?
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(inactive)))
}

/// Bytes in binary units with one decimal (`1.5 GiB`), for refusals.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_memory_and_space() {
        let room = memory_room().expect("/proc/meminfo has MemAvailable");
        assert!(room.bytes > 1 << 20, "{room:?}");
        assert!(mem_and_swap_available().unwrap() > 1 << 20);
        let fs = statfs(&std::env::temp_dir()).unwrap();
        assert!(fs.fits(0));
        assert!(statfs(Path::new("/nonexistent-dir-of-storbench")).is_err());
    }

    #[test]
    fn cgroup_limits_minus_unreclaimable_usage() {
        let dir = tempfile::tempdir().unwrap();
        let leaf = dir.path().join("a/b");
        std::fs::create_dir_all(&leaf).unwrap();
        let w = |d: &Path, f: &str, v: &str| std::fs::write(d.join(f), v).unwrap();
        w(&leaf, "memory.max", "max\n");
        w(&leaf, "memory.current", "100\n");
        let mid = dir.path().join("a");
        w(&mid, "memory.max", "1000\n");
        w(&mid, "memory.current", "600\n");
        w(&mid, "memory.stat", "anon 300\ninactive_file 200\n");
        assert_eq!(limits_room(dir.path(), "/a/b", V2), Some(1000 - 400));
        assert_eq!(limits_room(dir.path(), "/nope", V2), None);
    }

    #[test]
    fn human_units() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human(64 << 30), "64.0 GiB");
        assert_eq!(human(3 << 40), "3.0 TiB");
    }
}
