//! `storbench show`: prints a stored run again with any reporter, without re-running.

use std::io::Write;
use std::process::ExitCode;

use storbench_model::result::RunMode;
use storbench_report::label::shown;
use storbench_report::registry;
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
    let mode = stored.run.mode;
    let format = match &args.format {
        None => registry::default_for(mode),
        Some(name) => registry::for_run(name, mode).ok_or_else(|| {
            anyhow::anyhow!(
                "format '{name}' is not available for a {} run; use {}",
                mode_name(mode),
                registry::names_for(mode)
            )
        })?,
    };
    let mut out = std::io::stdout().lock();
    if format.for_people {
        writeln!(
            out,
            "{}",
            storbench_report::terminal::escape(&heading(&stored))
        )?;
    }
    format.write_run(&stored.run, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `run 12 · hdd · tags a, b · 2026-11-29 20:43 · storbench quick /mnt/hdd`
fn heading(s: &StoredRun) -> String {
    let mut parts = vec![format!("run {}", s.id)];
    parts.extend(s.meta.label.as_deref().map(|l| shown(l).into_owned()));
    if !s.meta.tags.is_empty() {
        let tags: Vec<_> = s.meta.tags.iter().map(|t| shown(t)).collect();
        parts.push(format!("tags {}", tags.join(", ")));
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

fn mode_name(mode: RunMode) -> &'static str {
    match mode {
        RunMode::Fio => "fio",
        RunMode::Quick => "quick",
        RunMode::Bonnie => "bonnie",
        RunMode::Diagnose => "diagnose",
    }
}
