//! fio's `rate_min` and `rate_iops_min` (`__check_min_rate`): from two seconds after the
//! job's start, once per cycle of one second (fio's default `rate_cycle`), each direction's
//! bytes (or IOs) done in the last cycle are compared with its minimum; a direction below
//! it ends the job with EIO and fio's message.

use storbench_job::JobSpec;

use crate::error::{EngineError, ErrorKind};

/// fio's settle time before the first check.
const SETTLE_NS: u64 = 2_000_000_000;
/// fio's default `rate_cycle`.
const CYCLE_NS: u64 = 1_000_000_000;

/// What one direction must keep up.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Floor {
    /// Bytes/s (`rate_min`; also the bandwidth check of a direction with `rate`).
    Bytes(u64),
    /// IOs/s (`rate_iops_min`, for a direction without `rate` or `rate_min`).
    Ios(u64),
}

/// One worker's minimum-rate state.
#[derive(Debug)]
pub(super) struct MinRate {
    floors: [Option<Floor>; 2],
    job: String,
    start_ns: u64,
    /// The count (bytes or IOs) and time of each direction's last sample; no sample yet
    /// while the count is 0, as in fio.
    last: [(u64, u64); 2],
    next_check_ns: u64,
}

impl MinRate {
    /// The job's minimum rates, if it has any.
    pub(super) fn new(job: &JobSpec) -> Option<MinRate> {
        let floor = |d: usize| {
            if job.rate[d].is_some() || job.rate_min[d].is_some() {
                job.rate_min[d].map(Floor::Bytes)
            } else {
                job.rate_iops_min[d].map(Floor::Ios)
            }
        };
        let floors = [floor(0), floor(1)];
        floors.iter().any(Option::is_some).then(|| MinRate {
            floors,
            job: job.name.clone(),
            start_ns: 0,
            last: [(0, 0); 2],
            next_check_ns: u64::MAX,
        })
    }

    /// Counts from the job's start (fio's `td->start`).
    pub(super) fn start_at(&mut self, now_ns: u64) {
        self.start_ns = now_ns;
        self.next_check_ns = now_ns.saturating_add(SETTLE_NS);
    }

    /// Whether a check is due at `now_ns` (one comparison per round of IOs).
    #[inline]
    pub(super) fn due(&self, now_ns: u64) -> bool {
        now_ns >= self.next_check_ns
    }

    /// fio's check on each direction that has done IO: `bytes` and `ios` are the totals
    /// done so far per direction. An error when one is below its floor.
    pub(super) fn check(
        &mut self,
        now_ns: u64,
        bytes: [u64; 2],
        ios: [u64; 2],
    ) -> Result<(), EngineError> {
        let mut next = u64::MAX;
        for d in 0..2 {
            let Some(floor) = self.floors[d] else {
                continue;
            };
            if bytes[d] == 0 {
                next = next.min(now_ns);
                continue;
            }
            let count = match floor {
                Floor::Bytes(_) => bytes[d],
                Floor::Ios(_) => ios[d],
            };
            let (last, at) = self.last[d];
            if last > 0 {
                let spent_ms = now_ns.saturating_sub(at) / 1_000_000;
                if spent_ms < CYCLE_NS / 1_000_000 {
                    next = next.min(at + CYCLE_NS);
                    continue;
                }
                let rate = (count - last.min(count)) * 1000 / spent_ms.max(1);
                match floor {
                    Floor::Bytes(min) if rate < min => {
                        return Err(
                            self.not_met(format!("rate_min={min}B/s not met, got {rate}B/s"))
                        );
                    }
                    Floor::Ios(min) if rate < min => {
                        return Err(
                            self.not_met(format!("rate_iops_min={min} not met, got {rate} IOPS"))
                        );
                    }
                    _ => {}
                }
            }
            self.last[d] = (count, now_ns);
            next = next.min(now_ns + CYCLE_NS);
        }
        self.next_check_ns = next;
        Ok(())
    }

    #[cold]
    fn not_met(&self, what: String) -> EngineError {
        EngineError {
            kind: ErrorKind::Os,
            errno: Some(libc::EIO),
            message: format!("{}: {what}", self.job),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn job(f: impl FnOnce(&mut JobSpec)) -> JobSpec {
        let mut j = JobSpec::new("m");
        f(&mut j);
        j
    }

    #[test]
    fn no_floor_no_checks() {
        assert!(MinRate::new(&job(|_| {})).is_none());
        assert!(MinRate::new(&job(|j| j.rate[0] = Some(1 << 20))).is_none());
    }

    #[test]
    fn iops_below_the_floor_end_the_job_after_settling_and_one_cycle() {
        let mut m = MinRate::new(&job(|j| j.rate_iops_min[0] = Some(500))).unwrap();
        m.start_at(0);
        assert!(!m.due(2 * S - 1));
        assert!(m.due(2 * S));
        m.check(2 * S, [4096 * 200, 0], [200, 0]).unwrap();
        assert!(!m.due(3 * S - 1));
        let e = m.check(3 * S, [4096 * 293, 0], [293, 0]).unwrap_err();
        assert_eq!(e.message, "m: rate_iops_min=500 not met, got 93 IOPS");
        assert_eq!(e.errno, Some(libc::EIO));
    }

    #[test]
    fn a_direction_fast_enough_passes() {
        let mut m = MinRate::new(&job(|j| j.rate_min[1] = Some(1000))).unwrap();
        m.start_at(0);
        m.check(2 * S, [0, 5000], [0, 5]).unwrap();
        m.check(3 * S, [0, 6000], [0, 6]).unwrap();
        let e = m.check(4 * S, [0, 6999], [0, 7]).unwrap_err();
        assert_eq!(e.message, "m: rate_min=1000B/s not met, got 999B/s");
    }

    #[test]
    fn rate_iops_min_is_not_checked_where_rate_is_given() {
        let m = MinRate::new(&job(|j| {
            j.rate[0] = Some(1 << 20);
            j.rate_iops_min[0] = Some(10);
        }));
        assert!(m.is_none());
    }
}
