//! fio's `zoned`/`zoned_abs` offsets: a draw of 1..=100 picks a zone by its access share,
//! then a block uniformly inside it (`__get_next_rand_offset_zoned{,_abs}`). The table of
//! the 100 draws is built once per file, as fio's `td_zone_gen_index` does, so an IO costs
//! two draws and a lookup.

use storbench_job::Zone;

use storbench_model::rng::Rng;

/// For each of the 100 draws: the zone's first block and its block count.
type DrawTable = [(u64, u64); 100];

/// Per direction: for each of the 100 draws, the zone's first block and its block count;
/// `None` for a direction without zones (uniform over the region).
#[derive(Clone, Debug)]
pub struct ZoneIndex {
    dirs: [Option<Box<DrawTable>>; 3],
    nblocks: u64,
}

impl ZoneIndex {
    /// The index of `zones` over a region of `nblocks` blocks of `block` bytes. Zone sizes
    /// are percent of the region, or bytes with `absolute` (refused when they reach past
    /// the region, as fio refuses them: "zoned_abs sizes exceed file size").
    pub fn new(
        zones: &[Vec<Zone>; 3],
        absolute: bool,
        nblocks: u64,
        block: u64,
    ) -> Result<Self, String> {
        let mut dirs: [Option<Box<DrawTable>>; 3] = Default::default();
        for (slot, zs) in dirs.iter_mut().zip(zones) {
            if zs.is_empty() {
                continue;
            }
            let mut table = Box::new([(0u64, 0u64); 100]);
            let (mut draw, mut prev) = (0usize, 0u64);
            for z in zs {
                let end = prev + z.size;
                let (lo, hi) = if absolute {
                    (prev / block, end / block)
                } else {
                    (
                        prev * nblocks / 100,
                        prev * nblocks / 100 + nblocks * z.size / 100,
                    )
                };
                if absolute && hi > nblocks {
                    return Err(format!(
                        "zoned_abs sizes exceed the file's region: the zones end at {end} bytes, the region has {}",
                        nblocks * block
                    ));
                }
                for entry in table.iter_mut().skip(draw).take(usize::from(z.access)) {
                    *entry = (lo, hi - lo);
                }
                draw += usize::from(z.access);
                prev = end;
            }
            *slot = Some(table);
        }
        Ok(ZoneIndex { dirs, nblocks })
    }

    /// A block for an IO in direction `ddir`.
    #[inline]
    pub fn draw(&self, rng: &mut Rng, ddir: u8) -> u64 {
        match &self.dirs[usize::from(ddir.min(2))] {
            Some(table) => {
                let (lo, n) = table[rng.below(100) as usize];
                lo + if n > 0 { rng.below(n) } else { 0 }
            }
            None => rng.below(self.nblocks),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(access: u8, size: u64) -> Zone {
        Zone { access, size }
    }

    /// 60% of the draws in the first 10% of the blocks, 30% in the next 20%, 10% in the
    /// remaining 70%, within a percent over 100 000 draws.
    #[test]
    fn draws_follow_the_zones() {
        let zs = vec![zone(60, 10), zone(30, 20), zone(10, 70)];
        let idx = ZoneIndex::new(&[zs.clone(), zs.clone(), zs], false, 1000, 4096).unwrap();
        let mut rng = Rng::seeded(3);
        let mut hits = [0u32; 3];
        for _ in 0..100_000 {
            let b = idx.draw(&mut rng, 0);
            assert!(b < 1000);
            hits[if b < 100 {
                0
            } else if b < 300 {
                1
            } else {
                2
            }] += 1;
        }
        for (h, want) in hits.iter().zip([60_000, 30_000, 10_000]) {
            assert!(h.abs_diff(want) < 1000, "{hits:?}");
        }
    }

    #[test]
    fn absolute_zones_and_uniform_directions() {
        let abs = vec![zone(100, 8192)];
        let idx = ZoneIndex::new(&[abs, vec![], vec![]], true, 100, 4096).unwrap();
        let mut rng = Rng::seeded(1);
        assert!((0..1000).all(|_| idx.draw(&mut rng, 0) < 2));
        assert!(
            (0..1000).any(|_| idx.draw(&mut rng, 1) >= 2),
            "writes uniform"
        );
        let err = ZoneIndex::new(&[vec![zone(100, 1 << 20)], vec![], vec![]], true, 100, 4096)
            .unwrap_err();
        assert!(err.contains("exceed"), "{err}");
    }
}
