//! One run of any kind as one small table, to paste into a forum post or a spreadsheet
//! (`storbench show RUN --format markdown|csv|json`): a row per test, a column per metric.
//! The figures are the ones `compare` reads from the run, so the two always agree; a quick
//! run gives its eight tests in about ten lines.
//!
//! Markdown is for people: numbers through [`crate::numfmt`], one unit per column (µs, or
//! ms where the column's typical value is 10 ms or more). CSV and JSON keep full precision
//! in the column's stated unit.

use std::io::{self, Write};

use serde::Serialize;
use storbench_model::result::{RunMode, RunResult};

use crate::compare::{MetricId, NamedRun, compare};
use crate::numfmt::{num, percent};

/// Version of the CSV/JSON layout; bumped on incompatible changes.
pub const SCHEMA: &str = "storbench-summary/1";

#[derive(Debug, Serialize)]
pub struct Summary {
    pub schema: &'static str,
    pub mode: RunMode,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Serialize)]
pub struct Column {
    /// `MB/s`, `IOPS`, `p99 (µs)`: the heading, unit included.
    pub name: String,
    pub unit: &'static str,
}

#[derive(Debug, Serialize)]
pub struct Row {
    pub test: String,
    /// In the column's unit; `null` where the test has no such figure.
    pub values: Vec<Option<f64>>,
}

/// The run's tests and figures. MiB/s is left out (MB/s says the same).
pub fn summary(run: &RunResult) -> Summary {
    let named = [NamedRun {
        id: 0,
        name: String::new(),
        run,
    }];
    let c = compare(&named, 0);
    let mut keys: Vec<(MetricId, &'static str)> = Vec::new();
    for r in c.tests.iter().flat_map(|t| &t.rows) {
        if r.metric != MetricId::BandwidthMib && !keys.contains(&(r.metric, r.unit)) {
            keys.push((r.metric, r.unit));
        }
    }
    keys.sort();
    let mut rows: Vec<Row> = c
        .tests
        .iter()
        .map(|t| Row {
            test: t.test.clone(),
            values: keys
                .iter()
                .map(|k| {
                    let r = t.rows.iter().find(|r| (r.metric, r.unit) == *k)?;
                    r.values[0]
                })
                .collect(),
        })
        .collect();
    let columns = keys
        .iter()
        .enumerate()
        .map(|(i, &(metric, unit))| {
            let unit = if unit == "µs" && typical(&rows, i) >= 10_000.0 {
                for r in &mut rows {
                    r.values[i] = r.values[i].map(|v| v / 1000.0);
                }
                "ms"
            } else {
                unit
            };
            Column {
                name: heading(metric, unit),
                unit,
            }
        })
        .collect();
    Summary {
        schema: SCHEMA,
        mode: run.mode,
        columns,
        rows,
    }
}

/// The median of a column, to choose its unit.
fn typical(rows: &[Row], col: usize) -> f64 {
    let mut v: Vec<f64> = rows.iter().filter_map(|r| r.values[col]).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn heading(metric: MetricId, unit: &str) -> String {
    match metric {
        MetricId::BandwidthMb | MetricId::BandwidthMib | MetricId::Iops => unit.to_string(),
        MetricId::CpuPct => "CPU".into(),
        m => {
            let label = m.label().trim_start_matches("latency ");
            format!("{label} ({unit})")
        }
    }
}

/// A markdown table headed by one line naming the run.
pub fn render_markdown(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let s = summary(run);
    writeln!(out, "{}\n", title(run))?;
    if s.rows.is_empty() {
        return writeln!(out, "(no test produced figures)");
    }
    write!(out, "| test |")?;
    for c in &s.columns {
        write!(out, " {} |", c.name)?;
    }
    write!(out, "\n|---|")?;
    for _ in &s.columns {
        write!(out, "---:|")?;
    }
    writeln!(out)?;
    for r in &s.rows {
        write!(out, "| {} |", r.test.replace('|', "\\|"))?;
        for (c, v) in s.columns.iter().zip(&r.values) {
            let text = match v {
                None => "-".to_string(),
                Some(v) if c.unit == "%" => percent(*v),
                Some(v) => num(*v),
            };
            write!(out, " {text} |")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// `**storbench quick** · nfs://nas/tank · 2026-11-29 17:20 UTC`
fn title(run: &RunResult) -> String {
    let kind = match run.mode {
        RunMode::Fio => "fio",
        RunMode::Quick => "quick",
        RunMode::Bonnie => "bonnie",
        RunMode::Diagnose => "diagnose",
    };
    let mut parts = vec![format!("**storbench {kind}**")];
    if let Some(t) = run.environment.as_ref().and_then(|e| e.targets.first()) {
        parts.push(format!("`{}`", t.target.replace('`', "'")));
    }
    parts.push(format!(
        "{} UTC",
        crate::html::utc_minutes(run.started_unix_ms)
    ));
    if run.interrupted {
        parts.push("interrupted (partial)".into());
    }
    parts.join(" · ")
}

/// CSV: a header of `test` and the columns (units in the names), one line per test.
pub fn render_csv(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let s = summary(run);
    write!(out, "test")?;
    for c in &s.columns {
        write!(out, ",{}", csv_field(&c.name))?;
    }
    writeln!(out)?;
    for r in &s.rows {
        write!(out, "{}", csv_field(&r.test))?;
        for v in &r.values {
            match v {
                Some(v) => write!(out, ",{v}")?,
                None => write!(out, ",")?,
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The summary as JSON ([`SCHEMA`]).
pub fn render_json(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &summary(run))?;
    writeln!(out)
}
