//! `storbench export`: stored runs into one `.sbr` file that `storbench import` reads back on
//! any machine, exactly as stored (kind, rounds, per-second samples, environment, verdicts,
//! label and tags).

use std::path::PathBuf;
use std::process::ExitCode;

use storbench_store::import::bundle;

use crate::StoreArgs;
use crate::cmd::compare::resolve_one;
use crate::cmd::save::open_store_read_only;

/// Write stored runs to a file that `storbench import` reads on another machine.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// Run ids or labels (a label selects its newest run).
    #[arg(value_name = "ID|LABEL", required = true)]
    pub runs: Vec<String>,
    /// The file to write (conventionally NAME.sbr; `-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
}

pub fn run_export(args: ExportArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let db = open_store_read_only(store)?;
    let mut runs = Vec::with_capacity(args.runs.len());
    for token in &args.runs {
        let id = resolve_one(&db, token)?;
        if runs.iter().any(|r: &storbench_store::StoredRun| r.id == id) {
            anyhow::bail!("run {id} is named twice ('{token}')");
        }
        runs.push(db.load(id)?);
    }
    let mut bytes = Vec::new();
    bundle::write(&runs, &mut bytes)?;
    crate::outfile::write(&args.output, &bytes)?;
    let ids: Vec<String> = runs.iter().map(|r| r.id.to_string()).collect();
    eprintln!(
        "storbench: wrote run{} {} to {}",
        if runs.len() == 1 { "" } else { "s" },
        ids.join(", "),
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}
