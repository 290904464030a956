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
//!   Opening resets the file (`fio_file_reset`): its position and its random map.
//!
//! How a pass ends ([`PassEnd`]) and what fio does then ([`CacheRule::on`]):
//!
//! | pass end | job | fio | [`OnPassEnd`] |
//! |---|---|---|---|
//! | `End` (sequential) | `time_based`, one file | wraps in place | `DropInPlace` |
//! | `End`, `Skip` | the skip wraps (see below) | wraps silently | `Wrap` |
//! | `End` | random job, region ends the file | jumps to a random block | `Jump` |
//! | `End`, `Skip` | other | the file is done | `Reopen` |
//! | `Short` | any | the file is done | `Reopen` |
//! | `MapFull` | `time_based` | resets the map in place | `DropInPlace` |
//! | `MapFull` | not `time_based` | the file is done | `Reopen` |
//!
//! A skip (`rw=read:N`) wraps silently only by an accident of fio's arithmetic: in
//! `get_next_seq_offset` the next position, relative to the region, is compared with the
//! file's absolute size, and on wrapping set to `file_offset`, again used as relative. So a
//! skip wraps to the region's start only when the region starts at 0 and the hole after
//! its last block reaches the end of the file ([`RegionPass::skip_wraps`]); a region
//! starting further in is done there. The job's first drop, when its files are opened, is
//! the runner's.

use storbench_job::JobSpec;

use super::Worker;
use crate::error::EngineError;
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

/// One pass of a size-bound job over a file region, by fio's arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionPass {
    /// Bytes fio issues over the region before the file is done (or, when the skip wraps,
    /// before it has issued the region's size).
    pub bytes: u64,
    /// The skip after the region's last block wraps silently to its start (see the
    /// module's doc): the region starts at 0, its last block ends before the end of the
    /// file and the hole after it reaches it.
    pub skip_wraps: bool,
}

/// The smallest block of the directions `job` uses, and whether every IO has that size
/// (fio lets such an IO cross the region's end when the file has room for it).
pub fn job_block(job: &JobSpec) -> (u64, bool) {
    let kind = job.rw.kind;
    let used = [kind.reads(), kind.writes(), kind.trims()];
    let sizes = || (0..3).filter(move |&d| used[d]).map(|d| &job.bs[d]);
    let block = sizes().map(|b| b.min()).min().unwrap_or(4096).max(1);
    let fixed = sizes().all(|b| b.min() == block && b.max() == block);
    (block, fixed)
}

/// fio's pass over the region [`start`, `start + len`) of a file of `size` bytes. IO `k`
/// of a sequential job goes at `k * (block + hole)` from the start while that is inside
/// the region and, for a fixed block size, the block fits in the file (`fill_io_u`), for a
/// range, in the region (`get_next_buflen`). A 1398101-byte file (4 MiB over 3 files)
/// takes 341 reads of 4 KiB; `rw=read:8k` makes 1366 reads of 4 KiB over 16 MiB.
pub fn region_pass(job: &JobSpec, start: u64, len: u64, size: u64) -> RegionPass {
    let (block, fixed) = job_block(job);
    let whole = len / block * block;
    if job.rw.kind.is_random() {
        // Without a random map fio stops on bytes alone: while fewer than the region's
        // were issued, one more whole block goes (8 MiB in 4000-byte blocks: 2098 IOs).
        let bytes = if job.norandommap && fixed {
            len.div_ceil(block) * block
        } else {
            whole
        };
        return RegionPass {
            bytes,
            skip_wraps: false,
        };
    }
    let hole = job.rw.hole;
    if fixed && hole == 0 && splits_directions(job) {
        // Reads and writes each go through the region from its start (`last_pos[ddir]`),
        // so neither reaches its end first and fio stops on bytes alone: one more whole
        // block while fewer than the region's were issued (2410500 bytes: 589 IOs).
        return RegionPass {
            bytes: len.div_ceil(block) * block,
            skip_wraps: false,
        };
    }
    let step = block + hole;
    let room = size.saturating_sub(start);
    let steps = if fixed {
        let inside = len.div_ceil(step);
        let fit = if room >= block {
            (room - block) / step + 1
        } else {
            0
        };
        inside.min(fit)
    } else if len >= block {
        (len - block) / step + 1
    } else {
        0
    };
    let last_end = (steps.max(1) - 1) * step + block;
    let skip_wraps =
        hole > 0 && steps > 0 && start == 0 && last_end < size && last_end + hole >= size;
    let bytes = match (skip_wraps, fixed) {
        // fio goes on until it has issued the region's size.
        (true, true) => len.div_ceil(block) * block,
        (true, false) => whole,
        (false, _) => steps * block,
    };
    RegionPass { bytes, skip_wraps }
}

/// A sequential mix whose reads and writes both run (`rw=rw` with a read share that is
/// neither 0 nor 100).
fn splits_directions(job: &JobSpec) -> bool {
    let kind = job.rw.kind;
    kind.reads() && kind.writes() && (1..100).contains(&job.rwmixread)
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
    pub(super) invalidate: bool,
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

    /// fio's action for a pass over a file that ended as `end` (the module's table);
    /// `ends_file`: the region runs to the end of the file (fio checks the file's size,
    /// not the region's); `skip_wraps`: see [`RegionPass::skip_wraps`].
    pub(super) fn on(&self, end: PassEnd, ends_file: bool, skip_wraps: bool) -> OnPassEnd {
        match end {
            PassEnd::None => OnPassEnd::Wrap,
            PassEnd::End if self.seq_in_place => OnPassEnd::DropInPlace,
            PassEnd::End | PassEnd::Skip if skip_wraps => OnPassEnd::Wrap,
            PassEnd::End if self.random_job && ends_file => OnPassEnd::Jump,
            PassEnd::MapFull if self.map_in_place => OnPassEnd::DropInPlace,
            PassEnd::End | PassEnd::Skip | PassEnd::Short | PassEnd::MapFull => OnPassEnd::Reopen,
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
/// `size` bytes (the region's, whatever io_size says) were queued (`bytes_issued` grows
/// for queued IOs only), and the next round reopens the files. Synchronous engines, and
/// time-based jobs (`region` None), make one round.
pub(super) fn round_bytes(region: Option<u64>, synchronous: bool) -> u64 {
    match region {
        Some(region) if !synchronous => region.max(1),
        _ => u64::MAX,
    }
}

impl Worker<'_> {
    /// A pass over `file` ended as `end` while choosing `offset` for an IO of `len` bytes:
    /// applies fio's rule and returns the offset to use.
    ///
    /// A jump draws a random block, which can end a pass only by filling the random map,
    /// and a full map's action is never a jump: the loop runs at most twice.
    #[cold]
    pub(super) fn pass_ended(
        &mut self,
        file: usize,
        mut end: PassEnd,
        len: u64,
        mut offset: u64,
    ) -> u64 {
        loop {
            let f = &self.files[file];
            let action = self.cache.on(end, f.ends_file, f.skip_wraps);
            if self.cache.drops(action) {
                self.drop_cache(file);
            }
            match action {
                OnPassEnd::Wrap | OnPassEnd::DropInPlace => return offset,
                OnPassEnd::Reopen => {
                    self.file_pass_over();
                    let offsets = &mut self.files[file].offsets;
                    // fio's fio_file_reset: the position and the random map start over. A
                    // full map has just started over, with this IO's block drawn from it.
                    if end != PassEnd::MapFull {
                        offsets.restart();
                        offset = offsets.next_sequential(len);
                    }
                    return offset;
                }
                OnPassEnd::Jump => {
                    let offsets = &mut self.files[file].offsets;
                    let jump = offsets.next_random(&mut self.rng, len);
                    offsets.continue_from(jump);
                    offset = offsets.next_sequential(len);
                    end = offsets.take_pass_end();
                    if end == PassEnd::None {
                        return offset;
                    }
                }
            }
        }
    }

    /// A new round of a size-bound job on a queued engine: as fio's `do_io` reaps what is
    /// in flight and closes the files before the next round opens them, which starts each
    /// over at its region's start and drops its cache again. Cold: once per round.
    #[cold]
    pub(super) fn new_round(&mut self) -> Result<(), EngineError> {
        self.drain()?;
        self.round_end = self.round_end.saturating_add(self.round_bytes);
        if let Some(keep) = &mut self.keep
            && !keep.job_pass_over(self.issued_bytes, self.written_bytes)
        {
            self.files_done = true;
        }
        for file in 0..self.files.len() {
            self.files[file].offsets.restart();
            if self.cache.invalidate {
                self.drop_cache(file);
            }
        }
        Ok(())
    }

    /// A pass over one file ended (it is done and opens again): with io_size, fio's rule
    /// (`keeprun.rs`) decides whether the job goes on, and the next pass's round starts.
    #[cold]
    pub(super) fn file_pass_over(&mut self) {
        let Some(keep) = &mut self.keep else { return };
        if let Some(go_on) = keep.file_pass_over(self.issued_bytes, self.written_bytes) {
            self.round_end = self.issued_bytes.saturating_add(self.round_bytes);
            self.files_done |= !go_on;
        }
    }

    /// Drops the cached pages of this worker's region of `file` only: fio's range, and
    /// the whole file would also drop readahead past the region and other clones' regions.
    pub(super) fn drop_cache(&mut self, file: usize) {
        let f = &self.files[file];
        let (start, len) = (f.offsets.start(), f.offsets.len());
        // Best effort, like fio's: a failed drop only makes the next pass faster.
        let _ = self.engine.invalidate_range(f.id, start, len);
    }
}

#[cfg(test)]
mod tests {
    use storbench_job::{BlockSize, JobSpec, RwKind};

    use super::*;
    use PassEnd::{End, MapFull, Short, Skip};

    fn rule(kind: RwKind, time_based: bool, files: usize) -> CacheRule {
        let mut job = JobSpec::new("t");
        job.rw.kind = kind;
        job.time_based = time_based;
        CacheRule::new(&job, files)
    }

    /// The table of the module's doc, row by row.
    #[test]
    fn the_rule_follows_fio() {
        use OnPassEnd::*;
        let cases = [
            // (kind, time_based, files, end, ends_file, skip_wraps, action)
            (RwKind::Read, true, 1, End, true, false, DropInPlace),
            (RwKind::Read, true, 1, End, false, true, DropInPlace),
            (RwKind::Read, true, 1, Skip, false, true, Wrap),
            (RwKind::Read, false, 2, Skip, false, true, Wrap),
            (RwKind::Read, false, 1, End, false, true, Wrap),
            (RwKind::RandRead, true, 2, End, true, false, Jump),
            (RwKind::RandRead, false, 1, End, true, false, Jump),
            (RwKind::Read, true, 2, End, true, false, Reopen),
            (RwKind::Read, false, 1, End, true, false, Reopen),
            (RwKind::Read, true, 1, Skip, true, false, Reopen),
            (RwKind::RandRead, true, 2, End, false, false, Reopen),
            (RwKind::Read, true, 1, Short, false, false, Reopen),
            (RwKind::RandRead, true, 2, Short, false, false, Reopen),
            (RwKind::RandRead, true, 2, MapFull, true, false, DropInPlace),
            (RwKind::RandRead, false, 1, MapFull, true, false, Reopen),
        ];
        for (kind, time_based, files, end, ends_file, skip_wraps, action) in cases {
            let got = rule(kind, time_based, files).on(end, ends_file, skip_wraps);
            assert_eq!(
                got, action,
                "{kind:?} time_based={time_based} files={files} {end:?} \
                 ends_file={ends_file} skip_wraps={skip_wraps}"
            );
        }
    }

    fn read_with_hole(hole: u64) -> JobSpec {
        let mut job = JobSpec::new("t");
        job.rw.kind = RwKind::Read;
        job.rw.hole = hole;
        job.bs = std::array::from_fn(|_| BlockSize::Fixed(4096));
        job
    }

    const MIB: u64 = 1 << 20;

    /// Counts checked against fio 3.33 (JSON total_ios, 4 KiB reads).
    #[test]
    fn a_pass_over_a_region_issues_what_fio_does() {
        let k = 1024;
        let cases = [
            // (hole, start, len, size, reads, skip_wraps)
            // size=16k rw=read:4k on a 1 MiB file: 2 reads, the file is done.
            (4 * k, 0, 16 * k, MIB, 2, false),
            // The whole 16 KiB file: the skip after the 2nd read wraps, 4 reads.
            (4 * k, 0, 16 * k, 16 * k, 4, true),
            // The last of numjobs=4 offset_increment=25% size=25%: 32 reads, done.
            (4 * k, 3 * MIB / 4, MIB / 4, MIB, 32, false),
            // The first of them: a hole short of the end of the file, done too.
            (4 * k, 0, MIB / 4, MIB, 32, false),
            // Last block right at the end of the file: done, no wrap.
            (4 * k, 0, 12 * k, 12 * k, 2, false),
            // size=10k rw=read: the 3rd read crosses the region's end, into the file.
            (0, 0, 10 * k, MIB, 3, false),
            // A 10 KiB file: no room for it.
            (0, 0, 10 * k, 10 * k, 2, false),
        ];
        for (hole, start, len, size, reads, wraps) in cases {
            let got = region_pass(&read_with_hole(hole), start, len, size);
            let want = RegionPass {
                bytes: reads * 4096,
                skip_wraps: wraps,
            };
            assert_eq!(got, want, "hole={hole} start={start} len={len} size={size}");
        }
    }

    #[test]
    fn a_block_size_range_stays_inside_the_region() {
        let mut job = read_with_hole(0);
        job.bs[0] = BlockSize::Range {
            min: 4096,
            max: 8192,
        };
        assert_eq!(job_block(&job), (4096, false));
        assert_eq!(region_pass(&job, 0, 10240, MIB).bytes, 8192);
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
        assert_eq!(round_bytes(Some(100), false), 100);
        assert_eq!(round_bytes(Some(100), true), u64::MAX);
        assert_eq!(round_bytes(None, false), u64::MAX);
    }
}
