//! What an NFS target needs before a run: a directory (where storbench creates files) is
//! reached once, over the version the run will use (`storbench_nfs::select`): MOUNT and
//! UMNT over v3, a session set up and destroyed over v4, so a bad export, path or version
//! is one line naming the export asked for before storbench joins its own file names to
//! it. A file target is left to the engine's `open`.

use storbench_core::{EngineError, ErrorKind};
use storbench_job::target::Target;

/// Reaches `target`'s directory once when storbench creates files in it.
pub(super) fn check(target: &Target, directory: bool) -> Result<(), EngineError> {
    let Target::Nfs(typed) = target else {
        return Ok(());
    };
    if !directory {
        return Ok(());
    }
    storbench_nfs::select::check(&typed.url)
        .map_err(|e| EngineError::new(ErrorKind::Refused, format!("nfs: {e}")))
}
