//! Directories opened for name-relative calls ([`MetaOps::open_dir`]), by slot, with what
//! each engine needs to reach them (a descriptor locally, a file handle over NFS).
//!
//! A closed or removed directory's slot stays empty and is never given to another
//! directory, so a stale [`DirRef`] fails instead of reaching some other directory.
//!
//! [`MetaOps::open_dir`]: storbench_core::MetaOps::open_dir
//! [`DirRef`]: storbench_core::DirRef

use storbench_core::{EngineError, ErrorKind};

/// Open directories: a handle and the path it was opened by, per slot.
#[derive(Debug)]
pub struct DirTable<H> {
    slots: Vec<Option<(H, String)>>,
}

impl<H> Default for DirTable<H> {
    fn default() -> Self {
        DirTable { slots: Vec::new() }
    }
}

impl<H> DirTable<H> {
    /// Keeps `handle` for `path` in a new slot.
    pub fn insert(&mut self, handle: H, path: &str) -> u32 {
        self.slots.push(Some((handle, path.to_owned())));
        (self.slots.len() - 1) as u32
    }

    /// The handle of `slot` and its path; an error naming `name` (the file the caller
    /// wanted in it) if the slot is not open.
    #[inline]
    pub fn get(&self, slot: u32, name: &str) -> Result<(&H, &str), EngineError> {
        match self.slots.get(slot as usize) {
            Some(Some((handle, path))) => Ok((handle, path)),
            _ => Err(not_open(slot, name)),
        }
    }

    pub fn close(&mut self, slot: u32) {
        if let Some(s) = self.slots.get_mut(slot as usize) {
            *s = None;
        }
    }

    /// Closes the slots of `dir` and of directories under it (it is being removed).
    pub fn forget(&mut self, dir: &str) {
        for s in &mut self.slots {
            if s.as_ref().is_some_and(|(_, path)| within(path, dir)) {
                *s = None;
            }
        }
    }
}

#[cold]
fn not_open(slot: u32, name: &str) -> EngineError {
    EngineError::new(
        ErrorKind::Os,
        format!("{name}: its directory (slot {slot}) is not open in this engine"),
    )
}

/// `path` is `dir` or lies under it (trailing slashes aside): the rule for what a removed
/// directory takes with it.
pub(crate) fn within(path: &str, dir: &str) -> bool {
    let (path, dir) = (path.trim_end_matches('/'), dir.trim_end_matches('/'));
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_means_the_directory_or_under_it() {
        assert!(within("/a/b", "/a/b"));
        assert!(within("/a/b/", "/a/b"));
        assert!(within("/a/b/c/d", "/a/b/"));
        assert!(!within("/a/bc", "/a/b"), "a sibling sharing a prefix");
        assert!(!within("/a", "/a/b"));
    }

    #[test]
    fn slots_are_never_reused_and_removed_directories_close_theirs() {
        let mut t = DirTable::default();
        let a = t.insert(1, "/x/a");
        let b = t.insert(2, "/x/a/b");
        let c = t.insert(3, "/x/ab");
        assert_eq!(t.get(b, "f").unwrap(), (&2, "/x/a/b"));
        t.forget("/x/a");
        assert!(t.get(a, "f").is_err() && t.get(b, "f").is_err());
        assert_eq!(
            t.get(c, "f").unwrap().0,
            &3,
            "a sibling sharing a prefix stays"
        );
        t.close(c);
        let err = t.get(c, "f").unwrap_err();
        assert!(err.message.contains("f: its directory (slot 2)"), "{err}");
        assert_eq!(t.insert(4, "/x/a"), 3, "a new slot, never an old one");
    }
}
