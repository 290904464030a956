//! The `nfs` engine's metadata operations. Directories opened with `open_dir` keep their
//! file handle in a slot, so bonnie's timed loops send one CREATE, LOOKUP or REMOVE per
//! file with no path to resolve and nothing allocated: the arguments are encoded into a
//! reused buffer and the replies decoded where they arrive.

use std::ops::ControlFlow;

use storbench_core::{
    Attr, DirCursor, DirRef, EngineError, EntryKind, ErrorKind, FileId, Listed, MetaOps, MetaPath,
    NameList, OpenOptions, RelPath, checked_name, each_listed_by_name, refuse_create_in_open,
    stat_named, unlink_named,
};
use storbench_job::relpath::{join_into, push_below};
use storbench_job::target::Target;
use storbench_nfs::{At, Client, Fh, NfsError, NfsStat, NfsUrl};

use super::{NfsEngine, no_target, to_engine};

/// How many roots of metadata calls an engine keeps resolved.
const KEPT_ROOTS: usize = 4;

impl NfsEngine {
    /// Calls `op` with the handle of the directory that holds `name` in `dir`, the name's
    /// last component, and where it is (for errors). The name is checked as a `RelPath`
    /// (a LOOKUP per component can then never leave `dir`); one with directories before
    /// its last component is resolved below `dir` through the client's directory cache,
    /// which allocates only on first use.
    fn in_dir<T>(
        &mut self,
        dir: &DirRef,
        name: &str,
        op: impl FnOnce(&mut Client, &Fh, &str, At<'_>) -> Result<T, NfsError>,
    ) -> Result<T, EngineError> {
        let checked = checked_name(dir, name)?;
        let client = self.client.as_mut().ok_or_else(no_target)?;
        let (fh, rel) = self.dirs.get(dir.slot, name)?;
        let (fh, last) = match checked.split_last() {
            (None, last) => (*fh, last),
            (Some(sub), last) => {
                join_into(rel, sub.as_str(), &mut self.sub_path);
                (client.dir(&self.sub_path).map_err(to_engine)?, last)
            }
        };
        op(client, &fh, last, At::In(rel, name)).map_err(to_engine)
    }

    /// The `*_listed` calls: `op` by name on each name of `dir`'s READDIRPLUS pages,
    /// listed into the list the engine keeps (so nothing is allocated).
    fn each_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
        op: fn(&mut Self, &DirRef, &str) -> Result<Listed, EngineError>,
    ) -> Result<usize, EngineError> {
        let mut batch = std::mem::take(&mut self.listing);
        let done = each_listed_by_name(self, dir, &mut batch, step, op);
        self.listing = batch;
        done
    }

    /// The path inside the export of `name` in `dir`, written into the last closed file's
    /// path (so opening files by name allocates nothing once warmed up).
    fn rel_in(&mut self, dir: &DirRef, name: &str) -> Result<String, EngineError> {
        let mut rel = std::mem::take(&mut self.spare_rel);
        self.rel_into(dir, name, &mut rel)?;
        Ok(rel)
    }

    /// The path inside the export of `name` in `dir` into `out`.
    fn rel_into(&self, dir: &DirRef, name: &str, out: &mut String) -> Result<(), EngineError> {
        let (_, dir_rel) = self.dirs.get(dir.slot, name)?;
        join_into(dir_rel, name, out);
        Ok(())
    }

    /// The handle of the file `existing` names, for `link`: looked up once while the same
    /// file comes again (so nothing is allocated per link after the first).
    fn link_source(&mut self, existing: MetaPath<'_>) -> Result<Fh, EngineError> {
        let mut probe = std::mem::take(&mut self.link_probe);
        let found = self.locate(existing, &mut probe).and_then(|()| {
            if let Some(fh) = self.link_source
                && self.link_source_path == probe
            {
                return Ok(fh);
            }
            let (fh, _) = self.client_mut()?.lookup(&probe).map_err(to_engine)?;
            self.keep_link_source(fh, &probe);
            Ok(fh)
        });
        self.link_probe = probe;
        found
    }

    /// [`link_source`](Self::link_source) of `existing` in `dir`, looked up by the
    /// directory's handle; kept under its path inside the export.
    fn link_source_in(&mut self, dir: &DirRef, existing: &str) -> Result<Fh, EngineError> {
        let mut probe = std::mem::take(&mut self.link_probe);
        let found = self.rel_into(dir, existing, &mut probe).and_then(|()| {
            if let Some(fh) = self.link_source
                && self.link_source_path == probe
            {
                return Ok(fh);
            }
            let (fh, _) =
                self.in_dir(dir, existing, |c, fh, last, at| c.lookup_in(fh, last, at))?;
            self.keep_link_source(fh, &probe);
            Ok(fh)
        });
        self.link_probe = probe;
        found
    }

    /// Keeps `fh` as the link source found at `path` inside the export.
    fn keep_link_source(&mut self, fh: Fh, path: &str) {
        self.link_source_path.clear();
        self.link_source_path.push_str(path);
        self.link_source = Some(fh);
    }

    /// Mounts on first use and returns the index of `url` among the kept roots: a root's
    /// path inside the export is resolved once and found by comparison afterwards, with
    /// nothing parsed or allocated (a few are kept, as bonnie lists its directory and a
    /// subdirectory in turns).
    fn enter_root(&mut self, url: &NfsUrl) -> Result<usize, EngineError> {
        if let Some(i) = self.roots.iter().position(|(have, _)| have == url) {
            return Ok(i);
        }
        let rel = self.target_typed(&url.to_string(), Some(url))?;
        if self.roots.len() == KEPT_ROOTS {
            self.roots.remove(0);
        }
        self.roots.push((url.clone(), rel));
        Ok(self.roots.len() - 1)
    }

    /// Writes into `out` the path inside the export that `path` names: its root's (an
    /// `nfs://` target, or a plain name below `nfs_url` or the mounted export's root,
    /// checked as a `RelPath`; an absolute one is a path on the server, made relative to
    /// that root when it lies inside it) and its name's components after it.
    fn locate(&mut self, path: MetaPath<'_>, out: &mut String) -> Result<(), EngineError> {
        let (root, plain) = match path.root {
            Target::Nfs(u) => (Some(self.enter_root(&u.url)?), None),
            Target::Path(name) => {
                // A relative name is refused before any call reaches the server; an
                // absolute one is measured against its root's path on the server.
                let refused = |e| EngineError::new(ErrorKind::Refused, format!("nfs: {e}"));
                let relative = match name.starts_with('/') {
                    false => Some(RelPath::new(name).map_err(refused)?),
                    true => None,
                };
                let root = self.enter_base(name)?;
                let rel = match relative {
                    Some(rel) => rel,
                    None => {
                        let root_path = match root {
                            Some(i) => self.roots[i].0.path.as_str(),
                            None => self.client()?.export(),
                        };
                        RelPath::below(root_path, name).map_err(refused)?
                    }
                };
                (root, Some(rel))
            }
            other => {
                return Err(EngineError::unsupported(format!(
                    "nfs: {other} is not an nfs:// target"
                )));
            }
        };
        out.clear();
        if let Some(root) = root {
            out.push_str(&self.roots[root].1);
        }
        for rel in plain.into_iter().chain(path.rel) {
            push_below(out, rel.as_str());
        }
        Ok(())
    }

    /// The root a plain name is below: `nfs_url` when given (its index among the kept
    /// roots), else the root of the export mounted (none: the name is the whole path).
    fn enter_base(&mut self, name: &str) -> Result<Option<usize>, EngineError> {
        if let Some(b) = &self.base
            && let Some(i) = self.roots.iter().position(|(have, _)| have == b)
        {
            return Ok(Some(i));
        }
        match (self.base.clone(), &self.client) {
            (Some(base), _) => self.enter_root(&base).map(Some),
            (None, Some(_)) => Ok(None),
            (None, None) => Err(EngineError::unsupported(format!(
                "nfs: {name} is not an nfs:// URL and no nfs_url= was given"
            ))),
        }
    }

    /// `call` on the path inside the export that `path` names, built in a reused buffer.
    fn with_path<T>(
        &mut self,
        path: MetaPath<'_>,
        call: impl FnOnce(&mut Self, &str) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let mut rel = std::mem::take(&mut self.meta_path);
        let r = self.locate(path, &mut rel).and_then(|()| call(self, &rel));
        self.meta_path = rel;
        r
    }
}

impl MetaOps for NfsEngine {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        let mode = self.modes.dir;
        self.with_path(path, |e, rel| {
            e.client_mut()?.mkdir(rel, mode).map_err(to_engine)?;
            Ok(())
        })
    }

    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.link_source = None;
        self.with_path(path, |e, rel| {
            e.dirs.forget(rel);
            e.client_mut()?.rmdir(rel).map_err(to_engine)
        })
    }

    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError> {
        let mode = self.modes.file;
        self.with_path(path, |e, rel| {
            let fh = e.client_mut()?.create(rel, mode).map_err(to_engine)?;
            e.add_file(fh, rel.to_owned(), open)
        })
    }

    /// LOOKUP, following symbolic links as stat(2) does.
    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError> {
        self.with_path(path, |e, rel| {
            let (_, a) = e.client_mut()?.lookup_follow(rel).map_err(to_engine)?;
            Ok(Attr {
                size: a.size,
                is_dir: a.is_dir(),
            })
        })
    }

    /// LOOKUP without following a link, and the type it returns.
    fn kind_nofollow(&mut self, path: MetaPath<'_>) -> Result<EntryKind, EngineError> {
        self.with_path(path, |e, rel| {
            let (_, a) = e.client_mut()?.lookup(rel).map_err(to_engine)?;
            Ok(match (a.is_file(), a.is_dir()) {
                (true, _) => EntryKind::File,
                (_, true) => EntryKind::Dir,
                _ => EntryKind::Other,
            })
        })
    }

    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.link_source = None;
        self.with_path(path, |e, rel| e.client_mut()?.remove(rel).map_err(to_engine))
    }

    /// LINK of the file `existing` names (looked up once, see `link_source`) as `link`.
    fn link(&mut self, existing: MetaPath<'_>, link: MetaPath<'_>) -> Result<(), EngineError> {
        let file = self.link_source(existing)?;
        self.with_path(link, |e, rel| {
            let made = e.client_mut()?.link_fh(&file, rel);
            if let Err(err) = &made
                && matches!(err.nfs_status(), Some(NfsStat::STALE | NfsStat::BADHANDLE))
            {
                e.link_source = None;
            }
            made.map(drop).map_err(to_engine)
        })
    }

    /// LINK by the directory's handle, of `existing` (looked up once) as `name`.
    fn link_in(&mut self, dir: &DirRef, existing: &str, name: &str) -> Result<(), EngineError> {
        let file = self.link_source_in(dir, existing)?;
        let made = self.in_dir(dir, name, |c, fh, last, at| {
            c.link_in(&file, fh, last, at).map(drop)
        });
        if made.is_err() {
            // The source may be gone or its handle stale: look it up again next time.
            self.link_source = None;
        }
        made
    }

    /// SYMLINK by the directory's handle: `name` holds `target` as given.
    fn symlink_in(&mut self, dir: &DirRef, target: &str, name: &str) -> Result<(), EngineError> {
        self.in_dir(dir, name, |c, fh, last, at| {
            c.symlink_in(fh, last, target, at).map(drop)
        })
    }

    /// SYMLINK: `link` holds `target` as given (relative to the link's directory).
    fn symlink(&mut self, target: &str, link: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(link, |e, rel| {
            e.client_mut()?
                .symlink(target, rel)
                .map(drop)
                .map_err(to_engine)
        })
    }

    /// One READDIRPLUS page per batch, as the kernel's NFS client lists a directory.
    fn read_dir(
        &mut self,
        path: MetaPath<'_>,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        if cursor.done {
            return Ok(());
        }
        self.with_path(path, |e, rel| {
            let client = e.client.as_mut().ok_or_else(no_target)?;
            cursor.done = client
                .readdir_next(rel, &mut cursor.offset, &mut cursor.verifier, |n| {
                    names.push(n)
                })
                .map_err(to_engine)?;
            Ok(())
        })
    }

    /// One READDIRPLUS page at a time into a list the engine keeps, then REMOVE of each
    /// name.
    fn unlink_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.each_listed(dir, step, unlink_named)
    }

    /// As `unlink_listed`, with LOOKUP of each name.
    fn stat_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.each_listed(dir, step, stat_named)
    }

    /// The directory's handle, kept in a slot until `close_dir` or its removal.
    fn open_dir(&mut self, path: MetaPath<'_>) -> Result<DirRef, EngineError> {
        let slot = self.with_path(path, |e, rel| {
            let fh = e.client_mut()?.dir(rel).map_err(to_engine)?;
            Ok(e.dirs.insert(fh, rel))
        })?;
        Ok(DirRef::of(slot, path))
    }

    fn close_dir(&mut self, dir: DirRef) {
        self.dirs.close(dir.slot);
    }

    /// CREATE by the directory's handle.
    fn create_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        let mode = self.modes.file;
        let fh = self.in_dir(dir, name, |c, fh, last, at| {
            c.create_fh_in(fh, last, mode, at)
        })?;
        let rel = self.rel_in(dir, name)?;
        self.add_file(fh, rel, open)
    }

    /// LOOKUP by the directory's handle, following a symbolic link as open(2) does.
    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        refuse_create_in_open(open, dir, name)?;
        let fh = self.in_dir(dir, name, |c, fh, last, at| {
            match c.lookup_follow_in(fh, last, at)? {
                (_, attr) if attr.is_dir() => Err(c.status_error("open", at, NfsStat::ISDIR)),
                (found, _) => Ok(found),
            }
        })?;
        let rel = self.rel_in(dir, name)?;
        self.add_file(fh, rel, open)
    }

    /// CREATE only: the reply's handle is not kept, as nothing is written.
    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        let mode = self.modes.file;
        self.in_dir(dir, name, |c, fh, last, at| {
            c.create_in(fh, last, mode, at).map(drop)
        })
    }

    /// LOOKUP by the directory's handle; a symbolic link is followed (READLINK, LOOKUP of
    /// its target) as stat(2) follows it.
    fn stat_in(&mut self, dir: &DirRef, name: &str) -> Result<Attr, EngineError> {
        let (_, a) = self.in_dir(dir, name, |c, fh, last, at| {
            c.lookup_follow_in(fh, last, at)
        })?;
        Ok(Attr {
            size: a.size,
            is_dir: a.is_dir(),
        })
    }

    fn unlink_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.link_source = None;
        self.in_dir(dir, name, |c, fh, last, at| c.remove_in(fh, last, at))
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        let f = self.file(file)?;
        let (fh, rel) = (f.fh, f.rel.clone());
        self.client_mut()?
            .set_size(&fh, size, &rel)
            .map_err(to_engine)
    }

    /// NFSv3 servers commit directory changes before they reply: nothing to flush.
    fn sync_dir(&mut self, _path: MetaPath<'_>) -> Result<(), EngineError> {
        Ok(())
    }
}
