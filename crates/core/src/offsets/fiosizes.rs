//! fio's block size draws for a direction whose size varies (`bsrange`, `bssplit`), made
//! where fio makes them: after the offset, so the drawn block fits in the region
//! (`get_next_buflen` in io_u.c), from fio's own generator (`bsrange_state`) with fio's seed.

use storbench_job::BlockSize;

use storbench_model::rng::FioRand;

/// fio's `rand_max` of its 32-bit generator, divided by 100 as its bssplit lookup does.
const SPLIT_STEP: u64 = u32::MAX as u64 / 100;

/// Draws a block for which no size fits in this many tries give up, as a file that is done.
const MAX_TRIES: u32 = 1 << 20;

#[derive(Clone, Debug)]
pub struct SizeDraw {
    min: u64,
    max: u64,
    /// bssplit's sizes and percentages, ordered by percentage as fio sorts them; empty for
    /// a range.
    split: Box<[(u64, u64)]>,
    rand: FioRand,
    /// The generator as seeded.
    first: FioRand,
}

impl SizeDraw {
    /// The draw of a direction's block sizes, or None when the size is fixed.
    pub fn new(bs: &BlockSize, seed: u64) -> Option<Self> {
        let split: Vec<(u64, u64)> = match bs {
            BlockSize::Fixed(_) => return None,
            BlockSize::Range { .. } => Vec::new(),
            BlockSize::Split(parts) => {
                let mut v: Vec<(u64, u64)> =
                    parts.iter().map(|&(b, p)| (b, u64::from(p))).collect();
                // fio's qsort by percentage; glibc's merge sort keeps equal ones in order.
                v.sort_by_key(|&(_, p)| p);
                v
            }
        };
        Some(SizeDraw {
            min: bs.min().max(1),
            max: bs.max().max(1),
            split: split.into_boxed_slice(),
            rand: FioRand::seeded(seed),
            first: FioRand::seeded(seed),
        })
    }

    /// Starts the draws over from the seed.
    pub fn reseed(&mut self) {
        self.rand = self.first.clone();
    }

    /// A block size that fits in `room` bytes (from the IO's offset to the region's end),
    /// drawn again until one does, as fio does; None when none fits.
    pub fn draw(&mut self, room: u64) -> Option<u64> {
        if self.min > room {
            return None;
        }
        for _ in 0..MAX_TRIES {
            let r = self.rand.next_u32();
            let len = self.align(self.pick(r, room));
            if len <= room {
                return Some(len);
            }
        }
        None
    }

    fn pick(&self, r: u32, room: u64) -> u64 {
        if self.split.is_empty() {
            let unit = f64::from(r) / 4_294_967_296.0;
            return self.min + (self.max as f64 * unit) as u64;
        }
        let mut len = 0;
        let mut perc = 0;
        for &(bs, p) in self.split.iter() {
            len = bs;
            perc += p;
            if u64::from(r) / perc <= SPLIT_STEP && bs <= room {
                break;
            }
        }
        len
    }

    fn align(&self, len: u64) -> u64 {
        let aligned = if self.min.is_power_of_two() {
            len & !(self.min - 1)
        } else {
            len - len % self.min
        };
        aligned.min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_draws_only_its_sizes_and_fits_the_room() {
        let bs = BlockSize::Split(vec![(4096, 50), (65536, 50)]);
        let mut d = SizeDraw::new(&bs, 7).expect("drawn");
        let mut seen = [0u32; 2];
        for _ in 0..1000 {
            let len = d.draw(1 << 20).expect("fits");
            seen[usize::from(len == 65536)] += 1;
            assert!(len == 4096 || len == 65536);
        }
        assert!(seen.iter().all(|&n| n > 400), "{seen:?}");
        assert_eq!(d.draw(8192), Some(4096), "only the small block fits");
        assert_eq!(d.draw(4095), None);
    }

    #[test]
    fn a_range_is_aligned_to_its_smallest_block_and_capped() {
        let bs = BlockSize::Range {
            min: 4096,
            max: 65536,
        };
        let mut d = SizeDraw::new(&bs, 3).expect("drawn");
        for _ in 0..1000 {
            let len = d.draw(1 << 20).expect("fits");
            assert!(
                len.is_multiple_of(4096) && (4096..=65536).contains(&len),
                "{len}"
            );
        }
        assert!(SizeDraw::new(&BlockSize::Fixed(4096), 1).is_none());
    }
}
