//! `storbench fio …`: a fio command line or job files, run unchanged, reported in fio's
//! formats.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use storbench_job::{Eta, FioInvocation, HostFacts, parse_fio_args};
use storbench_model::result::{RunMode, RunResult};
use storbench_report::fio::FioFormat;
use storbench_report::live::status::EtaMode;
use storbench_report::registry;
use storbench_run::{RunRequest, run};

use crate::StoreArgs;
use crate::session::Session;
use crate::ui::{CliObserver, EtaTiming, LiveStyle};

/// fio options and job files, exactly as fio takes them (see `storbench fio --cmdhelp`).
/// storbench's own options may be mixed in: --allow-destructive, --repeat N,
/// --server-stats snmp://[community@]host[:port], --label, --tag, --db, --no-save.
#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true)]
pub struct FioArgs {
    /// fio's options (--NAME=VALUE, listed under FIO OPTIONS and by --cmdhelp), job files
    /// and storbench's own flags (--label, --tag, --repeat, --no-save).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..,
        value_name = "FIO_OPTION|JOB_FILE"
    )]
    pub args: Vec<String>,
}

/// storbench's own flags found among fio's arguments.
#[derive(Debug, Default)]
struct OwnFlags {
    store: StoreArgs,
    allow_destructive: bool,
    /// `--repeat N`: rounds of the whole job set (overrides the jobs' `numruns`).
    repeat: Option<u32>,
    /// `--server-stats snmp://…`: the server's counters read during the run.
    server_stats: Option<storbench_snmp::SnmpUrl>,
}

pub fn run_fio(args: FioArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let (fio_args, own) = split_own_flags(&args.args, store)?;
    crate::cmd::save::check_label(&own.store)?;
    let env = |k: &str| std::env::var(k).ok();
    let mut inv = parse_fio_args(&fio_args, &HostFacts::detect(), &env)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(text) = informational(&inv)? {
        crate::running::print_out(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    for w in &inv.warnings {
        eprintln!("storbench: warning: {}", storbench_model::redact::text(w));
    }
    for job in &mut inv.workload.jobs {
        job.allow_destructive |= own.allow_destructive;
    }
    if let Some(cmd) = &inv.showcmd {
        crate::running::print_out(cmd)?;
        return Ok(ExitCode::SUCCESS);
    }
    if inv.parse_only {
        return Ok(ExitCode::SUCCESS);
    }
    check_log_directories(&inv.workload.jobs)?;
    crate::running::prepare_targets(&inv.workload.jobs)?;
    let rounds = own.repeat.unwrap_or_else(|| {
        inv.workload
            .jobs
            .iter()
            .map(|j| j.numruns)
            .max()
            .unwrap_or(1)
    });
    execute(inv, &own, rounds, std::env::args().collect())
}

/// Help texts the invocation asks for instead of a run.
fn informational(inv: &FioInvocation) -> anyhow::Result<Option<String>> {
    if inv.version {
        let version = storbench_job::fio_style_version(env!("CARGO_PKG_VERSION"));
        return Ok(Some(format!("{version}\n")));
    }
    if let Some(opt) = &inv.cmdhelp {
        return storbench_job::cmdhelp(opt.as_deref())
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{e}"));
    }
    if let Some(engine) = &inv.enghelp {
        return storbench_job::enghelp(engine.as_deref())
            .map(Some)
            .map_err(|e| anyhow::anyhow!("{e}"));
    }
    if inv.help {
        return Ok(Some(fio_help()));
    }
    Ok(None)
}

/// `storbench fio --help`: storbench's own flags first, then where fio's options are.
const FIO_HELP: &str = "\
Usage: storbench fio [storbench flags] [fio options] [job file(s)]

Runs fio's command lines and job files as fio takes them, and saves each run.

storbench's own flags (anywhere among fio's arguments):
  --label TEXT         name the saved run (history, show, compare, report take it)
  --tag TEXT           tag the saved run (repeatable)
  --repeat N           run the whole job set N times (1 to 100): each figure's mean with
                       its 95% interval, saved as one run (fio's numruns=N does the same)
  --no-save            do not save the run
  --db PATH            results database (default: $STORBENCH_DB, else
                       $XDG_DATA_HOME/storbench/results.db)
  --allow-destructive  write to a device or LUN that holds a partition table or data
  --server-stats snmp://[COMMUNITY@]HOST[:PORT]
                       read the server's CPU, NIC and disk counters during the run

Targets (filename=, directory=): a path, a block device, or a URL:
{targets}

fio's options: storbench fio --cmdhelp (all of them), --cmdhelp=OPTION (one),
--enghelp (the engines), --enghelp=ENGINE (one engine's options); docs/fio-compat.md says
which are supported.

Example: storbench fio --name=rr --rw=randread --bs=4k --size=1g --runtime=30 --time_based \\
           --filename=/mnt/pool/f --label pool-rr
";

/// [`FIO_HELP`] with the URL forms of every protocol in the catalogue.
fn fio_help() -> String {
    let forms: Vec<&str> = storbench_job::catalogue::protocols()
        .map(|p| p.form)
        .collect();
    let forms: Vec<String> = forms.iter().map(|f| format!("  {f}")).collect();
    FIO_HELP.replace("{targets}", &forms.join("\n"))
}

/// Runs the workload through the session's life cycle and writes the reports.
fn execute(
    inv: FioInvocation,
    own: &OwnFlags,
    rounds: u32,
    command_line: Vec<String>,
) -> anyhow::Result<ExitCode> {
    let mut session = Session::begin(&own.store)?.with_server_stats(own.server_stats.clone());
    let formats: Vec<FioFormat> = inv.output_formats.clone();
    let out: Box<dyn Write> = match &inv.output {
        Some(path) => {
            Box::new(File::create(path).with_context(|| format!("--output={}", path.display()))?)
        }
        None => Box::new(io::stdout()),
    };
    // The start lines (while measuring) and the reports (after saving) go to the same place.
    let out = RefCell::new(out);
    let normal = formats.contains(&FioFormat::Normal);
    let eta = match inv.eta {
        Eta::Auto => EtaMode::Auto,
        Eta::Always => EtaMode::Always,
        Eta::Never => EtaMode::Never,
    };
    let req = RunRequest {
        workload: &inv.workload,
        mode: RunMode::Fio,
        command_line,
        always_remove_created: false,
    };
    let measure = || {
        crate::repeat::measure_rounds(rounds, |_| {
            let mut out = out.borrow_mut();
            let mut observer = CliObserver::new(
                normal.then_some(out.as_mut() as &mut dyn Write),
                eta,
                LiveStyle::Fio,
            )
            .with_timing(EtaTiming {
                interval: inv.eta_interval.unwrap_or(EtaTiming::default().interval),
                newline: inv.eta_newline,
            });
            let r = run(req.clone(), &mut observer);
            observer.finish();
            crate::running::finished(r)
        })
    };
    let dest = inv.output.as_ref().map_or_else(
        || "standard output".to_string(),
        |p| format!("--output={}", p.display()),
    );
    let render = |run: &RunResult| -> anyhow::Result<()> {
        let mut out = out.borrow_mut();
        registry::write_fio(run, &formats, out.as_mut())
            .and_then(|()| out.flush())
            .with_context(|| format!("writing the report to {dest}"))
    };
    session.run(measure, |_| {}, render)
}

/// Takes storbench's own flags out of fio's arguments (they can't be clap globals there,
/// since everything after `fio` is fio's).
fn split_own_flags(args: &[String], store: &StoreArgs) -> anyhow::Result<(Vec<String>, OwnFlags)> {
    let mut own = OwnFlags {
        store: store.clone(),
        allow_destructive: false,
        repeat: None,
        server_stats: None,
    };
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        let mut value = |flag: &str| -> anyhow::Result<String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .with_context(|| format!("{flag} needs a value"))
        };
        match name {
            "--allow-destructive" => own.allow_destructive = true,
            "--repeat" => {
                let v = value("--repeat")?;
                own.repeat = Some(
                    storbench_model::repeats::parse_count(&v)
                        .map_err(|e| anyhow::anyhow!("--repeat {v}: {e}"))?,
                );
            }
            "--server-stats" => {
                own.server_stats = Some(crate::server_stats::parse(&value("--server-stats")?)?)
            }
            "--no-save" => own.store.no_save = true,
            "--label" => own.store.label = Some(value("--label")?),
            "--tag" => own.store.tags.push(value("--tag")?),
            "--db" => own.store.db = Some(value("--db")?.into()),
            _ => rest.push(a.clone()),
        }
    }
    Ok((rest, own))
}

/// Log files (`write_bw_log` and the rest) go into directories that must exist: one asked
/// for below a missing directory is one line before the run, not a warning after it (fio
/// 3.33 runs the job, cannot open the file and exits 0, which a script cannot tell from
/// success). A file that cannot be written later (a full disk) is still a warning.
fn check_log_directories(jobs: &[storbench_job::JobSpec]) -> anyhow::Result<()> {
    for job in jobs {
        let l = &job.logs;
        let given = [
            ("write_bw_log", &l.bw),
            ("write_iops_log", &l.iops),
            ("write_lat_log", &l.lat),
            ("write_hist_log", &l.hist),
        ];
        for (option, prefix) in given {
            let Some(prefix) = prefix else { continue };
            let dir = match std::path::Path::new(prefix).parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => std::path::Path::new("."),
            };
            if !dir.is_dir() {
                anyhow::bail!(
                    "{}: {option}={}: the directory {} does not exist",
                    job.name,
                    storbench_model::redact::text(prefix),
                    storbench_model::redact::text(&dir.display().to_string())
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_flags_are_taken_out() {
        let args: Vec<String> = [
            "--name=a",
            "--label",
            "nvme",
            "--tag=x",
            "--allow-destructive",
            "--bs=4k",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (rest, own) = split_own_flags(&args, &StoreArgs::default()).unwrap();
        assert_eq!(rest, vec!["--name=a", "--bs=4k"]);
        assert_eq!(own.store.label.as_deref(), Some("nvme"));
        assert_eq!(own.store.tags, vec!["x"]);
        assert!(own.allow_destructive);
        assert!(split_own_flags(&["--label".to_string()], &StoreArgs::default()).is_err());
    }
}
