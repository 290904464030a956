//! Writing a file the user named (`report -o`, `export -o`, `--png`, `--svg`, man pages) so
//! that the path cannot be turned against the user, who may be root writing into a directory
//! others can write to:
//!
//! - what is at the path already must be a regular file (replaced) or nothing: a symbolic
//!   link, device, FIFO, socket or directory there is refused with one line, untouched;
//! - the bytes go to a temporary created beside it with `O_CREAT | O_EXCL | O_NOFOLLOW` under
//!   a random name, so nothing planted in the directory is opened or followed;
//! - the temporary is synced and renamed over the path (a reader sees the old file or the
//!   whole new one), and removed when anything fails.
//!
//! `-` is standard output, the one place a non-regular file is written on request.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Tries at fresh random names before giving up (each failure means a name was taken).
const TRIES: usize = 16;

/// Writes `bytes` to `path` (or standard output for `-`) as described in the module docs.
pub fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        return Ok(out.flush()?);
    }
    refuse_special(path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        anyhow::bail!("{}: not a file name", path.display());
    };
    let (tmp, file) = create_temporary(dir, name)
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", path.display()))?;
    if let Err(e) = fill_and_rename(file, bytes, &tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("{}: cannot write: {e}", path.display());
    }
    // The rename is durable once the directory is; a failure here loses nothing written.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// One line when `path` exists as anything but a regular file.
fn refuse_special(path: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => anyhow::bail!("{}: cannot write: {e}", path.display()),
    };
    let t = meta.file_type();
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    anyhow::bail!(
        "{}: is {what}; refusing to replace it (name a regular file, or - for standard output)",
        path.display()
    )
}

/// A new file `.NAME.RANDOM.tmp` in `dir`, created exclusively, never through a link.
fn create_temporary(dir: &Path, name: &std::ffi::OsStr) -> std::io::Result<(PathBuf, File)> {
    let mut last = None;
    for _ in 0..TRIES {
        let mut tmp = OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".{:016x}.tmp", random()));
        let tmp = dir.join(tmp);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o666)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

fn fill_and_rename(mut file: File, bytes: &[u8], tmp: &Path, path: &Path) -> std::io::Result<()> {
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(tmp, path)
}

/// 64 unpredictable bits: the standard library seeds each `RandomState` from the system's
/// random source.
fn random() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_have_fresh_names() {
        let dir = tempfile::tempdir().unwrap();
        let (a, _) = create_temporary(dir.path(), "o".as_ref()).unwrap();
        let (b, _) = create_temporary(dir.path(), "o".as_ref()).unwrap();
        assert_ne!(a, b);
        assert!(a.file_name().unwrap().to_str().unwrap().starts_with(".o."));
    }
}
