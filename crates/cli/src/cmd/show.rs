//! `storbench show`: prints a stored run again with any reporter, without re-running.

use std::io::Write;
use std::process::ExitCode;

use storbench_core::result::{RunMode, RunResult};
use storbench_report::fio::{FioFormat, FioOpts};
use storbench_store::StoredRun;

use crate::StoreArgs;
use crate::cmd::compare::resolve_one;
use crate::cmd::save::open_store_read_only;
use crate::cmd::time::format_local;

/// Print a stored run again.
#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// Run id, or a label (its newest run).
    #[arg(value_name = "ID|LABEL")]
    pub run: String,
    /// fio runs: normal (default), json, json+, terse. quick runs: quick (default),
    /// quick-json, or any fio format. bonnie runs: bonnie (table, default), csv (1.98),
    /// csv-1.03. Every run: raw (the stored result model as JSON).
    #[arg(long, short = 'f', value_name = "FORMAT")]
    pub format: Option<String>,
}

pub fn run_show(args: ShowArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let db = open_store_read_only(store)?;
    let stored = db.load(resolve_one(&db, &args.run)?)?;
    let format = args
        .format
        .unwrap_or_else(|| default_format(stored.run.mode).to_string());
    let mut out = std::io::stdout().lock();
    if is_text(&format) {
        writeln!(
            out,
            "{}",
            storbench_report::terminal::escape(&heading(&stored))
        )?;
    }
    render(&stored.run, &format, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn default_format(mode: RunMode) -> &'static str {
    match mode {
        RunMode::Fio => "normal",
        RunMode::Quick => "quick",
        RunMode::Bonnie => "bonnie",
    }
}

fn is_text(format: &str) -> bool {
    matches!(format, "normal" | "quick" | "bonnie")
}

/// `run 12 · hdd · tags a, b · 2026-11-29 20:43 · storbench quick /mnt/hdd`
fn heading(s: &StoredRun) -> String {
    let mut parts = vec![format!("run {}", s.id)];
    parts.extend(s.meta.label.clone());
    if !s.meta.tags.is_empty() {
        parts.push(format!("tags {}", s.meta.tags.join(", ")));
    }
    parts.push(format_local(s.run.started_unix_ms));
    if s.run.interrupted {
        parts.push("INTERRUPTED (partial)".into());
    }
    if !s.run.command_line.is_empty() {
        parts.push(s.run.command_line.join(" "));
    }
    if let Some(src) = &s.meta.source {
        parts.push(format!("imported from {src}"));
    }
    parts.join(" · ")
}

fn render(run: &RunResult, format: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    let mode = run.mode;
    if format == "raw" {
        serde_json::to_writer_pretty(&mut *out, run)?;
        writeln!(out)?;
        return Ok(());
    }
    let fio_shaped = matches!(mode, RunMode::Fio | RunMode::Quick);
    match (format, FioFormat::parse(format)) {
        (_, Some(f)) if fio_shaped => {
            storbench_report::fio::render(run, f, &FioOpts::default(), out)?
        }
        ("quick", _) if mode == RunMode::Quick => storbench_report::quick::render(run, out)?,
        ("quick-json", _) if mode == RunMode::Quick => {
            storbench_report::quick::render_json(run, out)?
        }
        ("bonnie", _) if mode == RunMode::Bonnie => {
            storbench_report::bonnie_table::render(run, out)?
        }
        ("csv" | "csv-1.98" | "csv-1.03", _) if mode == RunMode::Bonnie => {
            let csv_format = format.parse().map_err(|e: String| anyhow::anyhow!(e))?;
            storbench_report::bonnie_csv::render(run, csv_format, out)?
        }
        _ => anyhow::bail!(
            "format '{format}' is not available for a {} run; use {}",
            mode_name(mode),
            formats_for(mode)
        ),
    }
    Ok(())
}

fn mode_name(mode: RunMode) -> &'static str {
    match mode {
        RunMode::Fio => "fio",
        RunMode::Quick => "quick",
        RunMode::Bonnie => "bonnie",
    }
}

fn formats_for(mode: RunMode) -> &'static str {
    match mode {
        RunMode::Fio => "normal, json, json+, terse or raw",
        RunMode::Quick => "quick, quick-json, normal, json, json+, terse or raw",
        RunMode::Bonnie => "bonnie, csv (csv-1.98), csv-1.03 or raw",
    }
}
