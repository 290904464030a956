//! `storbench clean DIR`: removes what killed quick runs left in a directory. A run stopped
//! by a signal removes its files itself; one killed with SIGKILL (or by the OOM killer, or
//! a power cut) cannot. Its files are known by name, which carries the creating process's
//! PID (`storbench-quick.PID.tmp`, `.storbench-direct-probe.PID`): a file is stale when no
//! process of that PID runs on this host. Nothing else is ever touched: not a file of
//! another name, not a link or directory, not one whose process is alive.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::StoreArgs;
use crate::ui::human_bytes;

/// Remove files left in DIR by storbench runs that were killed.
#[derive(clap::Args, Debug)]
pub struct CleanArgs {
    /// The directory a run was given (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Remove without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// A file a killed run left.
pub struct Leftover {
    pub path: PathBuf,
    pub pid: u32,
    pub bytes: u64,
}

/// The PID in a name storbench gives its temporary files, if it is one.
fn pid_of(name: &str) -> Option<u32> {
    let digits = name
        .strip_prefix("storbench-quick.")
        .and_then(|r| r.strip_suffix(".tmp"))
        .or_else(|| name.strip_prefix(".storbench-direct-probe."))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Files in `dir` named as storbench's temporary files, regular (not links), whose
/// process is gone.
pub fn stale(dir: &Path) -> std::io::Result<Vec<Leftover>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let Some(pid) = entry.file_name().to_str().and_then(pid_of) else {
            continue;
        };
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        if meta.is_file() && !alive(pid) {
            out.push(Leftover {
                path: entry.path(),
                pid,
                bytes: meta.len(),
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// One warning line when `dir` holds leftovers of killed runs (before a new run there).
pub fn warn_stale(dir: &Path) {
    let Ok(found) = stale(dir) else { return };
    let Some(first) = found.first() else { return };
    let bytes: u64 = found.iter().map(|l| l.bytes).sum();
    eprintln!(
        "storbench: warning: {} holds {} file(s) ({}) left by storbench runs that were killed, \
         such as {}; `storbench clean {}` removes them",
        dir.display(),
        found.len(),
        human_bytes(bytes),
        first.path.display(),
        dir.display()
    );
}

pub fn run_clean(args: CleanArgs, _store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    let found = stale(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
    if found.is_empty() {
        eprintln!(
            "storbench: nothing to clean in {}: no files of killed storbench runs",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let lines: Vec<String> = found
        .iter()
        .map(|l| {
            format!(
                "{} ({}, process {} is gone)",
                l.path.display(),
                human_bytes(l.bytes),
                l.pid
            )
        })
        .collect();
    if !args.yes && !confirm(&lines)? {
        eprintln!("storbench: nothing removed");
        return Ok(ExitCode::FAILURE);
    }
    for l in &found {
        // Checked again just before: the process may have been a new one since.
        if alive(l.pid) {
            continue;
        }
        std::fs::remove_file(&l.path)
            .with_context(|| format!("cannot remove {}", l.path.display()))?;
        eprintln!("storbench: removed {}", l.path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks on the terminal; without one, refuses rather than guessing.
fn confirm(lines: &[String]) -> anyhow::Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        anyhow::bail!("refusing to remove without confirmation: not a terminal; pass --yes");
    }
    let mut err = std::io::stderr().lock();
    for l in lines {
        writeln!(err, "{l}")?;
    }
    write!(err, "Remove {} file(s)? [y/N] ", lines.len())?;
    err.flush()?;
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_names_with_a_pid() {
        assert_eq!(pid_of("storbench-quick.123.tmp"), Some(123));
        assert_eq!(pid_of(".storbench-direct-probe.9"), Some(9));
        for other in [
            "storbench-quick..tmp",
            "storbench-quick.12a.tmp",
            "storbench-quick.12.tmp.x",
            "Bonnie.123",
            "a.0.0",
        ] {
            assert_eq!(pid_of(other), None, "{other}");
        }
    }
}
