//! The `storbench` command line. `main.rs` only calls [`main_with_args`], so integration
//! tests can run the whole tool in-process.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod bonnie_live;
/// The marker of a bonnie run (the suite writes and removes it; `clean` reads it).
pub use storbench_bonnie::marker as bonnie_marker;
pub mod cmd;
pub mod completion;
pub mod live;
pub mod manpage;
pub mod multihost;
pub mod outfile;
pub mod read_only;
pub mod remote_leftovers;
pub mod repeat;
pub mod running;
pub mod secrets;
pub mod server_stats;
pub mod session;
pub mod ui;

/// A storage benchmark: fio-compatible workloads, a bonnie++ suite, NFS and iSCSI from user
/// space, results history and comparison.
#[derive(Parser, Debug)]
#[command(name = "storbench", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub early: EarlyRunFlags,
    #[command(subcommand)]
    pub command: Command,
}

/// Where results are kept (`--db`, every subcommand) and how the run being made is kept
/// (`--label`, `--tag`, `--no-save`: only on the subcommands that make runs, filled from
/// their [`RunFlags`] by `cmd::dispatch`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Results database (default: $XDG_DATA_HOME/storbench/results.db).
    #[arg(long, global = true, env = "STORBENCH_DB", value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,
    /// Do not save this run in the results database.
    #[arg(skip)]
    pub no_save: bool,
    /// A label for this run, to find and compare it later.
    #[arg(skip)]
    pub label: Option<String>,
    /// Free tags for this run.
    #[arg(skip)]
    pub tags: Vec<String>,
    /// Save without saying so on stderr: set when storbench runs as the drop-in `fio`,
    /// whose callers take any output on stderr for an error (bench-fio does).
    #[arg(skip)]
    pub quiet_save: bool,
}

impl StoreArgs {
    /// With the flags of the run being made added (a label given twice: the later one).
    pub fn with_run(&self, run: &RunFlags) -> StoreArgs {
        let mut s = self.clone();
        s.no_save |= run.no_save;
        if run.label.is_some() {
            s.label.clone_from(&run.label);
        }
        s.tags.extend(run.tags.iter().cloned());
        s
    }
}

/// How a run being made is kept: the flags of `quick` and `bonnie` (`fio` finds the same
/// names among fio's arguments). Subcommands that only read runs have none of them, so a
/// label can never be typed where it would do nothing.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RunFlags {
    /// Do not save this run in the results database.
    #[arg(long)]
    pub no_save: bool,
    /// A label for this run, to find and compare it later.
    #[arg(long, value_name = "TEXT", value_parser = non_blank)]
    pub label: Option<String>,
    /// A free tag for this run (repeatable).
    #[arg(long = "tag", value_name = "TEXT", value_parser = non_blank)]
    pub tags: Vec<String>,
}

impl RunFlags {
    /// Whether any flag was given.
    pub fn any(&self) -> bool {
        self.no_save || self.label.is_some() || !self.tags.is_empty()
    }
}

/// The same flags before the subcommand (`storbench --no-save fio …`), as scripts written
/// for earlier versions give them: hidden, and refused before a subcommand that makes no
/// run.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EarlyRunFlags {
    #[arg(long = "no-save", hide = true)]
    pub no_save: bool,
    #[arg(long = "label", value_name = "TEXT", value_parser = non_blank, hide = true)]
    pub label: Option<String>,
    #[arg(long = "tag", value_name = "TEXT", value_parser = non_blank, hide = true)]
    pub tags: Vec<String>,
}

impl EarlyRunFlags {
    pub fn as_run_flags(&self) -> RunFlags {
        RunFlags {
            no_save: self.no_save,
            label: self.label.clone(),
            tags: self.tags.clone(),
        }
    }
}

/// Why a blank label or tag is refused: it must show in `history` and be typed back to
/// `compare`.
pub(crate) const BLANK: &str = "an empty or blank text cannot find a run again";

pub(crate) fn non_blank(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err(format!("{BLANK}; give some text"));
    }
    if let Some(why) = too_long(s) {
        return Err(why);
    }
    Ok(s.to_string())
}

/// Why a label or tag is refused for its length, if it is.
pub(crate) fn too_long(s: &str) -> Option<String> {
    let max = storbench_report::label::MAX_CHARS;
    (s.chars().nth(max).is_some()).then(|| {
        format!(
            "{} characters or more; a label or tag has at most {max}",
            max + 1
        )
    })
}

// One value per process, parsed once: boxing the large variants would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub enum Command {
    /// List stored runs with their headline figures (filters: --label, --tag, --since, ...).
    History(cmd::history::HistoryArgs),
    /// Print a stored run again with any reporter, without re-running it.
    Show(cmd::show::ShowArgs),
    /// Delete stored runs (asks first).
    Rm(cmd::rm::RmArgs),
    /// Compare stored runs: every shared metric with its change against a baseline.
    Compare(cmd::compare::CompareArgs),
    /// Import fio JSON/json+, bonnie++ CSV, storbench exports (.sbr) and other databases.
    Import(cmd::import::ImportArgs),
    /// Write stored runs to a file (.sbr) that `import` reads back on another machine.
    Export(cmd::export::ExportArgs),
    /// Write a self-contained HTML report comparing stored runs.
    Report(cmd::report::ReportArgs),
    /// Run a fio command line or job files unchanged, with fio's outputs.
    Fio(cmd::fio::FioArgs),
    /// Sequential and random, read and write: MB/s, IOPS, latency, CPU (the main job).
    Quick(cmd::quick::QuickArgs),
    /// Find the limit: round trip, path, storage, client and server, then what would help.
    Diagnose(cmd::diagnose::DiagnoseArgs),
    /// bonnie++'s suite with its flags, text table and CSV (local directories and nfs://).
    Bonnie(cmd::bonnie::BonnieArgs),
    /// iSCSI tools: `discover HOST[:PORT]` lists targets and LUNs (no kernel initiator).
    Iscsi(cmd::iscsi::IscsiArgs),
    /// SMB tools: `shares HOST` lists a server's shares (srvsvc, no mount).
    Smb(cmd::smb::SmbArgs),
    /// Remove files that killed quick runs left in a directory (asks first).
    Clean(cmd::clean::CleanArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::shell::CompletionsArgs),
    /// Print the man page, or write every page into a directory.
    Man(cmd::shell::ManArgs),
}

/// An error as printed: CHAP secrets masked (errors may quote a URL as typed) and control
/// characters escaped (they may quote a URL's `%00`, a job name, a file's line).
fn for_stderr(message: &str) -> String {
    storbench_report::terminal::escape(&storbench_model::redact::text(message)).into_owned()
}

/// A clap error `message` with the secrets of the user's `args` masked. The rest of it is
/// storbench's own help text (`--server-stats <snmp://[COMMUNITY@]HOST[:PORT]>`), whose
/// examples are not secrets and must read as written, so only the text an argument put
/// there is masked: the argument, and the value after its `=`.
fn with_user_args_masked(message: &str, args: &[OsString]) -> String {
    use storbench_model::redact;
    let mut out = message.to_string();
    for arg in args.iter().map(|a| a.to_string_lossy()) {
        if redact::text(&arg) == arg {
            continue;
        }
        if let Some((_, value)) = arg.split_once('=') {
            let masked = redact::text(value);
            let masked = if masked == value {
                redact::MASK.into()
            } else {
                masked
            };
            out = out.replace(value, &masked);
        }
        out = out.replace(&*arg, &redact::text(&arg));
    }
    out
}

/// Parses `args` and runs the subcommand; errors become one line on stderr and exit code 1.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    let drop_in = invoked_as_fio(&args);
    let mut cli = match Cli::try_parse_from(as_fio_when_so_named(args.clone())) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            let line = with_user_args_masked(&one_line_error(&e), &args);
            eprintln!("storbench: {}", storbench_report::terminal::escape(&line));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    cli.store.quiet_save = drop_in;
    match cmd::dispatch(cli) {
        Ok(code) => code,
        // A reader that stopped early (`| head`) is no error to report: standard tools die
        // of SIGPIPE quietly, which a shell sees as 128+13.
        Err(e) if running::is_broken_pipe(&e) => ExitCode::from(141),
        Err(e) => {
            eprintln!("storbench: {}", for_stderr(&format!("{e:#}")));
            // A signal that cut a stage short (a lay-out, a login) ends the run like one
            // that cut the measurement: 128 + the signal, not a plain failure.
            if storbench_core::stop::signal().is_some() {
                running::interrupted_code()
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// The name that makes storbench a drop-in `fio`: run through a link (or copy) named so,
/// `fio ARGS` is `storbench fio ARGS`, for tools that call fio themselves.
pub const FIO_LINK_NAME: &str = "fio";

/// `args` with the `fio` subcommand put after the program name when that name (its file
/// name, wherever it was found) is [`FIO_LINK_NAME`]; unchanged otherwise.
pub fn as_fio_when_so_named(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if invoked_as_fio(&args) {
        args.insert(1, OsString::from("fio"));
    }
    args
}

/// Whether the program name (the file name of `args[0]`) is [`FIO_LINK_NAME`].
pub fn invoked_as_fio(args: &[OsString]) -> bool {
    args.first()
        .and_then(|a0| std::path::Path::new(a0).file_name())
        .is_some_and(|n| n == FIO_LINK_NAME)
}

/// Bad input is one line: clap's message without its usage block and "try --help" line,
/// its other lines (the missing argument, the possible values, a tip) kept on that line,
/// since they often carry the point.
pub fn one_line_error(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = e.render().to_string();
    let usage = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(command_of)
        .unwrap_or_else(|| "storbench".into());
    let sub = usage.strip_prefix("storbench ").unwrap_or("");
    if e.kind() == ErrorKind::MissingRequiredArgument
        && let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg)
    {
        let what = if missing.len() == 1 {
            "argument"
        } else {
            "arguments"
        };
        let whose = if sub.is_empty() {
            String::new()
        } else {
            format!(" for {sub}")
        };
        return format!(
            "missing {what} {}{whose} (see {usage} --help)",
            missing.join(", ")
        );
    }
    let mut line = String::new();
    for part in text.lines().map(str::trim) {
        if part.starts_with("Usage: ") {
            break;
        }
        if part.is_empty() || part.starts_with("For more information") {
            continue;
        }
        let part = part.trim_start_matches("error: ");
        if !line.is_empty() {
            line.push_str(if line.ends_with(':') || part.starts_with('[') {
                " "
            } else {
                "; "
            });
        }
        line.push_str(part);
    }
    if line.is_empty() {
        line = "invalid arguments".into();
    }
    if e.kind() == ErrorKind::MissingSubcommand {
        line.push_str(&format!(" (see {usage} --help)"));
    }
    line
}

/// `storbench iscsi discover [OPTIONS] <HOST>` → `storbench iscsi discover`.
fn command_of(usage: &str) -> String {
    usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['<', '[', '-']))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_program_named_fio_runs_the_fio_subcommand() {
        for a0 in ["fio", "/usr/lib/storbench/bin/fio", "./fio"] {
            assert_eq!(
                as_fio_when_so_named(os(&[a0, "--version"])),
                os(&[a0, "fio", "--version"])
            );
        }
        assert_eq!(as_fio_when_so_named(os(&["fio"])), os(&["fio", "fio"]));
    }

    #[test]
    fn other_names_keep_their_arguments() {
        for a0 in [
            "storbench",
            "/usr/bin/storbench",
            "fio2",
            "/opt/fio/storbench",
            "xfio",
        ] {
            assert_eq!(
                as_fio_when_so_named(os(&[a0, "quick", "/tmp"])),
                os(&[a0, "quick", "/tmp"])
            );
        }
        assert!(as_fio_when_so_named(Vec::new()).is_empty());
    }
}
