//! One copy of the suite (bonnie++ `-c` runs several at once): its engine, buffer, file
//! and directory, and a record of everything it has created so that it can always remove
//! exactly that, after an error or Ctrl-C too.

use std::collections::HashSet;

use storbench_core::{
    DirRef, EngineError, ErrorKind, MetaOps, MetaPath, NameList, RelPath, RelPathBuf, stop,
};
use storbench_job::target::Target;

use crate::error::{BonnieError, Result};
use crate::io::Io;
use crate::names::{Names, subdir};
use storbench_core::buffers::Arena;
use storbench_model::rng::SplitMix64;

pub(crate) struct Worker {
    pub io: Io,
    pub buf: Arena,
    /// The IO tests' file, `<dir>/Bonnie.<pid>[.r<rank>][.<copy>]`, as the engine opens
    /// it for IO and messages name it.
    pub file_path: String,
    /// The same file, typed, as the engine opens it.
    pub file: Target,
    /// The file tests' directory: the same name, as in bonnie++ (for messages).
    pub dir_path: String,
    /// The `-d` directory both are in, typed (the root of every metadata call, and what
    /// the file system syncs are asked of).
    pub root: Target,
    /// `Bonnie.<pid>[.r<rank>][.<copy>]`: the file's and the directory's name below `root`.
    pub name: RelPathBuf,
    pub rng: SplitMix64,
    /// Scratch space for building paths without allocating in timed loops.
    pub path: String,
    /// Scratch space for names below `root` (see [`Worker::at`]).
    pub rel: String,
    /// The test file exists and is ours.
    pub file_exists: bool,
    /// The file-test directory tree, while any of it exists.
    pub tree: Option<Tree>,
    /// Name lists a timed part is done with, freed after its clock stops (releasing a
    /// few MiB is not part of any test, as bonnie++ frees its names after its timers).
    pub retired: Vec<NameList>,
}

/// What exists of the file-test directory tree.
pub(crate) struct Tree {
    pub names: Names,
    /// The test directory, opened for name-relative calls once it exists.
    pub dir: Option<DirRef>,
    pub dir_made: bool,
    pub subdirs_made: u32,
    /// Some of `names` may exist as files or links.
    pub files_may_exist: bool,
}

impl Worker {
    pub fn new(
        io: Io,
        buf: Arena,
        base: &str,
        (root, name): (Target, RelPathBuf),
        seed: u64,
    ) -> Worker {
        Worker {
            io,
            buf,
            file_path: base.to_owned(),
            file: root
                .join(&name)
                .unwrap_or_else(|_| Target::Path(base.to_owned())),
            dir_path: base.to_owned(),
            rel: String::with_capacity(name.as_str().len() + 64),
            root,
            name,
            rng: SplitMix64::seeded(seed),
            path: String::with_capacity(base.len() + 64),
            file_exists: false,
            tree: None,
            retired: Vec::with_capacity(2),
        }
    }

    /// Removes whatever this worker created and still exists; names what it could not.
    pub fn cleanup(&mut self) -> std::result::Result<(), String> {
        let mut failed = Vec::new();
        if self.file_exists {
            match gone(self.at("", |m, p| m.unlink(p))) {
                Ok(()) => self.file_exists = false,
                Err(e) => failed.push(e.message),
            }
        }
        if let Some(mut tree) = self.tree.take()
            && let Err(e) = self.remove_tree(&mut tree)
        {
            failed.push(e.message);
            self.tree = Some(tree);
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed.join("; "))
        }
    }

    fn remove_tree(&mut self, tree: &mut Tree) -> std::result::Result<(), EngineError> {
        if let Some(dir) = tree.dir.take() {
            self.io.meta().close_dir(dir);
        }
        if tree.files_may_exist {
            self.remove_our_files(tree)?;
        }
        for d in (0..tree.subdirs_made).rev() {
            let sub = subdir(tree.names.num_dirs, d);
            gone(self.at(&sub, |m, p| m.rmdir(p)))?;
        }
        if tree.dir_made {
            gone(self.at("", |m, p| m.rmdir(p)))?;
        }
        Ok(())
    }
}

impl Worker {
    /// Lists each directory of the tree and unlinks the entries that carry one of our
    /// names: one call per file that still exists (an RPC each over NFS), never a file
    /// someone else put there.
    fn remove_our_files(&mut self, tree: &Tree) -> std::result::Result<(), EngineError> {
        let ours: HashSet<&str> = (0..tree.names.len()).map(|i| tree.names.get(i)).collect();
        let dirs = if tree.names.num_dirs > 1 {
            tree.subdirs_made
        } else {
            u32::from(tree.dir_made)
        };
        for d in 0..dirs {
            let sub = subdir(tree.names.num_dirs, d);
            let mut entries = NameList::default();
            match self.at(&sub, |m, p| m.read_dir_all(p, &mut entries)) {
                Err(e) if e.errno == Some(libc::ENOENT) => continue,
                other => other?,
            };
            for name in entries.iter() {
                let rel = if sub.is_empty() {
                    name.to_owned()
                } else {
                    format!("{sub}/{name}")
                };
                if ours.contains(rel.as_str()) {
                    gone(self.at(&rel, |m, p| m.unlink(p)))?;
                }
            }
        }
        Ok(())
    }
}

impl Worker {
    /// `op` on `rel` below the worker's name (the name itself when `rel` is empty), as a
    /// typed path under the `-d` root: built in a reused buffer and checked as a
    /// `RelPath`, so nothing is allocated per call and no URL text is joined.
    #[inline]
    pub fn at<T>(
        &mut self,
        rel: &str,
        op: impl FnOnce(&mut dyn MetaOps, MetaPath<'_>) -> std::result::Result<T, EngineError>,
    ) -> std::result::Result<T, EngineError> {
        join_into(&mut self.rel, self.name.as_str(), rel);
        let name = RelPath::new(&self.rel).map_err(|e| EngineError::new(ErrorKind::Refused, e))?;
        op(self.io.meta(), MetaPath::new(&self.root, name))
    }
}

/// sync_dir of the directory holding `name` of the tree below the worker's `base` name
/// (the test directory or one of its subdirectories), told by the name's components;
/// `scratch` is reused. Takes the worker's fields apart so a caller may hold its names.
#[inline]
pub(crate) fn sync_dir_of(
    io: &mut Io,
    (root, base): (&Target, &RelPath),
    scratch: &mut String,
    name: &str,
) -> std::result::Result<(), EngineError> {
    let rel = RelPath::new(name).map_err(|e| EngineError::new(ErrorKind::Refused, e))?;
    let (dir, _) = rel.split_last();
    join_into(scratch, base.as_str(), dir.map_or("", RelPath::as_str));
    let dir = RelPath::new(scratch).map_err(|e| EngineError::new(ErrorKind::Refused, e))?;
    io.meta().sync_dir(MetaPath::new(root, dir))
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.file_exists || self.tree.is_some() {
            let _ = self.cleanup();
        }
    }
}

/// `<dir>/<rel>` (or `dir` alone when `rel` is empty) into `out`, reusing its memory.
#[inline]
pub(crate) fn join_into(out: &mut String, dir: &str, rel: &str) {
    out.clear();
    out.push_str(dir);
    if !rel.is_empty() {
        out.push('/');
        out.push_str(rel);
    }
}

/// Treats "already gone" as done.
fn gone(r: std::result::Result<(), EngineError>) -> std::result::Result<(), EngineError> {
    match r {
        Err(e) if e.errno == Some(libc::ENOENT) => Ok(()),
        other => other,
    }
}

/// Fails with `Interrupted` once a stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) has
/// arrived; polled once per operation.
#[inline]
pub(crate) fn check_stop(test: &'static str) -> Result<()> {
    if stop::requested() {
        return Err(BonnieError::Interrupted { test });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_join_below_the_worker_name() {
        let mut out = String::new();
        join_into(&mut out, "Bonnie.1", "00000/f");
        assert_eq!(out, "Bonnie.1/00000/f");
        join_into(&mut out, "Bonnie.1", "");
        assert_eq!(out, "Bonnie.1");
    }
}
