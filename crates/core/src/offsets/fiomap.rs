//! fio's own random map, for the jobs whose outcome depends on its arithmetic: a mix whose
//! directions have different block sizes (`rw=randrw, bs=4k,16k`).
//!
//! fio keeps one bit per smallest block of the job (`rw_min_bs`), but each direction draws
//! its block number in units of its own block size and marks the bit of that number
//! (`last_block`, `__get_next_rand_offset` and `mark_random_map` in io_u.c use the
//! direction's `ba` and `min_bs`). A 16 KiB write drawn as block 5 checks and marks bit 5,
//! the bit of the 4 KiB read at 20 KiB. When the bit is taken the next free one is used,
//! and a write moved to a bit past its own range lands past the end of the file: fio's
//! `fill_io_u` fails, the file is done, and a job without `io_size` ends there. Over
//! 16 MiB with `bs=4k,16k` fio so moves about 12.7 MB, not 16 MiB, and storbench follows
//! it draw for draw: fio's taus88 generator with fio's seed, its bit search, its checks.
//!
//! A direction whose block size varies (`bsrange`, `bssplit`) draws its size after the
//! offset (`SizeDraw`), and a block that would run into blocks already done is shortened
//! to the free ones before them (`mark_random_map`): `bssplit=4k/50:64k/50` over 16 MiB
//! so takes about 750 IOs in fio, each byte once, where whole 64 KiB blocks would take
//! about 480.

use super::fiosizes::SizeDraw;
use storbench_model::rng::FioRand;

/// fio's `FIO_RANDSEED`: with `randrepeat`, the offset generator of thread N is seeded
/// with N times this.
const FIO_RANDSEED: u64 = 0xb189_9bed;

/// What fio does when its map finds no place for the next IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapAgain {
    /// `time_based`: the map starts over and the generators go on (`get_next_rand_block`).
    InPlace,
    /// The job opens the file again for another pass (`keep_running`), `left` more times
    /// (`loops`, 0: the job ends with the file; u32::MAX while io_size has bytes left), its generators seeded again as a
    /// repeatable run's are (`clear_io_state`), so each pass is the first one again.
    Reopen { left: u32 },
}

impl MapAgain {
    /// Starts `map` over if the job goes on; false when the job is done.
    pub fn go_on(&mut self, map: &mut FioMap) -> bool {
        match self {
            MapAgain::InPlace => {
                map.reset();
                true
            }
            MapAgain::Reopen { left: 0 } => false,
            MapAgain::Reopen { left } => {
                *left = left.saturating_sub(u32::from(*left != u32::MAX));
                map.reopen();
                true
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct FioMap {
    bits: Vec<u64>,
    nbits: u64,
    rand: FioRand,
    /// The generator as seeded, for a reopened file of a repeatable run; None otherwise.
    first: Option<FioRand>,
    /// Per direction: the block size, unit of its draws and of its marks.
    unit: [u64; 3],
    /// Bytes of the region (fio's `min(io_size, real_file_size)`).
    len: u64,
    /// Bytes from the region's start to the end of the file: an IO must end inside.
    room: u64,
    /// Per direction: its block size draws when the size varies.
    sizes: [Option<SizeDraw>; 3],
}

impl FioMap {
    /// The map over a region of `len` bytes with `room` bytes to the end of the file, for
    /// directions of fixed block sizes `unit`, seeded as fio seeds thread `thread_number`
    /// (from 1) under `randrepeat`, else from `seed`.
    pub fn new(len: u64, room: u64, unit: [u64; 3], thread_number: Option<u32>, seed: u64) -> Self {
        let smallest = unit.iter().copied().min().unwrap_or(4096).max(1);
        let nbits = (len / smallest).max(1);
        let repeat = thread_number.is_some();
        let seed = thread_number.map_or(seed, |n| FIO_RANDSEED.wrapping_mul(u64::from(n)));
        let rand = FioRand::seeded(seed);
        FioMap {
            bits: vec![0; nbits.div_ceil(64) as usize],
            nbits,
            first: repeat.then(|| rand.clone()),
            rand,
            unit: unit.map(|u| u.max(1)),
            len,
            room,
            sizes: [None, None, None],
        }
    }

    /// Directions whose block size varies draw it as fio does, each from its own
    /// generator seeded with `seeds[ddir]`; `bs` gives each direction's sizes.
    pub fn with_sizes(mut self, bs: &[storbench_job::BlockSize; 3], seeds: [u64; 3]) -> Self {
        self.sizes = std::array::from_fn(|d| SizeDraw::new(&bs[d], seeds[d]));
        self
    }

    /// True when some direction's block size is drawn by the map (`next` gives it).
    pub fn draws_sizes(&self) -> bool {
        self.sizes.iter().any(Option::is_some)
    }

    /// The offset (from the region's start) and length of the next IO of direction
    /// `ddir`, marked done; None when fio's file would be done (no free bit, no block size
    /// that fits, or past the file's end).
    #[inline]
    pub fn next(&mut self, ddir: u8) -> Option<(u64, u64)> {
        let d = usize::from(ddir.min(2));
        let unit = self.unit[d];
        let lastb = self.len / unit;
        if lastb == 0 {
            return None;
        }
        let r = f64::from(self.rand.next_u32()) / 4_294_967_296.0;
        let mut b = (lastb as f64 * r) as u64;
        if self.is_set(b) {
            b = self.next_free(b)?;
        }
        let off = b * unit;
        let len = match &mut self.sizes[d] {
            None => unit,
            Some(sizes) => sizes.draw(self.len.saturating_sub(off))?,
        };
        if off + len > self.room {
            return None;
        }
        let done = self.set_run(b, len.div_ceil(unit));
        Some((off, len.min(done * unit)))
    }

    /// Clears the map (fio's `fio_file_reset`); the generators go on.
    pub fn reset(&mut self) {
        self.bits.fill(0);
    }

    /// Clears the map for a file opened again; a repeatable run's generators start over
    /// from their seeds, as fio seeds them again for each pass (`clear_io_state`).
    pub fn reopen(&mut self) {
        self.reset();
        if let Some(first) = &self.first {
            self.rand = first.clone();
            for sizes in self.sizes.iter_mut().flatten() {
                sizes.reseed();
            }
        }
    }

    fn is_set(&self, b: u64) -> bool {
        b < self.nbits && self.bits[(b / 64) as usize] & (1 << (b % 64)) != 0
    }

    fn set(&mut self, b: u64) {
        if b < self.nbits {
            self.bits[(b / 64) as usize] |= 1 << (b % 64);
        }
    }

    /// fio's `axmap_set_nr`: marks up to `n` bits from the free bit `b`, stopping at the
    /// first one already set, and says how many it marked (bits past the map count as
    /// free, as in fio's last word).
    fn set_run(&mut self, b: u64, n: u64) -> u64 {
        for i in 0..n {
            if self.is_set(b + i) {
                return i;
            }
            self.set(b + i);
        }
        n
    }

    /// fio's `axmap_next_free`: the first free bit after `b`, else the first from 0.
    #[cold]
    fn next_free(&self, b: u64) -> Option<u64> {
        let from = if b + 1 >= self.nbits { 0 } else { b + 1 };
        self.first_free(from).or_else(|| self.first_free(0))
    }

    fn first_free(&self, from: u64) -> Option<u64> {
        let mut word = (from / 64) as usize;
        let mut free = !self.bits.get(word)? & (u64::MAX << (from % 64));
        loop {
            if free != 0 {
                let bit = word as u64 * 64 + u64::from(free.trailing_zeros());
                return (bit < self.nbits).then_some(bit);
            }
            word += 1;
            free = !*self.bits.get(word)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads of one block and writes of four over 16 blocks: writes draw among blocks
    /// 0..4 and mark those bits, so once bits 0..4 are taken a write moves to a bit of
    /// 4 or more, whose offset is past the file: the map ends the file there.
    #[test]
    fn a_write_moved_past_its_range_ends_the_file() {
        let mut m = FioMap::new(16 * 4096, 16 * 4096, [4096, 16384, 16384], Some(1), 0);
        let mut writes = 0;
        let end = loop {
            match m.next(1) {
                Some((off, len)) => {
                    assert_eq!(len, 16384);
                    assert!(off < 4 * 16384 && off % 16384 == 0);
                    writes += 1;
                }
                None => break writes,
            }
        };
        // Four bits for writes; a draw of a taken bit may move past them before all four
        // are used.
        assert!((1..=4).contains(&end), "{end} writes");
        assert_eq!(m.next(1), None, "the file stays done");
    }

    #[test]
    fn reads_cover_every_block_once_then_the_file_is_done() {
        let mut m = FioMap::new(64 * 4096, 64 * 4096, [4096; 3], None, 7);
        let mut seen: Vec<u64> = std::iter::from_fn(|| m.next(0).map(|(off, _)| off)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..64).map(|b| b * 4096).collect::<Vec<_>>());
        m.reset();
        assert!(m.next(0).is_some());
    }

    /// A split of 4 KiB and 64 KiB blocks: each 64 KiB block that would run into blocks
    /// already done is shortened to the free ones before them, so a pass covers every byte
    /// once, in more IOs than whole blocks would take.
    #[test]
    fn blocks_of_a_split_are_shortened_to_the_free_run() {
        use storbench_job::BlockSize;
        let split = BlockSize::Split(vec![(4096, 50), (65536, 50)]);
        let bs = [split.clone(), split.clone(), split];
        let mut m = FioMap::new(1 << 24, 1 << 24, [4096; 3], Some(1), 0).with_sizes(&bs, [1, 2, 3]);
        let mut done = vec![false; 4096];
        let mut ios = 0;
        while let Some((off, len)) = m.next(0) {
            assert!(off.is_multiple_of(4096) && len.is_multiple_of(4096) && len <= 65536);
            for b in off / 4096..(off + len) / 4096 {
                assert!(!done[b as usize], "block {b} twice");
                done[b as usize] = true;
            }
            ios += 1;
        }
        assert!(done.iter().all(|&d| d));
        assert!(ios > 600, "{ios} IOs: blocks were not shortened");
        // A reopened file of a repeatable run draws what the first pass drew.
        let first: Vec<(u64, u64)> = {
            m.reopen();
            std::iter::from_fn(|| m.next(0)).collect()
        };
        m.reopen();
        let again: Vec<(u64, u64)> = std::iter::from_fn(|| m.next(0)).collect();
        assert_eq!(first, again);
    }

    #[test]
    fn the_next_free_bit_wraps_to_the_start() {
        let mut m = FioMap::new(130 * 4096, 130 * 4096, [4096; 3], None, 1);
        for b in 0..130 {
            if b != 3 {
                m.set(b);
            }
        }
        assert_eq!(m.next_free(100), Some(3));
        assert_eq!(m.next_free(129), Some(3));
        m.set(3);
        assert_eq!(m.next_free(5), None);
    }
}
