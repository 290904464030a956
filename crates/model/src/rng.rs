//! Small, fast pseudo-random generators for the IO path. Statistical quality matters more
//! than cryptographic strength; speed matters most (one call per IO).

/// xoshiro256** by Blackman and Vigna: fast, 2^256 period, good equidistribution.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose sequence depends only on `seed` (repeatable runs).
    pub fn seeded(seed: u64) -> Self {
        let mut sm = seed;
        let mut s = [0u64; 4];
        for word in &mut s {
            *word = splitmix64(&mut sm);
        }
        Rng { s }
    }

    /// A generator seeded from the clock and the address space (non-repeatable runs).
    pub fn from_entropy() -> Self {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let local = 0u8;
        let addr = &local as *const u8 as u64;
        Rng::seeded(t ^ addr.rotate_left(32) ^ u64::from(std::process::id()))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, n) without modulo bias worth caring about (Lemire's multiply-shift).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `percent`/100.
    #[inline]
    pub fn percent(&mut self, percent: u32) -> bool {
        percent >= 100 || (percent > 0 && self.below(100) < u64::from(percent))
    }

    /// Fills `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next_u64().to_ne_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_ne_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

/// SplitMix64 as a generator of its own: one 64-bit word of state, each draw one
/// [`splitmix64`] step. bonnie's file names, sizes and data come from it, because a `-z`
/// seed has always picked its choices through this sequence (xoshiro's [`Rng`] would pick
/// others); `splitmix_draws_are_fixed` pins the sequence so a seed keeps its choices.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence depends only on `seed`.
    pub fn seeded(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        splitmix64(&mut self.state)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Fills `buf` with the draws' little-endian bytes (a partial last word takes the
    /// first bytes of one more draw).
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

/// SplitMix64 step: turns any seed into well-mixed state words.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mix64(*state)
}

/// A strong 64-bit mixing function (the SplitMix64 finaliser).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// fio's 32-bit combined Tausworthe generator (`lib/rand.c`, taus88) with fio's seeding, for
/// the draws whose exact sequence decides what fio does and so must be reproduced: the
/// direction of each IO of a mixed job (`rwmix_state`). Bit for bit fio 3.33's, including
/// its `(2^31) + (2^17) + (2^7)` (XORs in C: 53) starting word.
#[derive(Clone, Debug)]
pub struct FioRand {
    s: [u32; 3],
}

/// fio's `enum` of seed slots: the rwmix generator's.
pub const FIO_RAND_MIX_OFF: u32 = 4;

impl FioRand {
    /// fio's `init_rand_seed(state, seed, false)`.
    pub fn seeded(seed: u64) -> Self {
        let seed = seed as u32;
        let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
        let floor = |x: u32, m: u32| if x < m { x + m } else { x };
        let s1 = floor(lcg(53), 1);
        let s2 = floor(lcg(s1), 7);
        let s3 = floor(lcg(s2), 15);
        let mut r = FioRand { s: [s1, s2, s3] };
        for _ in 0..6 {
            r.next_u32();
        }
        r
    }

    /// fio's seed for slot `index` of thread `thread_number` (from 1) under a repeatable
    /// run (`setup_random_seeds`: `randseed` times 0x9e370001 four times, then once more
    /// per slot, times the thread number, plus the slot).
    pub fn seed_for(randseed: u64, thread_number: u32, index: u32) -> u64 {
        let mut seed = randseed;
        for _ in 0..4 + index {
            seed = seed.wrapping_mul(0x9e37_0001);
        }
        seed.wrapping_mul(u64::from(thread_number))
            .wrapping_add(u64::from(index))
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        #[inline]
        fn step(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        let [s1, s2, s3] = &mut self.s;
        *s1 = step(*s1, 13, 19, 4_294_967_294, 12);
        *s2 = step(*s2, 2, 25, 4_294_967_288, 4);
        *s3 = step(*s3, 3, 11, 4_294_967_280, 17);
        *s1 ^ *s2 ^ *s3
    }

    /// fio's `rand_between(state, lo, hi)`: inclusive, scaled through a double as fio does.
    #[inline]
    pub fn between(&mut self, lo: u32, hi: u32) -> u32 {
        let r = f64::from(self.next_u32()) / 4_294_967_296.0;
        lo + (f64::from(hi - lo + 1) * r) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draws a seed gives are fixed: bonnie's `-z` seed picks its file names, sizes and
    /// data through them (the values are those of bonnie's generator before it moved here).
    #[test]
    fn splitmix_draws_are_fixed() {
        let mut r = SplitMix64::seeded(5);
        let first = [r.next_u64(), r.next_u64(), r.next_u64()];
        assert_eq!(
            first,
            [
                0x6303_3b0c_a389_c35a,
                0xc097_314d_9397_36f8,
                0x3b92_d3f0_106b_c147
            ]
        );
        assert_eq!(
            [r.below(1000), r.below(1000), r.below(1000)],
            [99, 187, 380]
        );
        let mut buf = [0u8; 11];
        r.fill(&mut buf);
        assert_eq!(buf, [33, 27, 204, 27, 31, 228, 77, 252, 43, 239, 153]);
        let mut again = SplitMix64::seeded(5);
        let mut state = 5;
        assert_eq!(again.next_u64(), splitmix64(&mut state));
    }

    #[test]
    fn seeded_is_repeatable_and_seed_dependent() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::seeded(7);
                move |_| r.next_u64()
            })
            .collect();
        let mut r = Rng::seeded(7);
        assert_eq!(a, (0..4).map(|_| r.next_u64()).collect::<Vec<_>>());
        assert_ne!(Rng::seeded(8).next_u64(), a[0]);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = Rng::seeded(1);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn percent_extremes() {
        let mut r = Rng::seeded(3);
        assert!((0..100).all(|_| r.percent(100)));
        assert!((0..100).all(|_| !r.percent(0)));
        let hits = (0..10_000).filter(|_| r.percent(30)).count();
        assert!((2_700..3_300).contains(&hits), "{hits}");
    }

    /// The first direction draws of fio 3.33's first job (`randseed` 0x89, thread 1), as
    /// a C build of fio's lib/rand.c gives them; fio_crosscheck checks the directions
    /// they lead to against fio itself.
    #[test]
    fn fio_rand_matches_fio() {
        let mut r = FioRand::seeded(FioRand::seed_for(0x89, 1, FIO_RAND_MIX_OFF));
        let first: Vec<u32> = (0..4).map(|_| r.between(1, 100)).collect();
        assert_eq!(first, [47, 4, 37, 78]);
        // The floor of fio's __seed: a zero word becomes its minimum.
        assert!(FioRand::seeded(0).s.iter().all(|&w| w != 0));
    }
}
