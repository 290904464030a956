//! Per-worker statistics filled on the IO path: plain fields owned by one thread, merged and
//! turned into a [`JobResult`](storbench_model::result::JobResult) when the job ends.

use storbench_model::result::{DepthStats, DirResult, LatBuckets, LatStats, SyncResult};

/// Which latencies to record (gtod_reduce / disable_* switch them off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measure {
    pub slat: bool,
    pub clat: bool,
    pub lat: bool,
    /// Any of the three, asked several times per IO: kept rather than computed.
    any: bool,
}

impl Measure {
    pub fn new(slat: bool, clat: bool, lat: bool) -> Measure {
        Measure {
            slat,
            clat,
            lat,
            any: slat || clat || lat,
        }
    }

    /// Whether any per-IO clock reading is needed.
    #[inline]
    pub fn any(&self) -> bool {
        self.any
    }
}

/// Everything a worker counts while measuring (sent whole by a worker in a process of its
/// own, hence serde).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct WorkerStats {
    pub dirs: [DirResult; 3],
    pub sync: SyncResult,
    pub depth: DepthStats,
    pub lat_buckets: LatBuckets,
    /// Completed reads checked for never-written data, and those that were all zeros.
    pub sampled_reads: u64,
    pub zero_reads: u64,
    /// Bytes of the files' regions that are holes as their server tells (NFSv4.2 SEEK),
    /// asked once after the job read; None for local files (measured by `holes.rs`) and
    /// where the server cannot tell.
    pub hole_bytes: Option<u64>,
    /// Errors gone past (`continue_on_error`); counted on the error path only.
    pub errors: storbench_model::result::ErrorCount,
}

impl WorkerStats {
    /// Records one completed data IO. Always inlined: with a second caller (the loop of
    /// jobs without files) the compiler stopped inlining it into the IO loop's `complete`,
    /// which cost the null engine 10 instructions per IO.
    #[inline(always)]
    pub fn complete(
        &mut self,
        d: usize,
        bytes: u64,
        short: bool,
        clat_ns: Option<u64>,
        lat_ns: Option<u64>,
    ) {
        let dir = &mut self.dirs[d];
        dir.io_bytes += bytes;
        dir.total_ios += 1;
        if short {
            dir.short_ios += 1;
        }
        if let Some(c) = clat_ns {
            dir.clat.record(c);
            self.lat_buckets.record(c);
        }
        if let Some(l) = lat_ns {
            dir.lat.record(l);
        }
    }

    /// Starts the per-priority latencies of reads and writes: one entry per priority an
    /// IO may carry (see `worker/cmdprio.rs`); a direction without priorities keeps none.
    pub fn set_prios(&mut self, prios: &[Vec<u16>; 2]) {
        for (dir, list) in self.dirs.iter_mut().zip(prios) {
            dir.prios = list
                .iter()
                .map(|&ioprio| storbench_model::result::PrioLat {
                    ioprio,
                    lat: LatStats::default(),
                })
                .collect();
        }
    }

    /// The priorities of [`WorkerStats::set_prios`], to start them over.
    pub fn prio_values(&self) -> [Vec<u16>; 2] {
        std::array::from_fn(|d| self.dirs[d].prios.iter().map(|p| p.ioprio).collect())
    }

    /// One latency of an IO of direction `d` whose priority is entry `i`.
    #[inline]
    pub fn prio_sample(&mut self, d: usize, i: u8, ns: u64) {
        if let Some(p) = self.dirs[d].prios.get_mut(usize::from(i)) {
            p.lat.record(ns);
        }
    }

    #[inline]
    pub fn slat(&mut self, d: usize, ns: u64) {
        self.dirs[d].slat.record(ns);
    }

    /// Records one sync at the job's end, which fio leaves out of its sync figures.
    pub fn closing_sync_done(&mut self) {
        self.sync.closing += 1;
    }

    /// One fsync, or (`data_only`) one fdatasync, which fio 3.33 counts apart: not in its
    /// sync total but as the reads' `short` IOs.
    pub fn sync_done(&mut self, ns: Option<u64>, data_only: bool) {
        if data_only {
            self.sync.datasyncs += 1;
        } else {
            self.sync.total_ios += 1;
        }
        if let Some(ns) = ns {
            self.sync.lat.record(ns);
        }
    }

    /// `nr` IOs submitted while `depth` were in flight (fio's io_u_mark_depth).
    #[inline]
    pub fn mark_depth(&mut self, depth: u32, nr: u64) {
        let idx = match depth {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.depth.level[idx] += nr;
    }

    #[inline]
    pub fn mark_submit(&mut self, nr: u64) {
        self.depth.submit[batch_bucket(nr)] += 1;
    }

    #[inline]
    pub fn mark_complete(&mut self, nr: u64) {
        self.depth.complete[batch_bucket(nr)] += 1;
    }

    pub fn lat_sum_ns(&self, d: usize) -> u64 {
        self.dirs[d].clat.sum_ns as u64
    }
}

/// fio's submit/complete buckets: 0, 1-4, 5-8, 9-16, 17-32, 33-64, more.
#[inline]
fn batch_bucket(nr: u64) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lat_buckets_follow_fio_ranges() {
        let mut b = LatBuckets::default();
        for ns in [
            1,
            3,
            999,
            1_500,
            249_999,
            250_000,
            1_000_000,
            1_999_999_999,
            2_500_000_000,
        ] {
            b.record(ns);
        }
        assert_eq!(b.ns[0], 1); // 1 ns: below 2
        assert_eq!(b.ns[1], 1); // 3 ns: [2, 4)
        assert_eq!(b.ns[9], 1); // 999 ns: [750, 1000)
        assert_eq!(b.us[0], 1); // 1.5 µs -> 1 µs: below 2
        assert_eq!(b.us[6], 1); // 249 µs: [100, 250)
        assert_eq!(b.us[7], 1); // 250 µs: [250, 500)
        assert_eq!(b.ms[0], 1); // 1 ms: below 2
        assert_eq!(b.ms[10], 1); // 1999 ms
        assert_eq!(b.ms[11], 1); // >= 2000 ms
    }

    #[test]
    fn depth_and_batch_buckets() {
        let mut s = WorkerStats::default();
        s.mark_depth(1, 5);
        s.mark_depth(32, 2);
        s.mark_depth(64, 1);
        assert_eq!(s.depth.level, [5, 0, 0, 0, 0, 2, 1]);
        s.mark_submit(1);
        s.mark_submit(8);
        s.mark_complete(65);
        assert_eq!(s.depth.submit, [0, 1, 1, 0, 0, 0, 0]);
        assert_eq!(s.depth.complete, [0, 0, 0, 0, 0, 0, 1]);
    }
}
