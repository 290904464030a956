//! fio's `rate`/`rate_iops` limits: IOs are released on a schedule, either evenly spaced
//! (`rate_process=linear`) or with exponential gaps of the same mean (`poisson`).

use storbench_job::RateProcess;

use storbench_model::rng::Rng;

/// Most the schedule may lag behind the clock before it is pulled forward; a short stall
/// may be caught up, a long one is not turned into a burst.
const MAX_LAG_NS: u64 = 100_000_000;

pub struct RateLimiter {
    /// ns of schedule per byte (bandwidth limit) and per IO (IOPS limit).
    ns_per_byte: f64,
    ns_per_io: f64,
    process: RateProcess,
    next_ns: u64,
    started: bool,
    rng: Rng,
}

impl RateLimiter {
    /// None when neither limit is set.
    pub fn new(
        bytes_per_sec: Option<u64>,
        ios_per_sec: Option<u64>,
        process: RateProcess,
        seed: u64,
    ) -> Option<Self> {
        if bytes_per_sec.is_none() && ios_per_sec.is_none() {
            return None;
        }
        Some(RateLimiter {
            ns_per_byte: bytes_per_sec.map_or(0.0, |r| 1e9 / r.max(1) as f64),
            ns_per_io: ios_per_sec.map_or(0.0, |r| 1e9 / r.max(1) as f64),
            process,
            next_ns: 0,
            started: false,
            rng: Rng::seeded(seed),
        })
    }

    /// May the next IO go at time `now_ns`?
    #[inline]
    pub fn ready(&mut self, now_ns: u64) -> bool {
        if !self.started {
            self.started = true;
            self.next_ns = now_ns;
        } else if self.next_ns + MAX_LAG_NS < now_ns {
            self.next_ns = now_ns - MAX_LAG_NS;
        }
        now_ns >= self.next_ns
    }

    /// Books an IO of `bytes` on the schedule.
    #[inline]
    pub fn charge(&mut self, bytes: u64) {
        let mean = (bytes as f64 * self.ns_per_byte).max(self.ns_per_io);
        let gap = match self.process {
            RateProcess::Linear => mean,
            RateProcess::Poisson => -mean * (1.0 - self.rng.unit()).ln(),
        };
        self.next_ns += gap as u64;
    }

    pub fn next_ns(&self) -> u64 {
        self.next_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_spacing_follows_the_byte_rate() {
        let mut r = RateLimiter::new(Some(1_000_000), None, RateProcess::Linear, 1).unwrap();
        assert!(r.ready(1_000));
        r.charge(1000); // 1000 bytes at 1 MB/s = 1 ms
        assert!(!r.ready(1_000 + 999_000 - 1));
        assert!(r.ready(1_000 + 1_000_000));
    }

    #[test]
    fn iops_limit_applies_per_io() {
        let mut r = RateLimiter::new(None, Some(1000), RateProcess::Linear, 1).unwrap();
        assert!(r.ready(0));
        r.charge(4096);
        assert_eq!(r.next_ns(), 1_000_000);
    }

    #[test]
    fn poisson_keeps_the_mean() {
        let mut r = RateLimiter::new(None, Some(1000), RateProcess::Poisson, 7).unwrap();
        r.ready(0);
        for _ in 0..10_000 {
            r.charge(0);
        }
        let mean = r.next_ns() as f64 / 10_000.0;
        assert!((mean - 1e6).abs() < 5e4, "{mean}");
    }

    #[test]
    fn no_limit_no_limiter() {
        assert!(RateLimiter::new(None, None, RateProcess::Linear, 0).is_none());
    }
}
