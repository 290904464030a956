//! fio's global command-line flags (the ones that are not job options): what each takes,
//! whether storbench honours it, and how it sets the [`FioInvocation`].

use std::path::PathBuf;
use std::time::Duration;

use crate::error::JobError;
use crate::invocation::{Eta, FioInvocation, OutputFormat};
use crate::units::{SECOND_US, parse_time_us};

/// Whether a flag takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    /// `--flag`
    None,
    /// `--flag=value` or `--flag value`
    Required,
    /// `--flag` or `--flag=value`
    Optional,
}

/// One of fio's global flags.
pub struct GlobalFlag {
    pub name: &'static str,
    pub arity: Arity,
    pub supported: bool,
    pub help: &'static str,
}

const fn yes(name: &'static str, arity: Arity, help: &'static str) -> GlobalFlag {
    GlobalFlag {
        name,
        arity,
        supported: true,
        help,
    }
}

const fn no(name: &'static str, arity: Arity, help: &'static str) -> GlobalFlag {
    GlobalFlag {
        name,
        arity,
        supported: false,
        help,
    }
}

/// Every global flag of fio 3.33.
pub const GLOBAL_FLAGS: &[GlobalFlag] = &[
    yes("output", Arity::Required, "Write the report to this file"),
    yes(
        "output-format",
        Arity::Required,
        "normal, terse, json, json+; comma-separated for several",
    ),
    yes("minimal", Arity::None, "Same as --output-format=terse"),
    yes(
        "append-terse",
        Arity::Optional,
        "Add terse output to the selected formats (deprecated in fio)",
    ),
    yes(
        "terse-version",
        Arity::Required,
        "Terse format version; storbench writes version 3 only",
    ),
    yes(
        "eta",
        Arity::Required,
        "Progress line: auto (on a terminal), always, never",
    ),
    yes(
        "eta-newline",
        Arity::Required,
        "Start a new progress line every this long (affects only the live progress line)",
    ),
    yes(
        "eta-interval",
        Arity::Required,
        "Update the progress line every this long, at least 250ms (affects only the live progress line)",
    ),
    no(
        "status-interval",
        Arity::Required,
        "Print the full report every this long while running",
    ),
    yes(
        "parse-only",
        Arity::None,
        "Check the options and job files, run nothing",
    ),
    yes(
        "section",
        Arity::Required,
        "Run only this job section (repeatable)",
    ),
    yes(
        "cmdhelp",
        Arity::Optional,
        "List the options, or describe one",
    ),
    yes(
        "enghelp",
        Arity::Optional,
        "List the engines, or the options of one",
    ),
    yes(
        "showcmd",
        Arity::None,
        "Print the command line equivalent to the job files",
    ),
    yes(
        "readonly",
        Arity::None,
        "Refuse any job that writes or trims",
    ),
    yes(
        "version",
        Arity::None,
        "Print the version in fio's form: fio-3.33 (storbench VERSION)",
    ),
    yes(
        "help",
        Arity::None,
        "Print usage: storbench's own flags first, then where fio's options are (--cmdhelp)",
    ),
    yes("warnings-fatal", Arity::None, "Treat warnings as errors"),
    no(
        "latency-log",
        Arity::Required,
        "Deprecated in fio; use per-job log options",
    ),
    no("bandwidth-log", Arity::None, "Write bandwidth logs"),
    yes(
        "debug",
        Arity::Required,
        "fio's internal debug output: accepted, with a warning that storbench does not trace its categories",
    ),
    no(
        "inflate-log",
        Arity::Required,
        "Inflate a compressed fio log",
    ),
    no(
        "alloc-size",
        Arity::Required,
        "Size of fio's shared memory pool",
    ),
    no(
        "profile",
        Arity::Required,
        "fio's built-in profiles (act, tiobench)",
    ),
    no("max-jobs", Arity::Required, "Limit on the number of jobs"),
    no("server", Arity::Optional, "fio's network server mode"),
    no(
        "server-internal",
        Arity::Required,
        "fio's network server mode",
    ),
    no("daemonize", Arity::Required, "fio's network server mode"),
    no("client", Arity::Required, "fio's network client mode"),
    no(
        "remote-config",
        Arity::Required,
        "fio's network client mode",
    ),
    no("cpuclock-test", Arity::None, "Test fio's CPU clock"),
    no("crctest", Arity::Optional, "Benchmark fio's checksums"),
    no("memcpytest", Arity::Optional, "Benchmark memcpy"),
    no("idle-prof", Arity::Required, "CPU idleness profiling"),
    no(
        "trigger-file",
        Arity::Required,
        "Run a command when a file appears",
    ),
    no(
        "trigger-timeout",
        Arity::Required,
        "Run a trigger after a timeout",
    ),
    no("trigger", Arity::Required, "Command for the trigger"),
    no(
        "trigger-remote",
        Arity::Required,
        "Remote command for the trigger",
    ),
    yes(
        "aux-path",
        Arity::Required,
        "Where fio writes auxiliary files: accepted; storbench writes none (it keeps no verify state files)",
    ),
    no(
        "merge-blktrace-only",
        Arity::None,
        "Merge blktrace files and exit",
    ),
];

pub fn find_flag(name: &str) -> Option<&'static GlobalFlag> {
    GLOBAL_FLAGS.iter().find(|f| f.name == name)
}

fn usage(flag: &str, value: &str, reason: &str) -> JobError {
    JobError::Usage(format!("--{flag}={value}: {reason}"))
}

/// Applies one supported global flag.
pub(crate) fn apply_flag(
    inv: &mut FioInvocation,
    flag: &GlobalFlag,
    value: Option<&str>,
) -> Result<(), JobError> {
    if !flag.supported {
        return Err(JobError::Usage(format!(
            "--{}: fio's global flag is not supported by storbench (see docs/fio-compat.md)",
            flag.name
        )));
    }
    let v = value.unwrap_or("");
    match flag.name {
        "output" => inv.output = Some(PathBuf::from(v)),
        "output-format" => inv.output_formats = parse_formats(v)?,
        "minimal" => inv.output_formats = vec![OutputFormat::Terse],
        "append-terse" => add_format(&mut inv.output_formats, OutputFormat::Terse),
        "terse-version" if v.trim() == "3" => inv.terse_version = 3,
        "terse-version" => {
            return Err(usage(flag.name, v, "storbench writes terse version 3 only"));
        }
        "eta" => inv.eta = parse_eta(v)?,
        "eta-newline" => inv.eta_newline = Some(interval(flag.name, v, Duration::from_millis(1))?),
        "eta-interval" => {
            inv.eta_interval = Some(interval(flag.name, v, Duration::from_millis(250))?)
        }
        "status-interval" => {
            inv.status_interval = Some(interval(flag.name, v, Duration::from_secs(1))?)
        }
        "parse-only" => inv.parse_only = true,
        "section" if v.starts_with("global") => {
            return Err(usage(
                flag.name,
                v,
                "the global section is always applied; name a job section",
            ));
        }
        "section" => inv.sections.push(v.to_string()),
        "cmdhelp" => inv.cmdhelp = Some(value.map(str::to_string)),
        "enghelp" => inv.enghelp = Some(value.map(str::to_string)),
        "showcmd" => inv.showcmd = Some(String::new()),
        "readonly" => inv.readonly = true,
        "version" => inv.version = true,
        "help" => inv.help = true,
        "warnings-fatal" => inv.warnings_fatal = true,
        // Scripts pass these to fio for its own diagnostics: the run is the same without.
        "debug" => inv.warnings.push(format!(
            "--debug={v}: storbench does not trace fio's debug categories; running without"
        )),
        "aux-path" => {}
        _ => return Err(JobError::Usage(format!("--{}: not handled", flag.name))),
    }
    Ok(())
}

fn parse_formats(v: &str) -> Result<Vec<OutputFormat>, JobError> {
    let mut out = Vec::new();
    for word in v.split(',') {
        // `minimal` is a flag of its own here, not an --output-format value (as in fio).
        let word = word.trim();
        let Some(f) = OutputFormat::ALL.into_iter().find(|f| f.name() == word) else {
            return Err(usage(
                "output-format",
                v,
                &format!("'{word}' is not one of normal, terse, json, json+"),
            ));
        };
        add_format(&mut out, f);
    }
    Ok(out)
}

fn add_format(list: &mut Vec<OutputFormat>, f: OutputFormat) {
    if !list.contains(&f) {
        list.push(f);
    }
}

fn parse_eta(v: &str) -> Result<Eta, JobError> {
    match v {
        "auto" => Ok(Eta::Auto),
        "always" => Ok(Eta::Always),
        "never" => Ok(Eta::Never),
        _ => Err(usage("eta", v, "expected auto, always or never")),
    }
}

fn interval(flag: &str, v: &str, min: Duration) -> Result<Duration, JobError> {
    let d = parse_time_us(v, SECOND_US)
        .map(Duration::from_micros)
        .map_err(|reason| usage(flag, v, &reason))?;
    if d < min {
        return Err(usage(flag, v, &format!("must be at least {min:?}")));
    }
    Ok(d)
}
