//! The data the report's charts draw, embedded as JSON: per metric the values of every
//! shared test for every run, latency percentile curves, and per-second timelines.

use serde::Serialize;
use storbench_model::merge::saturating_sum;
use storbench_model::merge::{merge_dir_into, merge_jobs};
use storbench_model::result::{DirResult, LatStats, RunMode, RunResult, TimelinePoint};

use crate::compare::figures::{dir_name, entries_of, unique_name};
use crate::compare::{Comparison, MetricId, MetricRow, NamedRun, TestTable};

/// Percentiles the latency curves are drawn through.
pub const CURVE_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

#[derive(Serialize)]
pub struct ChartData {
    pub runs: Vec<String>,
    pub baseline: usize,
    pub bars: Vec<BarChart>,
    pub percentiles: Vec<Curves>,
    pub histograms: Vec<LatHistogram>,
    pub timelines: Vec<Timeline>,
}

/// Share of IOs (%) per latency bin of one test, per run; bins are [`HIST_BINS_PER_DECADE`]
/// log-spaced bins per decade of µs, `edges_us[i]` the lower edge of bin `i`.
#[derive(Serialize)]
pub struct LatHistogram {
    pub test: String,
    pub edges_us: Vec<f64>,
    pub series: Vec<(usize, Vec<f64>)>,
}

/// Bins per decade of the latency histograms: 0.1 µs steps near 1 µs, 1 ms near 10 ms.
pub const HIST_BINS_PER_DECADE: u32 = 8;

/// One metric across the shared tests; `values[run][test]`, and `too_fast[run][test]` where
/// the run finished the test too fast to time it (bonnie's `+++++`), which has no value.
#[derive(Serialize)]
pub struct BarChart {
    pub title: String,
    pub unit: &'static str,
    pub tests: Vec<String>,
    pub values: Vec<Vec<Option<f64>>>,
    pub too_fast: Vec<Vec<bool>>,
}

/// Latency (µs) at [`CURVE_PERCENTILES`] for each run that has the test.
#[derive(Serialize)]
pub struct Curves {
    pub test: String,
    pub ps: &'static [f64],
    pub series: Vec<(usize, Vec<Option<f64>>)>,
}

/// Per-second MB/s and IOPS of one test, per run: (run, seconds, MB/s, IOPS).
#[derive(Serialize)]
pub struct Timeline {
    pub test: String,
    pub series: Vec<TimelineSeries>,
}

#[derive(Serialize)]
pub struct TimelineSeries {
    pub run: usize,
    pub t_s: Vec<f64>,
    pub mbps: Vec<f64>,
    pub iops: Vec<f64>,
}

/// One test's latency and timeline in one run.
struct Source {
    test: String,
    lat: LatStats,
    points: Vec<(u64, u64, u64)>,
}

pub fn chart_data(runs: &[NamedRun<'_>], c: &Comparison) -> ChartData {
    let sources: Vec<Vec<Source>> = runs.iter().map(|r| sources_of(r.run)).collect();
    let shared: Vec<&str> = c.tests.iter().map(|t| t.test.as_str()).collect();
    ChartData {
        runs: runs.iter().map(|r| r.name.clone()).collect(),
        baseline: c.baseline,
        bars: bars(c),
        percentiles: shared.iter().filter_map(|t| curves(t, &sources)).collect(),
        histograms: shared
            .iter()
            .filter_map(|t| histogram(t, &sources))
            .collect(),
        timelines: shared
            .iter()
            .filter_map(|t| timeline(t, &sources))
            .collect(),
    }
}

fn bars(c: &Comparison) -> Vec<BarChart> {
    let mut metrics: Vec<(MetricId, &'static str)> = Vec::new();
    for row in c.tests.iter().flat_map(|t| &t.rows) {
        if !metrics.contains(&(row.metric, row.unit)) {
            metrics.push((row.metric, row.unit));
        }
    }
    metrics.sort();
    metrics
        .into_iter()
        .map(|(metric, unit)| {
            let tests: Vec<&TestTable> = c
                .tests
                .iter()
                .filter(|t| t.rows.iter().any(|r| r.metric == metric && r.unit == unit))
                .collect();
            let rows: Vec<Option<&MetricRow>> = tests
                .iter()
                .map(|t| t.rows.iter().find(|r| r.metric == metric && r.unit == unit))
                .collect();
            let values = (0..c.runs.len())
                .map(|run| rows.iter().map(|r| r.and_then(|r| r.values[run])).collect())
                .collect();
            let too_fast = (0..c.runs.len())
                .map(|run| {
                    rows.iter()
                        .map(|r| r.is_some_and(|r| r.too_fast[run]))
                        .collect()
                })
                .collect();
            BarChart {
                title: if metric.label() == unit {
                    unit.to_string()
                } else {
                    format!("{} ({unit})", metric.label())
                },
                unit,
                tests: tests.iter().map(|t| t.test.clone()).collect(),
                values,
                too_fast,
            }
        })
        .collect()
}

fn curves(test: &str, sources: &[Vec<Source>]) -> Option<Curves> {
    let series: Vec<(usize, Vec<Option<f64>>)> = sources
        .iter()
        .enumerate()
        .filter_map(|(run, srcs)| {
            let s = srcs.iter().find(|s| s.test == test && s.lat.samples > 0)?;
            let values = s.lat.percentiles(&CURVE_PERCENTILES);
            let us = values
                .iter()
                .map(|&ns| (ns > 0).then(|| ns as f64 / 1000.0))
                .collect::<Vec<_>>();
            us.iter().any(Option::is_some).then_some((run, us))
        })
        .collect();
    (!series.is_empty()).then(|| Curves {
        test: test.to_string(),
        ps: &CURVE_PERCENTILES,
        series,
    })
}

fn histogram(test: &str, sources: &[Vec<Source>]) -> Option<LatHistogram> {
    let found: Vec<(usize, &LatStats)> = sources
        .iter()
        .enumerate()
        .filter_map(|(run, srcs)| {
            let s = srcs.iter().find(|s| s.test == test)?;
            (!s.lat.hist.is_empty()).then_some((run, &s.lat))
        })
        .collect();
    let per = f64::from(HIST_BINS_PER_DECADE);
    let bin = |ns: u64| ((ns.max(1) as f64 / 1000.0).log10() * per).floor() as i64;
    let lo = found.iter().map(|(_, l)| bin(l.min_ns)).min()?;
    let hi = found.iter().map(|(_, l)| bin(l.max_ns)).max()?;
    let n = (hi - lo + 1) as usize;
    let edges_us = (0..=n)
        .map(|i| 10f64.powf((lo + i as i64) as f64 / per))
        .collect();
    let series = found
        .iter()
        .map(|&(run, lat)| {
            let mut counts = vec![0u64; n];
            for (ns, count) in lat.hist.bins() {
                let i = (bin(ns).clamp(lo, hi) - lo) as usize;
                counts[i] = counts[i].saturating_add(count);
            }
            let total = counts.iter().sum::<u64>().max(1) as f64;
            (
                run,
                counts.iter().map(|&c| c as f64 * 100.0 / total).collect(),
            )
        })
        .collect();
    Some(LatHistogram {
        test: test.to_string(),
        edges_us,
        series,
    })
}

/// Sample times on a grid of [`TIME_GRID_S`], so that runs sampled at 2.000 s and 2.004 s
/// share one x value and their lines do not break into dots on the shared axis.
pub const TIME_GRID_S: f64 = 0.1;

fn snap(t_ms: u64) -> f64 {
    let steps = (t_ms as f64 / 1000.0 / TIME_GRID_S).round();
    // Decimal steps, so the JSON says 2.1, not 2.1000000000000001.
    (steps * TIME_GRID_S * 10.0).round() / 10.0
}

fn timeline(test: &str, sources: &[Vec<Source>]) -> Option<Timeline> {
    let series: Vec<TimelineSeries> = sources
        .iter()
        .enumerate()
        .filter_map(|(run, srcs)| {
            let s = srcs
                .iter()
                .find(|s| s.test == test && !s.points.is_empty())?;
            let mut prev = 0u64;
            let mut out = TimelineSeries {
                run,
                t_s: Vec::new(),
                mbps: Vec::new(),
                iops: Vec::new(),
            };
            for &(t_ms, bytes, ios) in &s.points {
                let secs = (t_ms.saturating_sub(prev)).max(1) as f64 / 1000.0;
                prev = t_ms;
                out.t_s.push(snap(t_ms));
                out.mbps.push(bytes as f64 / secs / 1e6);
                out.iops.push(ios as f64 / secs);
            }
            Some(out)
        })
        .collect();
    (!series.is_empty()).then(|| Timeline {
        test: test.to_string(),
        series,
    })
}

/// Tests named exactly as `compare` names them, with their latency and timeline.
fn sources_of(run: &RunResult) -> Vec<Source> {
    let mut out: Vec<Source> = Vec::new();
    for group in &run.groups {
        // quick: one row per test, its thread jobs merged whatever group_reporting says.
        let entries = if run.mode == RunMode::Quick {
            merge_jobs(&group.jobs).into_iter().collect()
        } else {
            entries_of(group)
        };
        for job in &entries {
            let dirs: Vec<(String, DirResult, usize)> = if run.mode == RunMode::Quick {
                let mut all = DirResult::default();
                job.dirs.iter().for_each(|d| merge_dir_into(&mut all, d));
                vec![(job.name.trim().to_string(), all, usize::MAX)]
            } else {
                (0..3)
                    .filter(|&d| job.dirs[d].total_ios > 0)
                    .map(|d| {
                        let name = format!("{} {}", job.name, dir_name(job, d));
                        (name, job.dirs[d].clone(), d)
                    })
                    .collect()
            };
            for (name, dir, d) in dirs {
                if dir.total_ios == 0 {
                    continue;
                }
                let test = unique_name(out.iter().map(|s| s.test.as_str()), &name);
                // quick's rows are total latency (see quick.rs); fio's entries are clat.
                let total_first = run.mode == RunMode::Quick && dir.lat.samples > 0;
                let lat = if total_first || dir.clat.samples == 0 {
                    dir.lat
                } else {
                    dir.clat
                };
                let points = job.timeline.iter().map(|p| project(p, d)).collect();
                out.push(Source { test, lat, points });
            }
        }
    }
    if let Some(h) = run.hosts.as_deref() {
        // The ranks' summed timeline, as `compare` names it; no latency of its own.
        let taken: Vec<&str> = out.iter().map(|s| s.test.as_str()).collect();
        let all = crate::compare::hosts::all_clients(h, &taken);
        let extra: Vec<Source> = all
            .into_iter()
            .map(|(t, gi, d)| Source {
                test: t.test,
                lat: LatStats::default(),
                points: h.groups[gi]
                    .timeline
                    .iter()
                    .map(|p| project(p, d))
                    .collect(),
            })
            .collect();
        out.extend(extra);
    }
    out
}

/// A timeline point's (end ms, bytes, IOs) for direction `d`, or all directions.
fn project(p: &TimelinePoint, d: usize) -> (u64, u64, u64) {
    if d < 3 {
        (p.t_ms, p.bytes[d], p.ios[d])
    } else {
        (p.t_ms, saturating_sum(p.bytes), saturating_sum(p.ios))
    }
}
