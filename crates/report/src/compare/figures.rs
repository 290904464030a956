//! The comparable figures of one run: tests, each with a fixed set of metrics.

use serde::Serialize;
use storbench_model::merge::merge_jobs;
use storbench_model::result::{
    BonnieResult, BonnieTestId, DirResult, GroupResult, JobResult, RunMode, RunResult,
    TimelinePoint, UnifiedRw,
};

/// Metrics in the order tables list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricId {
    BandwidthMb,
    BandwidthMib,
    Iops,
    /// bonnie's seeks/s or files/s.
    Rate,
    ClatP50,
    ClatP99,
    ClatP999,
    /// bonnie's longest single operation.
    MaxLatency,
    CpuPct,
}

impl MetricId {
    pub fn label(self) -> &'static str {
        match self {
            MetricId::BandwidthMb => "bandwidth",
            MetricId::BandwidthMib => "bandwidth",
            MetricId::Iops => "IOPS",
            MetricId::Rate => "rate",
            MetricId::ClatP50 => "latency p50",
            MetricId::ClatP99 => "latency p99",
            MetricId::ClatP999 => "latency p99.9",
            MetricId::MaxLatency => "latency max",
            MetricId::CpuPct => "CPU",
        }
    }

    /// Throughput-like metrics (where bonnie may have printed `+++++`).
    pub fn is_rate(self) -> bool {
        matches!(
            self,
            MetricId::BandwidthMb | MetricId::BandwidthMib | MetricId::Rate
        )
    }

    pub fn is_latency(self) -> bool {
        matches!(
            self,
            MetricId::ClatP50 | MetricId::ClatP99 | MetricId::ClatP999 | MetricId::MaxLatency
        )
    }
}

/// Which way is an improvement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

/// One metric's value; `value` is None when the tool could not measure it (`+++++`).
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub metric: MetricId,
    /// Latencies are in µs, bandwidths in MB/s (10^6) or MiB/s, CPU in % of one core.
    pub unit: &'static str,
    pub better: Better,
    pub value: Option<f64>,
}

/// All figures of one test of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct TestFigures {
    pub test: String,
    pub figures: Vec<Figure>,
    /// The test's rate in each whole second it ran (bytes/s and IOPS), which tells change
    /// from noise where a run has no rounds; empty where not recorded (bonnie, imports).
    pub seconds: Vec<PerSecond>,
}

/// One second of a test's timeline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerSecond {
    pub bytes_per_s: f64,
    pub iops: f64,
}

/// Rates over each timeline interval of at least half a second (a short remainder at the
/// end says little and would weigh as much as a whole second), of the directions `dirs`.
pub(super) fn per_second(timeline: &[TimelinePoint], dirs: &[usize]) -> Vec<PerSecond> {
    let mut prev = 0;
    let mut out = Vec::new();
    for p in timeline {
        let ms = p.t_ms.saturating_sub(prev);
        prev = p.t_ms;
        if ms < 500 {
            continue;
        }
        let sum = |v: &[u64; 3]| dirs.iter().map(|&d| v[d] as f64).sum::<f64>();
        out.push(PerSecond {
            bytes_per_s: sum(&p.bytes) * 1000.0 / ms as f64,
            iops: sum(&p.ios) * 1000.0 / ms as f64,
        });
    }
    out
}

impl TestFigures {
    /// The per-second series of a rate metric, in the metric's unit; None for the others
    /// or without a timeline.
    pub fn series(&self, metric: MetricId) -> Option<Vec<f64>> {
        if self.seconds.is_empty() {
            return None;
        }
        let f: fn(&PerSecond) -> f64 = match metric {
            MetricId::BandwidthMb => |s| s.bytes_per_s / 1e6,
            MetricId::BandwidthMib => |s| s.bytes_per_s / 1_048_576.0,
            MetricId::Iops => |s| s.iops,
            _ => return None,
        };
        Some(self.seconds.iter().map(f).collect())
    }

    pub fn value(&self, metric: MetricId) -> Option<f64> {
        self.figures
            .iter()
            .find(|f| f.metric == metric)
            .and_then(|f| f.value)
    }
}

pub(super) fn fig(
    metric: MetricId,
    unit: &'static str,
    better: Better,
    value: Option<f64>,
) -> Figure {
    Figure {
        metric,
        unit,
        better,
        value,
    }
}

/// The tests of a run: bonnie's columns, or one per fio entry and direction that did IO.
pub fn figures_of(run: &RunResult) -> Vec<TestFigures> {
    match (&run.mode, &run.bonnie) {
        (RunMode::Bonnie, Some(b)) => match run.hosts.as_deref().and_then(|h| h.bonnie.as_ref()) {
            Some(h) => super::hosts::bonnie_hosts(h, b),
            None => bonnie_figures(b),
        },
        (RunMode::Quick, _) => quick_figures(run),
        (RunMode::Diagnose, _) => match &run.diagnosis {
            Some(d) => super::diagnose::ladder_figures(d),
            None => job_figures(run),
        },
        _ => job_figures(run),
    }
}

fn job_figures(run: &RunResult) -> Vec<TestFigures> {
    let mut out: Vec<TestFigures> = Vec::new();
    for group in &run.groups {
        for job in &entries_of(group) {
            let cpu = cpu_pct(job);
            for (d, dir) in job.dirs.iter().enumerate() {
                if dir.total_ios == 0 {
                    continue;
                }
                let name = unique_name(
                    out.iter().map(|t| t.test.as_str()),
                    &format!("{} {}", job.name, dir_name(job, d)),
                );
                let dirs: &[usize] = if dir_name(job, d) == "mixed" {
                    &[0, 1, 2]
                } else {
                    &[d]
                };
                out.push(TestFigures {
                    test: name,
                    figures: dir_figures(dir, cpu),
                    seconds: per_second(&job.timeline, dirs),
                });
            }
        }
    }
    if let Some(h) = run.hosts.as_deref() {
        let taken: Vec<&str> = out.iter().map(|t| t.test.as_str()).collect();
        let all = super::hosts::all_clients(h, &taken);
        out.extend(all.into_iter().map(|(t, _, _)| t));
    }
    out
}

/// A group's reporting entries: merged under group_reporting, else one per job clone.
pub(crate) fn entries_of(group: &GroupResult) -> Vec<JobResult> {
    if group.group_reporting {
        merge_jobs(&group.jobs).into_iter().collect()
    } else {
        group.jobs.clone()
    }
}

/// The quick table's rows, with the figures the quick table prints.
fn quick_figures(run: &RunResult) -> Vec<TestFigures> {
    use Better::*;
    use MetricId::*;
    let mut out: Vec<TestFigures> = Vec::new();
    let timelines = run.groups.iter().filter_map(|g| {
        let merged = merge_jobs(&g.jobs)?;
        // As `quick::rows` skips a group that failed before any IO.
        let failed =
            merged.dirs.iter().all(|d| d.total_ios == 0) && g.jobs.iter().any(|j| j.error != 0);
        (!failed).then_some(merged.timeline)
    });
    for (row, timeline) in crate::quick::rows(run).into_iter().zip(timelines) {
        let name = format!("{} {}", row.test, row.direction);
        let us = |ns: u64| (ns > 0).then(|| ns as f64 / 1000.0);
        let l = &row.latency_ns;
        out.push(TestFigures {
            test: unique_name(out.iter().map(|t| t.test.as_str()), name.trim()),
            figures: vec![
                fig(BandwidthMb, "MB/s", Higher, Some(row.mb_per_s)),
                fig(BandwidthMib, "MiB/s", Higher, Some(row.mib_per_s)),
                fig(Iops, "IOPS", Higher, Some(row.iops)),
                fig(ClatP50, "µs", Lower, us(l.p50)),
                fig(ClatP99, "µs", Lower, us(l.p99)),
                fig(ClatP999, "µs", Lower, us(l.p99_9)),
                fig(CpuPct, "%", Lower, Some(row.cpu_percent)),
            ],
            seconds: per_second(&timeline, &[0, 1, 2]),
        });
    }
    out
}

/// Job names can repeat (clones without group_reporting); later ones get `#2`, `#3`.
pub(crate) fn unique_name<'a>(
    existing: impl Iterator<Item = &'a str> + Clone,
    name: &str,
) -> String {
    let mut candidate = name.to_string();
    let mut n = 1;
    while existing.clone().any(|t| t == candidate) {
        n += 1;
        candidate = format!("{name} #{n}");
    }
    candidate
}

pub(crate) fn dir_name(job: &JobResult, d: usize) -> &'static str {
    if job.settings.unified_rw == UnifiedRw::Mixed && d == 0 {
        return "mixed";
    }
    storbench_model::result::DDIR_NAMES[d]
}

/// usr+sys over the entry's runtime, in % of one core (as fio prints a job's or group's).
fn cpu_pct(job: &JobResult) -> Option<f64> {
    if job.runtime_ms == 0 {
        return None;
    }
    let busy = (job.cpu.usr_ns + job.cpu.sys_ns) as f64;
    Some(busy / (job.runtime_ms as f64 * 1e6) * 100.0)
}

fn dir_figures(dir: &DirResult, cpu: Option<f64>) -> Vec<Figure> {
    use Better::*;
    use MetricId::*;
    let bw = dir.bw_bytes();
    let lat = if dir.clat.samples > 0 {
        &dir.clat
    } else {
        &dir.lat
    };
    let ps = lat.percentiles(&[50.0, 99.0, 99.9]);
    let us = |i: usize| (ps[i] > 0).then(|| ps[i] as f64 / 1000.0);
    let mut figs = vec![
        fig(BandwidthMb, "MB/s", Higher, Some(bw / 1e6)),
        fig(BandwidthMib, "MiB/s", Higher, Some(bw / 1048576.0)),
        fig(Iops, "IOPS", Higher, Some(dir.iops())),
    ];
    if lat.samples > 0 {
        figs.push(fig(ClatP50, "µs", Lower, us(0)));
        figs.push(fig(ClatP99, "µs", Lower, us(1)));
        figs.push(fig(ClatP999, "µs", Lower, us(2)));
    }
    if cpu.is_some() {
        figs.push(fig(CpuPct, "%", Lower, cpu));
    }
    figs
}

/// bonnie++'s column names, as its table heads them.
pub fn bonnie_test_name(id: BonnieTestId) -> &'static str {
    use BonnieTestId::*;
    match id {
        Putc => "Sequential Output Per Chr",
        PutBlock => "Sequential Output Block",
        Rewrite => "Sequential Output Rewrite",
        Getc => "Sequential Input Per Chr",
        GetBlock => "Sequential Input Block",
        Seeks => "Random Seeks",
        SeqCreate => "Sequential Create",
        SeqStat => "Sequential Read (stat)",
        SeqDel => "Sequential Delete",
        RanCreate => "Random Create",
        RanStat => "Random Read (stat)",
        RanDel => "Random Delete",
    }
}

pub(super) fn bonnie_figures(b: &BonnieResult) -> Vec<TestFigures> {
    use Better::*;
    use BonnieTestId::*;
    use MetricId::*;
    b.tests
        .iter()
        .map(|t| {
            let mut figures = match t.id {
                Putc | PutBlock | Rewrite | Getc | GetBlock => {
                    let bytes = t.rate.map(|k| k * 1024.0);
                    vec![
                        fig(BandwidthMb, "MB/s", Higher, bytes.map(|b| b / 1e6)),
                        fig(BandwidthMib, "MiB/s", Higher, bytes.map(|b| b / 1048576.0)),
                    ]
                }
                Seeks => vec![fig(Rate, "seeks/s", Higher, t.rate)],
                _ => vec![fig(Rate, "files/s", Higher, t.rate)],
            };
            if let Some(ns) = t.max_latency_ns {
                figures.push(fig(MaxLatency, "µs", Lower, Some(ns as f64 / 1000.0)));
            }
            figures.push(fig(CpuPct, "%CP", Lower, t.cpu_pct));
            TestFigures {
                test: bonnie_test_name(t.id).to_string(),
                figures,
                seconds: Vec::new(),
            }
        })
        .collect()
}
