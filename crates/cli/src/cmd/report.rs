//! `storbench report`: one self-contained HTML file comparing stored runs, and the summary
//! card of a quick run as an image to post (`--png`, `--svg`).

use std::path::PathBuf;
use std::process::ExitCode;

use storbench_report::card;
use storbench_report::compare::NamedRun;
use storbench_report::html::Opts;
use storbench_report::privacy::Privacy;

use crate::StoreArgs;
use crate::cmd::compare::{name_runs, select_runs};
use crate::cmd::save::open_store_read_only;

/// Write an HTML report (works offline: charts and data inlined) and/or a quick run's
/// summary card as PNG or SVG.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Run ids or labels (a label selects its newest run).
    #[arg(value_name = "ID|LABEL", required = true)]
    pub runs: Vec<String>,
    /// The run changes are measured against (default: the first); added if not listed.
    #[arg(long, value_name = "ID|LABEL")]
    pub baseline: Option<String>,
    /// The HTML file to write (`-`: standard output).
    #[arg(long, short = 'o', value_name = "FILE", required_unless_present_any = ["png", "svg"])]
    pub output: Option<PathBuf>,
    /// Write the baseline's summary card (a quick run) as a PNG image (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
    /// Write the baseline's summary card (a quick run) as an SVG image (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// The report's and the card's title.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Leave host names out: this machine's, the servers' and those in target URLs.
    #[arg(long)]
    pub hide_host: bool,
    /// Keep the binary's and the database's paths in the command lines shown.
    #[arg(long)]
    pub show_paths: bool,
}

pub fn run_report(args: ReportArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let db = open_store_read_only(store)?;
    let (runs, baseline) = select_runs(&db, &args.runs, args.baseline.as_deref())?;
    let named = name_runs(&runs);
    let opts = Opts {
        title: args.title.clone(),
        privacy: Privacy {
            hide_host: args.hide_host,
            show_paths: args.show_paths,
        },
    };
    if args.png.is_some() || args.svg.is_some() {
        write_card(&args, &named[baseline], &opts)?;
    }
    if let Some(output) = &args.output {
        let mut html = Vec::new();
        storbench_report::html::render(&named, baseline, &opts, &mut html)?;
        crate::outfile::write(output, &html)?;
        eprintln!(
            "storbench: wrote {} ({} run{})",
            output.display(),
            runs.len(),
            if runs.len() == 1 { "" } else { "s" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The baseline run's card, which must be a quick run.
fn write_card(args: &ReportArgs, run: &NamedRun<'_>, opts: &Opts) -> anyhow::Result<()> {
    let private = opts.privacy.apply(run.run);
    let title = opts
        .title
        .clone()
        .unwrap_or(format!("storbench quick: {}", run.name));
    let Some(svg) = card::svg(&private, Some(&title), &opts.privacy) else {
        anyhow::bail!(
            "run {} is not a quick run with results: the summary card shows quick's tests \
             (choose one with --baseline)",
            run.id
        );
    };
    if let Some(path) = &args.svg {
        crate::outfile::write(path, svg.as_bytes())?;
        eprintln!("storbench: wrote {}", path.display());
    }
    if let Some(path) = &args.png {
        let png = card::png(&svg).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        crate::outfile::write(path, &png)?;
        eprintln!("storbench: wrote {}", path.display());
    }
    Ok(())
}
