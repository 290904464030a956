//! Each metric's mean over a repeated run's rounds with its 95% interval: Student's t for
//! rates, IOPS and CPU; the seeded percentile bootstrap for latency percentiles, whose
//! spread across rounds is skewed (docs/statistics.md). Computed from the stored rounds
//! whenever a run is rendered, so every output shows the same figures.

use std::io::{self, Write};

use serde::Serialize;
use storbench_model::confidence::{Interval, bootstrap_interval, t_interval};
use storbench_model::repeats::round_runs;
use storbench_model::result::RunResult;

use crate::compare::{MetricId, figures_of};

/// One metric of one test over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricInterval {
    pub metric: MetricId,
    pub unit: &'static str,
    #[serde(flatten)]
    pub interval: Interval,
    pub half_width: f64,
    /// The value of each complete round, in order.
    pub rounds: Vec<f64>,
}

/// One test (a fio entry's direction, a quick row) over the rounds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestIntervals {
    pub test: String,
    pub metrics: Vec<MetricInterval>,
}

impl TestIntervals {
    pub fn get(&self, metric: MetricId) -> Option<&MetricInterval> {
        self.metrics.iter().find(|m| m.metric == metric)
    }
}

/// The intervals of a run with at least two complete rounds; empty otherwise.
pub fn of_run(run: &RunResult) -> Vec<TestIntervals> {
    let rounds: Vec<_> = round_runs(run).iter().map(figures_of).collect();
    let Some(last) = rounds.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for test in last {
        let mut metrics = Vec::new();
        for fig in &test.figures {
            let values: Vec<f64> = rounds
                .iter()
                .filter_map(|r| r.iter().find(|t| t.test == test.test))
                .filter_map(|t| t.value(fig.metric))
                .collect();
            let interval = if fig.metric.is_latency() {
                bootstrap_interval(&values)
            } else {
                t_interval(&values)
            };
            if let Some(interval) = interval {
                metrics.push(MetricInterval {
                    metric: fig.metric,
                    unit: fig.unit,
                    half_width: interval.half_width(),
                    interval,
                    rounds: values,
                });
            }
        }
        if !metrics.is_empty() {
            out.push(TestIntervals {
                test: test.test.clone(),
                metrics,
            });
        }
    }
    out
}

/// How many rounds the intervals are over (the complete ones).
pub fn rounds_used(run: &RunResult) -> usize {
    run.repeats.as_ref().map_or(0, |r| r.complete().count())
}

/// `1,412 ± 37`: the mean with four significant digits and the half width to the same
/// last digit, so neither claims more precision than the other.
pub fn plus_minus(mean: f64, half: f64) -> String {
    let m = crate::compare::render::fmt_value(mean);
    let decimals = m.split_once('.').map_or(0, |(_, d)| d.len());
    let h = if half.abs() >= 1000.0 {
        crate::compare::render::fmt_value(half)
    } else {
        format!("{half:.decimals$}")
    };
    format!("{m} ± {h}")
}

/// An interval's cell: `1,412 ± 37` when the mean less the larger side stays at or above
/// zero; else its two ends, the lower one no lower than zero (rates, IOPS and latencies
/// are not negative): `1,192 (0 to 3,461)`, `105,120 (60,200 to 274,727)`.
pub fn interval_cell(mean: f64, low: f64, high: f64) -> String {
    let half = (mean - low).max(high - mean);
    if mean - half >= 0.0 {
        return plus_minus(mean, half);
    }
    let m = crate::compare::render::fmt_value(mean);
    let decimals = m.split_once('.').map_or(0, |(_, d)| d.len());
    let end = |v: f64| {
        if v.abs() >= 1000.0 {
            crate::compare::render::fmt_value(v)
        } else {
            format!("{v:.decimals$}")
        }
    };
    format!("{m} ({} to {})", end(low.max(0.0)), end(high))
}

/// The block after the notes in fio's normal output and the quick table: each test's
/// rate, IOPS and latency percentiles as mean ± half width over the rounds.
pub fn render_block(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let tests = of_run(run);
    if tests.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(
        out,
        "storbench intervals: mean ± half width of the 95% interval over {} rounds \
         (t interval; bootstrap for latency percentiles):",
        rounds_used(run)
    )?;
    for t in &tests {
        let cells: Vec<String> = t
            .metrics
            .iter()
            .filter(|m| m.metric != MetricId::BandwidthMib)
            .map(|m| {
                let value = interval_cell(m.interval.mean, m.interval.low, m.interval.high);
                match m.metric.label() {
                    label if label == m.unit => format!("{label} {value}"),
                    label => format!("{label} {value} {}", m.unit),
                }
            })
            .collect();
        writeln!(out, "  {}: {}", t.test, cells.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_minus_keeps_the_means_precision() {
        assert_eq!(plus_minus(1412.3, 36.8), "1,412 ± 37");
        assert_eq!(plus_minus(28.791, 1.234), "28.79 ± 1.23");
        assert_eq!(plus_minus(150_000.0, 2_500.4), "150,000 ± 2,500");
        assert_eq!(plus_minus(0.5, 0.01234), "0.5000 ± 0.0123");
    }

    #[test]
    fn an_interval_reaching_below_zero_shows_its_ends_from_zero() {
        // t interval of 1,192 with a half width of 2,269: no negative rate is shown.
        assert_eq!(interval_cell(1192.0, -1077.0, 3461.0), "1,192 (0 to 3,461)");
        // A skewed bootstrap interval whose larger side exceeds the mean.
        assert_eq!(
            interval_cell(105_120.0, 60_200.0, 274_727.0),
            "105,120 (60,200 to 274,727)"
        );
        assert_eq!(interval_cell(1412.3, 1375.5, 1449.1), "1,412 ± 37");
    }
}
