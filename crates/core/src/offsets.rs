//! Where the next IO goes inside a file's region.
//!
//! Random IO visits every block once per pass by default, like fio's random map, but
//! without a bitmap: a keyed Feistel permutation of the block numbers (cycle-walking over the
//! next power of two) gives a full-period, repeatable shuffle in O(1) memory and a few
//! nanoseconds per IO. `norandommap` and the skewed distributions draw independently.

use storbench_job::RandomDistribution;

use storbench_model::rng::{Rng, mix64};

mod fiomap;
mod fiosizes;
mod zones;
pub use fiomap::{FioMap, MapAgain};
pub use fiosizes::SizeDraw;
pub use zones::ZoneIndex;

/// A bijection on [0, n): a balanced Feistel network over 2^bits ≥ n, with cycle walking.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    half_mask: u64,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Self {
        assert!(n > 0, "permutation of an empty range");
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        let mut sm = seed;
        let keys = std::array::from_fn(|_| storbench_model::rng::splitmix64(&mut sm));
        Permutation {
            n,
            half_bits,
            half_mask: (1u64 << half_bits) - 1,
            keys,
        }
    }

    #[inline]
    fn round(&self, x: u64) -> u64 {
        let (mut left, mut right) = (x >> self.half_bits, x & self.half_mask);
        for key in self.keys {
            let f = mix64(right ^ key) & self.half_mask;
            (left, right) = (right, left ^ f);
        }
        (left << self.half_bits) | right
    }

    /// The image of `i` (< n).
    #[inline]
    pub fn at(&self, i: u64) -> u64 {
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }
}

/// Zipf-distributed ranks in [0, n) by rejection-inversion (Hörmann & Derflinger), O(1).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Self {
        let s = theta;
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h(1.5) - 1.0;
        z.h_n = z.h(z.n + 0.5);
        z.cut = 2.0 - z.h_inv(z.h(2.5) - 2f64.powf(-s));
        z
    }

    fn h(&self, x: f64) -> f64 {
        let e = 1.0 - self.s;
        if e.abs() < 1e-9 {
            x.ln()
        } else {
            (x.powf(e) - 1.0) / e
        }
    }

    fn h_inv(&self, x: f64) -> f64 {
        let e = 1.0 - self.s;
        if e.abs() < 1e-9 {
            x.exp()
        } else {
            (x * e + 1.0).powf(1.0 / e)
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.h_inv(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h(k + 0.5) - k.powf(-self.s) {
                return k as u64 - 1;
            }
        }
    }
}

/// How random block numbers are drawn.
#[derive(Clone, Debug)]
enum Draw {
    /// Each block once per pass.
    Map {
        perm: Permutation,
        pass_pos: u64,
        /// The key of the next map after a restart.
        next_key: u64,
    },
    /// Uniform with repetition (`norandommap`).
    Uniform,
    /// Skewed: rank from the distribution, spread over the range by a fixed shuffle so hot
    /// blocks are not all at the start (as fio hashes its ranks).
    Zipf {
        zipf: Zipf,
        spread: Permutation,
    },
    Pareto {
        power: f64,
        spread: Permutation,
    },
    Normal {
        stddev_blocks: f64,
        spread: Permutation,
    },
    /// fio's zoned distributions, per direction.
    Zoned(ZoneIndex),
    /// fio's own random map (directions of different block sizes).
    Fio {
        map: Box<FioMap>,
        /// What happens when the map finds no place for the next IO.
        again: MapAgain,
    },
}

/// How a pass over a region ended: fio treats each kind differently when it decides whether
/// to drop the file's page cache (see `worker::passes`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PassEnd {
    #[default]
    None,
    /// A sequential run reached the region's end (with a varying block size: no size
    /// that fio's draw allows fits before it).
    End,
    /// Too little of the region is left for the next IO of a fixed block size, and the file
    /// has no room for it past the region either: fio's `fill_io_u` fails, the file is done
    /// and fio opens it again (neither a wrap in place nor a jump).
    Short,
    /// A skip (`rw=read:N`) stepped past the region's end while the last IO ended inside it.
    Skip,
    /// The random map has visited every block.
    MapFull,
}

/// Offsets within one file region, in units of `block` bytes.
#[derive(Clone, Debug)]
pub struct OffsetGen {
    start: u64,
    len: u64,
    block: u64,
    nblocks: u64,
    /// Next sequential offset, relative to `start`.
    seq_next: u64,
    /// The other directions' next sequential offsets: as fio's `last_pos[ddir]`, the
    /// reads and writes of a sequential mix (`rw=rw`) each go through the region on their
    /// own, both from its start.
    seq_other: [u64; 3],
    hole: u64,
    /// fio's backward sequential step (`rw=read:-8k`); 0: forwards.
    back: u64,
    /// Bytes from `start` to the end of the file, when IOs have one fixed size: fio then
    /// issues the IO that crosses the region's end if the file has room for it (its
    /// `get_next_buflen` checks the region only for a block size range). 0: no crossing.
    cross_room: u64,
    draw: Draw,
    /// The direction of the IO being placed (zones differ per direction).
    dir: u8,
    /// How the last pass over the region ended, until taken.
    pass_end: PassEnd,
    /// fio's map found no place for the last IO: the file is done (see [`FioMap`]).
    done: bool,
}

/// Parameters for [`OffsetGen::new`].
pub struct OffsetParams {
    pub start: u64,
    pub len: u64,
    /// Alignment and random-map unit (the smallest block size).
    pub block: u64,
    pub hole: u64,
    /// Backward step (`rw=read:-8k`); 0: forwards.
    pub back: u64,
    /// Bytes from `start` to the end of the file when every IO has one fixed size, for the
    /// IO fio lets cross the region's end; 0 when the block size varies.
    pub cross_room: u64,
    pub random_map: bool,
    pub distribution: RandomDistribution,
    /// The zones of a `zoned`/`zoned_abs` distribution, built by the caller over this
    /// region (see [`ZoneIndex::new`]).
    pub zones: Option<ZoneIndex>,
    /// fio's own random map, for mixes of directions with different block sizes and for
    /// block sizes that vary, and what the job does when the map's file is done.
    pub fio_map: Option<(FioMap, MapAgain)>,
    pub seed: u64,
}

impl OffsetGen {
    pub fn new(p: OffsetParams) -> Self {
        let nblocks = (p.len / p.block).max(1);
        let spread = || Permutation::new(nblocks, p.seed ^ 0x5350_5245_4144);
        let draw = match p.distribution {
            _ if p.zones.is_some() => Draw::Zoned(p.zones.expect("checked")),
            _ if p.fio_map.is_some() => {
                let (map, again) = p.fio_map.expect("checked");
                Draw::Fio {
                    map: Box::new(map),
                    again,
                }
            }
            RandomDistribution::Random if p.random_map => Draw::Map {
                perm: Permutation::new(nblocks, p.seed),
                pass_pos: 0,
                next_key: mix64(p.seed ^ 0x5245_4f50_454e),
            },
            RandomDistribution::Random => Draw::Uniform,
            RandomDistribution::Zipf(theta) => Draw::Zipf {
                zipf: Zipf::new(nblocks, theta),
                spread: spread(),
            },
            RandomDistribution::Pareto(h) => Draw::Pareto {
                power: h.ln() / (1.0 - h).ln(),
                spread: spread(),
            },
            RandomDistribution::Normal(dev) => Draw::Normal {
                stddev_blocks: (dev / 100.0 * nblocks as f64).max(1.0),
                spread: spread(),
            },
            // Without zones for any direction: uniform, as fio's zoned without a list.
            RandomDistribution::Zoned | RandomDistribution::ZonedAbs => Draw::Uniform,
        };
        OffsetGen {
            start: p.start,
            len: p.len,
            block: p.block,
            nblocks,
            seq_next: 0,
            seq_other: [0; 3],
            hole: p.hole,
            back: p.back,
            cross_room: p.cross_room,
            draw,
            dir: 0,
            pass_end: PassEnd::None,
            done: false,
        }
    }

    /// Sets the direction of the next IOs placed (read 0, write 1, trim 2).
    #[inline]
    pub fn aim(&mut self, ddir: u8) {
        if ddir != self.dir {
            self.seq_other[usize::from(self.dir.min(2))] = self.seq_next;
            self.seq_next = self.seq_other[usize::from(ddir.min(2))];
        }
        self.dir = ddir;
    }

    /// True once fio's map found no place for an IO: the job's file is done and the IO
    /// just placed must not go (a job without io_size ends, as fio's `keep_running`).
    #[inline]
    pub fn done(&self) -> bool {
        self.done
    }

    /// Where the region starts in the file.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Bytes in the region.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Clamps an IO of `bs` bytes at block `blk` so it stays inside the region.
    /// `rel` is a multiple of the block, so an IO that fits needs no clamping: the
    /// division is left to the rare IO that would run past the end.
    #[inline]
    fn place(&self, rel: u64, bs: u64) -> u64 {
        if rel + bs <= self.len {
            return self.start + rel;
        }
        let max_rel = self.len.saturating_sub(bs) / self.block * self.block;
        self.start + rel.min(max_rel)
    }

    /// Next sequential offset; wraps to the start when the region is exhausted. A fixed-size
    /// IO that starts inside the region but ends past it goes ahead, as in fio, when the
    /// file has room for it.
    #[inline]
    pub fn next_sequential(&mut self, bs: u64) -> u64 {
        if self.back > 0 {
            return self.next_backward(bs);
        }
        if self.seq_next + bs > self.len && !self.crosses_the_end(bs) {
            self.pass_end = self.seq_end_kind();
            self.seq_next = 0;
        }
        let off = self.start + self.seq_next;
        self.seq_next += bs + self.hole;
        off
    }

    /// fio's backward sequential IO (`get_next_seq_offset` with a negative `ddir_seq_add`):
    /// the first IO at the region's start, then each one `back` bytes before the end of
    /// the previous; a step before the start wraps to `back` bytes before the region's end
    /// (so with `back` = 2 × bs the last block is never read, as in fio). The wrap is no
    /// pass end: fio's backward run does not end the file there either.
    #[cold]
    fn next_backward(&mut self, bs: u64) -> u64 {
        let off = self.seq_next;
        let end = off + bs;
        self.seq_next = match end.checked_sub(self.back) {
            Some(next) if next + bs <= self.len => next,
            _ => self.len.saturating_sub(self.back),
        };
        self.start + off.min(self.len.saturating_sub(bs))
    }

    /// Why the sequential run cannot go on: fio wraps a skip silently but ends the pass at
    /// the region's end (`get_next_seq_offset`), so the two must be told apart.
    #[cold]
    fn crosses_the_end(&self, bs: u64) -> bool {
        self.seq_next < self.len && self.seq_next + bs <= self.cross_room
    }

    #[cold]
    fn seq_end_kind(&self) -> PassEnd {
        let last_end = self.seq_next.saturating_sub(self.hole);
        if self.seq_next < self.len && self.cross_room > 0 {
            PassEnd::Short
        } else if self.hole > 0 && last_end < self.len && self.seq_next >= self.len {
            PassEnd::Skip
        } else {
            PassEnd::End
        }
    }

    /// How a pass ended, once, at the first IO after it: fio decides there whether to drop
    /// the page cache, so a buffered time-based job re-reads from the device.
    #[inline]
    pub fn take_pass_end(&mut self) -> PassEnd {
        std::mem::take(&mut self.pass_end)
    }

    /// Starts over at the region's start with a fresh random map, as fio's `fio_file_reset`
    /// does when it opens a file again (a new round, a file that was done). fio's random
    /// generator goes on, so the new map visits the blocks in another order: the same order
    /// again would repeat the pass that ended the file, and end it again at the same place.
    #[cold]
    pub fn restart(&mut self) {
        self.seq_next = 0;
        self.seq_other = [0; 3];
        self.pass_end = PassEnd::None;
        if let Draw::Map {
            perm,
            pass_pos,
            next_key,
        } = &mut self.draw
        {
            *perm = Permutation::new(self.nblocks, *next_key);
            *pass_pos = 0;
            *next_key = mix64(*next_key);
        }
        if let Draw::Fio { map, .. } = &mut self.draw {
            map.reopen();
        }
    }

    /// Moves the region to `start` and starts over there (a strided zone's move).
    #[cold]
    pub fn move_to(&mut self, start: u64) {
        self.start = start;
        self.restart();
    }

    /// The offset and length of the next IO from fio's own map (see [`FioMap`]); when
    /// there is none the file is done (`done`), unless the job goes on and the map
    /// starts over.
    #[inline]
    pub fn next_mapped(&mut self) -> (u64, u64) {
        let Draw::Fio { map, again } = &mut self.draw else {
            return (self.start, 0);
        };
        let mut next = map.next(self.dir);
        if next.is_none() && again.go_on(map) {
            if matches!(again, MapAgain::Reopen { .. }) {
                self.pass_end = PassEnd::MapFull;
            }
            next = map.next(self.dir);
        }
        self.done |= next.is_none();
        let (off, len) = next.unwrap_or((0, 0));
        (self.start + off, len)
    }

    /// True when fio's map draws the block sizes too (`bsrange`, `bssplit`), so
    /// [`OffsetGen::next_mapped`] gives each IO's length.
    pub fn draws_sizes(&self) -> bool {
        matches!(&self.draw, Draw::Fio { map, .. } if map.draws_sizes())
    }

    /// Bytes from the next sequential offset to the region's end: what fio's block size
    /// draw must fit in (`io_u_fits`).
    #[inline]
    pub fn seq_room(&self) -> u64 {
        self.len.saturating_sub(self.seq_next)
    }

    /// Continues sequentially from `off` (for `rw=randread:N` runs between random jumps).
    #[inline]
    pub fn continue_from(&mut self, off: u64) {
        self.seq_next = off - self.start;
    }

    /// Next random offset for an IO of `bs` bytes.
    #[inline]
    pub fn next_random(&mut self, rng: &mut Rng, bs: u64) -> u64 {
        let n = self.nblocks;
        let blk = match &mut self.draw {
            Draw::Map { perm, pass_pos, .. } => {
                if *pass_pos >= n {
                    *pass_pos = 0;
                    self.pass_end = PassEnd::MapFull;
                }
                let b = perm.at(*pass_pos);
                *pass_pos += 1;
                b
            }
            Draw::Uniform => rng.below(n),
            Draw::Zipf { zipf, spread } => spread.at(zipf.sample(rng)),
            Draw::Pareto { power, spread } => {
                let rank = ((n - 1) as f64 * rng.unit().powf(*power)) as u64;
                spread.at(rank.min(n - 1))
            }
            Draw::Normal {
                stddev_blocks,
                spread,
            } => {
                let center = (n / 2) as f64;
                let v = center + gaussian(rng) * *stddev_blocks;
                spread.at((v.max(0.0) as u64).min(n - 1))
            }
            Draw::Zoned(zones) => zones.draw(rng, self.dir).min(n - 1),
            Draw::Fio { .. } => return self.next_mapped().0,
        };
        self.place(blk * self.block, bs)
    }
}

/// Standard normal deviate (Box–Muller).
fn gaussian(rng: &mut Rng) -> f64 {
    let u1 = rng.unit().max(f64::MIN_POSITIVE);
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use storbench_model::rng::Rng;

    fn params(len: u64, block: u64) -> OffsetParams {
        OffsetParams {
            start: 0,
            len,
            block,
            hole: 0,
            back: 0,
            cross_room: 0,
            random_map: true,
            distribution: RandomDistribution::Random,
            zones: None,
            fio_map: None,
            seed: 42,
        }
    }

    #[test]
    fn backward_sequential_walks_down_from_the_end_as_fio() {
        // rw=read:-8k, bs=4k over 64 KiB: 0, then 56k, 52k, … 4k, 0, then 56k again.
        let mut g = OffsetGen::new(OffsetParams {
            back: 8192,
            ..params(65536, 4096)
        });
        let offs: Vec<u64> = (0..17).map(|_| g.next_sequential(4096) / 1024).collect();
        assert_eq!(
            offs,
            [
                0, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0, 56
            ]
        );
    }

    proptest! {
        #[test]
        fn permutation_is_a_bijection(n in 1u64..5000, seed in any::<u64>()) {
            let p = Permutation::new(n, seed);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let v = p.at(i);
                prop_assert!(v < n);
                prop_assert!(!seen[v as usize]);
                seen[v as usize] = true;
            }
        }

        #[test]
        fn offsets_stay_aligned_and_in_range(len_blocks in 1u64..1000, bs_blocks in 1u64..8,
                                             seed in any::<u64>(), dist in 0u8..4) {
            let block = 4096;
            let distribution = match dist {
                0 => RandomDistribution::Random,
                1 => RandomDistribution::Zipf(1.2),
                2 => RandomDistribution::Pareto(0.2),
                _ => RandomDistribution::Normal(10.0),
            };
            let mut g = OffsetGen::new(OffsetParams {
                start: 1 << 20, len: len_blocks * block, block, hole: 0, back: 0, cross_room: 0,
                random_map: true,
                distribution, zones: None, fio_map: None, seed });
            let mut rng = Rng::seeded(seed);
            let bs = (bs_blocks * block).min(len_blocks * block);
            for _ in 0..200 {
                let off = g.next_random(&mut rng, bs);
                prop_assert_eq!(off % block, 0);
                prop_assert!(off >= 1 << 20);
                prop_assert!(off + bs <= (1 << 20) + len_blocks * block);
            }
        }
    }

    #[test]
    fn random_map_visits_each_block_once_per_pass() {
        let mut g = OffsetGen::new(params(100 * 4096, 4096));
        let mut rng = Rng::seeded(1);
        let mut seen: Vec<u64> = (0..100)
            .map(|_| g.next_random(&mut rng, 4096) / 4096)
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn a_pass_end_is_reported_once_with_its_kind() {
        use PassEnd::{End, MapFull, None};
        let mut rng = Rng::seeded(1);
        let mut random = OffsetGen::new(params(4 * 4096, 4096));
        let marks: Vec<PassEnd> = (0..9)
            .map(|_| {
                random.next_random(&mut rng, 4096);
                random.take_pass_end()
            })
            .collect();
        assert_eq!(
            marks,
            [None, None, None, None, MapFull, None, None, None, MapFull]
        );
        let mut seq = OffsetGen::new(params(2 * 4096, 4096));
        let marks: Vec<PassEnd> = (0..5)
            .map(|_| {
                seq.next_sequential(4096);
                seq.take_pass_end()
            })
            .collect();
        assert_eq!(marks, [None, None, End, None, End]);
    }

    /// fio wraps a skip that steps past the end silently, but a last block that ends at the
    /// region's end ends the pass (`get_next_seq_offset`): 4 KiB reads with 4 KiB holes end
    /// 4 KiB short of a 16 KiB region (a skip), and right at the end of a 12 KiB one.
    #[test]
    fn a_skip_past_the_end_is_not_the_end_of_the_region() {
        for (blocks, kind) in [(4, PassEnd::Skip), (3, PassEnd::End)] {
            let mut g = OffsetGen::new(OffsetParams {
                hole: 4096,
                ..params(blocks * 4096, 4096)
            });
            let ends: Vec<PassEnd> = (0..3)
                .map(|_| {
                    g.next_sequential(4096);
                    g.take_pass_end()
                })
                .collect();
            assert_eq!(
                ends,
                [PassEnd::None, PassEnd::None, kind],
                "{blocks} blocks"
            );
        }
    }

    /// A region of 10 KiB read 4 KiB at a time: fio's third read crosses the region's end
    /// when the file goes on (a 1 MiB file), and the file is done there when it does not
    /// (a 10 KiB file), checked with fio 3.33 (strace: reads at 0, 4096, 8192 and 0, 4096).
    #[test]
    fn a_fixed_size_io_crosses_the_region_end_if_the_file_has_room() {
        for (room, offs, end) in [
            (1 << 20, vec![0, 4096, 8192, 0], PassEnd::End),
            (10240, vec![0, 4096, 0], PassEnd::Short),
        ] {
            let mut g = OffsetGen::new(OffsetParams {
                cross_room: room,
                ..params(10240, 4096)
            });
            let got: Vec<u64> = offs.iter().map(|_| g.next_sequential(4096)).collect();
            assert_eq!(got, offs, "room {room}");
            assert_eq!(g.take_pass_end(), end, "room {room}");
        }
        // A block size range (cross_room 0): the pass ends where the next block won't fit.
        let mut g = OffsetGen::new(params(10240, 4096));
        let got: Vec<u64> = (0..3).map(|_| g.next_sequential(4096)).collect();
        assert_eq!(got, [0, 4096, 0]);
        assert_eq!(g.take_pass_end(), PassEnd::End);
    }

    #[test]
    fn restart_begins_a_fresh_pass() {
        let mut rng = Rng::seeded(1);
        let mut g = OffsetGen::new(params(4 * 4096, 4096));
        g.next_sequential(4096);
        g.next_random(&mut rng, 4096);
        g.restart();
        assert_eq!(g.next_sequential(4096), 0);
        let mut seen: Vec<u64> = (0..4).map(|_| g.next_random(&mut rng, 4096)).collect();
        seen.sort_unstable();
        assert_eq!(seen, [0, 4096, 8192, 12288]);
        assert_eq!(g.take_pass_end(), PassEnd::None);
    }

    #[test]
    fn same_seed_same_sequence() {
        let run = || {
            let mut g = OffsetGen::new(params(1000 * 4096, 4096));
            let mut rng = Rng::seeded(9);
            (0..50)
                .map(|_| g.next_random(&mut rng, 4096))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn sequential_wraps_and_skips_holes() {
        let mut g = OffsetGen::new(OffsetParams {
            hole: 4096,
            ..params(4 * 4096, 4096)
        });
        let offs: Vec<u64> = (0..3).map(|_| g.next_sequential(4096)).collect();
        assert_eq!(offs, vec![0, 8192, 0]);
    }

    #[test]
    fn zipf_is_skewed_towards_low_ranks() {
        let z = Zipf::new(1000, 1.2);
        let mut rng = Rng::seeded(5);
        let low = (0..10_000).filter(|_| z.sample(&mut rng) < 10).count();
        assert!(low > 5_000, "{low}");
    }
}
