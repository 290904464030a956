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
    /// Each column's metric and unit as `compare` gives it, for its intervals.
    #[serde(skip)]
    pub keys: Vec<(MetricId, &'static str)>,
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
        keys,
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

/// A markdown table headed by one line naming the run and one with its settings; a
/// repeated run's cells are means ± the half width of their 95% interval; a judged run gets
/// a Valid column, and the notes follow the table, so a suspect run does not paste as clean.
pub fn render_markdown(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    // Job names and notes are the user's text: control characters are shown, not sent.
    let out = &mut crate::terminal::Escaped::new(out);
    let s = summary(run);
    writeln!(out, "{}\n", title(run))?;
    let settings = crate::compare::settings::settings_line(run);
    if !settings.is_empty() {
        writeln!(out, "{}\n", md(&settings))?;
    }
    if s.rows.is_empty() {
        writeln!(out, "(no test produced figures)")?;
        return markdown_notes(run, out);
    }
    let intervals = crate::intervals::of_run(run);
    let judged = !run.verdicts.is_empty();
    write!(out, "| test |")?;
    for c in &s.columns {
        write!(out, " {} |", c.name)?;
    }
    if judged {
        write!(out, " Valid |")?;
    }
    write!(out, "\n|---|")?;
    for _ in &s.columns {
        write!(out, "---:|")?;
    }
    if judged {
        write!(out, "---|")?;
    }
    writeln!(out)?;
    for r in &s.rows {
        write!(out, "| {} |", md(&r.test))?;
        let iv = intervals.iter().find(|t| t.test == r.test);
        for ((c, v), key) in s.columns.iter().zip(&r.values).zip(&s.keys) {
            let text = match (v, iv.and_then(|t| t.get(key.0))) {
                (None, _) => "-".to_string(),
                (Some(v), _) if c.unit == "%" => percent(*v),
                // The column may be in ms where the interval is in µs.
                (Some(v), Some(m)) if m.interval.mean != 0.0 && *v != 0.0 => {
                    let div = m.interval.mean / v;
                    crate::intervals::interval_cell(*v, m.interval.low / div, m.interval.high / div)
                }
                (Some(v), _) => num(*v),
            };
            write!(out, " {text} |")?;
        }
        if judged {
            write!(out, " {} |", validity(run, &r.test))?;
        }
        writeln!(out)?;
    }
    if !intervals.is_empty() {
        writeln!(
            out,
            "\nMeans over {} rounds ± the half width of their 95% interval.",
            crate::intervals::rounds_used(run)
        )?;
    }
    markdown_notes(run, out)
}

/// The verdict of a summary row's test (`SEQ1M Q8T1 read`, fio's `job0 read`): ok,
/// suspect or INVALID, `-` when the run did not judge it.
fn validity(run: &RunResult, test: &str) -> &'static str {
    run.verdicts
        .iter()
        .find(|v| verdict_of(&v.job, test))
        .map_or("-", |v| validity_name(v.validity))
}

/// Whether a verdict on `job` is one on the summary row `test` (`job0` and `job0 read`).
pub(crate) fn verdict_of(job: &str, test: &str) -> bool {
    test == job
        || test
            .strip_prefix(job)
            .is_some_and(|rest| rest.starts_with(' '))
}

/// A verdict as the Valid column shows it.
pub(crate) fn validity_name(v: storbench_model::result::Validity) -> &'static str {
    match v {
        storbench_model::result::Validity::Valid => "ok",
        storbench_model::result::Validity::Suspect => "suspect",
        storbench_model::result::Validity::Invalid => "INVALID",
    }
}

/// The run's notes as a list, warnings first, as every text output gives them.
fn markdown_notes(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let notes = crate::notes::for_people(&run.notes);
    if notes.is_empty() && !run.interrupted {
        return Ok(());
    }
    writeln!(out, "\nNotes:\n")?;
    if run.interrupted && !run.notes.iter().any(|n| n.code == "warn.interrupted") {
        writeln!(out, "- warning: {}", crate::notes::INTERRUPTED)?;
    }
    for (level, message, _) in notes {
        writeln!(
            out,
            "- {}: {}",
            crate::notes::level_name(level),
            md(&message)
        )?;
    }
    Ok(())
}

/// Text in a markdown table or list: `|` escaped.
fn md(s: &str) -> String {
    s.replace('|', "\\|")
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
