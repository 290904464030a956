//! A directory on an NFS export or SMB share that refuses new files (smbd's `read only =
//! yes`, a ganesha export with `Access_Type = RO`): found by creating one empty file there,
//! removed again at once when the server takes it. On such a directory `diagnose` reads
//! the largest file it holds in place, as it reads a device, and writes nothing.

use storbench_core::{EngineError, EntryKind};
use storbench_job::relpath::RelPathBuf;
use storbench_job::target::Target;

use crate::remote_leftovers::{RemoteDir, shown};

/// A file read in place on a directory that refuses new files.
#[derive(Clone, Debug)]
pub struct InPlace {
    /// The file, below the directory.
    pub file: Target,
    /// Its name in the directory.
    pub name: String,
    pub size: u64,
    /// The server's refusal of a new file.
    pub refusal: String,
}

/// The errors by which a server refuses to create a file it would otherwise create.
fn refuses_new_files(e: &EngineError) -> bool {
    matches!(e.errno, Some(libc::EROFS | libc::EACCES | libc::EPERM))
}

fn to_anyhow(e: EngineError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// None when `dir` takes a new file (`probe`, removed again); else the largest regular
/// file in it of at least `min` bytes, or an error saying there is none.
pub fn read_in_place(dir: &Target, probe: &str, min: u64) -> anyhow::Result<Option<InPlace>> {
    let mut remote = RemoteDir::open(dir).map_err(to_anyhow)?;
    let refusal = match remote.create_empty(probe) {
        Ok(()) => {
            remote.unlink(probe).map_err(to_anyhow)?;
            return Ok(None);
        }
        Err(e) if refuses_new_files(&e) => e.message,
        Err(e) => return Err(to_anyhow(e)),
    };
    let mut best: Option<(String, u64)> = None;
    for name in remote.names().map_err(to_anyhow)? {
        if name.starts_with('.') || remote.kind(&name).map_err(to_anyhow)? != EntryKind::File {
            continue;
        }
        let size = remote.size(&name).map_err(to_anyhow)?;
        if size >= min && best.as_ref().is_none_or(|(_, s)| size > *s) {
            best = Some((name, size));
        }
    }
    let Some((name, size)) = best else {
        anyhow::bail!(
            "{} refuses new files ({refusal}) and holds no file of at least {} MiB to read in place",
            shown(dir),
            min >> 20
        );
    };
    let rel = RelPathBuf::new(name.as_str()).map_err(anyhow::Error::msg)?;
    let file = dir.join(&rel).map_err(anyhow::Error::msg)?;
    Ok(Some(InPlace {
        file,
        name,
        size,
        refusal,
    }))
}
