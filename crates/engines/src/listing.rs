//! Local directory listings read in getdents64 batches, as readdir(3) reads them: the
//! directory stays open between batches, and each batch is one system call of up to
//! 32 KiB of entries, so a caller timing its operations sees the listing spread over them
//! as bonnie++ does.

use std::borrow::Cow;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use storbench_core::{DirCursor, EngineError, NameList};

use crate::dirfds::{c_str_in, first_nul};
use crate::dirtable::within;
use crate::local::last_errno;

/// glibc's readdir buffer size.
const BATCH_BYTES: usize = 32 * 1024;
/// Where a `linux_dirent64` record's name starts (after d_ino u64, d_off i64, d_reclen u16
/// and d_type u8); it ends with a NUL.
const NAME_AT: usize = 19;

/// The directory being listed, if any, and where its descriptor stands.
#[derive(Debug, Default)]
pub struct DirLister {
    open: Option<OpenListing>,
    /// The directory `open` lists (kept when it closes, to reuse the memory).
    path: String,
    /// `path` NUL-terminated, for opening it.
    c_path: Vec<u8>,
    buf: Vec<u8>,
}

#[derive(Debug)]
struct OpenListing {
    fd: OwnedFd,
    /// The descriptor's position: the cursor offset it continues from.
    offset: u64,
}

impl DirLister {
    /// The next batch of `path` after `cursor`.
    pub fn read(
        &mut self,
        path: &str,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        let batch = self.read_batch(path, cursor)?;
        // Records are at least 24 bytes, and names shorter than their records.
        names.reserve(batch.len() / 24, batch.len());
        for name in records(batch) {
            let name = name.to_bytes();
            if name != b"." && name != b".." {
                names.push(&name_text(name));
            }
        }
        Ok(())
    }

    /// The next batch of `path` after `cursor` as the kernel wrote it (empty at the end),
    /// for callers that use the names where they lie: walk it with [`records`].
    pub fn read_batch(&mut self, path: &str, cursor: &mut DirCursor) -> Result<&[u8], EngineError> {
        if cursor.done {
            return Ok(&[]);
        }
        let fd = self.descriptor(path, cursor.offset)?;
        if self.buf.is_empty() {
            self.buf = vec![0; BATCH_BYTES];
        }
        let len = loop {
            // SAFETY: a directory descriptor we own and a buffer of the length given.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    fd,
                    self.buf.as_mut_ptr(),
                    self.buf.len(),
                )
            };
            if n >= 0 {
                break n as usize;
            }
            match last_errno() {
                libc::EINTR => continue,
                errno => {
                    self.open = None;
                    return Err(EngineError::errno("readdir", path, errno));
                }
            }
        };
        if len == 0 {
            cursor.done = true;
            self.open = None;
            return Ok(&[]);
        }
        let batch = &self.buf[..len];
        cursor.offset = last_offset(batch).unwrap_or(cursor.offset);
        if let Some(open) = &mut self.open {
            open.offset = cursor.offset;
        }
        Ok(batch)
    }

    /// Forgets a listing of `dir` or of a directory under it (`dir` is being removed).
    pub fn forget(&mut self, dir: &str) {
        if within(&self.path, dir) {
            self.open = None;
        }
    }

    /// The open descriptor positioned at `offset`, reusing the one a previous batch left
    /// there.
    fn descriptor(&mut self, path: &str, offset: u64) -> Result<i32, EngineError> {
        if let Some(open) = &self.open
            && self.path == path
            && open.offset == offset
        {
            return Ok(open.fd.as_raw_fd());
        }
        self.open = None;
        let c = c_str_in(&mut self.c_path, path)?;
        // SAFETY: a valid C string.
        let raw = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(EngineError::errno("readdir", path, last_errno()));
        }
        // SAFETY: open just returned this descriptor to us.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a descriptor we own.
        if offset != 0 && unsafe { libc::lseek(raw, offset as libc::off_t, libc::SEEK_SET) } < 0 {
            return Err(EngineError::errno("readdir (seek)", path, last_errno()));
        }
        self.path.clear();
        self.path.push_str(path);
        self.open = Some(OpenListing { fd, offset });
        Ok(raw)
    }
}

/// The whole records at the start of `buf`: where each starts, and its length.
fn record_spans(buf: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rec = buf.get(at..).filter(|r| r.len() >= NAME_AT)?;
        let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
        if reclen < NAME_AT || reclen > rec.len() {
            return None;
        }
        let start = at;
        at += reclen;
        Some((start, reclen))
    })
}

/// The `d_off` of the last record in `buf`: where the next batch starts.
fn last_offset(buf: &[u8]) -> Option<u64> {
    let (at, _) = record_spans(buf).last()?;
    Some(u64::from_ne_bytes(
        buf[at + 8..at + 16].try_into().expect("8 bytes"),
    ))
}

/// The names of the `linux_dirent64` records in `buf` (a batch from
/// [`DirLister::read_batch`]), `.` and `..` included, where they lie.
pub fn records(buf: &[u8]) -> impl Iterator<Item = &CStr> + '_ {
    record_spans(buf).filter_map(|(at, reclen)| {
        let raw = &buf[at + NAME_AT..at + reclen];
        let end = first_nul(raw)?;
        // SAFETY: `end` is the first NUL, so `raw[..end]` holds none, and `raw[end]` is one.
        Some(unsafe { CStr::from_bytes_with_nul_unchecked(&raw[..=end]) })
    })
}

/// A listed name as text. ASCII, which the names storbench makes are, is checked eight
/// bytes at a time: `str::from_utf8` costs about 12 ns per short name, a tenth of what the
/// kernel spends listing it.
#[inline]
fn name_text(name: &[u8]) -> Cow<'_, str> {
    if name.is_ascii() {
        // SAFETY: ASCII is UTF-8.
        Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(name) })
    } else {
        String::from_utf8_lossy(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_text_keep_utf8_and_mark_what_is_not() {
        assert!(matches!(
            name_text(b"0000000abc"),
            Cow::Borrowed("0000000abc")
        ));
        assert!(matches!(
            name_text("caf\u{e9}".as_bytes()),
            Cow::Borrowed("caf\u{e9}")
        ));
        assert_eq!(name_text(b"a\xffb"), "a\u{fffd}b");
    }

    /// Records are walked by their lengths; names end at their NUL, not at the padding.
    #[test]
    fn records_give_names_up_to_their_nul_and_the_next_offset() {
        // Two records: d_off 7 and 9, lengths 32 and 24.
        let mut buf = vec![0u8; 56];
        buf[8..16].copy_from_slice(&7u64.to_ne_bytes());
        buf[16..18].copy_from_slice(&32u16.to_ne_bytes());
        buf[NAME_AT..NAME_AT + 5].copy_from_slice(b"hello");
        buf[NAME_AT + 6..32].fill(b'x');
        buf[40..48].copy_from_slice(&9u64.to_ne_bytes());
        buf[48..50].copy_from_slice(&24u16.to_ne_bytes());
        buf[32 + NAME_AT] = b'.';
        let names: Vec<_> = records(&buf).map(|n| n.to_bytes().to_vec()).collect();
        assert_eq!(names, [b"hello".to_vec(), b".".to_vec()]);
        assert_eq!(last_offset(&buf), Some(9));
        assert_eq!(records(&buf[..40]).count(), 1, "a cut record is not read");
    }

    #[test]
    fn batches_list_every_name_once_while_entries_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap();
        let mut want: Vec<String> = (0..3000).map(|i| format!("{i:07}long-name")).collect();
        for name in &want {
            std::fs::write(format!("{dir}/{name}"), b"").unwrap();
        }
        let (mut lister, mut cursor, mut names) = (
            DirLister::default(),
            DirCursor::default(),
            NameList::default(),
        );
        let mut got = Vec::new();
        let mut batches = 0;
        while !cursor.done {
            names.clear();
            lister.read(dir, &mut cursor, &mut names).unwrap();
            batches += 1;
            for name in names.iter() {
                // As bonnie++'s sequential delete: remove each name as it is listed.
                std::fs::remove_file(format!("{dir}/{name}")).unwrap();
                got.push(name.to_owned());
            }
        }
        assert!(batches > 2, "3000 entries take several 32 KiB batches");
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(std::fs::read_dir(dir).unwrap().count(), 0);
    }

    #[test]
    fn a_cursor_continues_on_a_fresh_descriptor() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_str().unwrap();
        for i in 0..2000 {
            std::fs::write(format!("{dir}/{i:05}-a-longer-name-here"), b"").unwrap();
        }
        let mut cursor = DirCursor::default();
        let mut names = NameList::default();
        DirLister::default()
            .read(dir, &mut cursor, &mut names)
            .unwrap();
        let first = names.len();
        assert!(first > 0 && first < 2000 && cursor.offset != 0);
        // A new lister has no descriptor: it opens one and seeks to the cursor.
        let mut lister = DirLister::default();
        while !cursor.done {
            lister.read(dir, &mut cursor, &mut names).unwrap();
        }
        let mut all: Vec<&str> = names.iter().collect();
        all.sort_unstable();
        let want: Vec<String> = (0..2000)
            .map(|i| format!("{i:05}-a-longer-name-here"))
            .collect();
        assert_eq!(all, want, "every name once, none twice");
    }

    #[test]
    fn removing_the_directory_or_a_parent_drops_the_listing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = format!("{}/sub", tmp.path().display());
        std::fs::create_dir(&dir).unwrap();
        let parent = format!("{}/", tmp.path().display());
        for (forget, drops) in [
            (dir.clone(), true),
            (parent, true),
            (format!("{dir}x"), false),
        ] {
            let mut lister = DirLister::default();
            lister
                .read(&dir, &mut DirCursor::default(), &mut NameList::default())
                .unwrap();
            assert!(lister.open.is_some(), "kept open between batches");
            lister.forget(&forget);
            assert_eq!(lister.open.is_none(), drops, "forget {forget}");
        }
    }

    #[test]
    fn a_missing_directory_is_named() {
        let err = DirLister::default()
            .read(
                "/nonexistent/x",
                &mut DirCursor::default(),
                &mut NameList::default(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/x"), "{err}");
    }
}
