//! When a job drops a file's page cache after it started: fio 3.33's rule, followed exactly,
//! because a drop too many (or too few) changes what a buffered job measures.
//!
//! fio drops a file's pages (its region: `file_offset`, `io_size`) in two places:
//! - `loop_cache_invalidate` (io_u.c), for buffered IO only, when a pass wraps in place:
//!   a sequential run reaching the region's end in a `time_based` job with one file
//!   (`get_next_seq_offset`), or a full random map in a `time_based` job
//!   (`get_next_rand_block`);
//! - `td_io_open_file` (ioengines.c), direct or not, each time it opens a file again: after
//!   the file was done (any other end of a pass) or when a new round of the job begins.
//!
//! A skip past the end (`rw=read:N`) wraps silently when the region ends the file, and a
//! random job's sequential run that hits the end of the file jumps to a random block; both
//! keep the cache. The job's first drop, when its files are opened, is the runner's.

use super::Worker;
use crate::offsets::PassEnd;

/// What fio does when a pass over a file ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OnPassEnd {
    /// Go on at the start and keep the cache (a skip past the end of the file).
    Wrap,
    /// Go on at the start and drop the cache of buffered IO (`loop_cache_invalidate`).
    DropInPlace,
    /// The file is done: fio drops its cache when it opens it again, direct IO too.
    Reopen,
    /// A random job's sequential run hit the end of the file: draw a random block instead.
    Jump,
}

/// The job's side of the rule, fixed at set-up so the IO path only matches on it.
#[derive(Clone, Copy, Debug)]
pub(super) struct CacheRule {
    /// `time_based` with one file: a sequential run wraps in place.
    seq_in_place: bool,
    /// `time_based`: a full random map starts over in place.
    map_in_place: bool,
    random_job: bool,
    /// `invalidate=1`: what reopening a file drops.
    invalidate: bool,
    /// `invalidate=1` and buffered: what `loop_cache_invalidate` drops.
    in_place_drops: bool,
}

impl CacheRule {
    pub(super) fn new(job: &storbench_job::JobSpec, files: usize) -> Self {
        CacheRule {
            seq_in_place: job.time_based && files == 1,
            map_in_place: job.time_based,
            random_job: job.rw.kind.is_random(),
            invalidate: job.invalidate,
            in_place_drops: job.invalidate && !job.direct,
        }
    }

    /// fio's action for a pass over a file that ended as `end`; `ends_file`: the region
    /// runs to the end of the file (fio checks the file's size, not the region's).
    pub(super) fn on(&self, end: PassEnd, ends_file: bool) -> OnPassEnd {
        match end {
            PassEnd::None => OnPassEnd::Wrap,
            PassEnd::End if self.seq_in_place => OnPassEnd::DropInPlace,
            PassEnd::End if self.random_job && ends_file => OnPassEnd::Jump,
            PassEnd::Skip if ends_file => OnPassEnd::Wrap,
            PassEnd::MapFull if self.map_in_place => OnPassEnd::DropInPlace,
            _ => OnPassEnd::Reopen,
        }
    }

    /// Whether the action drops the file's cache.
    pub(super) fn drops(&self, action: OnPassEnd) -> bool {
        match action {
            OnPassEnd::DropInPlace => self.in_place_drops,
            OnPassEnd::Reopen => self.invalidate,
            OnPassEnd::Wrap | OnPassEnd::Jump => false,
        }
    }
}

/// Bytes per round of a size-bound job on a queued engine: fio's `do_io` stops after
/// `size` bytes were queued (`bytes_issued` grows for queued IOs only), and the next round
/// reopens the files. Synchronous engines, and time-based jobs, make one round.
pub(super) fn round_bytes(io_limit: Option<u64>, loops: u32, synchronous: bool) -> u64 {
    match io_limit {
        Some(limit) if !synchronous => (limit / u64::from(loops.max(1))).max(1),
        _ => u64::MAX,
    }
}

impl Worker<'_> {
    /// A pass over `file` ended as `end` while choosing `offset` for an IO of `len` bytes:
    /// applies fio's rule and returns the offset to use.
    #[cold]
    pub(super) fn pass_ended(&mut self, file: usize, end: PassEnd, len: u64, offset: u64) -> u64 {
        let action = self.cache.on(end, self.files[file].ends_file);
        if self.cache.drops(action) {
            self.drop_cache(file);
        }
        if action != OnPassEnd::Jump {
            return offset;
        }
        let offsets = &mut self.files[file].offsets;
        let jump = offsets.next_random(&mut self.rng, len);
        offsets.continue_from(jump);
        let offset = offsets.next_sequential(len);
        // The jump can only fill the random map, whose action is never another jump.
        match offsets.take_pass_end() {
            PassEnd::None => offset,
            end => self.pass_ended(file, end, len, offset),
        }
    }

    /// A new round of a size-bound job on a queued engine: fio closes and reopens every
    /// file, which starts it over at its region's start and drops its cache again.
    #[cold]
    pub(super) fn new_round(&mut self) {
        self.round_end = self.round_end.saturating_add(self.round_bytes);
        for file in 0..self.files.len() {
            self.files[file].offsets.restart();
            if self.cache.invalidate {
                self.drop_cache(file);
            }
        }
    }

    /// Drops the cached pages of this worker's region of `file` only: fio's range, and
    /// the whole file would also drop readahead past the region and other clones' regions.
    fn drop_cache(&mut self, file: usize) {
        let f = &self.files[file];
        let (start, len) = (f.offsets.start(), f.offsets.len());
        // Best effort, like fio's: a failed drop only makes the next pass faster.
        let _ = self.engine.invalidate_range(f.id, start, len);
    }
}

#[cfg(test)]
mod tests {
    use storbench_job::{JobSpec, RwKind};

    use super::*;
    use PassEnd::{End, MapFull, Skip};

    fn rule(kind: RwKind, time_based: bool, files: usize) -> CacheRule {
        let mut job = JobSpec::new("t");
        job.rw.kind = kind;
        job.time_based = time_based;
        CacheRule::new(&job, files)
    }

    /// The table of the module's doc, row by row, for a region that ends its file.
    #[test]
    fn the_rule_follows_fio() {
        use OnPassEnd::*;
        let cases = [
            // (kind, time_based, files, end, action)
            (RwKind::Read, true, 1, End, DropInPlace),
            (RwKind::Read, true, 2, End, Reopen),
            (RwKind::Read, false, 1, End, Reopen),
            (RwKind::Read, true, 1, Skip, Wrap),
            (RwKind::Read, false, 2, Skip, Wrap),
            (RwKind::RandRead, true, 1, End, DropInPlace),
            (RwKind::RandRead, true, 2, End, Jump),
            (RwKind::RandRead, false, 1, End, Jump),
            (RwKind::RandRead, true, 2, MapFull, DropInPlace),
            (RwKind::RandRead, false, 1, MapFull, Reopen),
        ];
        for (kind, time_based, files, end, action) in cases {
            let got = rule(kind, time_based, files).on(end, true);
            assert_eq!(
                got, action,
                "{kind:?} time_based={time_based} files={files} {end:?}"
            );
        }
    }

    /// When the region stops short of the end of the file, fio's offset runs past the
    /// region instead of wrapping or jumping, and the file is done.
    #[test]
    fn a_region_short_of_the_end_of_the_file_ends_the_file() {
        assert_eq!(
            rule(RwKind::Read, true, 1).on(Skip, false),
            OnPassEnd::Reopen
        );
        assert_eq!(
            rule(RwKind::RandRead, true, 2).on(End, false),
            OnPassEnd::Reopen
        );
        // In place is in place: fio checks the region's end there.
        assert_eq!(
            rule(RwKind::Read, true, 1).on(End, false),
            OnPassEnd::DropInPlace
        );
    }

    #[test]
    fn reopening_drops_direct_io_too_but_wrapping_in_place_does_not() {
        let mut job = JobSpec::new("t");
        job.direct = true;
        let r = CacheRule::new(&job, 1);
        assert!(r.drops(OnPassEnd::Reopen));
        assert!(!r.drops(OnPassEnd::DropInPlace));
        job.invalidate = false;
        let r = CacheRule::new(&job, 1);
        assert!(!r.drops(OnPassEnd::Reopen));
    }

    #[test]
    fn only_queued_engines_end_rounds_by_bytes() {
        assert_eq!(round_bytes(Some(300), 3, false), 100);
        assert_eq!(round_bytes(Some(300), 3, true), u64::MAX);
        assert_eq!(round_bytes(None, 1, false), u64::MAX);
    }
}
