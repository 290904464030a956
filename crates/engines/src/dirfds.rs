//! Directory-relative names for the local metadata operations.
//!
//! bonnie++ changes into its test directory and creates, stats and deletes bare names, so
//! the kernel resolves one path component per operation. storbench runs several copies as
//! threads of one process and cannot change directory per copy; instead it keeps each
//! parent directory open (O_PATH) and calls `openat`/`fstatat`/`unlinkat` with the last
//! component, which costs the kernel the same as bonnie++'s bare names. Directories opened
//! with `MetaOps::open_dir` are kept in slots here too, for calls that name a file by a
//! directory slot and a name without any path to take apart.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use storbench_core::{DirRef, EngineError, MetaPath, RelPath, checked_name};

use crate::dirtable::{DirTable, within};
use crate::local::{cstring, nul_in_path};

/// Open parent directories by their path as the caller spells it. Relative paths are kept
/// as spelled, so the working directory must not change while an engine is open (bonnie
/// changes into `-d` once, before it creates its engine).
#[derive(Debug, Default)]
pub struct ParentDirs {
    open: HashMap<String, OwnedFd>,
    /// The parent the last call resolved, checked first: the bonnie tests work in one
    /// directory for thousands of calls, and comparing beats hashing the path each time.
    last: Option<(String, RawFd)>,
    /// The last component of the last call, NUL-terminated (reused: no copy per call).
    name: Vec<u8>,
}

/// `s` as a C string in `buf` (reusing its memory); refuses an embedded NUL.
#[inline]
pub fn c_str_in<'a>(buf: &'a mut Vec<u8>, s: &str) -> Result<&'a CStr, EngineError> {
    if has_nul(s.as_bytes()) {
        return Err(nul_in_path(s));
    }
    buf.clear();
    buf.extend_from_slice(s.as_bytes());
    buf.push(0);
    // SAFETY: `s` holds no NUL (checked above) and one ends `buf`.
    Ok(unsafe { CStr::from_bytes_with_nul_unchecked(buf) })
}

/// A checked name as a C string in `buf` (reusing its memory): a [`RelPath`] holds no NUL,
/// so it is not looked for again.
#[inline]
fn c_str_of<'a>(buf: &'a mut Vec<u8>, name: &RelPath) -> &'a CStr {
    buf.clear();
    buf.extend_from_slice(name.as_str().as_bytes());
    buf.push(0);
    // SAFETY: a `RelPath` holds no NUL, and one ends `buf`.
    unsafe { CStr::from_bytes_with_nul_unchecked(buf) }
}

/// Where the first zero byte of `b` is, eight bytes at a time: file names are short, and
/// for them this is several times cheaper than `memchr`'s set-up (measured per unlink in a
/// listing: `examples/list_cost.rs`).
#[inline]
pub(crate) fn first_nul(b: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    let (words, rest) = b.as_chunks::<8>();
    for (i, w) in words.iter().enumerate() {
        let v = u64::from_le_bytes(*w);
        // The lowest flagged byte is the first zero (higher flags may be false).
        let zeros = v.wrapping_sub(ONES) & !v & HIGHS;
        if zeros != 0 {
            return Some(i * 8 + zeros.trailing_zeros() as usize / 8);
        }
    }
    let tail = words.len() * 8;
    rest.iter().position(|&c| c == 0).map(|i| tail + i)
}

fn has_nul(b: &[u8]) -> bool {
    first_nul(b).is_some()
}

impl ParentDirs {
    /// The directory descriptor to resolve `path`'s last component against, and that
    /// component. Paths without a `/` resolve against the working directory.
    pub fn split(&mut self, path: &str) -> Result<(RawFd, &CStr), EngineError> {
        if let Some((last, fd)) = &self.last
            && let Some(name) = path.strip_prefix(last.as_str())
            && let Some(name) = name.strip_prefix('/')
            && !name.is_empty()
            && !name.bytes().any(|b| b == b'/')
        {
            let fd = *fd;
            return Ok((fd, c_str_in(&mut self.name, name)?));
        }
        let Some((dir, name)) = path.rsplit_once('/').filter(|(_, n)| !n.is_empty()) else {
            return Ok((libc::AT_FDCWD, c_str_in(&mut self.name, path)?));
        };
        let dir = if dir.is_empty() { "/" } else { dir };
        let raw = match self.open.get(dir) {
            Some(fd) => fd.as_raw_fd(),
            None => {
                let fd = open_dir(dir)?;
                let raw = fd.as_raw_fd();
                self.open.insert(dir.to_owned(), fd);
                raw
            }
        };
        let mut last = self.last.take().map(|(s, _)| s).unwrap_or_default();
        last.clear();
        last.push_str(dir);
        self.last = Some((last, raw));
        Ok((raw, c_str_in(&mut self.name, name)?))
    }

    /// As [`Self::split`] for a local `path`. A bare name in the directory the last call
    /// resolved (the file engines' and bonnie's flat directories, thousands of calls in a
    /// row) is used as it is, without joining root and name into text only to take them
    /// apart again (that join cost a stat on tmpfs half a per cent: `SIDE=path
    /// bench/meta_names.sh`); any other path is written into `joined`, then split.
    pub fn split_below<'a>(
        &'a mut self,
        path: MetaPath<'_>,
        joined: &mut String,
    ) -> Result<(RawFd, &'a CStr), EngineError> {
        if let (Some(rel), Some((last, fd))) = (path.rel, &self.last)
            && path.root.expose().trim_end_matches('/') == last.as_str()
            && !rel.as_str().bytes().any(|b| b == b'/')
        {
            let fd = *fd;
            return Ok((fd, c_str_of(&mut self.name, rel)));
        }
        path.write_local(joined);
        self.split(joined)
    }

    /// Drops the descriptor of `dir` (it is being removed, and a new directory of the same
    /// name must not be reached through the old one).
    pub fn forget(&mut self, dir: &str) {
        self.last = None;
        self.open.retain(|path, _| !within(path, dir));
    }
}

/// Directories opened for name-relative calls, as O_PATH descriptors (see [`DirTable`]).
#[derive(Debug, Default)]
pub struct DirSlots {
    table: DirTable<OwnedFd>,
    /// The last name resolved, NUL-terminated (reused: no copy per call).
    name: Vec<u8>,
    /// The other name of a call that takes two (link, symlink), as `name`.
    other: Vec<u8>,
}

impl DirSlots {
    /// Opens `path` (O_PATH) into a new slot.
    pub fn open(&mut self, path: &str) -> Result<u32, EngineError> {
        Ok(self.table.insert(open_dir(path)?, path))
    }

    /// The descriptor of `dir`'s slot and `name`, checked as a `RelPath` (so `..` or a
    /// leading `/` cannot reach outside `dir`), as a C string.
    #[inline]
    pub fn resolve(&mut self, dir: &DirRef, name: &str) -> Result<(RawFd, &CStr), EngineError> {
        let name = checked_name(dir, name)?;
        let (fd, _) = self.table.get(dir.slot, name.as_str())?;
        Ok((fd.as_raw_fd(), c_str_of(&mut self.name, name)))
    }

    /// The descriptor of `dir`'s slot, `name` and `other` as C strings: calls naming two
    /// files (a hard link's source, a symbolic link's text) with no copy per call. `name`
    /// is checked as in [`resolve`](Self::resolve); `other` is the caller's to check (a
    /// symbolic link's text may say anything).
    #[inline]
    pub fn resolve_two(
        &mut self,
        dir: &DirRef,
        name: &str,
        other: &str,
    ) -> Result<(RawFd, &CStr, &CStr), EngineError> {
        let name = checked_name(dir, name)?;
        let (fd, _) = self.table.get(dir.slot, name.as_str())?;
        let fd = fd.as_raw_fd();
        let name = c_str_of(&mut self.name, name);
        Ok((fd, name, c_str_in(&mut self.other, other)?))
    }

    /// The descriptor of `slot`; `path` names it in the error if it is not open.
    pub fn fd(&self, slot: u32, path: &str) -> Result<RawFd, EngineError> {
        Ok(self.table.get(slot, path)?.0.as_raw_fd())
    }

    pub fn close(&mut self, slot: u32) {
        self.table.close(slot);
    }

    /// Closes the slots of `dir` and of directories under it (it is being removed).
    pub fn forget(&mut self, dir: &str) {
        self.table.forget(dir);
    }
}

fn open_dir(dir: &str) -> Result<OwnedFd, EngineError> {
    let c = cstring(dir)?;
    // SAFETY: c is a valid C string.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(EngineError::os(
            "open directory",
            dir,
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: open just returned this descriptor to us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_anywhere_is_found_and_refused() {
        assert!(!has_nul(b""));
        for len in 1..40 {
            let mut name = vec![b'a'; len];
            assert!(!has_nul(&name), "{len}");
            for at in 0..len {
                name[at] = 0;
                assert_eq!(first_nul(&name), Some(at), "{len}");
                // A second zero after the first, and a 0x01 right after it (the bytes the
                // word trick can flag falsely), leave the first in place.
                if at + 2 < len {
                    name[at + 1] = 0x01;
                    name[at + 2] = 0;
                    assert_eq!(first_nul(&name), Some(at), "{len}");
                    name[at + 1] = b'a';
                    name[at + 2] = b'a';
                }
                name[at] = 0x80;
                assert!(!has_nul(&name), "0x80 is not a NUL ({len} {at})");
                name[at] = 0x01;
                assert!(!has_nul(&name), "0x01 is not a NUL ({len} {at})");
                name[at] = b'a';
            }
        }
        let mut buf = Vec::new();
        assert_eq!(c_str_in(&mut buf, "abc").unwrap().to_bytes(), b"abc");
        let err = c_str_in(&mut buf, "0123456789\0x").unwrap_err();
        assert!(err.message.contains("NUL"), "{err}");
    }

    #[test]
    fn names_resolve_against_their_parent_and_removed_parents_are_forgotten() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let file = format!("{}/f", dir.display());
        let mut dirs = ParentDirs::default();
        let (fd, name) = dirs.split(&file).unwrap();
        assert_ne!(fd, libc::AT_FDCWD);
        // SAFETY: valid directory descriptor and name.
        let made =
            unsafe { libc::openat(fd, name.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o600) };
        assert!(made >= 0);
        // SAFETY: we own it.
        unsafe { libc::close(made) };
        assert!(std::path::Path::new(&file).exists());
        assert_eq!(dirs.split(&file).unwrap().0, fd, "the parent stays open");

        std::fs::remove_file(&file).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        dirs.forget(&dir.display().to_string());
        std::fs::create_dir(&dir).unwrap();
        let (fd2, name) = dirs.split(&file).unwrap();
        // SAFETY: valid directory descriptor and name.
        let made =
            unsafe { libc::openat(fd2, name.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o600) };
        assert!(made >= 0);
        // SAFETY: we own it.
        unsafe { libc::close(made) };
        assert!(
            std::path::Path::new(&file).exists(),
            "a re-made directory is reached, not the removed one"
        );
        assert_eq!(dirs.split("bare").unwrap().0, libc::AT_FDCWD);
        assert!(dirs.split("a\0b/c").is_err());
    }
    #[test]
    fn a_name_below_the_last_directory_is_not_joined_and_others_are() {
        let tmp = tempfile::tempdir().unwrap();
        let root = storbench_job::target::Target::Path(format!("{}/", tmp.path().display()));
        let cwd = storbench_job::target::Target::Path(".".into());
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        let (mut dirs, mut joined) = (ParentDirs::default(), String::new());
        let rel = |s: &str| storbench_core::RelPathBuf::new(s).unwrap();
        let (a, b, c, d) = (rel("a"), rel("b"), rel("sub/c"), rel("d"));

        let (fd, name) = dirs
            .split_below(MetaPath::new(&root, &a), &mut joined)
            .unwrap();
        assert_eq!(name.to_bytes(), b"a");
        assert_eq!(joined, tmp.path().join("a").display().to_string());
        joined.clear();
        let (again, name) = dirs
            .split_below(MetaPath::new(&root, &b), &mut joined)
            .unwrap();
        assert_eq!((again, name.to_bytes()), (fd, &b"b"[..]));
        assert!(
            joined.is_empty(),
            "the second bare name was joined: {joined}"
        );

        let (below, name) = dirs
            .split_below(MetaPath::new(&root, &c), &mut joined)
            .unwrap();
        assert_ne!(below, fd);
        assert_eq!(name.to_bytes(), b"c");
        let (at_cwd, name) = dirs
            .split_below(MetaPath::new(&cwd, &d), &mut joined)
            .unwrap();
        assert_eq!((at_cwd, name.to_bytes()), (libc::AT_FDCWD, &b"d"[..]));
    }
}
