//! What every measuring subcommand does around the runner: pick engines for URL targets,
//! build engines, install the stop handlers, decide the exit code.

use std::process::ExitCode;

use anyhow::bail;
use storbench_core::result::RunResult;
use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

/// Builds one engine for a worker (the runner's factory).
pub fn engine_for(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    storbench_engines::create(job)
}

/// The network engine a target URL needs, if any.
pub fn engine_for_url(target: &str) -> Option<&'static str> {
    if target.starts_with("nfs://") {
        Some("nfs")
    } else if target.starts_with("iscsi://") {
        Some("libiscsi")
    } else {
        None
    }
}

/// Makes jobs that name a network URL use the matching engine: when the job left the
/// engine at its default it is switched (so a copied command line just works); when the user
/// chose a local engine explicitly, that is an error.
pub fn route_network_targets(job: &mut JobSpec) -> anyhow::Result<()> {
    if job.ioengine == "nfs"
        && job.filenames.is_empty()
        && job.directories.is_empty()
        && let Some((_, url)) = job.engine_options.iter().find(|(k, _)| k == "nfs_url")
    {
        job.directories = vec![url.clone()];
    }
    let target = job
        .filenames
        .first()
        .or(job.directories.first())
        .cloned()
        .unwrap_or_default();
    let Some(wanted) = engine_for_url(&target) else {
        return Ok(());
    };
    let explicit = job.options.iter().any(|(k, _)| k == "ioengine");
    // fio's metadata engines run over whatever engine serves the target.
    let meta_engine = matches!(
        job.ioengine.as_str(),
        "filecreate" | "filestat" | "filedelete"
    );
    let same = job.ioengine == wanted
        || (wanted == "libiscsi" && job.ioengine == "iscsi")
        || (wanted == "nfs" && meta_engine);
    if !same {
        if explicit {
            bail!(
                "{}: ioengine={} cannot reach {target}; use --ioengine={wanted}",
                job.name,
                job.ioengine
            );
        }
        job.ioengine = wanted.to_string();
    }
    Ok(())
}

/// Says on stderr why jobs stopped early (the report has it too, but stdout may be a file
/// or JSON): one line per distinct error.
pub fn report_job_errors(run: &RunResult) {
    let mut seen: Vec<String> = Vec::new();
    for job in run.groups.iter().flat_map(|g| &g.jobs) {
        if job.error == 0 {
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
        .any(|j| j.error != 0);
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
