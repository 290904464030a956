//! `storbench rm`: deletes stored runs after confirmation.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use crate::StoreArgs;
use crate::cmd::save::open_existing_store;
use crate::cmd::time::format_local;

/// Delete stored runs.
#[derive(clap::Args, Debug)]
pub struct RmArgs {
    /// Run ids (labels are not accepted here, so a label never deletes the wrong run).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<i64>,
    /// Delete without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

pub fn run_rm(args: RmArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let mut db = open_existing_store(store)?;
    let mut lines = Vec::new();
    for &id in &args.ids {
        let s = db.load(id)?;
        lines.push(format!(
            "run {id}: {} {} {}{}",
            format_local(s.run.started_unix_ms),
            format!("{:?}", s.run.mode).to_lowercase(),
            storbench_store::headline::target_text(&s.run),
            s.meta.label.map(|l| format!(" ({l})")).unwrap_or_default()
        ));
    }
    if !args.yes && !confirm(&lines)? {
        eprintln!("storbench: nothing deleted");
        return Ok(ExitCode::FAILURE);
    }
    for &id in &args.ids {
        db.delete(id)?;
        eprintln!("storbench: deleted run {id}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks on the terminal; without one, refuses rather than guessing.
fn confirm(lines: &[String]) -> anyhow::Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        anyhow::bail!("refusing to delete without confirmation: not a terminal; pass --yes");
    }
    let mut err = std::io::stderr().lock();
    for l in lines {
        writeln!(err, "{l}")?;
    }
    write!(err, "Delete {} run(s)? [y/N] ", lines.len())?;
    err.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}
