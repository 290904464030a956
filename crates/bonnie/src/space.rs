//! Whether the suite's files fit where they are to be written. bonnie++ does not check and
//! stops at ENOSPC; on a RAM-backed tmpfs as large as the RAM (Debian's /dev/shm) it never
//! gets that far: the default 2 x RAM file takes all memory and the OOM killer ends other
//! processes first. So local targets are measured before anything is written.

use std::ffi::CString;
use std::path::Path;

use crate::config::Config;
use crate::error::{BonnieError, Result};
use crate::target::Target;

const MIB: u64 = 1 << 20;
/// statfs(2)'s f_type for tmpfs.
const TMPFS_MAGIC: i64 = 0x0102_1994;
const IN_MEMORY: &str = "available in memory (tmpfs keeps its files in RAM)";

/// Refuses a run whose test files would not fit in the local target's free space, or, on
/// tmpfs, in the memory the machine has available. NFS targets are left to the server.
pub(crate) fn check_space(cfg: &Config) -> Result<()> {
    let dir = match &cfg.target {
        Target::Local(dir) | Target::Cwd(dir) => dir,
        Target::Nfs(_) => return Ok(()),
    };
    let fs = statfs(dir)?;
    let need = bytes_needed(cfg, fs.block);
    let files = cfg.num_files * 1024 * u64::from(cfg.concurrency);
    if fs.inodes > 0 && fs.free_inodes < files {
        return Err(BonnieError::Refused(format!(
            "not enough inodes in {}: the file tests make {files} files but only {} more fit; \
             give fewer -n files",
            dir.display(),
            fs.free_inodes
        )));
    }
    // File systems without a capacity (ramfs, some FUSE) report no blocks at all.
    if fs.blocks > 0 && fs.free < need {
        return Err(refusal(dir, need, fs.free, "free"));
    }
    if fs.tmpfs
        && let Some(available) = mem_available()
        && available < need
    {
        return Err(refusal(dir, need, available, IN_MEMORY));
    }
    Ok(())
}

/// The test file of every copy, plus the small files at their largest, each taking whole
/// blocks of `block` bytes.
fn bytes_needed(cfg: &Config, block: u64) -> u64 {
    let per_file = (cfg.max_size.max(0) as u64).next_multiple_of(block.max(1));
    let per_copy = cfg.file_mib * MIB + cfg.num_files * 1024 * per_file;
    per_copy * u64::from(cfg.concurrency)
}

fn refusal(dir: &Path, need: u64, have: u64, what: &str) -> BonnieError {
    BonnieError::Refused(format!(
        "not enough space in {}: the test files need {} MiB but only {} MiB is {what}; \
         give a smaller -s (or fewer or smaller -n files)",
        dir.display(),
        need.div_ceil(MIB),
        have / MIB
    ))
}

struct FsSpace {
    blocks: u64,
    free: u64,
    block: u64,
    inodes: u64,
    free_inodes: u64,
    tmpfs: bool,
}

fn statfs(dir: &Path) -> Result<FsSpace> {
    let fail = |e: std::io::Error| BonnieError::Check(format!("statfs {}: {e}", dir.display()));
    let c = CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| fail(std::io::Error::from(std::io::ErrorKind::InvalidInput)))?;
    // SAFETY: statfs fills the zeroed struct for a valid C string path.
    let st = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::statfs(c.as_ptr(), &mut st) != 0 {
            return Err(fail(std::io::Error::last_os_error()));
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

/// MemAvailable from /proc/meminfo, in bytes (tmpfs pages come out of it, and out of swap).
fn mem_available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = meminfo.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    };
    Some(field("MemAvailable:")? + field("SwapFree:").unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Host;
    use crate::flags::Flags;

    fn config(dir: &str, size: &str, files: &str, copies: &str) -> Config {
        let flags = Flags {
            dir: Some(dir.to_owned()),
            size: Some(size.to_owned()),
            files: Some(files.to_owned()),
            ram: Some("0".to_owned()),
            concurrency: Some(copies.to_owned()),
            ..Flags::default()
        };
        Config::from_flags(&flags, &Host::detect()).unwrap()
    }

    #[test]
    fn counts_every_copy_and_the_small_files_at_their_largest() {
        let dir = std::env::temp_dir();
        let dir = dir.to_str().unwrap();
        let cfg = config(dir, "100", "2:4096:1024", "3");
        assert_eq!(bytes_needed(&cfg, 4096), 3 * (100 * MIB + 2 * 1024 * 4096));
        let cfg = config(dir, "0", "1:1000:10", "1");
        assert_eq!(
            bytes_needed(&cfg, 4096),
            1024 * 4096,
            "whole blocks per file"
        );
        let cfg = config(dir, "0", "2:-1", "1");
        assert_eq!(bytes_needed(&cfg, 4096), 0);
    }

    #[test]
    fn refuses_more_than_the_file_system_holds() {
        let dir = std::env::temp_dir();
        let free = statfs(&dir).unwrap().free;
        let too_big = format!("{}", free / MIB + 1024);
        let cfg = config(dir.to_str().unwrap(), &too_big, "0", "1");
        let e = check_space(&cfg).unwrap_err().to_string();
        assert!(e.starts_with("not enough space in "), "{e}");
        assert!(
            e.contains(&format!("need {} MiB", free / MIB + 1024)),
            "{e}"
        );
        assert!(e.contains("give a smaller -s"), "{e}");
        let cfg = config(dir.to_str().unwrap(), "1", "0", "1");
        check_space(&cfg).unwrap();
    }

    #[test]
    fn reads_available_memory() {
        let bytes = mem_available().expect("/proc/meminfo has MemAvailable");
        assert!(bytes > MIB, "{bytes}");
    }
}
