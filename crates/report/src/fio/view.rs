//! What fio's printers iterate over: reporting entries per group and the group's run status.
//!
//! Like fio's `__show_run_stats`: under group_reporting a group's clones merge into one entry;
//! under `unified_rw_reporting=mixed` an entry's directions fold into one (kept in slot 0 and
//! labelled `mixed`); under `both` the folded direction is kept beside the three.

use storbench_model::merge::saturating_sum;
use storbench_model::merge::{GroupRunStats, merge_jobs, mixed_dir};
use storbench_model::result::{DirResult, JobResult, ReportSettings, RunResult, UnifiedRw};

/// One block of fio output (one JSON `jobs[]` element, one terse line).
#[derive(Clone, Debug)]
pub struct Entry {
    pub job: JobResult,
    /// The folded directions under `unified_rw_reporting=both`.
    pub mixed: Option<DirResult>,
}

impl Entry {
    pub fn unified(&self) -> UnifiedRw {
        self.job.settings.unified_rw
    }

    /// Sum of IOs issued in the data directions (fio's `ddir_rw_sum(total_io_u)`).
    pub fn rw_ios(&self) -> u64 {
        saturating_sum(self.job.dirs.iter().map(|d| d.total_ios))
    }

    /// Label of direction `d` in normal and JSON output.
    pub fn dir_name(&self, d: usize) -> &'static str {
        if self.unified() == UnifiedRw::Mixed {
            "mixed"
        } else {
            storbench_model::result::DDIR_NAMES[d]
        }
    }
}

/// A reporting group with its entries and run status.
#[derive(Clone, Debug)]
pub struct GroupView {
    pub id: u32,
    pub entries: Vec<Entry>,
    pub rs: GroupRunStats,
    /// Unit settings of the group's status lines (fio takes the last entry's).
    pub settings: ReportSettings,
    pub unified: UnifiedRw,
}

/// A multi-host group under group_reporting: one merged entry per host (fio's client mode
/// reports each client's group), in rank order, named `HOST:job` like the jobs.
fn per_host(jobs: &[JobResult]) -> Vec<JobResult> {
    let mut hosts: Vec<&str> = Vec::new();
    for j in jobs {
        let host = storbench_model::hosts::split_name(&j.name).0;
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    hosts
        .into_iter()
        .filter_map(|h| {
            let mine: Vec<JobResult> = jobs
                .iter()
                .filter(|j| storbench_model::hosts::split_name(&j.name).0 == h)
                .cloned()
                .collect();
            merge_jobs(&mine)
        })
        .collect()
}

/// The reporting view of a whole run, in group order.
pub fn groups(run: &RunResult) -> Vec<GroupView> {
    run.groups
        .iter()
        .map(|g| {
            let jobs: Vec<JobResult> = if g.group_reporting && run.hosts.is_some() {
                per_host(&g.jobs)
            } else if g.group_reporting {
                merge_jobs(&g.jobs).into_iter().collect()
            } else {
                g.jobs.clone()
            };
            let entries: Vec<Entry> = jobs.into_iter().map(fold).collect();
            let rs = GroupRunStats::from_entries(entries.iter().map(|e| &e.job));
            let settings = entries
                .last()
                .map(|e| e.job.settings.clone())
                .unwrap_or_default();
            let unified = if entries.iter().any(|e| e.unified() == UnifiedRw::Mixed) {
                UnifiedRw::Mixed
            } else if entries.iter().any(|e| e.unified() == UnifiedRw::Both) {
                UnifiedRw::Both
            } else {
                UnifiedRw::None
            };
            GroupView {
                id: g.id,
                entries,
                rs,
                settings,
                unified,
            }
        })
        .collect()
}

fn fold(mut job: JobResult) -> Entry {
    match job.settings.unified_rw {
        UnifiedRw::None => Entry { job, mixed: None },
        UnifiedRw::Mixed => {
            let mixed = mixed_dir(&job);
            job.dirs = [mixed, DirResult::default(), DirResult::default()];
            Entry { job, mixed: None }
        }
        UnifiedRw::Both => {
            let mixed = Some(mixed_dir(&job));
            Entry { job, mixed }
        }
    }
}

/// Percent of the group's aggregate bandwidth for a mean sample in bytes/s, as fio's normal
/// and JSON outputs compute `per=` / `bw_agg` (mean truncated to whole KiB/s; 100 when the
/// aggregate is at most 1 KiB/s).
pub fn share_of_agg(mean_bytes: f64, agg_bytes: u64) -> f64 {
    if agg_bytes <= 1024 {
        return 100.0;
    }
    let mean_kib = (mean_bytes / 1024.0) as i64 as f64;
    (mean_kib * 100.0 / (agg_bytes as f64 / 1024.0)).min(100.0)
}

/// Values of the percentiles in `list` (ascending) for a latency, ns.
pub fn percentile_values(stats: &storbench_model::result::LatStats, list: &[f64]) -> Vec<u64> {
    stats.percentiles(list)
}

/// The job's percentile list sorted ascending, as fio sorts it before printing.
pub fn sorted_percentiles(settings: &ReportSettings) -> Vec<f64> {
    let mut list: Vec<f64> = settings
        .percentile_list
        .iter()
        .copied()
        .filter(|p| *p > 0.0 && *p <= 100.0)
        .take(20)
        .collect();
    list.sort_by(f64::total_cmp);
    list
}

/// Which percentile sets are shown: (slat, clat, lat). fio turns a set off when its latency
/// is not measured (gtod_reduce, disable_*).
pub fn percentile_flags(s: &ReportSettings) -> (bool, bool, bool) {
    (
        s.slat_percentiles && s.slat_measured,
        s.clat_percentiles && s.clat_measured,
        s.lat_percentiles && s.lat_measured,
    )
}

/// User and system CPU in percent of the entry's runtime (fio's usr_cpu / sys_cpu).
pub fn cpu_percent(job: &JobResult) -> (f64, f64) {
    if job.runtime_ms == 0 {
        return (0.0, 0.0);
    }
    let runtime_ns = job.runtime_ms as f64 * 1e6;
    (
        job.cpu.usr_ns as f64 * 100.0 / runtime_ns,
        job.cpu.sys_ns as f64 * 100.0 / runtime_ns,
    )
}

/// `a * b / c` in integers (fio's bandwidth and IOPS arithmetic), 0 when `c` is 0.
pub fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    if c == 0 {
        return 0;
    }
    u64::try_from(a as u128 * b as u128 / c as u128).unwrap_or(u64::MAX)
}
