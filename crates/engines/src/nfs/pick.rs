//! The `nfs` engine as the catalogue builds it: NFSv3 or NFSv4.1/4.2, chosen when the
//! job first reaches its server (`storbench_nfs::select::choose`: the URL's `version=`, or
//! v3 where the server offers it, else v4.1), then every call goes to that version's
//! engine.

use std::ops::ControlFlow;

use storbench_core::space::FsSpace;
use storbench_core::{
    Attr, Caps, Completion, DirCursor, DirRef, Engine, EngineError, EngineInfo, EntryKind,
    FileId, FileSpec, IoUnit, Listed, MetaOps, MetaPath, NameList, OpenOptions, Queued, Reserved,
};
use storbench_job::target::Target;
use storbench_nfs::{NfsUrl, NfsVersion, select};

use super::v4::Nfs4Engine;
use super::{NAME, NfsEngine, to_engine};

pub struct Nfs {
    v3: NfsEngine,
    v4: Option<Box<Nfs4Engine>>,
    /// Requests the job keeps in flight (the v4 session's slots).
    depth: u32,
    /// What the choice of version should say in the result, when the URL named none.
    chosen: Option<NfsVersion>,
}

impl Nfs {
    pub(super) fn new(v3: NfsEngine, depth: u32) -> Nfs {
        Nfs {
            v3,
            v4: None,
            depth,
            chosen: None,
        }
    }

    /// Chooses the version on first use: `url` is the typed target at hand (`None`: a
    /// plain name, below `nfs_url` if given).
    fn pick(&mut self, url: Option<&NfsUrl>) -> Result<(), EngineError> {
        if self.v4.is_some() || self.v3.client.is_some() {
            return Ok(());
        }
        let Some(url) = url.or(self.v3.base.as_ref()) else {
            return Ok(());
        };
        let v = select::choose(url).map_err(to_engine)?;
        if url.version.is_none() {
            self.chosen = Some(v);
        }
        if v == NfsVersion::V3 {
            return Ok(());
        }
        let url = select::with_version(url, v);
        let e = Nfs4Engine::connect(&url, self.v3.base.clone(), self.depth, self.v3.modes)?;
        self.v4 = Some(Box::new(e));
        Ok(())
    }

    /// The engine of the version chosen for `root`.
    fn engine_for(&mut self, root: &Target) -> Result<&mut dyn Engine, EngineError> {
        match root {
            Target::Nfs(t) => self.pick(Some(&t.url))?,
            _ => self.pick(None)?,
        }
        Ok(self.active())
    }

    /// The engine of the version chosen for `root`, for metadata calls.
    fn meta_for(&mut self, root: &Target) -> Result<&mut dyn MetaOps, EngineError> {
        self.engine_for(root)?;
        Ok(match self.v4.as_deref_mut() {
            Some(v4) => v4,
            None => &mut self.v3,
        })
    }

    /// The engine serving the job once a file is open (v3 before any).
    fn active(&mut self) -> &mut dyn Engine {
        match self.v4.as_deref_mut() {
            Some(v4) => v4,
            None => &mut self.v3,
        }
    }
}

impl Engine for Nfs {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        self.v3.caps()
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        self.engine_for(&spec.target)?.open(spec)
    }

    fn free_space(&mut self, spec: &FileSpec) -> Result<Option<FsSpace>, EngineError> {
        self.engine_for(&spec.target)?.free_space(spec)
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        self.active().size(file)
    }

    fn preallocate(
        &mut self,
        file: FileId,
        target: &Target,
        size: u64,
        keep_size: bool,
    ) -> Result<Reserved, EngineError> {
        match self.v4.as_deref_mut() {
            Some(v4) => v4.preallocate(file, target, size, keep_size),
            None => Ok(Reserved::Unsupported(
                "NFSv3 cannot reserve blocks (ALLOCATE is NFSv4.2's; ask for version=4.2)".into(),
            )),
        }
    }

    fn hole_bytes(&mut self, file: FileId, start: u64, end: u64) -> Option<u64> {
        self.active().hole_bytes(file, start, end)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        match self.v4.as_deref_mut() {
            Some(v4) => v4.queue(io),
            None => self.v3.queue(io),
        }
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        match self.v4.as_deref_mut() {
            Some(v4) => v4.commit(),
            None => self.v3.commit(),
        }
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        match self.v4.as_deref_mut() {
            Some(v4) => v4.reap(min, out),
            None => self.v3.reap(min, out),
        }
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        self.active().close(file)
    }

    fn idle(&mut self) -> Result<(), EngineError> {
        self.active().idle()
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(self)
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        match self.v4.as_deref() {
            Some(v4) => v4.server_addr(),
            None => self.v3.server_addr(),
        }
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        match self.v4.as_deref() {
            Some(v4) => v4.client_addr(),
            None => self.v3.client_addr(),
        }
    }

    fn info(&mut self) -> EngineInfo {
        let mut info = self.active().info();
        if let Some(v) = self.chosen {
            let version = match v {
                NfsVersion::V3 => "3 (version= names none; the server offers NFSv3)",
                _ => {
                    info.notes.push(
                        "nfs: NFSv4.1 used: the server offers no NFSv3 and version= names none"
                            .into(),
                    );
                    "4.1 (version= names none; the server offers no NFSv3)"
                }
            };
            info.details.push(("nfs version".into(), version.into()));
        }
        info
    }
}

impl MetaOps for Nfs {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.meta_for(path.root)?.mkdir(path)
    }

    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.meta_for(path.root)?.rmdir(path)
    }

    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError> {
        self.meta_for(path.root)?.create(path, open)
    }

    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError> {
        self.meta_for(path.root)?.stat(path)
    }

    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.meta_for(path.root)?.unlink(path)
    }

    fn kind_nofollow(&mut self, path: MetaPath<'_>) -> Result<EntryKind, EngineError> {
        self.meta_for(path.root)?.kind_nofollow(path)
    }

    fn read_dir(
        &mut self,
        path: MetaPath<'_>,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        self.meta_for(path.root)?.read_dir(path, cursor, names)
    }

    fn unlink_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.meta_for(&dir.root)?.unlink_listed(dir, step)
    }

    fn stat_listed(
        &mut self,
        dir: &DirRef,
        step: &mut dyn FnMut(Listed) -> ControlFlow<()>,
    ) -> Result<usize, EngineError> {
        self.meta_for(&dir.root)?.stat_listed(dir, step)
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        match self.v4.as_deref_mut() {
            Some(v4) => v4.set_size(file, size),
            None => self.v3.set_size(file, size),
        }
    }

    fn sync_dir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.meta_for(path.root)?.sync_dir(path)
    }

    fn sync_fs(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.meta_for(path.root)?.sync_fs(path)
    }

    fn open_dir(&mut self, path: MetaPath<'_>) -> Result<DirRef, EngineError> {
        self.meta_for(path.root)?.open_dir(path)
    }

    fn close_dir(&mut self, dir: DirRef) {
        match self.v4.as_deref_mut() {
            Some(v4) => v4.close_dir(dir),
            None => self.v3.close_dir(dir),
        }
    }

    fn create_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        self.meta_for(&dir.root)?.create_in(dir, name, open)
    }

    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        self.meta_for(&dir.root)?.open_in(dir, name, open)
    }

    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.meta_for(&dir.root)?.create_empty_in(dir, name)
    }

    fn create_written_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        data: &[u8],
        len: u64,
    ) -> Result<bool, EngineError> {
        self.meta_for(&dir.root)?
            .create_written_in(dir, name, data, len)
    }

    fn stat_in(&mut self, dir: &DirRef, name: &str) -> Result<Attr, EngineError> {
        self.meta_for(&dir.root)?.stat_in(dir, name)
    }

    fn unlink_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.meta_for(&dir.root)?.unlink_in(dir, name)
    }

    fn link(&mut self, existing: MetaPath<'_>, link: MetaPath<'_>) -> Result<(), EngineError> {
        self.meta_for(link.root)?.link(existing, link)
    }

    fn symlink(&mut self, target: &str, link: MetaPath<'_>) -> Result<(), EngineError> {
        self.meta_for(link.root)?.symlink(target, link)
    }

    fn link_in(&mut self, dir: &DirRef, existing: &str, name: &str) -> Result<(), EngineError> {
        self.meta_for(&dir.root)?.link_in(dir, existing, name)
    }

    fn symlink_in(&mut self, dir: &DirRef, target: &str, name: &str) -> Result<(), EngineError> {
        self.meta_for(&dir.root)?.symlink_in(dir, target, name)
    }
}
