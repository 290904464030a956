//! Comparison of stored runs: for every test the runs share, each metric's value per run and
//! its change against a reference run, as text (coloured), markdown, CSV or JSON.
//!
//! Tests are fio's job/group entries by direction (group_reporting merged with
//! [`storbench_model::merge`]), the quick preset's tests likewise, and bonnie's columns.
//! Runs are compared on the tests they share; what is not shared is listed in notes.
//!
//! Each difference is judged a real change, noise, or beyond telling ([`noise`]), the
//! differences of one comparison together; a run with rounds
//! (`--repeat`) is compared by its rounds' mean, shown with its 95% interval. Settings that
//! change a result and differ between the runs are warned about up front, and differences
//! in their recorded environments listed ([`settings`]).

pub(crate) mod answer;
mod diagnose;
pub(crate) mod figures;
pub(crate) mod hosts;
pub mod noise;
pub(crate) mod render;
pub mod settings;

use serde::Serialize;
use storbench_model::confidence::{Interval, bootstrap_interval, t_interval};
use storbench_model::repeats::round_runs;
use storbench_model::result::RunResult;

pub use figures::{Better, Figure, MetricId, PerSecond, TestFigures, figures_of};
pub use noise::{Basis, Call, Verdict};
pub use render::{Format, render};

/// A run to compare and the name its column gets.
pub struct NamedRun<'a> {
    pub id: i64,
    pub name: String,
    pub run: &'a RunResult,
}

/// One compared run, as named in the tables.
#[derive(Clone, Debug, Serialize)]
pub struct RunColumn {
    pub id: i64,
    pub name: String,
    pub mode: String,
    pub started_unix_ms: u64,
    /// Complete rounds (`--repeat`); 1 for a run without repeats.
    pub rounds: usize,
    /// The run's settings line ([`settings::settings_line`]), for markdown.
    #[serde(skip)]
    pub settings: String,
    /// Each judged test's verdict as the Valid column shows it (`ok`, `suspect`, `INVALID`).
    #[serde(skip)]
    pub validity: Vec<(String, &'static str)>,
    /// The run's notes as people read them: `warning: ...`.
    #[serde(skip)]
    pub run_notes: Vec<String>,
}

/// Everything `compare` prints.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub runs: Vec<RunColumn>,
    /// Index into `runs` of the baseline.
    pub baseline: usize,
    pub tests: Vec<TestTable>,
    /// What is not compared and why.
    pub notes: Vec<String>,
    /// Settings that change a result and differ between the runs: printed first, since
    /// such runs do not measure the same thing.
    pub warnings: Vec<String>,
    /// Recorded facts of the runs' environments that differ (kernel, file system, mount
    /// options, device, link speed, ...).
    pub environment: Vec<String>,
}

/// One test across runs.
#[derive(Clone, Debug, Serialize)]
pub struct TestTable {
    pub test: String,
    /// The run changes are measured against: the baseline, or the first run that has this
    /// test when the baseline does not.
    pub reference: usize,
    pub rows: Vec<MetricRow>,
}

/// One metric of one test across runs; `None` where a run lacks it.
#[derive(Clone, Debug, Serialize)]
pub struct MetricRow {
    pub metric: MetricId,
    pub unit: &'static str,
    pub better: Better,
    pub values: Vec<Option<f64>>,
    /// Percentage change against the reference run's value.
    pub change_pct: Vec<Option<f64>>,
    /// The run finished the test too fast to time it (bonnie's `+++++`): no rate, no CPU.
    pub too_fast: Vec<bool>,
    /// The 95% interval of the value over the run's rounds (its value is then the mean).
    pub intervals: Vec<Option<Interval>>,
    /// Whether the change against the reference is real or within the noise; None for
    /// the reference and where neither rounds nor enough seconds are there to tell.
    pub verdicts: Vec<Option<Verdict>>,
}

impl MetricRow {
    /// Run `i`'s value as a table shows it: bonnie++'s marks for a test too fast to time
    /// (`+++++` for the rate, `+++` for %CP), `-` where the run lacks the figure.
    pub fn cell(&self, i: usize, fmt: impl Fn(f64) -> String) -> String {
        match self.values[i] {
            Some(v) => fmt(v),
            None if self.too_fast[i] && self.metric.is_rate() => "+++++".to_string(),
            None if self.too_fast[i] && self.metric == MetricId::CpuPct => "+++".to_string(),
            None => "-".to_string(),
        }
    }
}

/// Builds the comparison; `baseline` indexes `runs` (clamped).
pub fn compare(runs: &[NamedRun<'_>], baseline: usize) -> Comparison {
    let baseline = baseline.min(runs.len().saturating_sub(1));
    let per_run: Vec<Vec<TestFigures>> = runs.iter().map(|r| figures_of(r.run)).collect();
    let per_round: Vec<Vec<Vec<TestFigures>>> = runs
        .iter()
        .map(|r| round_runs(r.run).iter().map(figures_of).collect())
        .collect();
    let mut order: Vec<&str> = Vec::new();
    for figs in std::iter::once(&per_run[baseline]).chain(&per_run) {
        for t in figs {
            if !order.contains(&t.test.as_str()) {
                order.push(&t.test);
            }
        }
    }
    let mut tests = Vec::new();
    let mut notes: Vec<String> = mixed_modes_note(runs).into_iter().collect();
    let mut too_fast = Vec::new();
    let mut unshared: Vec<Vec<&str>> = vec![Vec::new(); runs.len()];
    for name in order {
        let found: Vec<Option<&TestFigures>> = per_run
            .iter()
            .map(|figs| figs.iter().find(|t| t.test == name))
            .collect();
        let present: Vec<usize> = (0..runs.len()).filter(|&i| found[i].is_some()).collect();
        // A test is compared where two runs have it; a single run (show, a one-run report)
        // keeps all of its tests.
        if present.len() < runs.len().min(2) {
            if let Some(&only) = present.first() {
                unshared[only].push(name);
            }
            continue;
        }
        let reference = if found[baseline].is_some() {
            baseline
        } else {
            present[0]
        };
        if reference != baseline {
            notes.push(format!(
                "{name}: the baseline {} did not run this test; changes are against {}",
                runs[baseline].name, runs[reference].name
            ));
        }
        too_fast.extend(too_fast_notes(name, &found, runs));
        let rounds: Vec<Vec<&TestFigures>> = per_round
            .iter()
            .map(|rs| {
                rs.iter()
                    .filter_map(|figs| figs.iter().find(|t| t.test == name))
                    .collect()
            })
            .collect();
        tests.push(table(name, reference, &found, &rounds));
    }
    for (i, names) in unshared.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        notes.push(format!(
            "only in {}, not compared: {}",
            runs[i].name,
            names.join(", ")
        ));
    }
    notes.extend(too_fast);
    let mut family: Vec<&mut Verdict> = tests
        .iter_mut()
        .flat_map(|t| &mut t.rows)
        .flat_map(|r| r.verdicts.iter_mut().flatten())
        .collect();
    noise::adjust(&mut family);
    Comparison {
        runs: runs
            .iter()
            .map(|r| RunColumn {
                id: r.id,
                name: r.name.clone(),
                mode: format!("{:?}", r.run.mode).to_lowercase(),
                started_unix_ms: r.run.started_unix_ms,
                rounds: r
                    .run
                    .repeats
                    .as_ref()
                    .map_or(1, |rep| rep.complete().count()),
                settings: settings::settings_line(r.run),
                validity: r
                    .run
                    .verdicts
                    .iter()
                    .map(|v| (v.job.clone(), crate::summary::validity_name(v.validity)))
                    .collect(),
                run_notes: crate::notes::for_people(&r.run.notes)
                    .into_iter()
                    .map(|(level, message, _)| {
                        format!("{}: {message}", crate::notes::level_name(level))
                    })
                    .collect(),
            })
            .collect(),
        baseline,
        tests,
        notes,
        warnings: settings::setting_warnings(runs),
        environment: settings::environment_differences(runs)
            .into_iter()
            .chain(settings::load_difference(runs))
            .collect(),
    }
}

/// Runs of different kinds (fio, quick, bonnie) name their tests differently, so comparing
/// them finds little or nothing in common; this says why rather than leaving a bare "share
/// no test".
fn mixed_modes_note(runs: &[NamedRun<'_>]) -> Option<String> {
    let mode = |r: &NamedRun<'_>| format!("{:?}", r.run.mode).to_lowercase();
    let first = runs.first().map(mode)?;
    if runs.iter().all(|r| mode(r) == first) {
        return None;
    }
    let kinds: Vec<String> = runs
        .iter()
        .map(|r| format!("{} is a {} run", r.name, mode(r)))
        .collect();
    Some(format!(
        "{}: runs of different kinds measure different tests; only tests they share are \
         compared",
        kinds.join(", ")
    ))
}

/// Rows for every metric any run has for this test, in the metrics' fixed order; `rounds`
/// holds each run's rounds of this test (empty for a run without repeats).
fn table(
    name: &str,
    reference: usize,
    found: &[Option<&TestFigures>],
    rounds: &[Vec<&TestFigures>],
) -> TestTable {
    let mut metrics: Vec<(MetricId, &'static str, Better)> = Vec::new();
    for fig in found.iter().flatten().flat_map(|t| &t.figures) {
        if !metrics.iter().any(|m| m.0 == fig.metric) {
            metrics.push((fig.metric, fig.unit, fig.better));
        }
    }
    metrics.sort_by_key(|m| m.0);
    let rows = metrics
        .into_iter()
        .map(|(metric, unit, better)| {
            let evidence: Vec<noise::Evidence> = found
                .iter()
                .zip(rounds)
                .map(|(t, rs)| noise::Evidence {
                    rounds: rs.iter().filter_map(|r| r.value(metric)).collect(),
                    seconds: t.and_then(|t| t.series(metric)),
                })
                .collect();
            let intervals: Vec<Option<Interval>> = evidence
                .iter()
                .map(|e| {
                    if metric.is_latency() {
                        bootstrap_interval(&e.rounds)
                    } else {
                        t_interval(&e.rounds)
                    }
                })
                .collect();
            let values: Vec<Option<f64>> = found
                .iter()
                .zip(&intervals)
                .map(|(t, iv)| match iv {
                    Some(iv) => Some(iv.mean),
                    None => t.and_then(|t| t.value(metric)),
                })
                .collect();
            let base = values[reference];
            let change_pct = values.iter().map(|v| pct_change(base, *v)).collect();
            let too_fast = found.iter().map(|t| t.is_some_and(was_too_fast)).collect();
            let verdicts = (0..found.len())
                .map(|i| {
                    let both = found[i].is_some() && found[reference].is_some();
                    (i != reference && both)
                        .then(|| noise::judge(&evidence[reference], &evidence[i]))
                        .flatten()
                })
                .collect();
            MetricRow {
                metric,
                unit,
                better,
                values,
                change_pct,
                too_fast,
                intervals,
                verdicts,
            }
        })
        .collect();
    TestTable {
        test: name.to_string(),
        reference,
        rows,
    }
}

/// `(v - base) / base` in percent; None without both values or with a zero base.
pub fn pct_change(base: Option<f64>, v: Option<f64>) -> Option<f64> {
    match (base, v) {
        (Some(b), Some(v)) if b != 0.0 && b.is_finite() && v.is_finite() => {
            Some((v - b) / b * 100.0)
        }
        _ => None,
    }
}

/// A test without a rate: bonnie's `+++++`, the only way a run that has a test lacks it.
fn was_too_fast(t: &TestFigures) -> bool {
    t.figures
        .iter()
        .any(|f| f.metric.is_rate() && f.value.is_none())
}

/// bonnie's `+++++`: a test too short to time gives no rate. Only a run that has the test
/// can have finished it too fast (a run without it is listed as not sharing it), and a
/// `+++++` is worth explaining even when every run printed it.
fn too_fast_notes(
    test: &str,
    found: &[Option<&TestFigures>],
    runs: &[NamedRun<'_>],
) -> Vec<String> {
    found
        .iter()
        .zip(runs)
        .filter_map(|(t, run)| t.map(|t| (t, run)))
        .filter(|(t, _)| was_too_fast(t))
        .map(|(_, run)| {
            format!(
                "{test}: {} finished too fast to measure (bonnie's +++++)",
                run.name
            )
        })
        .collect()
}
