//! `null`: fio's overhead baseline. Moves no data and makes no syscalls. At iodepth 1 every IO
//! completes inside `queue`; deeper, IOs wait in a fixed array until `commit` marks them done
//! and `reap` hands them all back, as fio's null engine does.

use storbench_core::{Caps, Completion, Engine, EngineError, FileId, FileSpec, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::options;

#[derive(Debug)]
pub struct Null {
    /// The catalogue name the job asked for (`null`, or fio's `cpp_null` build of it).
    name: &'static str,
    /// Queued IOs in order; the first `committed` are complete and wait for `reap`.
    pending: Vec<Completion>,
    committed: usize,
    depth: usize,
    /// Size each "file" pretends to have (from `filesize=` or `size=`).
    file_size: Option<u64>,
    open_files: u32,
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "null";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(named(job, NAME))
}

/// The null engine answering to `name` in job headers.
pub(crate) fn named(job: &JobSpec, name: &'static str) -> Box<dyn Engine> {
    let depth = job.iodepth.max(1) as usize;
    Box::new(Null {
        name,
        pending: Vec::with_capacity(depth),
        committed: 0,
        depth,
        file_size: options::file_size(job),
        open_files: 0,
    })
}

impl Engine for Null {
    fn name(&self) -> &'static str {
        self.name
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: self.depth == 1,
            has_slat: false,
            trim: true,
            meta: false,
            no_data: true,
        }
    }

    fn open(&mut self, _file: &FileSpec) -> Result<FileId, EngineError> {
        self.open_files += 1;
        Ok(self.open_files - 1)
    }

    fn size(&mut self, _file: FileId) -> Result<u64, EngineError> {
        self.file_size.ok_or_else(|| {
            EngineError::unsupported(
                "ioengine=null has no file to measure: give size= or filesize= in bytes",
            )
        })
    }

    #[inline(always)]
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        if self.depth == 1 {
            return Ok(Queued::Done(u64::from(io.len)));
        }
        if self.pending.len() == self.depth {
            return Ok(Queued::Busy);
        }
        self.pending.push(Completion {
            tag: io.tag,
            result: i64::from(io.len),
        });
        Ok(Queued::Pending)
    }

    #[inline(always)]
    fn commit(&mut self) -> Result<(), EngineError> {
        self.committed = self.pending.len();
        Ok(())
    }

    #[inline(always)]
    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        if self.committed < min {
            // Waiting for IOs never committed would hang; submit them, as io_uring's enter does.
            self.committed = self.pending.len();
        }
        out.extend_from_slice(&self.pending[..self.committed]);
        self.pending.drain(..self.committed);
        self.committed = 0;
        Ok(())
    }

    fn close(&mut self, _file: FileId) -> Result<(), EngineError> {
        Ok(())
    }
}
