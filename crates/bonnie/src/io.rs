//! One engine, driven one IO at a time as bonnie++ does, whether the engine completes in
//! `queue` (psync) or through `reap` (network engines).

use std::ptr::NonNull;

use storbench_core::{
    Completion, Engine, EngineError, EngineInfo, EngineSetup, ErrorKind, FileId, FileSpec, IoKind,
    IoUnit, MetaOps, OpenOptions, Queued,
};

use storbench_core::buffers::Arena;

pub(crate) struct Io {
    engine: Box<dyn Engine>,
    done: Vec<Completion>,
}

impl Io {
    /// Hands the engine its buffer and checks it can do the metadata tests.
    pub fn new(mut engine: Box<dyn Engine>, buf: &Arena) -> Result<Io, EngineError> {
        engine.setup(&EngineSetup {
            iodepth: 1,
            arena: buf.base(),
            slot_len: buf.slot_len(),
            slots: 1,
        })?;
        if engine.meta().is_none() {
            return Err(EngineError::unsupported(format!(
                "engine {} has no metadata operations; bonnie needs create, stat and unlink",
                engine.name()
            )));
        }
        Ok(Io {
            engine,
            done: Vec::with_capacity(4),
        })
    }

    pub fn engine_name(&self) -> &'static str {
        self.engine.name()
    }

    /// Protocol facts and events (reconnects) the engine reports.
    pub fn info(&mut self) -> EngineInfo {
        self.engine.info()
    }

    pub fn open(
        &mut self,
        target: &storbench_job::target::Target,
        open: OpenOptions,
    ) -> Result<FileId, EngineError> {
        self.engine.open(&FileSpec::new(target.clone(), open))
    }

    /// Lets the engine keep its server's state while this copy waits (`waiting.rs`).
    pub fn idle(&mut self) -> Result<(), EngineError> {
        self.engine.idle()
    }

    pub fn meta(&mut self) -> &mut dyn MetaOps {
        self.engine
            .meta()
            .expect("checked in Io::new that the engine has metadata operations")
    }

    /// One read or write of `len` bytes at `offset`; returns the bytes moved.
    #[inline]
    pub fn transfer(
        &mut self,
        file: FileId,
        kind: IoKind,
        offset: u64,
        buf: NonNull<u8>,
        len: u32,
        path: &str,
    ) -> Result<u64, EngineError> {
        let io = IoUnit {
            file,
            kind,
            offset,
            len,
            buf,
            buf_index: 0,
            tag: 0,
            ioprio: 0,
        };
        loop {
            match self.engine.queue(&io)? {
                Queued::Done(n) => return Ok(n),
                Queued::Pending => return self.wait(kind, path),
                // Nothing of ours is in flight, so Busy means the engine still finishes
                // something internal: collect it and offer the IO again.
                Queued::Busy => {
                    self.done.clear();
                    self.engine.reap(0, &mut self.done)?;
                }
                Queued::End => {
                    return Err(EngineError::protocol(format!(
                        "{path}: the peer ended the stream"
                    )));
                }
            }
        }
    }

    #[cold]
    fn wait(&mut self, kind: IoKind, path: &str) -> Result<u64, EngineError> {
        self.engine.commit()?;
        loop {
            self.done.clear();
            self.engine.reap(1, &mut self.done)?;
            if let Some(c) = self.done.iter().find(|c| c.tag == 0) {
                return match c.result {
                    r if r >= 0 => Ok(r as u64),
                    r => Err(EngineError::errno(op_name(kind), path, r as i32)),
                };
            }
        }
    }

    pub fn fsync(&mut self, file: FileId, path: &str) -> Result<(), EngineError> {
        let kind = IoKind::Fsync;
        self.transfer(file, kind, 0, NonNull::dangling(), 0, path)
            .map(drop)
    }

    /// fsync then close: bonnie++ stops a test's clock only after both.
    pub fn sync_close(&mut self, file: FileId, path: &str) -> Result<(), EngineError> {
        self.fsync(file, path)?;
        self.engine.close(file)
    }

    pub fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        self.engine.close(file)
    }
}

fn op_name(kind: IoKind) -> &'static str {
    match kind {
        IoKind::Read => "read",
        IoKind::Write => "write",
        IoKind::Trim => "trim",
        IoKind::Fsync | IoKind::Fdatasync => "fsync",
    }
}

/// An IO that moved fewer bytes than asked: the file is shorter than the suite wrote, or
/// the disk is full.
#[cold]
pub(crate) fn short(kind: IoKind, path: &str, offset: u64, want: u32, got: u64) -> EngineError {
    EngineError::new(
        ErrorKind::Os,
        format!(
            "{} {path} at offset {offset}: {got} of {want} bytes{}",
            op_name(kind),
            if kind == IoKind::Write {
                " (disk full?)"
            } else {
                " (file shorter than written)"
            }
        ),
    )
}
