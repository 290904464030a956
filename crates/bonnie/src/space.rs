//! Whether the suite's files fit where they are to be written. bonnie++ does not check and
//! stops at ENOSPC; on a RAM-backed tmpfs as large as the RAM (Debian's /dev/shm) it never
//! gets that far: the default 2 x RAM file takes all memory and the OOM killer ends other
//! processes first. So targets are measured before anything is written.

use std::path::Path;

use storbench_core::space::FsSpace;
use storbench_core::{FileSpec, OpenOptions};
use storbench_job::target::Target as Typed;

use crate::Factory;
use crate::config::Config;
use crate::error::{BonnieError, Result};
use crate::target::Target;

const MIB: u64 = 1 << 20;
const IN_MEMORY: &str = "available in memory (tmpfs keeps its files in RAM)";

/// Refuses a run whose test files would not fit in the target's free space (a local
/// directory's by statfs, a server's as its engine reports it: NFS FSSTAT, SMB
/// FileFsFullSizeInformation), or, on tmpfs, in the memory the machine has available.
pub(crate) fn check_space(cfg: &Config, factory: &Factory) -> Result<()> {
    let dir = match &cfg.target {
        Target::Local(dir) | Target::Cwd(dir) => dir,
        Target::Remote(t) => return check_remote(cfg, factory, t),
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
    if !fs.fits(need) {
        return Err(refusal(&dir.display(), need, fs.free, "free"));
    }
    if fs.tmpfs
        && let Some(available) = mem_available()
        && available < need
    {
        return Err(refusal(&dir.display(), need, available, IN_MEMORY));
    }
    Ok(())
}

/// The server's free space, asked through the engine that will run the suite. Small
/// files are counted in blocks of 4 KiB, as a server reports no block size.
fn check_remote(cfg: &Config, factory: &Factory, target: &Typed) -> Result<()> {
    let mut engine = factory(&cfg.target.job(cfg.direct))?;
    let spec = FileSpec::new(target.clone(), OpenOptions::default());
    let Some(fs) = engine.free_space(&spec)? else {
        return Ok(());
    };
    let need = bytes_needed(cfg, 4096);
    if !fs.fits(need) {
        return Err(refusal(target, need, fs.free, "free"));
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

fn refusal(dir: &dyn std::fmt::Display, need: u64, have: u64, what: &str) -> BonnieError {
    BonnieError::Refused(format!(
        "not enough space in {dir}: the test files need {} MiB but only {} MiB is {what}; \
         give a smaller -s (or fewer or smaller -n files)",
        need.div_ceil(MIB),
        have / MIB
    ))
}

fn statfs(dir: &Path) -> Result<FsSpace> {
    storbench_core::space::statfs(dir)
        .map_err(|e| BonnieError::Check(format!("statfs {}: {e}", dir.display())))
}

/// MemAvailable plus free swap (tmpfs pages come out of either).
fn mem_available() -> Option<u64> {
    storbench_core::space::mem_and_swap_available()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Host;
    use crate::flags::Flags;

    /// Local targets are measured by statfs: no engine is made.
    fn local_factory(
        _: &storbench_job::JobSpec,
    ) -> std::result::Result<Box<dyn storbench_core::Engine>, storbench_core::EngineError> {
        Err(storbench_core::EngineError::unsupported(
            "no engine for a local target",
        ))
    }

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
        let e = check_space(&cfg, &local_factory).unwrap_err().to_string();
        assert!(e.starts_with("not enough space in "), "{e}");
        assert!(
            e.contains(&format!("need {} MiB", free / MIB + 1024)),
            "{e}"
        );
        assert!(e.contains("give a smaller -s"), "{e}");
        let cfg = config(dir.to_str().unwrap(), "1", "0", "1");
        check_space(&cfg, &local_factory).unwrap();
    }

    #[test]
    fn reads_available_memory() {
        let bytes = mem_available().expect("/proc/meminfo has MemAvailable");
        assert!(bytes > MIB, "{bytes}");
    }
}
