//! `storbench diagnose`'s ladder: text for a terminal (80 columns, about 30 lines),
//! Markdown, and JSON (`{"limit": …, "stages": […]}`, docs/diagnose.md has its schema).

use std::io::{self, Write};

use storbench_model::diagnose::{Diagnosis, Stage, StageUnit};
use storbench_model::result::RunResult;

/// Columns the text fits in.
const WIDTH: usize = 80;

/// A run that is not a diagnosis (or one stored without its ladder).
fn missing() -> io::Error {
    io::Error::other("this run holds no diagnosis")
}

fn target(run: &RunResult) -> String {
    run.environment
        .as_ref()
        .and_then(|e| e.targets.first())
        .map(|t| crate::terminal::escape(&t.target).into_owned())
        .unwrap_or_default()
}

/// The figure in its unit: "117.6 MB/s", "61 µs", "42%".
pub fn figure(value: f64, unit: StageUnit) -> String {
    match unit {
        StageUnit::BytesPerSec => format!("{:.1} MB/s", value / 1e6),
        StageUnit::Nanos if value >= 1e6 => format!("{:.2} ms", value / 1e6),
        StageUnit::Nanos if value < 1e4 => format!("{:.1} µs", value / 1e3),
        StageUnit::Nanos => format!("{:.0} µs", value / 1e3),
        StageUnit::Percent => format!("{value:.0}%"),
    }
}

/// The ladder's cells for one stage: measured, ceiling, share used, note.
fn cells(s: &Stage) -> [String; 4] {
    let measured = s.measured.map(|m| figure(m, s.unit)).unwrap_or_default();
    let ceiling = s
        .ceiling
        .map(|c| format!("{} {}", figure(c, s.unit), s.ceiling_what))
        .unwrap_or_default();
    let share = s
        .share_percent()
        .map(|p| format!("{p:.0}%"))
        .unwrap_or_default();
    let note = match &s.skipped {
        Some(why) => format!("skipped: {why}"),
        None => s.note.clone(),
    };
    [measured, ceiling, share, note]
}

/// The text ladder, then the limit and the remarks.
pub fn render(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let d = run.diagnosis.as_deref().ok_or_else(missing)?;
    writeln!(out, "storbench diagnose: {}", target(run))?;
    writeln!(out)?;
    ladder(d, out)?;
    writeln!(out)?;
    writeln!(out, "limit: {}", d.limit.stage.name())?;
    for line in wrap(&d.limit.message, WIDTH - 2) {
        writeln!(out, "  {line}")?;
    }
    for r in &d.remarks {
        for (i, line) in wrap(r, WIDTH - 4).iter().enumerate() {
            let lead = if i == 0 { "- " } else { "  " };
            writeln!(out, "  {lead}{}", crate::terminal::escape(line))?;
        }
    }
    Ok(())
}

/// One row per stage (stage, measured, ceiling, used) and its note below it.
fn ladder(d: &Diagnosis, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<13} {:>11}  {:<36} {:>6}",
        "stage", "measured", "ceiling", "used"
    )?;
    for s in &d.stages {
        let [measured, ceiling, share, note] = cells(s);
        let ceiling: String = ceiling.chars().take(36).collect();
        writeln!(
            out,
            "{:<13} {:>11}  {:<36} {:>6}",
            s.stage.label(),
            measured,
            ceiling,
            share
        )?;
        if !note.is_empty() {
            let note: String = note.chars().take(WIDTH - 4).collect();
            writeln!(out, "    {}", crate::terminal::escape(&note))?;
        }
    }
    Ok(())
}

/// Words of `text` in lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The ladder as a Markdown table, then the limit.
pub fn render_markdown(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let d = run.diagnosis.as_deref().ok_or_else(missing)?;
    let cell = |s: &str| s.replace('|', "\\|").replace('`', "'");
    writeln!(out, "**storbench diagnose** `{}`", cell(&target(run)))?;
    writeln!(out)?;
    writeln!(out, "| stage | measured | ceiling | used | note |")?;
    writeln!(out, "|---|---:|---|---:|---|")?;
    for s in &d.stages {
        let [measured, ceiling, share, note] = cells(s);
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            s.stage.label(),
            measured,
            cell(&ceiling),
            share,
            cell(&note)
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "**Limit: {}.** {}",
        d.limit.stage.name(),
        cell(&d.limit.message)
    )?;
    for r in &d.remarks {
        writeln!(out, "- {}", cell(r))?;
    }
    Ok(())
}

/// `{"target", "limit": {"stage", "message"}, "stages": [...], "remarks": [...]}`; each
/// stage also carries its `share_percent`.
pub fn render_json(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let d = run.diagnosis.as_deref().ok_or_else(missing)?;
    let mut v = serde_json::to_value(d)?;
    if let Some(stages) = v["stages"].as_array_mut() {
        for (json, s) in stages.iter_mut().zip(&d.stages) {
            if let (Some(obj), Some(p)) = (json.as_object_mut(), s.share_percent()) {
                obj.insert("share_percent".into(), p.into());
            }
        }
    }
    v["target"] = target(run).into();
    serde_json::to_writer_pretty(&mut *out, &v)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_wraps_at_word_boundaries() {
        let lines = wrap("aaa bbb ccc ddd", 7);
        assert_eq!(lines, vec!["aaa bbb", "ccc ddd"]);
    }
}
