//! `storbench report`: one self-contained HTML file comparing stored runs.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::StoreArgs;
use crate::cmd::compare::{name_runs, select_runs};
use crate::cmd::save::open_store_read_only;

/// Write an HTML report (works offline: charts and data inlined).
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Run ids or labels (a label selects its newest run).
    #[arg(value_name = "ID|LABEL", required = true)]
    pub runs: Vec<String>,
    /// The run changes are measured against (default: the first); added if not listed.
    #[arg(long, value_name = "ID|LABEL")]
    pub baseline: Option<String>,
    /// The HTML file to write.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
}

pub fn run_report(args: ReportArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let db = open_store_read_only(store)?;
    let (runs, baseline) = select_runs(&db, &args.runs, args.baseline.as_deref())?;
    let named = name_runs(&runs);
    let mut html = Vec::new();
    storbench_report::html::render(&named, baseline, &mut html)?;
    // Written beside the target and renamed, so a failure never leaves half a report.
    let tmp = args.output.with_extension("html.partial");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&html)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &args.output)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("{}: cannot write the report: {e}", args.output.display());
    }
    eprintln!(
        "storbench: wrote {} ({} run{})",
        args.output.display(),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    Ok(ExitCode::SUCCESS)
}
