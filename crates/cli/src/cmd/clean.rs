//! `storbench clean DIR`: removes what killed quick and bonnie runs left in a directory. A
//! run stopped by a signal removes its files itself; one killed with SIGKILL (or by the OOM
//! killer, or a power cut) cannot. quick's files are known by name, which carries the
//! creating process's PID (`storbench-quick.PID.tmp`, `.storbench-direct-probe.PID`): a file
//! is stale when no process of that PID runs on this host. bonnie's `Bonnie.PID` (a name
//! bonnie++ uses too) counts only beside storbench's marker `.storbench-bonnie.PID`
//! ([`crate::bonnie_marker`]), whose recorded start time must no longer match a running
//! process. Nothing else is ever touched: not a file of another name, not a link, not a
//! `Bonnie.PID` without a marker, not one whose process is alive. In an `nfs://` or
//! `smb://` directory the runs' marks carry their host too ([`crate::remote_leftovers`]).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use storbench_job::target::Target as Typed;

use crate::StoreArgs;
use crate::bonnie_marker;
use crate::ui::human_bytes;

/// Remove files left in DIR by storbench runs that were killed.
#[derive(clap::Args, Debug)]
pub struct CleanArgs {
    /// The directory a run was given (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Remove without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// In an nfs:// or smb:// directory, remove too what runs of other hosts left (this
    /// host cannot tell whether those runs are alive).
    #[arg(long)]
    pub other_hosts: bool,
}

/// A file or tree a killed run left.
pub struct Leftover {
    pub path: PathBuf,
    pub pid: u32,
    pub bytes: u64,
    /// A directory (bonnie's file-test tree), removed with what it holds; links inside are
    /// removed, never followed.
    pub tree: bool,
    /// For bonnie's leftovers, the start time in the marker: the process is alive only if
    /// a process of that PID started then.
    pub start: Option<u64>,
}

impl Leftover {
    fn alive(&self) -> bool {
        match self.start {
            Some(start) => bonnie_marker::alive(self.pid, start),
            None => alive(self.pid),
        }
    }
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
/// process is gone; and the `Bonnie.PID` files and trees of bonnie runs whose marker names
/// a process that is gone, each marker last, after what it stands for.
pub fn stale(dir: &Path) -> std::io::Result<Vec<Leftover>> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        names.push(entry?.file_name());
    }
    names.sort();
    for name in names.iter().filter_map(|n| n.to_str()) {
        let path = dir.join(name);
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if let Some(pid) = pid_of(name)
            && meta.is_file()
            && !alive(pid)
        {
            out.push(Leftover {
                path,
                pid,
                bytes: meta.len(),
                tree: false,
                start: None,
            });
        } else if let Some(pid) = bonnie_marker::pid_in_name(name)
            && meta.is_file()
        {
            out.extend(stale_bonnie(dir, &names, &path, pid));
        }
    }
    Ok(out)
}

/// What the bonnie run of the marker at `marker` left in `dir`, if its process is gone.
fn stale_bonnie(
    dir: &Path,
    names: &[std::ffi::OsString],
    marker: &Path,
    pid: u32,
) -> Vec<Leftover> {
    let Some((named, start)) = read_marker(marker).and_then(|t| bonnie_marker::parse(&t)) else {
        return Vec::new(); // not a marker of ours: left alone
    };
    if named != pid || bonnie_marker::alive(pid, start) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for name in names.iter().filter_map(|n| n.to_str()) {
        if !bonnie_marker::is_bonnie_entry(name, pid) {
            continue;
        }
        let path = dir.join(name);
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        // A link is not something the run made: neither it nor what it points to is touched.
        if meta.is_file() || meta.is_dir() {
            out.push(Leftover {
                bytes: if meta.is_dir() {
                    tree_bytes(&path)
                } else {
                    meta.len()
                },
                path,
                pid,
                tree: meta.is_dir(),
                start: Some(start),
            });
        }
    }
    out.push(Leftover {
        path: marker.to_path_buf(),
        pid,
        bytes: 0,
        tree: false,
        start: Some(start),
    });
    out
}

/// A marker's first bytes (a marker is one short line), not through a link.
fn read_marker(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut text = String::new();
    file.take(128).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The bytes of the regular files under `dir`, links not followed.
fn tree_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| Some((e.path(), e.path().symlink_metadata().ok()?)))
        .map(|(p, m)| {
            if m.is_dir() {
                tree_bytes(&p)
            } else if m.is_file() {
                m.len()
            } else {
                0
            }
        })
        .sum()
}

/// One warning line when `dir` holds leftovers of killed runs (before a new run there).
pub fn warn_stale(dir: &Path) {
    let Ok(found) = stale(dir) else { return };
    // A run's tree says more than its marker file, and readdir's order is arbitrary.
    let Some(first) = found
        .iter()
        .find(|l| l.path.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .or(found.first())
    else {
        return;
    };
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
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if let Some(remote) = remote_dir(&dir)? {
        return clean_remote(&remote, &args);
    }
    let found = stale(&dir).with_context(|| format!("cannot list {}", dir.display()))?;
    if found.is_empty() {
        eprintln!(
            "storbench: nothing to clean in {}: no files or trees of killed storbench runs",
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let lines: Vec<String> = found
        .iter()
        .map(|l| {
            format!(
                "{}{} ({}, process {} is gone)",
                l.path.display(),
                if l.tree { "/" } else { "" },
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
        if l.alive() {
            continue;
        }
        // remove_dir_all removes links inside the tree (and a link put in the tree's place
        // since) without following them.
        let removed = if l.tree {
            std::fs::remove_dir_all(&l.path)
        } else {
            std::fs::remove_file(&l.path)
        };
        removed.with_context(|| format!("cannot remove {}", l.path.display()))?;
        eprintln!("storbench: removed {}", l.path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The directory on a server a URL names (NFS, SMB), checked and its secrets prepared;
/// `None` for a local path; a URL of a protocol without files is refused.
fn remote_dir(dir: &Path) -> anyhow::Result<Option<Typed>> {
    let Some(text) = dir.to_str() else {
        return Ok(None);
    };
    let target = Typed::parse(text).map_err(anyhow::Error::msg)?;
    let Some(p) = target.protocol() else {
        return Ok(None);
    };
    if !p.metadata {
        let with_files: Vec<String> = storbench_job::catalogue::protocols()
            .filter(|p| p.metadata)
            .map(|p| format!("{}://", p.scheme))
            .collect();
        anyhow::bail!(
            "clean takes a local directory or an {} one; {}:// targets hold no files of \
             storbench's: {target}",
            with_files.join(" or "),
            p.scheme
        );
    }
    crate::running::prepare_target(&target, true)?;
    match storbench_bonnie::target::Target::resolve(text) {
        Ok(storbench_bonnie::target::Target::Remote(t)) => Ok(Some(*t)),
        Ok(_) => Ok(None),
        Err(e) => anyhow::bail!("{e}"),
    }
}

/// `clean URL`: what killed runs of this host left is listed and removed; what runs of
/// other hosts left is listed, and removed only with `--other-hosts`.
fn clean_remote(dir: &Typed, args: &CleanArgs) -> anyhow::Result<ExitCode> {
    use crate::remote_leftovers::{RemoteDir, State, shown, this_host};
    let me = this_host();
    let shown = shown(dir);
    let mut remote = RemoteDir::open(dir)?;
    let found = remote
        .leftovers(&me)
        .with_context(|| format!("cannot list {shown}"))?;
    let (others, gone): (Vec<_>, Vec<_>) =
        found.into_iter().partition(|l| l.state == State::OtherHost);
    let other_line = |l: &crate::remote_leftovers::Leftover| {
        format!(
            "{}{} in {shown} ({}, made on host {} by process {}; cannot tell whether that run \
             is alive)",
            l.name,
            if l.tree { "/" } else { "" },
            human_bytes(l.bytes),
            l.mark.host.name,
            l.mark.pid
        )
    };
    if !args.other_hosts {
        for l in &others {
            eprintln!(
                "storbench: kept {}; --other-hosts removes it",
                other_line(l)
            );
        }
    }
    let chosen: Vec<_> = match args.other_hosts {
        true => gone.into_iter().chain(others).collect(),
        false => gone,
    };
    if chosen.is_empty() {
        eprintln!(
            "storbench: nothing to clean in {shown}: no files or trees of killed storbench runs \
             of this host"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let lines: Vec<String> = chosen
        .iter()
        .map(|l| match l.state {
            State::OtherHost => other_line(l),
            _ => format!(
                "{}{} in {shown} ({}, process {} is gone)",
                l.name,
                if l.tree { "/" } else { "" },
                human_bytes(l.bytes),
                l.mark.pid
            ),
        })
        .collect();
    if !args.yes && !confirm(&lines)? {
        eprintln!("storbench: nothing removed");
        return Ok(ExitCode::FAILURE);
    }
    for l in &chosen {
        // Checked again just before: this host's process may be a new one since.
        if l.state == State::Gone && l.mark.state(&me) == State::Alive {
            continue;
        }
        remote
            .remove(l)
            .with_context(|| format!("cannot remove {} in {shown}", l.name))?;
        eprintln!("storbench: removed {} in {shown}", l.name);
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
    write!(err, "Remove {} file(s) and tree(s)? [y/N] ", lines.len())?;
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
