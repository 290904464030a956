//! What a metadata call ([`MetaOps`](crate::MetaOps)) names: a typed root and a checked
//! name below it, so no engine parses URL text or takes a joined path apart per call.
//!
//! The root is the [`Target`] parsed where input was read (a directory, an export, a
//! share); the name is a [`RelPath`], or none for the root itself (bonnie's `sync_fs` of
//! its `-d` directory, a listing of it) or for a whole local path taken as written (fio
//! joins local names as typed, absolute or with `..`, so such a name travels as a
//! [`Target::Path`] of its own, as the lay-out's removal of a file does). Engines resolve
//! the root once and keep it: NFS mounts the export and looks the components up below
//! it, SMB joins them under the share, the local engine joins root and name into a reused
//! buffer.

use std::fmt;

use storbench_job::relpath::{RelPath, RelPathBuf};
use storbench_job::target::Target;

/// A root and an optional name below it. Cheap to copy: it borrows both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaPath<'a> {
    pub root: &'a Target,
    pub rel: Option<&'a RelPath>,
}

impl<'a> MetaPath<'a> {
    /// `rel` below `root`.
    pub fn new(root: &'a Target, rel: &'a RelPath) -> MetaPath<'a> {
        MetaPath {
            root,
            rel: Some(rel),
        }
    }

    /// `root` itself.
    pub fn whole(root: &'a Target) -> MetaPath<'a> {
        MetaPath { root, rel: None }
    }

    /// The local path this names, written into `out` (its memory reused): the root's path
    /// and the name joined with `/`; the name alone below the working directory (`.`).
    /// Only meaningful for local roots; a URL root gives its text, never to be shown.
    pub fn write_local(&self, out: &mut String) {
        out.clear();
        let root = self.root.expose();
        match self.rel {
            None => out.push_str(root),
            Some(rel) if root == "." => out.push_str(rel.as_str()),
            Some(rel) => {
                out.push_str(root.trim_end_matches('/'));
                out.push('/');
                out.push_str(rel.as_str());
            }
        }
    }
}

impl fmt::Display for MetaPath<'_> {
    /// The root masked (a URL may hold a password) and the name after it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rel {
            None => fmt::Display::fmt(self.root, f),
            Some(rel) => write!(f, "{}/{}", self.root, rel.as_str()),
        }
    }
}

/// A directory opened with [`MetaOps::open_dir`](crate::MetaOps::open_dir) for
/// name-relative calls: the engine's slot for it and what it was opened as, so the
/// default `*_in` calls and errors can name it without any path text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirRef {
    /// The engine's slot for it (a kept-open descriptor, a file handle); engines that
    /// work by path leave it 0.
    pub slot: u32,
    /// The root the directory was named under.
    pub root: Target,
    /// Its name below the root; none for the root itself.
    pub rel: Option<RelPathBuf>,
}

impl DirRef {
    /// The directory as `path` named it, with `slot`.
    pub fn of(slot: u32, path: MetaPath<'_>) -> DirRef {
        DirRef {
            slot,
            root: path.root.clone(),
            rel: path.rel.map(ToOwned::to_owned),
        }
    }

    /// The directory as a path for the path calls.
    pub fn path(&self) -> MetaPath<'_> {
        MetaPath {
            root: &self.root,
            rel: self.rel.as_deref(),
        }
    }

    /// `name` (checked) below this directory, for the default `*_in` calls of engines
    /// that work by path.
    pub fn rel_of(&self, name: &RelPath) -> RelPathBuf {
        match &self.rel {
            Some(dir) => dir.join(name),
            None => name.to_owned(),
        }
    }

    /// `name` under this directory as shown in errors (the root masked).
    pub fn join(&self, name: &str) -> String {
        format!("{}/{name}", self.path().to_string().trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_joins_its_name_to_its_root_and_shows_no_secret() {
        let root = Target::Path("/tmp/d/".into());
        let name = RelPath::new("Bonnie.1/00000").unwrap();
        let mut out = String::from("left over");
        MetaPath::new(&root, name).write_local(&mut out);
        assert_eq!(out, "/tmp/d/Bonnie.1/00000");
        MetaPath::whole(&root).write_local(&mut out);
        assert_eq!(out, "/tmp/d/");
        MetaPath::new(&Target::Path(".".into()), name).write_local(&mut out);
        assert_eq!(
            out, "Bonnie.1/00000",
            "below the working directory, the name alone"
        );

        let share = Target::parse("smb://u:hunter2@127.0.0.1/share/dir").unwrap();
        let shown = MetaPath::new(&share, name).to_string();
        assert!(
            !shown.contains("hunter2") && shown.ends_with("/Bonnie.1/00000"),
            "{shown}"
        );
        let dir = DirRef::of(3, MetaPath::new(&share, name));
        assert_eq!(dir.path(), MetaPath::new(&share, name));
        assert_eq!(
            &*dir.rel_of(RelPath::new("f").unwrap()),
            RelPath::new("Bonnie.1/00000/f").unwrap()
        );
        assert!(!dir.join("f").contains("hunter2"), "{}", dir.join("f"));
    }
}
