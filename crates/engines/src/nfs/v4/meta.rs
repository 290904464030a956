//! The metadata operations of the `nfs` engine over NFSv4.1/4.2, by path below the
//! server's pseudo-root: each is one COMPOUND that starts at the client's kept handle of
//! the directory holding the name (PUTFH, then CREATE, OPEN, REMOVE, LINK or READDIR), so
//! a directory is walked once, not per call.

use storbench_core::{
    Attr, DirCursor, DirRef, EngineError, EntryKind, ErrorKind, FileId, MetaOps, MetaPath,
    NameList, OpenOptions, RelPath, checked_name, refuse_create_in_open,
};
use storbench_job::relpath::push_below;
use storbench_job::target::Target;
use storbench_nfs::v4::{Attrs4, Create, FileType4};

use super::{Nfs4Engine, to_engine};
use crate::nfs::refused;

/// Symbolic links `stat` follows before it gives up (as ELOOP would).
const MAX_LINKS: usize = 8;

impl Nfs4Engine {
    /// Writes into `out` the path below the pseudo-root that `path` names.
    fn locate(&self, path: MetaPath<'_>, out: &mut String) -> Result<(), EngineError> {
        out.clear();
        match (path.root, &self.base) {
            (Target::Nfs(u), _) => out.push_str(self.rel_of(&u.url)?),
            (Target::Path(name), Some(base)) => {
                let rel = RelPath::under(&base.path, name).map_err(refused)?;
                out.push_str(self.rel_of(base)?);
                push_below(out, rel.as_str());
            }
            (Target::Path(name), None) if name.starts_with('/') => {
                let rel = RelPath::new(name.trim_start_matches('/')).map_err(refused)?;
                out.push_str(rel.as_str());
            }
            (other, _) => {
                return Err(EngineError::unsupported(format!(
                    "nfs: {other} is not an nfs:// target and no nfs_url= was given"
                )));
            }
        }
        if let Some(rel) = path.rel {
            push_below(out, rel.as_str());
        }
        Ok(())
    }

    /// `call` on the path `path` names, built in a reused buffer.
    fn with_path<T>(
        &mut self,
        path: MetaPath<'_>,
        call: impl FnOnce(&mut Self, &str) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let mut rel = std::mem::take(&mut self.path);
        let r = self.locate(path, &mut rel).and_then(|()| call(self, &rel));
        self.path = rel;
        r
    }

    /// The attributes of `rel`, symbolic links followed.
    fn stat_follow(&mut self, rel: &str) -> Result<Attrs4, EngineError> {
        let mut at = rel.to_string();
        for _ in 0..MAX_LINKS {
            let (_, a) = self.client.lookup(&at).map_err(to_engine)?;
            if !a.is_symlink() {
                return Ok(a);
            }
            let target = self.client.readlink(&at).map_err(to_engine)?;
            at = resolve_link(&at, &target)?;
        }
        Err(EngineError {
            kind: ErrorKind::Protocol,
            errno: Some(libc::ELOOP),
            message: format!("nfs: {rel}: more than {MAX_LINKS} symbolic links"),
        })
    }
}

/// The path a link at `link` holding `target` names (relative to the link's directory;
/// an absolute target is a path from the server's pseudo-root).
fn resolve_link(link: &str, target: &str) -> Result<String, EngineError> {
    let mut parts: Vec<&str> = match target.starts_with('/') {
        true => Vec::new(),
        false => link.rsplit_once('/').map_or(Vec::new(), |(d, _)| d.split('/').collect()),
    };
    for p in target.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(refused(format!("the link {link} leads above the server's root")));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

fn attr(a: &Attrs4) -> Attr {
    Attr {
        size: a.size,
        is_dir: a.is_dir(),
    }
}

impl MetaOps for Nfs4Engine {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        let mode = self.modes.dir;
        self.with_path(path, |e, rel| {
            e.client.mkdir(rel, mode).map(drop).map_err(to_engine)
        })
    }

    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| e.client.remove(rel).map_err(to_engine))
    }

    /// OPEN with a GUARDED create.
    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError> {
        let mode = self.modes.file;
        self.with_path(path, |e, rel| {
            let access = storbench_nfs::v4::SHARE_ACCESS_BOTH;
            let label = e
                .client
                .open(rel, access, Some(Create::Guarded { mode }))
                .map_err(to_engine)?;
            Ok(e.add_file(label, open))
        })
    }

    /// LOOKUP, following symbolic links as stat(2) does.
    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError> {
        self.with_path(path, |e, rel| e.stat_follow(rel).map(|a| attr(&a)))
    }

    /// LOOKUP without following a link, and the type it returns.
    fn kind_nofollow(&mut self, path: MetaPath<'_>) -> Result<EntryKind, EngineError> {
        self.with_path(path, |e, rel| {
            let (_, a) = e.client.lookup(rel).map_err(to_engine)?;
            Ok(match a.ftype {
                FileType4::Directory => EntryKind::Dir,
                FileType4::Regular => EntryKind::File,
                _ => EntryKind::Other,
            })
        })
    }

    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| e.client.remove(rel).map_err(to_engine))
    }

    fn link(&mut self, existing: MetaPath<'_>, link: MetaPath<'_>) -> Result<(), EngineError> {
        let mut from = std::mem::take(&mut self.link_from);
        let r = self.locate(existing, &mut from).and_then(|()| {
            self.with_path(link, |e, rel| e.client.link(&from, rel).map_err(to_engine))
        });
        self.link_from = from;
        r
    }

    fn symlink(&mut self, target: &str, link: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(link, |e, rel| {
            e.client.symlink(rel, target).map_err(to_engine)
        })
    }

    /// The whole listing in one batch (READDIR until its end).
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
            for (name, _) in e.client.readdir(rel).map_err(to_engine)? {
                if name != "." && name != ".." {
                    names.push(&name);
                }
            }
            cursor.done = true;
            Ok(())
        })
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        let label = self.file(file)?.label;
        self.client.truncate(label, size).map_err(to_engine)
    }

    /// NFSv4 servers commit directory changes before they reply: nothing to flush.
    fn sync_dir(&mut self, _path: MetaPath<'_>) -> Result<(), EngineError> {
        Ok(())
    }

    /// OPEN of an existing file (a link followed by the server's OPEN is refused there).
    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        refuse_create_in_open(open, dir, name)?;
        let rel = dir.rel_of(checked_name(dir, name)?);
        let shown = dir.join(name);
        self.with_path(MetaPath::new(&dir.root, &rel), |e, rel| {
            e.open_rel(rel, open, &shown)
        })
    }

    /// OPEN with a GUARDED create, then CLOSE.
    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        let rel = dir.rel_of(checked_name(dir, name)?);
        let mode = self.modes.file;
        self.with_path(MetaPath::new(&dir.root, &rel), |e, rel| {
            let access = storbench_nfs::v4::SHARE_ACCESS_WRITE;
            let label = e
                .client
                .open(rel, access, Some(Create::Guarded { mode }))
                .map_err(to_engine)?;
            e.client.close(label).map_err(to_engine)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_link;

    #[test]
    fn a_link_resolves_beside_itself_or_from_the_root() {
        assert_eq!(resolve_link("export/d/l", "f").unwrap(), "export/d/f");
        assert_eq!(resolve_link("export/d/l", "../e/f").unwrap(), "export/e/f");
        assert_eq!(resolve_link("export/d/l", "/export/x").unwrap(), "export/x");
        assert!(resolve_link("export/l", "../../../x").is_err());
    }
}
