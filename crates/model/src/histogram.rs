//! fio-compatible log-linear latency histogram ("plat" buckets).
//!
//! Values (nanoseconds) below 128 get a bucket each; above that every power of two is split
//! into 64 equal sub-buckets, so a bucket's width is at most 1/64 of its lower bound and its
//! midpoint is within 1/128 of any value in it. 29 groups of 64 buckets cover values up to
//! about 17 s; larger ones land in the last bucket. Using fio's exact scheme makes our
//! percentiles and json+ `bins` agree with fio's for the same samples.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Sub-bucket bits per power of two.
pub const PLAT_BITS: u32 = 6;
/// Sub-buckets per power of two.
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Number of groups.
pub const PLAT_GROUPS: usize = 29;
/// Number of buckets in one histogram.
pub const PLAT_NR: usize = PLAT_GROUPS * PLAT_VAL as usize;

/// Bucket index of a value in nanoseconds.
#[inline]
pub fn bucket_of(ns: u64) -> usize {
    let msb = 63u32.saturating_sub(ns.leading_zeros());
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = ((ns >> error_bits) & (PLAT_VAL - 1)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value a bucket stands for: its own value below 128 ns, else the midpoint of its range.
pub fn bucket_value(idx: usize) -> u64 {
    debug_assert!(idx < PLAT_NR);
    if (idx as u64) < (PLAT_VAL << 1) {
        return idx as u64;
    }
    let error_bits = (idx as u32 >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = idx as u64 % PLAT_VAL;
    // (k + 0.5) * 2^error_bits, computed exactly as fio's double arithmetic truncates it.
    base + ((2 * k + 1) << error_bits) / 2
}

/// Dense bucket counts; merging is element-wise addition.
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    buckets: Box<[u64; PLAT_NR]>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: Box::new([0; PLAT_NR]),
        }
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.bins()).finish()
    }
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.buckets[bucket_of(ns)] += 1;
    }

    /// Adds `count` samples to the bucket at `idx` (used when importing fio's json+ bins).
    pub fn add_bucket(&mut self, idx: usize, count: u64) {
        self.buckets[idx.min(PLAT_NR - 1)] += count;
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += *b;
        }
    }

    pub fn total(&self) -> u64 {
        self.buckets.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.buckets.iter().all(|&c| c == 0)
    }

    pub fn counts(&self) -> &[u64; PLAT_NR] {
        &self.buckets
    }

    /// Non-empty buckets as (bucket value in ns, count), ascending: fio's json+ `bins`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (bucket_value(i), *c))
    }

    /// Percentile values in ns for each requested percentile (0 < p <= 100), by fio's rule:
    /// the first bucket whose cumulative count reaches p% of all samples. Empty: all zeros.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        let total = self.total();
        let mut out = vec![0u64; list.len()];
        if total == 0 || list.is_empty() {
            return out;
        }
        let mut order: Vec<usize> = (0..list.len()).collect();
        order.sort_by(|&a, &b| list[a].total_cmp(&list[b]));
        let mut next = 0;
        let mut sum = 0u64;
        for (idx, &count) in self.buckets.iter().enumerate() {
            sum += count;
            while next < order.len() && reaches(sum, list[order[next]], total) {
                out[order[next]] = bucket_value(idx);
                next += 1;
            }
            if next == order.len() {
                break;
            }
        }
        out
    }
}

/// Whether `sum` samples reach `p` percent of `total`: `sum >= p / 100 * total`, decided
/// exactly for the f64 value of `p`. fio compares in long double, which agrees with exact
/// arithmetic; plain f64 rounds `99.95 / 100 * 2000` to 1999 and picks a lower bucket.
fn reaches(sum: u64, p: f64, total: u64) -> bool {
    if p.is_nan() || p <= 0.0 {
        return true;
    }
    // p = m * 2^-k with m odd (or k = 0): compare 100 * sum * 2^k with m * total.
    let bits = p.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, exp - 1075)
    };
    while m & 1 == 0 && e < 0 {
        m >>= 1;
        e += 1;
    }
    let lhs = 100 * sum as u128;
    let rhs = m as u128 * total as u128;
    if e >= 0 {
        // Whole even numbers (p = 64.0 gives m = 1, e = 6); p <= 100 keeps e below 8.
        return if e < 8 {
            lhs >= rhs << e
        } else {
            sum as f64 >= p / 100.0 * total as f64
        };
    }
    let k = (-e) as u32;
    if k < lhs.leading_zeros() {
        lhs << k >= rhs
    } else {
        sum as f64 >= p / 100.0 * total as f64
    }
}

/// Stored sparsely: `[[bucket_index, count], ...]`.
impl Serialize for Histogram {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let sparse: Vec<(u16, u64)> = self
            .buckets
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i as u16, *c))
            .collect();
        sparse.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Histogram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let sparse: Vec<(u16, u64)> = Vec::deserialize(d)?;
        let mut h = Histogram::default();
        for (i, c) in sparse {
            if i as usize >= PLAT_NR {
                return Err(serde::de::Error::custom(format!(
                    "histogram bucket {i} out of range"
                )));
            }
            h.buckets[i as usize] += c;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_values_are_exact() {
        for v in 0..128u64 {
            assert_eq!(bucket_of(v), v as usize);
            assert_eq!(bucket_value(v as usize), v);
        }
    }

    #[test]
    fn known_buckets() {
        // 128..=129 share bucket 128 (width 2), midpoint 129.
        assert_eq!(bucket_of(128), 128);
        assert_eq!(bucket_of(129), 128);
        assert_eq!(bucket_value(128), 129);
        // 280576 is a real fio 3.33 clat percentile value: it must be a bucket value.
        assert_eq!(bucket_value(bucket_of(280_576)), 280_576);
        // Values beyond the range saturate in the last bucket.
        assert_eq!(bucket_of(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_follow_cumulative_walk() {
        let mut h = Histogram::default();
        for v in 1..=100u64 {
            h.record(v);
        }
        assert_eq!(
            h.percentiles(&[1.0, 50.0, 99.0, 100.0]),
            vec![1, 50, 99, 100]
        );
        assert_eq!(Histogram::default().percentiles(&[50.0]), vec![0]);
    }

    #[test]
    fn percentile_thresholds_are_exact() {
        // 99.95% of 2000 is a hair above 1999 for the f64 value of 99.95, as in fio.
        assert!(!reaches(1999, 99.95, 2000));
        assert!(reaches(2000, 99.95, 2000));
        assert!(reaches(1000, 50.0, 2000));
        assert!(!reaches(999, 50.0, 2000));
        assert!(reaches(1, 100.0, 1) && !reaches(0, 100.0, 1));
        assert!(reaches(0, 0.0, 10));
        assert!(reaches(64, 64.0, 100) && !reaches(63, 64.0, 100));
        let mut h = Histogram::default();
        for v in 0..2000u64 {
            h.record(if v < 1999 { 50 } else { 100 });
        }
        assert_eq!(h.percentiles(&[99.95]), vec![100]);
    }

    #[test]
    fn serde_round_trip_is_sparse() {
        let mut h = Histogram::default();
        h.record(5);
        h.record(1_000_000);
        let json = serde_json::to_string(&h).unwrap();
        assert_eq!(json, format!("[[5,1],[{},1]]", bucket_of(1_000_000)));
        let back: Histogram = serde_json::from_str(&json).unwrap();
        assert_eq!(back, h);
        assert!(serde_json::from_str::<Histogram>("[[9999,1]]").is_err());
    }

    proptest! {
        #[test]
        fn bucket_value_is_within_one_128th(v in 128u64..(1u64 << 34)) {
            let mid = bucket_value(bucket_of(v));
            let err = mid.abs_diff(v) as f64 / v as f64;
            prop_assert!(err <= 1.0 / 64.0, "v={v} mid={mid}");
        }

        #[test]
        fn buckets_are_monotonic(a in 0u64..(1u64 << 34), b in 0u64..(1u64 << 34)) {
            if a <= b {
                prop_assert!(bucket_of(a) <= bucket_of(b));
            }
        }

        #[test]
        fn merge_equals_combined_samples(xs in proptest::collection::vec(0u64..10_000_000, 0..200),
                                         ys in proptest::collection::vec(0u64..10_000_000, 0..200)) {
            let (mut a, mut b, mut all) = (Histogram::default(), Histogram::default(), Histogram::default());
            xs.iter().for_each(|&x| { a.record(x); all.record(x) });
            ys.iter().for_each(|&y| { b.record(y); all.record(y) });
            a.merge(&b);
            prop_assert_eq!(a.percentiles(&[50.0, 99.0]), all.percentiles(&[50.0, 99.0]));
            prop_assert_eq!(a, all);
        }
    }
}
