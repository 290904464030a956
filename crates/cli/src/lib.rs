//! The `storbench` command line. `main.rs` only calls [`main_with_args`], so integration
//! tests can run the whole tool in-process.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod cmd;
pub mod running;
pub mod ui;

/// A storage benchmark: fio-compatible workloads, a bonnie++ suite, NFS and iSCSI from user
/// space, results history and comparison.
#[derive(Parser, Debug)]
#[command(name = "storbench", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Where results are kept and how a run is labelled; shared by every subcommand.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Results database (default: $XDG_DATA_HOME/storbench/results.db).
    #[arg(long, global = true, env = "STORBENCH_DB", value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,
    /// Do not save this run in the results database.
    #[arg(long, global = true)]
    pub no_save: bool,
    /// A label for this run, to find and compare it later.
    #[arg(long, global = true, value_name = "TEXT")]
    pub label: Option<String>,
    /// A free tag for this run (repeatable).
    #[arg(long = "tag", global = true, value_name = "TEXT")]
    pub tags: Vec<String>,
}

// One value per process, parsed once: boxing the large variants would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List stored runs with their headline figures (filter with --label, --tag, ...).
    History(cmd::history::HistoryArgs),
    /// Print a stored run again with any reporter, without re-running it.
    Show(cmd::show::ShowArgs),
    /// Delete stored runs (asks first).
    Rm(cmd::rm::RmArgs),
    /// Compare stored runs: every shared metric with its change against a baseline.
    Compare(cmd::compare::CompareArgs),
    /// Import fio JSON/json+ output and bonnie++ CSV lines into the history.
    Import(cmd::import::ImportArgs),
    /// Write a self-contained HTML report comparing stored runs.
    Report(cmd::report::ReportArgs),
    /// Run a fio command line or job files unchanged, with fio's outputs.
    Fio(cmd::fio::FioArgs),
    /// Sequential and random, read and write: MB/s, IOPS, latency, CPU (the main job).
    Quick(cmd::quick::QuickArgs),
    /// bonnie++'s suite with its flags, text table and CSV (local directories and nfs://).
    Bonnie(cmd::bonnie::BonnieArgs),
    /// iSCSI tools: `discover HOST[:PORT]` lists targets and LUNs (no kernel initiator).
    Iscsi(cmd::iscsi::IscsiArgs),
}

/// Parses `args` and runs the subcommand; errors become one line on stderr and exit code 1.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // Bad input is one line: clap's first line names the problem; its usage and
            // "try --help" lines are left out.
            let text = e.render().to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let first = storbench_core::redact::text(first);
            eprintln!("storbench: {}", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    match cmd::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            // Errors may quote a URL as typed, CHAP secret included.
            eprintln!(
                "storbench: {}",
                storbench_core::redact::text(&format!("{e:#}"))
            );
            ExitCode::FAILURE
        }
    }
}
