//! The smb engine's metadata calls: paths inside the share built from a `MetaPath` or a
//! directory opened with `open_dir` and a checked name, each call made through the
//! session (which recovers a lost connection and makes the call once more).

use storbench_core::{
    Attr, DirCursor, DirRef, EngineError, EntryKind, ErrorKind, FileId, MetaOps, MetaPath,
    NameList, OpenOptions, RelPath, checked_name, refuse_create_in_open,
};
use storbench_job::relpath::{join_into, push_below};
use storbench_job::target::Target;
use storbench_smb::SmbError;

use super::{SmbEngine, own_names, same_share, to_engine};

impl SmbEngine {
    /// The path inside the share of `name` in `dir`, written into `name_rel`: the
    /// directory's path as `open_dir` resolved it, `/`, and the name checked as a
    /// `RelPath` (so it cannot climb out of the directory).
    fn rel_in(&mut self, dir: &DirRef, name: &str) -> Result<String, EngineError> {
        let name = checked_name(dir, name)?;
        let (_, dir_rel) = self.dirs.get(dir.slot, name.as_str())?;
        let mut rel = std::mem::take(&mut self.name_rel);
        join_into(dir_rel, name.as_str(), &mut rel);
        Ok(rel)
    }

    /// `call` on the path inside the share of `name` in `dir`; the path's memory is kept
    /// for the next call.
    fn with_rel_in<T>(
        &mut self,
        dir: &DirRef,
        name: &str,
        call: impl FnOnce(&mut Self, &str) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let rel = self.rel_in(dir, name)?;
        let r = call(self, &rel);
        self.name_rel = rel;
        r
    }
}

impl SmbEngine {
    /// Writes into `out` the path inside the share that `path` names: its root's (an
    /// `smb://` target on the share logged in to, or a plain name below the share's root,
    /// checked as a `RelPath`, an absolute one from the share's root as smbclient takes
    /// it) and its name's components after it, joined with `/`, which
    /// the client sends as `\\`. The root's URL was parsed where it was read; logging in
    /// happens on first use only.
    fn locate(&mut self, path: MetaPath<'_>, out: &mut String) -> Result<(), EngineError> {
        out.clear();
        match path.root {
            Target::Smb(u) => {
                let on_share = self.session.is_some()
                    && matches!(&self.url, Some(have) if same_share(have, &u.url));
                if !on_share {
                    self.target_typed(path.root)?;
                }
                out.push_str(&u.url.path);
            }
            Target::Path(name) => {
                let name = RelPath::under("", name)
                    .map_err(|e| EngineError::new(ErrorKind::Refused, format!("smb: {e}")))?;
                if self.session.is_none() {
                    return Err(EngineError::unsupported(format!(
                        "smb: {name} is not an smb:// URL"
                    )));
                }
                out.push_str(name.as_str());
            }
            other => {
                return Err(EngineError::unsupported(format!(
                    "smb: {other} is not an smb:// target"
                )));
            }
        }
        if let Some(rel) = path.rel {
            push_below(out, rel.as_str());
        }
        Ok(())
    }

    /// `call` on the path inside the share that `path` names, built in a reused buffer.
    fn with_path<T>(
        &mut self,
        path: MetaPath<'_>,
        call: impl FnOnce(&mut Self, &str) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let mut rel = std::mem::take(&mut self.name_rel);
        let r = self.locate(path, &mut rel).and_then(|()| call(self, &rel));
        self.name_rel = rel;
        r
    }
}

/// An SMB name collision as storbench's refusal to take over a file it did not create.
fn exists_error(dir: &DirRef, name: &str, e: SmbError) -> EngineError {
    match e.status() {
        Some(s) if s == storbench_smb::NtStatus::OBJECT_NAME_COLLISION => EngineError {
            kind: ErrorKind::Refused,
            errno: Some(libc::EEXIST),
            message: format!(
                "smb: {} already exists; storbench creates only new files",
                dir.join(name)
            ),
        },
        _ => to_engine(e),
    }
}

impl MetaOps for SmbEngine {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| e.retry(|c| c.mkdir(rel)))
    }

    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| {
            e.dirs.forget(rel);
            e.retry(|c| c.rmdir(rel))
        })
    }

    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError> {
        let o = OpenOptions {
            create: true,
            exclusive: true,
            ..open.clone()
        };
        self.with_path(path, |e, rel| e.open_rel(rel, &path, &o, false))
    }

    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError> {
        let i = self.with_path(path, |e, rel| e.retry(|c| c.stat(rel)))?;
        Ok(Attr {
            size: i.size,
            is_dir: i.is_dir(),
        })
    }

    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| {
            e.retry(|c| c.unlink(rel))?;
            // A name removed is no longer this process's file: whatever appears there next
            // (between two rounds of a repeated run) is created anew or refused.
            let mut own = own_names();
            if !own.is_empty() {
                own.remove(&e.own_key(rel));
            }
            Ok(())
        })
    }

    /// The attributes of an open with OPEN_REPARSE_POINT (as every open of the client): a
    /// link the server shows as a reparse point is not followed. Samba follows links for
    /// its clients and shows what a link inside the share leads to.
    fn kind_nofollow(&mut self, path: MetaPath<'_>) -> Result<EntryKind, EngineError> {
        let i = self.with_path(path, |e, rel| e.retry(|c| c.stat(rel)))?;
        let reparse = i.attributes & storbench_smb::proto::FILE_ATTRIBUTE_REPARSE_POINT != 0;
        Ok(match (reparse, i.is_dir()) {
            (true, _) => EntryKind::Other,
            (_, true) => EntryKind::Dir,
            _ => EntryKind::File,
        })
    }

    fn read_dir(
        &mut self,
        path: MetaPath<'_>,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        if cursor.offset == 0 {
            let mut rel = String::new();
            self.locate(path, &mut rel)?;
            self.session()?.start_listing(rel).map_err(to_engine)?;
        }
        let mut entries = std::mem::take(&mut self.entries);
        let batch = self.session()?.list_batch(&mut entries);
        let more = match batch {
            Ok(Some(b)) => {
                for e in &entries[b.new_from..] {
                    if e.name != "." && e.name != ".." {
                        names.push(&e.name);
                    }
                }
                Ok(b.more)
            }
            Ok(None) => Err(EngineError::new(
                ErrorKind::Os,
                format!("smb: listing of {path} was not started"),
            )),
            Err(e) => Err(to_engine(e)),
        };
        self.entries = entries;
        cursor.offset += 1;
        match more {
            Ok(true) => Ok(()),
            Ok(false) | Err(_) => {
                cursor.done = true;
                let c = self.session()?.end_listing().map_err(to_engine);
                more?;
                c
            }
        }
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        self.retry_file(file, |c, id| c.set_size(id, size))
    }

    fn sync_dir(&mut self, _path: MetaPath<'_>) -> Result<(), EngineError> {
        Ok(())
    }

    /// The directory's path inside the share, resolved once and kept in a slot until
    /// `close_dir` or its removal.
    fn open_dir(&mut self, path: MetaPath<'_>) -> Result<DirRef, EngineError> {
        let slot = self.with_path(path, |e, rel| Ok(e.dirs.insert((), rel)))?;
        Ok(DirRef::of(slot, path))
    }

    fn close_dir(&mut self, dir: DirRef) {
        self.dirs.close(dir.slot);
    }

    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        refuse_create_in_open(open, dir, name)?;
        self.with_rel_in(dir, name, |e, rel| {
            e.open_rel(rel, &dir.join(name), open, false)
        })
    }

    fn create_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        let o = OpenOptions {
            create: true,
            exclusive: true,
            ..open.clone()
        };
        self.with_rel_in(dir, name, |e, rel| {
            e.open_rel(rel, &dir.join(name), &o, false)
        })
    }

    /// CREATE and CLOSE in one round trip.
    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.with_rel_in(dir, name, |e, rel| {
            e.session()?
                .call(|c| c.create_empty(rel))
                .map_err(|err| exists_error(dir, name, err))
        })
    }

    fn stat_in(&mut self, dir: &DirRef, name: &str) -> Result<Attr, EngineError> {
        self.with_rel_in(dir, name, |e, rel| {
            let i = e.retry(|c| c.stat(rel))?;
            Ok(Attr {
                size: i.size,
                is_dir: i.is_dir(),
            })
        })
    }

    fn unlink_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.with_rel_in(dir, name, |e, rel| e.retry(|c| c.unlink(rel)))
    }
}
