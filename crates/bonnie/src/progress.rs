//! How far a run is, for the live display: the suite's tests in the order they run, the
//! operations each makes, and one process-wide count of the operations done. Every timed
//! operation (a chunk of the IO tests, a seek, a file's create, stat or delete) ends in
//! `MaxLatency::record` or `lap`, which adds one with a relaxed atomic add: no lock, no
//! allocation. The display reads the count twice a second from a thread of its own.

use std::sync::atomic::{AtomicU64, Ordering};

use storbench_model::result::BonnieTestId;

use crate::config::Config;

static DONE: AtomicU64 = AtomicU64::new(0);

/// Operations done since the process started, over every test and copy.
pub fn ops_done() -> u64 {
    DONE.load(Ordering::Relaxed)
}

/// One timed operation ended.
#[inline]
pub(crate) fn tick() {
    DONE.fetch_add(1, Ordering::Relaxed);
}

/// What one test of the run will do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub id: BonnieTestId,
    /// Timed operations over all copies.
    pub ops: u64,
    /// Bytes each operation moves (IO tests); None for seeks and file tests.
    pub bytes_per_op: Option<u64>,
}

/// The tests `run_once` will run with `cfg`, in its order.
pub fn plan(cfg: &Config) -> Vec<Planned> {
    let copies = u64::from(cfg.concurrency);
    let mut out = Vec::new();
    let mut add = |id, ops: u64, bytes_per_op| {
        out.push(Planned {
            id,
            ops: ops * copies,
            bytes_per_op,
        })
    };
    if cfg.io_tests() {
        let chunk = cfg.chunk.max(1);
        let chunks = (cfg.file_mib << 20) / chunk;
        let char_chunks = (cfg.char_io_mib << 20) / chunk;
        let per_char = char_chunks > 0;
        if per_char {
            add(BonnieTestId::Putc, char_chunks, Some(chunk));
        }
        add(BonnieTestId::PutBlock, chunks, Some(chunk));
        // A rewrite reads and writes each chunk: one timed operation, twice the bytes.
        add(BonnieTestId::Rewrite, chunks, Some(2 * chunk));
        if per_char {
            add(BonnieTestId::Getc, char_chunks, Some(chunk));
        }
        add(BonnieTestId::GetBlock, chunks, Some(chunk));
        add(BonnieTestId::Seeks, cfg.seeks, None);
    }
    if cfg.file_tests() {
        let files = cfg.num_files * 1024;
        for id in [
            BonnieTestId::SeqCreate,
            BonnieTestId::SeqStat,
            BonnieTestId::SeqDel,
            BonnieTestId::RanCreate,
            BonnieTestId::RanStat,
            BonnieTestId::RanDel,
        ] {
            add(id, files, None);
        }
    }
    out
}
