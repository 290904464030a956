//! Writing a [`Comparison`] as a terminal table, markdown, CSV or JSON.

use std::io::{self, Write};

use super::{Better, Comparison, MetricRow, TestTable};
use crate::intervals::interval_cell;

/// Output formats of `compare`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Aligned tables; improvements green and regressions red when `color` is set.
    /// `width` is the terminal's in columns: below [`NARROW_BELOW`] each run's value gets a
    /// line of its own; None (not a terminal) is wide.
    Text {
        color: bool,
        width: Option<usize>,
    },
    Markdown,
    Csv,
    Json,
}

/// Terminals narrower than this get the narrow layout.
pub const NARROW_BELOW: usize = 100;

/// Changes smaller than this are noise and stay uncoloured.
const COLOR_THRESHOLD_PCT: f64 = 1.0;

pub fn render(c: &Comparison, format: Format, out: &mut dyn Write) -> io::Result<()> {
    match format {
        Format::Text { color, width } => {
            let narrow = width.is_some_and(|w| w < NARROW_BELOW);
            let Some(width) = width else {
                return text(&for_terminal(c), color, narrow, out);
            };
            let mut drawn = Vec::new();
            text(&for_terminal(c), color, narrow, &mut drawn)?;
            out.write_all(fitted(&String::from_utf8_lossy(&drawn), width).as_bytes())
        }
        Format::Markdown => markdown(&for_terminal(c), out),
        Format::Csv => csv(c, out),
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, c)?;
            writeln!(out)
        }
    }
}

/// `text`'s lines broken at spaces to `width` columns (continuations indented two more
/// than their line), so the answer, the advice and the notes do not wrap mid-word. A
/// coloured line is a table row, whose columns the layout already fits.
fn fitted(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        if line.contains('\x1b') {
            out.push_str(line);
        } else {
            let lead = line.len() - line.trim_start().len();
            out.push_str(&crate::notes::wrap(line, width, lead + 2));
        }
        out.push('\n');
    }
    out
}

/// The comparison with the user's text (run names and labels, test and job names, notes)
/// escaped for a terminal; the colours `text` adds are its own.
fn for_terminal(c: &Comparison) -> Comparison {
    let esc = |s: &String| crate::terminal::escape(s).into_owned();
    let mut c = c.clone();
    for r in &mut c.runs {
        r.name = esc(&r.name);
        r.settings = esc(&r.settings);
        r.run_notes = r.run_notes.iter().map(esc).collect();
        for (job, _) in &mut r.validity {
            *job = esc(job);
        }
    }
    for t in &mut c.tests {
        t.test = esc(&t.test);
    }
    c.notes = c.notes.iter().map(esc).collect();
    c.warnings = c.warnings.iter().map(esc).collect();
    c.environment = c.environment.iter().map(esc).collect();
    c
}

fn run_title(c: &Comparison, i: usize) -> String {
    let r = &c.runs[i];
    if r.name == format!("#{}", r.id) {
        r.name.clone()
    } else {
        format!("{} (#{})", r.name, r.id)
    }
}

fn header_line(c: &Comparison) -> String {
    let names: Vec<String> = (0..c.runs.len()).map(|i| run_title(c, i)).collect();
    format!(
        "Comparing {}; changes against {}",
        names.join(", "),
        run_title(c, c.baseline)
    )
}

/// The display unit of a row (a metric across runs), one for the whole row: latencies in
/// the unit [`crate::numfmt::TimeUnit::for_column`] picks from their least value (µs in
/// the figures, so `div` converts from µs); other metrics in their own unit.
pub fn display_unit(row: &MetricRow) -> (&'static str, f64) {
    if !row.metric.is_latency() {
        return (row.unit, 1.0);
    }
    let unit =
        crate::numfmt::TimeUnit::for_column(row.values.iter().flatten().map(|us| us * 1000.0));
    (unit.name, unit.ns / 1000.0)
}

/// `bandwidth MB/s`, `latency p99 µs`, and `IOPS` (not `IOPS IOPS`).
pub fn row_title(row: &MetricRow, unit: &str) -> String {
    let label = row.metric.label();
    if label == unit {
        label.to_string()
    } else {
        format!("{label} {unit}")
    }
}

/// Four significant digits, thousands grouped above 1000 (`43,363`, `28.79`, `0.1234`):
/// the one number formatter of the text outputs ([`crate::numfmt::num`]).
pub fn fmt_value(v: f64) -> String {
    crate::numfmt::num(v)
}

/// A row's value as shown: CPU as a whole percentage (`7%`, never `7.494`), other
/// metrics by [`fmt_value`] in the row's display unit (`div` from [`display_unit`]).
pub fn row_value(row: &MetricRow, v: f64, div: f64) -> String {
    if row.metric == crate::compare::MetricId::CpuPct {
        crate::numfmt::percent(v)
    } else {
        fmt_value(v / div)
    }
}

pub fn fmt_change(p: f64) -> String {
    format!("{p:+.1}%")
}

/// Cells of one table: a heading row, then one row per metric.
fn cells(c: &Comparison, t: &TestTable) -> Vec<Vec<(String, Option<bool>)>> {
    let mut head = vec![("metric".to_string(), None)];
    for i in 0..c.runs.len() {
        head.push((c.runs[i].name.clone(), None));
        if i != t.reference {
            head.push(("Δ".to_string(), None));
        }
    }
    let mut rows = vec![head];
    for row in &t.rows {
        let (unit, div) = display_unit(row);
        let mut line = vec![(row_title(row, unit), None)];
        for i in 0..c.runs.len() {
            let v = match row.intervals[i] {
                Some(iv) => interval_cell(iv.mean / div, iv.low / div, iv.high / div),
                None => row.cell(i, |v| row_value(row, v, div)),
            };
            line.push((v, None));
            if i != t.reference {
                // A judged change is coloured only when real; an unjudged one when large.
                let verdict = row.verdicts[i];
                let good = row.change_pct[i]
                    .filter(|p| match verdict {
                        Some(v) => v.significant,
                        None => p.abs() >= COLOR_THRESHOLD_PCT,
                    })
                    .map(|p| (p > 0.0) == (row.better == Better::Higher));
                let mut text = row.change_pct[i].map_or_else(|| "-".to_string(), fmt_change);
                if let Some(v) = verdict {
                    text = format!("{text} {}", v.mark());
                }
                line.push((text, good));
            }
        }
        rows.push(line);
    }
    rows
}

/// The settings warnings and environment differences, before the tables; `bullet` starts
/// each line (markdown's `- `).
fn write_preamble(c: &Comparison, out: &mut dyn Write, bullet: &str) -> io::Result<()> {
    for w in &c.warnings {
        writeln!(
            out,
            "{bullet}warning: {w}; these runs do not measure the same thing"
        )?;
    }
    if !c.environment.is_empty() {
        writeln!(out, "{bullet}environments differ:")?;
        for e in &c.environment {
            writeln!(out, "{bullet}  {e}")?;
        }
    }
    if c.runs.iter().any(|r| r.rounds > 1) {
        let rounds: Vec<String> = c
            .runs
            .iter()
            .map(|r| format!("{} {}", r.name, r.rounds))
            .collect();
        writeln!(
            out,
            "{bullet}rounds: {}; a run's value is its rounds' mean ± the half width of its 95% interval",
            rounds.join(", ")
        )?;
    }
    if c.tests
        .iter()
        .flat_map(|t| &t.rows)
        .any(|r| r.verdicts.iter().any(Option::is_some))
    {
        writeln!(
            out,
            "{bullet}Δ real: beyond the noise (Welch's t-test on the rounds, Benjamini–Hochberg over this \
             comparison at {}%, and at least {}%); noise: within ±{}%; cannot tell: too few rounds or \
             too much spread; ~: judged from per-second rates, weaker than rounds",
            super::noise::FALSE_CHANGE_RATE * 100.0,
            super::noise::NOISE_FLOOR_PCT,
            super::noise::NOISE_MARGIN_PCT,
        )?;
    }
    Ok(())
}

/// The answer line and the advice, right under the heading.
fn write_answer(c: &Comparison, out: &mut dyn Write, bullet: &str) -> io::Result<()> {
    for line in [super::answer::summary(c), super::answer::advice(c)]
        .into_iter()
        .flatten()
    {
        writeln!(out, "{bullet}{line}")?;
    }
    Ok(())
}

/// Wraps a cell in the colour its change calls for.
fn paint(text: String, color: bool, good: Option<bool>) -> String {
    match (color, good) {
        (true, Some(true)) => format!("\x1b[32m{text}\x1b[0m"),
        (true, Some(false)) => format!("\x1b[31m{text}\x1b[0m"),
        _ => text,
    }
}

fn text(c: &Comparison, color: bool, narrow: bool, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", header_line(c))?;
    write_answer(c, out, "")?;
    write_preamble(c, out, "")?;
    for t in &c.tests {
        writeln!(out)?;
        writeln!(out, "{}", t.test)?;
        let rows = cells(c, t);
        if narrow {
            narrow_table(c, t, &rows, color, out)?;
            continue;
        }
        let ncols = rows[0].len();
        let widths: Vec<usize> = (0..ncols)
            .map(|col| {
                rows.iter()
                    .map(|r| r[col].0.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for r in &rows {
            let mut line = String::from(" ");
            for (col, (cell, good)) in r.iter().enumerate() {
                let pad = widths[col] - cell.chars().count();
                let padded = if col == 0 {
                    format!(" {cell}{}", " ".repeat(pad))
                } else {
                    format!("  {}{cell}", " ".repeat(pad))
                };
                line.push_str(&paint(padded, color, *good));
            }
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    write_notes(c, out, "")
}

/// One metric per heading line, then one line per run: name, value, change against the
/// reference. Fits 80 columns however many runs are compared.
fn narrow_table(
    c: &Comparison,
    t: &TestTable,
    rows: &[Vec<(String, Option<bool>)>],
    color: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let name_w = c
        .runs
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0);
    let value_w = rows[1..]
        .iter()
        .flat_map(|r| per_run(r, c.runs.len(), t.reference))
        .map(|(v, _)| v.0.chars().count())
        .max()
        .unwrap_or(0);
    for r in &rows[1..] {
        writeln!(out, "  {}", r[0].0)?;
        for (i, (value, change)) in per_run(r, c.runs.len(), t.reference).enumerate() {
            let name = &c.runs[i].name;
            let mut line = format!(
                "    {name}{}  {}{}",
                " ".repeat(name_w - name.chars().count()),
                " ".repeat(value_w - value.0.chars().count()),
                value.0
            );
            if let Some((change, good)) = change {
                line.push_str("  ");
                line.push_str(&paint(change.clone(), color, *good));
            }
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    Ok(())
}

/// A row's cells by run: the value, and the change cell for every run but the reference.
fn per_run(
    row: &[(String, Option<bool>)],
    runs: usize,
    reference: usize,
) -> impl Iterator<Item = Cells<'_>> {
    (0..runs).map(move |i| {
        // Each run before i has a value and, unless it is the reference, a change.
        let col = 1 + 2 * i - usize::from(reference < i);
        (&row[col], (i != reference).then(|| &row[col + 1]))
    })
}

/// A run's value cell and its change cell (none for the reference).
type Cells<'a> = (
    &'a (String, Option<bool>),
    Option<&'a (String, Option<bool>)>,
);

fn write_notes(c: &Comparison, out: &mut dyn Write, bullet: &str) -> io::Result<()> {
    if c.tests.is_empty() {
        writeln!(out)?;
        writeln!(out, "{bullet}These runs share no test.")?;
    }
    if !c.notes.is_empty() {
        writeln!(out)?;
        // Repeated notes (a test too fast in several tests) merged into one line.
        for n in crate::notes::merge_messages(&c.notes) {
            writeln!(out, "{bullet}note: {n}")?;
        }
    }
    Ok(())
}

fn markdown(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", header_line(c))?;
    if super::answer::summary(c).is_some() {
        writeln!(out)?;
        write_answer(c, out, "")?;
    }
    if !c.warnings.is_empty() || !c.environment.is_empty() || c.runs.iter().any(|r| r.rounds > 1) {
        writeln!(out)?;
        write_preamble(c, out, "- ")?;
    }
    writeln!(out)?;
    for r in &c.runs {
        writeln!(out, "- {}: {}", md_escape(&r.name), md_escape(&r.settings))?;
    }
    for t in &c.tests {
        writeln!(out)?;
        writeln!(out, "**{}**", md_escape(&t.test))?;
        writeln!(out)?;
        let rows = cells(c, t);
        for (i, r) in rows.iter().enumerate() {
            let line: Vec<String> = r.iter().map(|(s, _)| md_escape(s)).collect();
            writeln!(out, "| {} |", line.join(" | "))?;
            if i == 0 {
                let align: Vec<&str> = (0..r.len())
                    .map(|col| if col == 0 { ":---" } else { "---:" })
                    .collect();
                writeln!(out, "| {} |", align.join(" | "))?;
            }
        }
        if let Some(valid) = valid_row(c, t) {
            writeln!(out, "| {} |", valid.join(" | "))?;
        }
    }
    write_notes(c, out, "- ")?;
    for r in c.runs.iter().filter(|r| !r.run_notes.is_empty()) {
        writeln!(out, "\n**notes of {}**\n", md_escape(&r.name))?;
        for n in &r.run_notes {
            writeln!(out, "- {}", md_escape(n))?;
        }
    }
    Ok(())
}

/// The Valid row of a test's markdown table: each run's verdict under its value, `-` where
/// it did not judge the test; `None` when no run judged it.
fn valid_row(c: &Comparison, t: &TestTable) -> Option<Vec<String>> {
    let marks: Vec<&str> = c
        .runs
        .iter()
        .map(|r| {
            r.validity
                .iter()
                .find(|(job, _)| crate::summary::verdict_of(job, &t.test))
                .map_or("-", |(_, v)| *v)
        })
        .collect();
    if marks.iter().all(|m| *m == "-") {
        return None;
    }
    let mut row = vec!["Valid".to_string()];
    for (i, m) in marks.iter().enumerate() {
        row.push((*m).to_string());
        if i != t.reference {
            row.push(String::new());
        }
    }
    Some(row)
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn csv(c: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "test,metric,unit,run_id,run,value,change_pct,reference,low,high,verdict,p"
    )?;
    for t in &c.tests {
        for row in &t.rows {
            let metric = serde_json::to_value(row.metric)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            for (i, run) in c.runs.iter().enumerate() {
                let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
                let iv = row.intervals[i];
                let verdict = row.verdicts[i];
                writeln!(
                    out,
                    "{},{},{},{},{},{},{},{},{},{},{},{}",
                    csv_field(&t.test),
                    metric,
                    csv_field(row.unit),
                    run.id,
                    csv_field(&run.name),
                    opt(row.values[i]),
                    opt(row.change_pct[i]),
                    i == t.reference,
                    opt(iv.map(|v| v.low)),
                    opt(iv.map(|v| v.high)),
                    verdict.map_or("", |v| v.mark()),
                    opt(verdict.map(|v| v.p)),
                )?;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_changes() {
        assert_eq!(fmt_value(28.79), "28.79");
        assert_eq!(fmt_value(43363.4), "43,363");
        assert_eq!(fmt_value(1234567.0), "1,234,567");
        assert_eq!(fmt_value(0.12345), "0.1235");
        assert_eq!(fmt_value(999.94), "999.9");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_change(50.61), "+50.6%");
        assert_eq!(fmt_change(-33.333), "-33.3%");
    }

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
