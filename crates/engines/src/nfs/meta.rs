//! The `nfs` engine's metadata operations. Directories opened with `open_dir` keep their
//! file handle in a slot, so bonnie's timed loops send one CREATE, LOOKUP or REMOVE per
//! file with no path to resolve and nothing allocated: the arguments are encoded into a
//! reused buffer and the replies decoded where they arrive.

use std::ops::ControlFlow;

use storbench_core::{
    Attr, DirCursor, DirRef, EngineError, FileId, Listed, MetaOps, NameList, OpenOptions,
    checked_name, each_listed_by_name, refuse_create_in_open, stat_named, unlink_named,
};
use storbench_nfs::{At, Client, Fh, NfsError, NfsStat};

use super::{NfsEngine, no_target, to_engine};

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
                self.sub_path.clear();
                if !rel.is_empty() {
                    self.sub_path.push_str(rel);
                    self.sub_path.push('/');
                }
                self.sub_path.push_str(sub.as_str());
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
        let (_, dir_rel) = self.dirs.get(dir.slot, name)?;
        let mut rel = std::mem::take(&mut self.spare_rel);
        rel.clear();
        if !dir_rel.is_empty() {
            rel.push_str(dir_rel);
            rel.push('/');
        }
        rel.push_str(name);
        Ok(rel)
    }

    /// The handle of the file `existing` names, for `link`: looked up once while the same
    /// path comes again (so nothing is allocated per link after the first).
    fn link_source(&mut self, existing: &str) -> Result<Fh, EngineError> {
        if let Some(fh) = self.link_source
            && self.link_source_path == existing
        {
            return Ok(fh);
        }
        let rel = self.target(existing)?;
        let (fh, _) = self.client_mut()?.lookup(&rel).map_err(to_engine)?;
        self.keep_link_source(fh, |path| path.push_str(existing));
        Ok(fh)
    }

    /// [`link_source`](Self::link_source) of `existing` in `dir`, looked up by the
    /// directory's handle; kept under the path `dir.join(existing)` names, compared
    /// without building it.
    fn link_source_in(&mut self, dir: &DirRef, existing: &str) -> Result<Fh, EngineError> {
        if let Some(fh) = self.link_source
            && names_joined(&self.link_source_path, &dir.path, existing)
        {
            return Ok(fh);
        }
        let (fh, _) = self.in_dir(dir, existing, |c, fh, last, at| c.lookup_in(fh, last, at))?;
        self.keep_link_source(fh, |path| {
            path.push_str(dir.path.trim_end_matches('/'));
            path.push('/');
            path.push_str(existing);
        });
        Ok(fh)
    }

    /// Keeps `fh` as the link source, its path written by `path` into the kept buffer.
    fn keep_link_source(&mut self, fh: Fh, path: impl FnOnce(&mut String)) {
        self.link_source_path.clear();
        path(&mut self.link_source_path);
        self.link_source = Some(fh);
    }

    /// The path inside the export that `path` names, resolved once per path: a listing
    /// asks for its directory once per page.
    fn listing_target(&mut self, path: &str) -> Result<(), EngineError> {
        if !self.listed.contains_key(path) {
            let rel = self.target(path)?;
            self.listed.insert(path.to_owned(), rel);
        }
        Ok(())
    }
}

/// Whether `path` is `name` joined to `dir` as [`DirRef::join`] joins them.
fn names_joined(path: &str, dir: &str, name: &str) -> bool {
    path.strip_prefix(dir.trim_end_matches('/'))
        .and_then(|rest| rest.strip_prefix('/'))
        == Some(name)
}

impl MetaOps for NfsEngine {
    fn mkdir(&mut self, path: &str) -> Result<(), EngineError> {
        let (rel, mode) = (self.target(path)?, self.modes.dir);
        self.client_mut()?.mkdir(&rel, mode).map_err(to_engine)?;
        Ok(())
    }

    fn rmdir(&mut self, path: &str) -> Result<(), EngineError> {
        self.link_source = None;
        let rel = self.target(path)?;
        self.dirs.forget(&rel);
        self.client_mut()?.rmdir(&rel).map_err(to_engine)
    }

    fn create(&mut self, path: &str, open: &OpenOptions) -> Result<FileId, EngineError> {
        let (rel, mode) = (self.target(path)?, self.modes.file);
        let fh = self.client_mut()?.create(&rel, mode).map_err(to_engine)?;
        self.add_file(fh, rel, open)
    }

    /// LOOKUP, following symbolic links as stat(2) does.
    fn stat(&mut self, path: &str) -> Result<Attr, EngineError> {
        let rel = self.target(path)?;
        let (_, a) = self.client_mut()?.lookup_follow(&rel).map_err(to_engine)?;
        Ok(Attr {
            size: a.size,
            is_dir: a.is_dir(),
        })
    }

    fn unlink(&mut self, path: &str) -> Result<(), EngineError> {
        self.link_source = None;
        let rel = self.target(path)?;
        self.client_mut()?.remove(&rel).map_err(to_engine)
    }

    /// LINK of the file `existing` names (looked up once, see `link_source`) as `link`.
    fn link(&mut self, existing: &str, link: &str) -> Result<(), EngineError> {
        let file = self.link_source(existing)?;
        let rel = self.target(link)?;
        let made = self.client_mut()?.link_fh(&file, &rel);
        if let Err(e) = &made
            && matches!(e.nfs_status(), Some(NfsStat::STALE | NfsStat::BADHANDLE))
        {
            self.link_source = None;
        }
        made.map(drop).map_err(to_engine)
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
    fn symlink(&mut self, target: &str, link: &str) -> Result<(), EngineError> {
        let rel = self.target(link)?;
        self.client_mut()?
            .symlink(target, &rel)
            .map(drop)
            .map_err(to_engine)
    }

    /// One READDIRPLUS page per batch, as the kernel's NFS client lists a directory.
    fn read_dir(
        &mut self,
        path: &str,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        if cursor.done {
            return Ok(());
        }
        self.listing_target(path)?;
        let (client, rel) = (
            self.client.as_mut().ok_or_else(no_target)?,
            &self.listed[path],
        );
        cursor.done = client
            .readdir_next(rel, &mut cursor.offset, &mut cursor.verifier, |n| {
                names.push(n)
            })
            .map_err(to_engine)?;
        Ok(())
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
    fn open_dir(&mut self, path: &str) -> Result<DirRef, EngineError> {
        let rel = self.target(path)?;
        let fh = self.client_mut()?.dir(&rel).map_err(to_engine)?;
        Ok(DirRef {
            slot: self.dirs.insert(fh, &rel),
            path: path.to_owned(),
        })
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
    fn sync_dir(&mut self, _path: &str) -> Result<(), EngineError> {
        Ok(())
    }
}
