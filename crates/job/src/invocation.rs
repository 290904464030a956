//! The public entry point for `storbench fio`: a fio command line (and the job files it
//! names) in, a validated [`Workload`] and the global settings out.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::JobError;
use crate::host::HostFacts;
use crate::resolve::{Context, resolve};
use crate::spec::Workload;
use crate::{argv, help, ini};

pub use storbench_model::fio::{FIO_RELEASE, OutputFormat, fio_style_version};

/// When to show the live progress line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Eta {
    /// Only when standard output is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

/// Everything a fio command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct FioInvocation {
    pub workload: Workload,
    /// `--output`: write the report here instead of standard output.
    pub output: Option<PathBuf>,
    /// `--output-format` (in the order given, without repeats); `[Normal]` by default.
    pub output_formats: Vec<OutputFormat>,
    /// `--terse-version`; always 3.
    pub terse_version: u32,
    pub eta: Eta,
    /// `--eta-newline`: start a new progress line this often.
    pub eta_newline: Option<Duration>,
    /// `--eta-interval`: refresh the progress line this often.
    pub eta_interval: Option<Duration>,
    /// `--status-interval`: print the full report this often while running. The flag is
    /// refused for now (`GLOBAL_FLAGS` marks it unsupported) until the CLI prints interval
    /// reports; flip it there and this field carries the value.
    pub status_interval: Option<Duration>,
    /// `--parse-only`: validate, run nothing.
    pub parse_only: bool,
    /// `--cmdhelp` (`Some(None)`) or `--cmdhelp=NAME`; print [`crate::cmdhelp`] and exit.
    pub cmdhelp: Option<Option<String>>,
    /// `--enghelp` or `--enghelp=ENGINE`; print [`crate::enghelp`] and exit.
    pub enghelp: Option<Option<String>>,
    /// `--showcmd`: the equivalent command line, to print instead of running.
    pub showcmd: Option<String>,
    /// `--section` names; only those job sections were kept.
    pub sections: Vec<String>,
    /// `--readonly`: jobs that write or trim were refused.
    pub readonly: bool,
    pub version: bool,
    pub help: bool,
    /// `--warnings-fatal`: warnings became errors.
    pub warnings_fatal: bool,
    /// What fio only warns about (the CLI prints them on stderr before running).
    pub warnings: Vec<String>,
}

impl Default for FioInvocation {
    fn default() -> Self {
        FioInvocation {
            workload: Workload {
                jobs: Vec::new(),
                global_options: Vec::new(),
                job_files: Vec::new(),
            },
            output: None,
            output_formats: vec![OutputFormat::Normal],
            terse_version: 3,
            eta: Eta::Auto,
            eta_newline: None,
            eta_interval: None,
            status_interval: None,
            parse_only: false,
            cmdhelp: None,
            enghelp: None,
            showcmd: None,
            sections: Vec::new(),
            readonly: false,
            version: false,
            help: false,
            warnings_fatal: false,
            warnings: Vec::new(),
        }
    }
}

impl FioInvocation {
    /// Whether the invocation only asks for information (help, version, option lists).
    pub fn is_informational(&self) -> bool {
        self.help || self.version || self.cmdhelp.is_some() || self.enghelp.is_some()
    }
}

/// Parses `storbench fio` arguments (everything after `fio`), reads the job files they name,
/// and resolves the jobs. `env` looks up `${VAR}` in job files.
pub fn parse_fio_args(
    args: &[String],
    host: &HostFacts,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<FioInvocation, JobError> {
    parse_fio_args_with(args, host, env, &mut ini::read_source)
}

/// [`parse_fio_args`] with job files and includes read through `read` (from memory in
/// tests and fuzzing).
pub fn parse_fio_args_with(
    args: &[String],
    host: &HostFacts,
    env: &dyn Fn(&str) -> Option<String>,
    read: &mut ini::SourceReader<'_>,
) -> Result<FioInvocation, JobError> {
    let parsed = argv::parse(args)?;
    let mut inv = parsed.invocation;
    if inv.is_informational() {
        return Ok(inv);
    }
    let files = parsed
        .job_files
        .iter()
        .map(|p| ini::read_job_file_with(p, read))
        .collect::<Result<Vec<_>, _>>()?;
    let ctx = Context {
        host,
        env,
        sections: &inv.sections,
        readonly: inv.readonly,
    };
    let resolved = resolve(&parsed.sections, &files, &ctx)?;
    if resolved.workload.jobs.is_empty() {
        return Err(no_jobs(&inv.sections, &files));
    }
    if inv.warnings_fatal
        && let Some(w) = resolved.warnings.first()
    {
        return Err(JobError::Usage(format!("{w} (--warnings-fatal)")));
    }
    if inv.showcmd.is_some() {
        inv.showcmd = Some(help::showcmd(&parsed.sections, &files, host, env));
    }
    inv.workload = resolved.workload;
    inv.warnings.extend(resolved.warnings);
    Ok(inv)
}

fn no_jobs(sections: &[String], files: &[crate::low::LowFile]) -> JobError {
    if !sections.is_empty() {
        return JobError::Usage(format!(
            "no job section named {}",
            sections
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    if files.is_empty() {
        JobError::Usage(
            "no jobs defined: give --name=NAME followed by its options, or a job file".into(),
        )
    } else {
        JobError::Usage("no jobs defined: the job files have only [global] sections".into())
    }
}
