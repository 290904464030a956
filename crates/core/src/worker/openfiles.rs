//! fio's `openfiles` below a clone's file count: only that many of its files are open at
//! once. A file is opened when it is its turn and closed once its region's bytes were
//! issued to it (fio's file "done"); the next file not yet done opens in its place. Round
//! robin and sequential service walk the open files in order, random service draws among
//! them (fio's `get_next_file_rr`/`_rand` skip a file they may not open). When every file
//! is done and the job goes on (time_based, loops), they start over from the first.
//! The verify after the writes opens each file as it reaches its blocks and keeps it
//! open, as fio's does. Nothing here runs unless the job limits its open files.

use super::Worker;
use crate::error::EngineError;
use storbench_job::FileService;

impl Worker<'_> {
    /// The open file that takes the next IO.
    #[inline(never)]
    pub(super) fn pick_open_file(&mut self) -> usize {
        let n = self.files.len();
        let usable = |f: &super::OpenFile| f.open && !f.done;
        match self.job.file_service {
            FileService::Random => {
                let count = self.files.iter().filter(|f| usable(f)).count().max(1);
                let k = self.rng.below(count as u64) as usize;
                self.files
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| usable(f))
                    .nth(k)
                    .map_or(0, |(i, _)| i)
            }
            service => {
                let from = self.next_file;
                let f = (0..n)
                    .map(|i| (from + i) % n)
                    .find(|&i| usable(&self.files[i]))
                    .unwrap_or(from);
                self.next_file = match service {
                    FileService::Sequential => f,
                    _ => (f + 1) % n,
                };
                f
            }
        }
    }

    /// Counts `len` bytes issued to `file`; a file whose region is issued is done and
    /// waits to be closed before the next IO.
    #[inline(never)]
    pub(super) fn count_open_file(&mut self, file: usize, len: u64) {
        let f = &mut self.files[file];
        f.issued += len;
        if f.issued >= f.pass {
            f.done = true;
            self.rotate = true;
        }
    }

    /// Closes the done files (their IOs completed first) and opens the next ones, up to
    /// `openfiles`; when all are done and the job goes on, all start over.
    #[cold]
    pub(super) fn rotate_files(&mut self) -> Result<(), EngineError> {
        self.rotate = false;
        let limit = self.job.openfiles.unwrap_or(u32::MAX) as usize;
        self.drain()?;
        for i in 0..self.files.len() {
            if self.files[i].open && self.files[i].done {
                self.close_file(i)?;
            }
        }
        if self.files.iter().all(|f| f.done) {
            if self.limit_reached() {
                return Ok(());
            }
            for f in &mut self.files {
                f.done = false;
                f.issued = 0;
                f.offsets.restart();
            }
        }
        let mut open = self.files.iter().filter(|f| f.open).count();
        for i in 0..self.files.len() {
            if open >= limit {
                break;
            }
            if !self.files[i].open && !self.files[i].done {
                self.files[i].id = self.engine.open(&self.plan.files[i].spec)?;
                self.files[i].open = true;
                open += 1;
            }
        }
        Ok(())
    }

    /// fio's verify opens the file of a logged block when it is closed and keeps it open
    /// to the end of the job, whatever `openfiles` says (`get_next_verify`), its cache
    /// dropped as every open of fio's drops it.
    #[cold]
    pub(super) fn open_for_verify(&mut self, i: usize) -> Result<(), EngineError> {
        self.files[i].id = self.engine.open(&self.plan.files[i].spec)?;
        self.files[i].open = true;
        if self.cache.invalidate {
            self.drop_cache(i);
        }
        Ok(())
    }

    /// Closes one file: synced first when the job syncs on close, as fio's close does.
    fn close_file(&mut self, i: usize) -> Result<(), EngineError> {
        if self.job.fsync_on_close && self.files[i].written {
            self.sync_all(crate::engine::IoKind::Fsync)?;
        }
        self.files[i].open = false;
        self.files[i].written = false;
        self.engine.close(self.files[i].id)
    }
}
