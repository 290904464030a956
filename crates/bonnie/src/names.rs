//! The small files' names, made as bonnie++ makes them: a 10-hex-digit sequence number and
//! 0 to 12 random alphanumerics, number first for the sequential tests and last for the
//! random ones; with several directories each name starts with its directory `NNNNN/`.
//! All names live in one buffer, so the timed loops never allocate.

use std::fmt::Write;

use storbench_core::NameList;

use storbench_model::rng::SplitMix64;

const RAND_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const MAX_RAND_LEN: u64 = 12;

pub(crate) struct Names {
    pub list: NameList,
    pub num_dirs: u32,
}

impl Names {
    /// `count` names spread evenly over `num_dirs` directories.
    pub fn new(count: usize, num_dirs: u32, random_first: bool, rng: &mut SplitMix64) -> Names {
        let mut list = NameList::with_capacity(count, count * 24);
        let mut extra = [0u8; MAX_RAND_LEN as usize];
        for i in 0..count {
            let dir = (i as u64 * u64::from(num_dirs) / count as u64) as u32;
            let len = rng.below(MAX_RAND_LEN + 1) as usize;
            for c in &mut extra[..len] {
                *c = RAND_CHARS[rng.below(RAND_CHARS.len() as u64) as usize];
            }
            let extra = std::str::from_utf8(&extra[..len]).expect("ASCII");
            list.push_with(|text| {
                if num_dirs > 1 {
                    let _ = write!(text, "{dir:05}/");
                }
                let _ = if random_first {
                    write!(text, "{extra}{i:010x}")
                } else {
                    write!(text, "{i:010x}{extra}")
                };
            });
        }
        Names { list, num_dirs }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Name `i` relative to the test directory.
    #[inline]
    pub fn get(&self, i: usize) -> &str {
        self.list.get(i)
    }
}

/// Subdirectory `d` of the test directory, relative to it ("" when there is only one).
pub(crate) fn subdir(num_dirs: u32, d: u32) -> String {
    if num_dirs > 1 {
        format!("{d:05}")
    } else {
        String::new()
    }
}

/// A random permutation of `0..n` (Fisher-Yates).
pub(crate) fn shuffled(n: usize, rng: &mut SplitMix64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_and_random_shapes() {
        let mut rng = SplitMix64::seeded(1);
        let seq = Names::new(3000, 1, false, &mut rng);
        assert_eq!(seq.len(), 3000);
        assert!(seq.get(0).starts_with("0000000000"));
        assert!(seq.get(2999).starts_with(&format!("{:010x}", 2999)));
        let rand = Names::new(10, 1, true, &mut rng);
        assert!(rand.get(7).ends_with("0000000007"));
        for i in 0..seq.len() {
            let n = seq.get(i);
            assert!((10..=22).contains(&n.len()), "{n}");
            assert!(n.bytes().all(|b| b.is_ascii_alphanumeric()));
        }
    }

    #[test]
    fn directories_share_files_evenly() {
        let mut rng = SplitMix64::seeded(2);
        let n = Names::new(1024, 3, false, &mut rng);
        let mut per = [0; 3];
        for i in 0..n.len() {
            let d: usize = n.get(i)[..5].parse().unwrap();
            assert_eq!(&n.get(i)[5..6], "/");
            per[d] += 1;
        }
        assert!(per.iter().all(|&c| (341..=342).contains(&c)), "{per:?}");
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut order = shuffled(1000, &mut SplitMix64::seeded(3));
        assert_ne!(order, (0..1000).collect::<Vec<_>>());
        order.sort_unstable();
        assert_eq!(order, (0..1000).collect::<Vec<_>>());
    }
}
