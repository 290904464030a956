//! The marker of a bonnie run in a local directory: `.storbench-bonnie.PID`, holding the
//! PID and the process's start time. bonnie++ names its test file and file-test tree
//! `Bonnie.PID` too, so that name alone cannot say the tree is storbench's; the marker can.
//! A run killed with SIGKILL leaves marker and tree; `storbench clean` (and the next bonnie
//! or quick run there) finds them by the marker, and only removes `Bonnie.PID` and
//! `Bonnie.PID.N` when the marker's process is gone. The start time tells a recycled PID
//! from the process that made the marker.
//!
//! The suite writes the marker before its first file and removes it in the same step as
//! its files, before it waits for or tells anything to other ranks: in a multi-host run a
//! stop signal may be followed by SIGKILL as soon as another rank exits (docs/multihost.md,
//! "When a rank fails").

use std::io::Write;
use std::path::{Path, PathBuf};

/// The marker's file name for `pid`.
pub fn name(pid: u32) -> String {
    format!(".storbench-bonnie.{pid}")
}

/// The PID in a marker's file name, if it is one.
pub fn pid_in_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(".storbench-bonnie.")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What a marker holds: one line, `storbench bonnie pid PID start TICKS`.
fn content(pid: u32, start: u64) -> String {
    format!("storbench bonnie pid {pid} start {start}\n")
}

/// The PID and start time a marker names, if it is a marker at all.
pub fn parse(text: &str) -> Option<(u32, u64)> {
    let mut w = text.trim_end_matches('\n').split(' ');
    let fields = [
        w.next()?,
        w.next()?,
        w.next()?,
        w.next()?,
        w.next()?,
        w.next()?,
    ];
    if w.next().is_some() || fields[..2] != ["storbench", "bonnie"] {
        return None;
    }
    if fields[2] != "pid" || fields[4] != "start" {
        return None;
    }
    Some((fields[3].parse().ok()?, fields[5].parse().ok()?))
}

/// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None
/// when no such process runs.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process that wrote a marker with `pid` and `start` still runs.
pub fn alive(pid: u32, start: u64) -> bool {
    start_time(pid) == Some(start)
}

/// Whether `name` is one of the files or trees a bonnie run of `pid` makes.
pub fn is_bonnie_entry(name: &str, pid: u32) -> bool {
    let Some(rest) = name.strip_prefix(&format!("Bonnie.{pid}")) else {
        return false;
    };
    // A multi-host run's rank (`.r2`), then a copy's number (`.3`), each optional.
    let rest = match rest.strip_prefix(".r") {
        Some(r) => {
            let after = r.trim_start_matches(|c: char| c.is_ascii_digit());
            if after.len() == r.len() {
                return false;
            }
            after
        }
        None => rest,
    };
    let digits = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    rest.is_empty() || rest.strip_prefix('.').is_some_and(digits)
}

/// The marker of the running bonnie: written before the run creates anything, removed when
/// the run has removed what it made (kept otherwise, so `clean` can find the rest).
pub(crate) struct Marker {
    dir: PathBuf,
    pid: u32,
}

impl Marker {
    /// Writes the marker in the local directory `dir` (absolute; created exclusively: an
    /// existing file or link of that name is an error, never followed).
    pub(crate) fn create(dir: &Path) -> Result<Marker, String> {
        use std::os::unix::fs::OpenOptionsExt;
        let pid = std::process::id();
        let path = dir.join(name(pid));
        let start = start_time(pid).ok_or("cannot read this process's start time")?;
        // Owner-only, as bonnie++'s own files (0600), whatever the umask.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        // From here the file is ours: dropping the marker on an error removes it.
        let marker = Marker {
            dir: dir.to_path_buf(),
            pid,
        };
        f.write_all(content(pid, start).as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(marker)
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let left = entries.flatten().any(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| is_bonnie_entry(n, self.pid))
        });
        if !left {
            let _ = std::fs::remove_file(self.dir.join(name(self.pid)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_content() {
        assert_eq!(pid_in_name(&name(77)), Some(77));
        for other in [".storbench-bonnie.", ".storbench-bonnie.7x", "Bonnie.7"] {
            assert_eq!(pid_in_name(other), None, "{other}");
        }
        assert_eq!(parse(&content(5, 123)), Some((5, 123)));
        for bad in ["", "storbench bonnie pid 5", "bonnie pid 5 start 1", "x\n"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert!(is_bonnie_entry("Bonnie.12", 12) && is_bonnie_entry("Bonnie.12.3", 12));
        assert!(is_bonnie_entry("Bonnie.12.r2", 12) && is_bonnie_entry("Bonnie.12.r2.3", 12));
        for other in [
            "Bonnie.123",
            "Bonnie.12.",
            "Bonnie.12.x",
            "Bonnie.1",
            "Bonnie.12.r",
        ] {
            assert!(!is_bonnie_entry(other, 12), "{other}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_recycled_pid_is_not() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(alive(me, start));
        assert!(!alive(me, start + 1));
        assert!(!alive(u32::MAX, start));
    }
}
