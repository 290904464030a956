//! fio's group_reporting merge, as pure functions over the result model.
//!
//! fio sums the job clones of a reporting group into one entry (`sum_thread_stats`). The rules
//! differ by kind of figure, and reporters, `compare` and the store must all apply the same:
//!
//! - Latencies (slat, clat, lat, sync) pool their samples: min of mins, max of maxes, the
//!   mean and deviation of all samples together, histograms added.
//! - Bandwidth and IOPS *sample* summaries are summed as if the clones' windows were aligned:
//!   min, max and mean add up, the sample counts add up and so do the sums of squared
//!   deviations (so the deviation is `sqrt(ΣS / (Σn − 1))`, exactly as fio prints it).
//! - IO counts and bytes add; a direction's runtime is the longest member's.
//! - `runtime_ms` (fio's `job_runtime`) adds up, so `usr / runtime` is the members' average
//!   CPU share, as fio reports it for a group.
//! - CPU times, context switches, faults, depth and latency-bucket counts add.
//! - Name, pid, options, settings and header are the first member's; the error is the first
//!   member's non-zero error.
//! - Server CPU figures are the members' distinct ones (clones of one batch share one).
//! - Counts add saturating: an imported report can carry any figure, and a merge must
//!   never panic or wrap.

use crate::result::{DirResult, JobResult, SampleStats, TimelinePoint};

/// Sums counts without wrapping or panicking (see the module rules); reporters total
/// directions and members with it too.
pub fn saturating_sum(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

/// Merges the clones of one reporting group into one entry; `None` for no jobs.
pub fn merge_jobs(jobs: &[JobResult]) -> Option<JobResult> {
    let (first, rest) = jobs.split_first()?;
    let mut out = first.clone();
    for job in rest {
        merge_job_into(&mut out, job);
    }
    Some(out)
}

/// Adds one job clone to a group entry (see the module rules).
pub fn merge_job_into(dst: &mut JobResult, src: &JobResult) {
    dst.jobs += src.jobs;
    if dst.error == 0 && src.error != 0 {
        dst.error = src.error;
        dst.error_text = src.error_text.clone();
    }
    for target in &src.targets {
        if !dst.targets.contains(target) {
            dst.targets.push(target.clone());
        }
    }
    dst.elapsed_ms = dst.elapsed_ms.max(src.elapsed_ms);
    dst.runtime_ms = dst.runtime_ms.saturating_add(src.runtime_ms);
    dst.end_unix_ms = dst.end_unix_ms.max(src.end_unix_ms);
    for (d, s) in dst.dirs.iter_mut().zip(&src.dirs) {
        merge_dir_into(d, s);
    }
    dst.sync.total_ios = dst.sync.total_ios.saturating_add(src.sync.total_ios);
    dst.sync.closing = dst.sync.closing.saturating_add(src.sync.closing);
    dst.sync.datasyncs = dst.sync.datasyncs.saturating_add(src.sync.datasyncs);
    dst.sync.lat.merge(&src.sync.lat);
    dst.cpu.merge(&src.cpu);
    dst.depth.merge(&src.depth);
    dst.lat_buckets.merge(&src.lat_buckets);
    merge_timeline(&mut dst.timeline, &src.timeline);
    dst.measured.merge(&src.measured);
    // Clones of one batch carry the same measurement of the same server: keep it once.
    for server in &src.server_cpu {
        if !dst.server_cpu.contains(server) {
            dst.server_cpu.push(server.clone());
        }
    }
    // Under group_reporting the group has one window (every clone carries it).
    if dst.steadystate.is_none() {
        dst.steadystate.clone_from(&src.steadystate);
    }
    if dst.latency_target.is_none() {
        dst.latency_target = src.latency_target;
    }
}

/// Adds one direction's figures to another's.
pub fn merge_dir_into(dst: &mut DirResult, src: &DirResult) {
    dst.io_bytes = dst.io_bytes.saturating_add(src.io_bytes);
    dst.total_ios = dst.total_ios.saturating_add(src.total_ios);
    dst.short_ios = dst.short_ios.saturating_add(src.short_ios);
    dst.drop_ios = dst.drop_ios.saturating_add(src.drop_ios);
    dst.runtime_ms = dst.runtime_ms.max(src.runtime_ms);
    dst.slat.merge(&src.slat);
    dst.clat.merge(&src.clat);
    dst.lat.merge(&src.lat);
    sum_samples(&mut dst.bw_samples, &src.bw_samples);
    sum_samples(&mut dst.iops_samples, &src.iops_samples);
    for p in &src.prios {
        match dst.prios.iter_mut().find(|q| q.ioprio == p.ioprio) {
            Some(q) => q.lat.merge(&p.lat),
            None => dst.prios.push(p.clone()),
        }
    }
}

/// All directions of a job folded into one, for unified_rw_reporting (fio's `mixed`).
pub fn mixed_dir(job: &JobResult) -> DirResult {
    let mut out = DirResult::default();
    for d in &job.dirs {
        merge_dir_into(&mut out, d);
    }
    out
}

/// fio's "pure sum" of two sample summaries (see the module rules).
pub fn sum_samples(dst: &mut SampleStats, src: &SampleStats) {
    if src.samples == 0 {
        return;
    }
    if dst.samples == 0 {
        *dst = src.clone();
        return;
    }
    let sq = squared_deviations(dst) + squared_deviations(src);
    dst.min += src.min;
    dst.max += src.max;
    dst.mean += src.mean;
    dst.samples = dst.samples.saturating_add(src.samples);
    dst.stddev = if dst.samples > 1 {
        (sq / (dst.samples - 1) as f64).sqrt()
    } else {
        0.0
    };
}

/// Sum of squared deviations from the mean (Welford's S) behind a sample deviation.
fn squared_deviations(s: &SampleStats) -> f64 {
    if s.samples < 2 {
        0.0
    } else {
        s.stddev * s.stddev * (s.samples - 1) as f64
    }
}

/// How far apart two clones' last timeline points may end and still be one point: each
/// clone's last point ends with its own measurement, and clones started together end a
/// few milliseconds apart (a tenth of the timeline's second, as a short remainder joins
/// the point before it in the sampler).
const LAST_POINT_SLACK_MS: u64 = 100;

/// Adds timeline points with the same end time; keeps the union in time order. The two
/// last points, when they end close together with nothing between them, become one that
/// ends with the later.
fn merge_timeline(dst: &mut Vec<TimelinePoint>, src: &[TimelinePoint]) {
    let Some((src_last, rest)) = src.split_last() else {
        return;
    };
    let dst_last = dst.last().map(|p| p.t_ms);
    for p in rest {
        add_point(dst, p);
    }
    match dst.last_mut() {
        Some(q)
            if Some(q.t_ms) == dst_last
                && q.t_ms.abs_diff(src_last.t_ms) <= LAST_POINT_SLACK_MS =>
        {
            q.t_ms = q.t_ms.max(src_last.t_ms);
            add_counts(q, src_last);
        }
        _ => add_point(dst, src_last),
    }
}

/// Adds a point to a time-ordered timeline: to the one with the same end time, if any.
fn add_point(dst: &mut Vec<TimelinePoint>, p: &TimelinePoint) {
    match dst.binary_search_by_key(&p.t_ms, |q| q.t_ms) {
        Ok(i) => add_counts(&mut dst[i], p),
        Err(i) => dst.insert(i, p.clone()),
    }
}

fn add_counts(q: &mut TimelinePoint, p: &TimelinePoint) {
    for d in 0..3 {
        q.bytes[d] = q.bytes[d].saturating_add(p.bytes[d]);
        q.ios[d] = q.ios[d].saturating_add(p.ios[d]);
        q.lat_sum_ns[d] = q.lat_sum_ns[d].saturating_add(p.lat_sum_ns[d]);
    }
}

/// fio's per-group run status (`Run status group N`), per direction, from the group's
/// reporting entries (merged ones under group_reporting, else one per clone).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupRunStats {
    /// Shortest and longest entry runtime among entries that did IO in the direction, ms.
    pub min_run_ms: [u64; 3],
    pub max_run_ms: [u64; 3],
    /// Slowest and fastest entry bandwidth, bytes/s (integer, as fio computes it).
    pub min_bw: [u64; 3],
    pub max_bw: [u64; 3],
    pub io_bytes: [u64; 3],
    /// All bytes over the longest runtime, bytes/s: the denominator of `per=`.
    pub agg_bw: [u64; 3],
}

impl GroupRunStats {
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = &'a JobResult>) -> Self {
        let mut rs = GroupRunStats::default();
        for job in entries {
            for (d, dir) in job.dirs.iter().enumerate() {
                rs.add_dir(d, dir);
            }
        }
        for d in 0..3 {
            if rs.max_run_ms[d] > 0 {
                rs.agg_bw[d] = mul_div(rs.io_bytes[d], 1000, rs.max_run_ms[d]);
            }
        }
        rs
    }

    /// Adds one entry's direction (fio skips directions that did not run).
    pub fn add_dir(&mut self, d: usize, dir: &DirResult) {
        if dir.runtime_ms == 0 {
            return;
        }
        let first = self.max_run_ms[d] == 0;
        let bw = mul_div(dir.io_bytes, 1000, dir.runtime_ms);
        if first || dir.runtime_ms < self.min_run_ms[d] {
            self.min_run_ms[d] = dir.runtime_ms;
        }
        self.max_run_ms[d] = self.max_run_ms[d].max(dir.runtime_ms);
        if first || bw < self.min_bw[d] {
            self.min_bw[d] = bw;
        }
        self.max_bw[d] = self.max_bw[d].max(bw);
        self.io_bytes[d] = self.io_bytes[d].saturating_add(dir.io_bytes);
    }

    /// Whether any entry did IO in direction `d`.
    pub fn ran(&self, d: usize) -> bool {
        self.max_run_ms[d] > 0
    }
}

/// `a * b / c` without overflow for any realistic byte count.
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    if c == 0 {
        return 0;
    }
    u64::try_from(a as u128 * b as u128 / c as u128).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{CpuUsage, JobHeader, LatBuckets, ReportSettings};

    fn job(name: &str, read_bytes: u64, runtime_ms: u64, lats: &[u64]) -> JobResult {
        let mut dirs: [DirResult; 3] = Default::default();
        dirs[0].io_bytes = read_bytes;
        dirs[0].total_ios = read_bytes / 4096;
        dirs[0].runtime_ms = runtime_ms;
        for &ns in lats {
            dirs[0].clat.record(ns);
        }
        JobResult {
            name: name.into(),
            groupid: 0,
            jobnum: 0,
            jobs: 1,
            pid: 1,
            error: 0,
            error_text: None,
            description: None,
            options: vec![],
            header: JobHeader::default(),
            settings: ReportSettings::default(),
            targets: vec![format!("/tmp/{name}")],
            elapsed_ms: runtime_ms + 5,
            runtime_ms,
            end_unix_ms: 0,
            dirs,
            sync: Default::default(),
            cpu: CpuUsage {
                usr_ns: 100,
                sys_ns: 200,
                ..Default::default()
            },
            depth: Default::default(),
            lat_buckets: LatBuckets::default(),
            timeline: vec![],
            engine_details: vec![],
            disks: Vec::new(),
            server_cpu: Vec::new(),
            measured: Default::default(),
            steadystate: None,
            latency_target: None,
        }
    }

    #[test]
    fn latencies_pool_samples() {
        let a = job("a", 4096 * 10, 1000, &[100, 300]);
        let b = job("b", 4096 * 30, 2000, &[50, 1000, 2000]);
        let m = merge_jobs(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(m.name, "a");
        assert_eq!(m.jobs, 2);
        let c = &m.dirs[0].clat;
        assert_eq!((c.samples, c.min_ns, c.max_ns), (5, 50, 2000));
        assert_eq!(c.mean(), 690.0);
        assert_eq!(c.hist.total(), 5);
        assert_eq!(m.dirs[0].io_bytes, 4096 * 40);
        assert_eq!(m.dirs[0].runtime_ms, 2000);
        assert_eq!(m.runtime_ms, 3000);
        assert_eq!(m.cpu.usr_ns, 200);
        assert_eq!(m.targets, vec!["/tmp/a", "/tmp/b"]);
        assert!(merge_jobs(&[]).is_none());
    }

    #[test]
    fn samples_are_summed_like_fio() {
        // Two jobs: samples {10, 20} and {30, 50, 70}.
        let a = SampleStats::from_values(&[10.0, 20.0]);
        let b = SampleStats::from_values(&[30.0, 50.0, 70.0]);
        let mut s = a.clone();
        sum_samples(&mut s, &b);
        assert_eq!((s.min, s.max, s.mean, s.samples), (40.0, 90.0, 65.0, 5));
        // S_a = 50, S_b = 800: sqrt(850 / 4).
        assert!((s.stddev - (850.0f64 / 4.0).sqrt()).abs() < 1e-9);
        let mut empty = SampleStats::default();
        sum_samples(&mut empty, &a);
        assert_eq!(empty, a);
    }

    #[test]
    fn first_error_wins() {
        let mut a = job("a", 0, 0, &[]);
        let mut b = job("b", 0, 0, &[]);
        let mut c = job("c", 0, 0, &[]);
        b.error = 5;
        b.error_text = Some("Input/output error".into());
        c.error = 28;
        let m = merge_jobs(&[a.clone(), b.clone(), c.clone()]).unwrap();
        assert_eq!(
            (m.error, m.error_text.as_deref()),
            (5, Some("Input/output error"))
        );
        a.error = 1;
        c.error = 0;
        assert_eq!(merge_jobs(&[a, b, c]).unwrap().error, 1);
    }

    #[test]
    fn mixed_folds_directions() {
        let mut j = job("m", 4096 * 10, 1000, &[100]);
        j.dirs[1].io_bytes = 4096 * 5;
        j.dirs[1].total_ios = 5;
        j.dirs[1].runtime_ms = 1001;
        j.dirs[1].clat.record(900);
        j.dirs[0].bw_samples = SampleStats::from_values(&[100.0]);
        j.dirs[1].bw_samples = SampleStats::from_values(&[50.0]);
        let m = mixed_dir(&j);
        assert_eq!(
            (m.io_bytes, m.total_ios, m.runtime_ms),
            (4096 * 15, 15, 1001)
        );
        assert_eq!(
            (m.clat.min_ns, m.clat.max_ns, m.clat.samples),
            (100, 900, 2)
        );
        assert_eq!((m.bw_samples.mean, m.bw_samples.samples), (150.0, 2));
    }

    #[test]
    fn group_run_stats_follow_fio() {
        let a = job("a", 3_000_000, 1000, &[]);
        let b = job("b", 1_000_000, 2000, &[]);
        let idle = job("c", 0, 0, &[]);
        let rs = GroupRunStats::from_entries([&a, &b, &idle]);
        assert_eq!(rs.min_run_ms[0], 1000);
        assert_eq!(rs.max_run_ms[0], 2000);
        assert_eq!(rs.min_bw[0], 500_000);
        assert_eq!(rs.max_bw[0], 3_000_000);
        assert_eq!(rs.io_bytes[0], 4_000_000);
        assert_eq!(rs.agg_bw[0], 2_000_000);
        assert!(rs.ran(0) && !rs.ran(1));
    }

    #[test]
    fn timelines_add_by_time() {
        let mut a = job("a", 0, 0, &[]);
        let mut b = job("b", 0, 0, &[]);
        let p = |t, n| TimelinePoint {
            t_ms: t,
            bytes: [n, 0, 0],
            ios: [1, 0, 0],
            lat_sum_ns: [0; 3],
        };
        a.timeline = vec![p(1000, 1), p(3000, 3)];
        b.timeline = vec![p(1000, 10), p(2000, 20)];
        let m = merge_jobs(&[a, b]).unwrap();
        let got: Vec<(u64, u64)> = m.timeline.iter().map(|p| (p.t_ms, p.bytes[0])).collect();
        assert_eq!(got, vec![(1000, 11), (2000, 20), (3000, 3)]);
    }

    /// Clones' timelines each end with their own measurement: last points a few
    /// milliseconds apart are one point, ending with the later; far apart, or with
    /// another point between, they stay two.
    #[test]
    fn close_last_points_merge() {
        let p = |t, n| TimelinePoint {
            t_ms: t,
            bytes: [n, 0, 0],
            ios: [1, 0, 0],
            lat_sum_ns: [0; 3],
        };
        let merged = |a: Vec<TimelinePoint>, b: Vec<TimelinePoint>| {
            let mut x = job("a", 0, 0, &[]);
            let mut y = job("b", 0, 0, &[]);
            x.timeline = a;
            y.timeline = b;
            let m = merge_jobs(&[x, y]).unwrap();
            m.timeline
                .iter()
                .map(|p| (p.t_ms, p.bytes[0]))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            merged(vec![p(1000, 1), p(1800, 2)], vec![p(1000, 10), p(1803, 20)]),
            [(1000, 11), (1803, 22)]
        );
        assert_eq!(
            merged(
                vec![p(1000, 1), p(1200, 2)],
                vec![p(1000, 10), p(2000, 20), p(2500, 5)]
            ),
            [(1000, 11), (1200, 2), (2000, 20), (2500, 5)]
        );
        assert_eq!(
            merged(
                vec![p(1000, 1), p(1950, 2)],
                vec![p(1000, 10), p(2000, 20), p(2040, 5)]
            ),
            [(1000, 11), (1950, 2), (2000, 20), (2040, 5)]
        );
    }
}
