//! The `nfs` engine's metadata operations. Directories opened with `open_dir` keep their
//! file handle in a slot, so bonnie's timed loops send one CREATE, LOOKUP or REMOVE per
//! file with no path to resolve and nothing allocated: the arguments are encoded into a
//! reused buffer and the replies decoded where they arrive.

use std::ops::ControlFlow;
use storbench_core::{
    Attr, DirCursor, DirRef, EngineError, FileId, Listed, MetaOps, NameList, OpenOptions,
};

use storbench_nfs::{At, Client, Fh, NfsError};

use super::{DIR_MODE, FILE_MODE, NfsEngine, no_target, to_engine};

impl NfsEngine {
    /// Calls `op` with the handle of the directory that holds `name` in `dir`, the name's
    /// last component, and where it is (for errors). A name holding `/` is resolved below
    /// `dir` through the client's directory cache, which allocates only on first use.
    fn in_dir<T>(
        &mut self,
        dir: &DirRef,
        name: &str,
        op: impl FnOnce(&mut Client, &Fh, &str, At<'_>) -> Result<T, NfsError>,
    ) -> Result<T, EngineError> {
        let client = self.client.as_mut().ok_or_else(no_target)?;
        let (fh, rel) = self.dirs.get(dir.slot, name)?;
        let (fh, last) = match name.rsplit_once('/') {
            None => (*fh, name),
            Some((sub, last)) => {
                self.sub_path.clear();
                if !rel.is_empty() {
                    self.sub_path.push_str(rel);
                    self.sub_path.push('/');
                }
                self.sub_path.push_str(sub);
                (client.dir(&self.sub_path).map_err(to_engine)?, last)
            }
        };
        op(client, &fh, last, At::In(rel, name)).map_err(to_engine)
    }

    /// The `*_listed` calls: each READDIRPLUS page of `dir` listed into the list the
    /// engine keeps (so nothing is allocated), then `op` on each name not starting with `.`.
    fn each_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
        op: impl FnMut(&mut Client, &Fh, &str, At<'_>) -> Result<Listed, NfsError>,
    ) -> Result<usize, EngineError> {
        let mut batch = std::mem::take(&mut self.listing);
        let done = self.each_listed_into(dir, &mut batch, step, op);
        self.listing = batch;
        done
    }

    fn each_listed_into(
        &mut self,
        dir: &DirRef,
        batch: &mut NameList,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
        mut op: impl FnMut(&mut Client, &Fh, &str, At<'_>) -> Result<Listed, NfsError>,
    ) -> Result<usize, EngineError> {
        let (mut cookie, mut verf, mut done) = (0, [0; 8], 0);
        loop {
            batch.clear();
            let client = self.client.as_mut().ok_or_else(no_target)?;
            let (_, rel) = self.dirs.get(dir.slot, &dir.path)?;
            let last = client
                .readdir_next(rel, &mut cookie, &mut verf, |n| batch.push(n))
                .map_err(to_engine)?;
            if step(Listed::Batch).is_break() {
                return Ok(done);
            }
            for name in batch.iter().filter(|n| !n.starts_with('.')) {
                let event = self.in_dir(dir, name, &mut op)?;
                done += 1;
                if step(event).is_break() {
                    return Ok(done);
                }
            }
            if last {
                return Ok(done);
            }
        }
    }

    /// The path inside the export that `path` names, remembered for the last path asked:
    /// a listing asks for the same directory once per page.
    fn listing_target(&mut self, path: &str) -> Result<(), EngineError> {
        if self.listed.0 != path || self.listed.0.is_empty() {
            let rel = self.target(path)?;
            self.listed = (path.to_owned(), rel);
        }
        Ok(())
    }
}

impl MetaOps for NfsEngine {
    fn mkdir(&mut self, path: &str) -> Result<(), EngineError> {
        let rel = self.target(path)?;
        self.client_mut()?
            .mkdir(&rel, DIR_MODE)
            .map_err(to_engine)?;
        Ok(())
    }

    fn rmdir(&mut self, path: &str) -> Result<(), EngineError> {
        let rel = self.target(path)?;
        self.dirs.forget(&rel);
        self.client_mut()?.rmdir(&rel).map_err(to_engine)
    }

    fn create(&mut self, path: &str, open: &OpenOptions) -> Result<FileId, EngineError> {
        let rel = self.target(path)?;
        let fh = self
            .client_mut()?
            .create(&rel, FILE_MODE)
            .map_err(to_engine)?;
        self.add_file(fh, rel, open)
    }

    fn stat(&mut self, path: &str) -> Result<Attr, EngineError> {
        let rel = self.target(path)?;
        let (_, a) = self.client_mut()?.lookup(&rel).map_err(to_engine)?;
        Ok(Attr {
            size: a.size,
            is_dir: a.is_dir(),
        })
    }

    fn unlink(&mut self, path: &str) -> Result<(), EngineError> {
        let rel = self.target(path)?;
        self.client_mut()?.remove(&rel).map_err(to_engine)
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
        let client = self.client.as_mut().ok_or_else(no_target)?;
        cursor.done = client
            .readdir_next(
                &self.listed.1,
                &mut cursor.offset,
                &mut cursor.verifier,
                |n| names.push(n),
            )
            .map_err(to_engine)?;
        Ok(())
    }

    /// READDIRPLUS pages of the directory's handle, each listed into a list the engine
    /// keeps (so nothing is allocated), then REMOVE of each name.
    fn unlink_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.each_listed(dir, step, |c, fh, last, at| {
            c.remove_in(fh, last, at).map(|()| Listed::Removed)
        })
    }

    /// As `unlink_listed`, with LOOKUP of each name.
    fn stat_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.each_listed(dir, step, |c, fh, last, at| {
            let (_, a) = c.lookup_in(fh, last, at)?;
            Ok(Listed::Stat(Attr {
                size: a.size,
                is_dir: a.is_dir(),
            }))
        })
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

    /// CREATE only: the reply's handle is not kept, as nothing is written.
    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.in_dir(dir, name, |c, fh, last, at| {
            c.create_in(fh, last, FILE_MODE, at).map(drop)
        })
    }

    fn stat_in(&mut self, dir: &DirRef, name: &str) -> Result<Attr, EngineError> {
        let (_, a) = self.in_dir(dir, name, |c, fh, last, at| c.lookup_in(fh, last, at))?;
        Ok(Attr {
            size: a.size,
            is_dir: a.is_dir(),
        })
    }

    fn unlink_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
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
