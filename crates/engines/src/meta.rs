//! The engine behind fio's metadata engines (filecreate, filestat, filedelete): each IO is
//! one create, stat or unlink of the IO's file, timed by the runner like any IO.
//!
//! It runs over any engine that offers [`MetaOps`]: the local one (psync's file table) for
//! paths, or the engine serving a URL target's protocol when it has metadata operations (see
//! [`inner_engine`]). As in fio, the operation runs once per opened file, on its first IO; further
//! IOs on the same file complete at once without a call (set `bs` = `filesize` for one IO per
//! file). Like fio's disk-less engines these move no data (`Caps::no_data`): the runner must
//! not lay out files for them, and filestat/filedelete expect files an earlier filecreate job
//! made.

use storbench_core::{
    Caps, Engine, EngineError, EngineInfo, ErrorKind, FileId, FileSpec, IoUnit, MetaOps, MetaPath,
    OpenOptions, Queued,
};
use storbench_job::JobSpec;
use storbench_job::catalogue::{self, Protocol};
use storbench_job::target::Target;

use crate::options;

/// The metadata operation each IO performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaOp {
    Create,
    Stat,
    Delete,
}

impl MetaOp {
    pub fn engine_name(self) -> &'static str {
        match self {
            MetaOp::Create => crate::filecreate::NAME,
            MetaOp::Stat => crate::filestat::NAME,
            MetaOp::Delete => crate::filedelete::NAME,
        }
    }
}

/// One file as opened through this engine.
#[derive(Debug)]
struct MetaFile {
    /// The file as the plan typed it: a whole path or URL, given to the path calls.
    target: Target,
    open: OpenOptions,
    /// The operation already ran for this open.
    done: bool,
    /// What `Create` opened in the inner engine, closed with this file.
    created: Option<FileId>,
}

pub struct MetaEngine {
    op: MetaOp,
    inner: Box<dyn Engine>,
    files: Vec<Option<MetaFile>>,
    file_size: u64,
}

/// The protocol of the job's URL targets, if it names any.
fn target_protocol(job: &JobSpec) -> Option<&'static Protocol> {
    job.filenames
        .iter()
        .chain(&job.directories)
        .find_map(Target::protocol)
}

/// The engine whose [`MetaOps`] do the work: the one serving the protocol of the job's URL
/// targets (found through the catalogue, so a new protocol needs no change here), else
/// psync for local paths.
pub fn inner_engine(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let mut inner = match target_protocol(job) {
        Some(p) => {
            let def = catalogue::engine_for(p)
                .and_then(|e| crate::find(e.name))
                .ok_or_else(|| {
                    EngineError::unsupported(format!(
                        "ioengine={} on a {}:// target needs an engine for it, which this build lacks",
                        job.ioengine, p.scheme
                    ))
                })?;
            (def.create)(job)?
        }
        None => crate::psync::create(job)?,
    };
    if !inner.caps().meta || inner.meta().is_none() {
        return Err(EngineError::unsupported(format!(
            "ioengine={}: the {} engine offers no metadata operations",
            job.ioengine,
            inner.name()
        )));
    }
    Ok(inner)
}

pub fn create(job: &JobSpec, op: MetaOp) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(MetaEngine {
        op,
        inner: inner_engine(job)?,
        files: Vec::new(),
        file_size: options::file_size(job).unwrap_or(0),
    }))
}

impl MetaEngine {
    fn inner_meta(&mut self) -> Result<&mut dyn MetaOps, EngineError> {
        let name = self.inner.name();
        self.inner.meta().ok_or_else(|| {
            EngineError::unsupported(format!("the {name} engine offers no metadata operations"))
        })
    }

    fn file(&mut self, id: FileId) -> Result<&mut MetaFile, EngineError> {
        match self.files.get_mut(id as usize) {
            Some(Some(f)) => Ok(f),
            _ => Err(EngineError::new(
                ErrorKind::Os,
                format!("file id {id} is not open in this engine"),
            )),
        }
    }

    /// Runs the operation on `path`; for `Create`, returns the inner engine's file id.
    fn run(&mut self, target: &Target, open: &OpenOptions) -> Result<Option<FileId>, EngineError> {
        let op = self.op;
        let meta = self.inner_meta()?;
        let path = MetaPath::whole(target);
        match op {
            MetaOp::Create => meta.create(path, open).map(Some).map_err(|e| {
                if e.errno == Some(libc::EEXIST) {
                    EngineError {
                        message: format!(
                            "filecreate: {path} already exists; remove it first (storbench \
                             creates only new files)"
                        ),
                        ..e
                    }
                } else {
                    e
                }
            }),
            MetaOp::Stat => meta.stat(path).map(|_| None),
            MetaOp::Delete => meta.unlink(path).map(|()| None),
        }
    }
}

impl Engine for MetaEngine {
    fn name(&self) -> &'static str {
        self.op.engine_name()
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: true,
            has_slat: false,
            trim: false,
            meta: true,
            no_data: true,
        }
    }

    /// Only records the file; the operation is the first IO.
    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        let file = MetaFile {
            target: spec.target.clone(),
            open: spec.open.clone(),
            done: false,
            created: None,
        };
        if let Some(free) = self.files.iter().position(Option::is_none) {
            self.files[free] = Some(file);
            return Ok(free as FileId);
        }
        self.files.push(Some(file));
        Ok((self.files.len() - 1) as FileId)
    }

    /// At least the size the job gives its files, so a lay-out step finds nothing to write
    /// (no data moves); filestat fails here for a missing file, as its first IO would.
    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        if self.op == MetaOp::Create {
            return Ok(self.file_size);
        }
        let target = self.file(file)?.target.clone();
        match self.inner_meta()?.stat(MetaPath::whole(&target)) {
            Ok(attr) => Ok(attr.size.max(self.file_size)),
            Err(_) if self.op == MetaOp::Delete => Ok(self.file_size),
            Err(e) => Err(e),
        }
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let f = self.file(io.file)?;
        if f.done {
            return Ok(Queued::Done(u64::from(io.len)));
        }
        let placeholder = Target::Path(String::new());
        let (target, open) = (
            std::mem::replace(&mut f.target, placeholder),
            f.open.clone(),
        );
        let result = self.run(&target, &open);
        let f = self.file(io.file)?;
        f.target = target;
        f.done = true;
        f.created = result?;
        Ok(Queued::Done(u64::from(io.len)))
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        let f = self
            .files
            .get_mut(file as usize)
            .and_then(Option::take)
            .ok_or_else(|| {
                EngineError::new(ErrorKind::Os, format!("file id {file} is not open"))
            })?;
        match f.created {
            Some(inner_id) => self.inner.close(inner_id),
            None => Ok(()),
        }
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        self.inner.meta()
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.inner.server_addr()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.inner.client_addr()
    }

    fn info(&mut self) -> EngineInfo {
        let mut info = self.inner.info();
        info.details
            .push(("metadata_over".into(), self.inner.name().to_string()));
        info
    }
}
