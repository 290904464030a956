//! What every measuring subcommand does around the runner: check URL targets through
//! their engines, report what a run left behind, decide the exit code.

use std::process::ExitCode;

use storbench_job::JobSpec;
use storbench_job::target::Target;
use storbench_model::redact;
use storbench_model::result::{Note, RunResult};

/// Checks `target`, parsed where it was read, before a run as its protocol needs: the
/// `prepare` beside its engine's `create` (a share's login, a LUN's secrets), asking on the
/// terminal for a missing secret; `directory` when storbench creates files in it.
pub fn prepare_target(target: &Target, directory: bool) -> anyhow::Result<()> {
    storbench_engines::prepare(target, directory, &crate::secrets::Terminal)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// [`prepare_target`] for every target a fio job names (each once; the nfs engine's
/// `nfs_url` is the job's directory); the names a job puts under a URL target must stay
/// below it (`plan::check_names`).
pub fn prepare_targets(jobs: &[JobSpec]) -> anyhow::Result<()> {
    let mut checked: Vec<(&Target, bool)> = Vec::new();
    for job in jobs {
        storbench_core::plan::check_names(job).map_err(anyhow::Error::msg)?;
        let files = job.filenames.iter().map(|f| (f, false));
        let dirs = job.directories.iter().map(|d| (d, true));
        for (target, dir) in files.chain(dirs) {
            if target.protocol().is_none() || checked.contains(&(target, dir)) {
                continue;
            }
            prepare_target(target, dir)?;
            checked.push((target, dir));
        }
    }
    Ok(())
}

/// The run's result, or its error with the warnings about what it left behind printed
/// first (a set-up error may come after a file was created that could not be removed).
pub fn finished(result: Result<RunResult, storbench_run::RunError>) -> anyhow::Result<RunResult> {
    match result {
        Ok(run) => Ok(run),
        Err(e) => {
            warn_leftovers(&e.notes);
            Err(anyhow::anyhow!("{}", redact::text(&e.error.message)))
        }
    }
}

/// Masks the secrets (CHAP passwords of iSCSI URLs) in every string of a finished run,
/// before anything prints, saves or renders it.
pub fn redact_run(run: &mut RunResult) -> anyhow::Result<()> {
    redact::run(run).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Says on stderr which files the run created and could not remove (the notes block has
/// them too, but stdout may be JSON or a file): the user has to remove them by hand.
pub fn warn_leftovers(notes: &[Note]) {
    for n in notes.iter().filter(|n| n.code == "warn.cleanup") {
        eprintln!("storbench: warning: {}", redact::text(&n.message));
    }
}

/// Says on stderr why jobs stopped early (the report has it too, but stdout may be a file
/// or JSON): one line per distinct error.
pub fn report_job_errors(run: &RunResult) {
    warn_leftovers(&run.notes);
    let mut seen: Vec<String> = Vec::new();
    for job in run.groups.iter().flat_map(|g| &g.jobs) {
        if !job.stopped_by_error() {
            continue;
        }
        let why = job.error_text.as_deref().unwrap_or("failed");
        let line = format!("storbench: {}: {why}", job.name);
        if !seen.contains(&line) {
            eprintln!("{line}");
            seen.push(line);
        }
    }
}

/// Exit code of a finished run: 0 only if every job ran to the end without error.
pub fn exit_code(run: &RunResult) -> ExitCode {
    let failed = run
        .groups
        .iter()
        .flat_map(|g| &g.jobs)
        .any(|j| j.stopped_by_error())
        || run
            .notes
            .iter()
            .any(|n| n.code == crate::repeat::ROUND_FAILED);
    if run.interrupted {
        interrupted_code()
    } else if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// 128 + the signal that stopped the run, as a shell reports a process the signal killed
/// (SIGINT 130, SIGTERM 143).
pub fn interrupted_code() -> ExitCode {
    let sig = storbench_core::stop::signal().unwrap_or(libc::SIGINT);
    ExitCode::from(128 + sig as u8)
}

/// Whether an error is stdout's reader having gone away (EPIPE), also when a JSON writer
/// wrapped it.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    fn json_pipe(j: &serde_json::Error) -> bool {
        j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe)
    }
    e.chain().any(|c| {
        if let Some(j) = c.downcast_ref::<serde_json::Error>() {
            return json_pipe(j);
        }
        c.downcast_ref::<std::io::Error>().is_some_and(|io| {
            io.kind() == std::io::ErrorKind::BrokenPipe
                || io
                    .get_ref()
                    .and_then(|i| i.downcast_ref::<serde_json::Error>())
                    .is_some_and(json_pipe)
        })
    })
}

/// Writes command output to stdout, returning EPIPE as an error instead of panicking as
/// `print!` does.
pub fn print_out(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}
