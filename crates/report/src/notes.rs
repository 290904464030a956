//! The notes block: what limits a run's figures and why some should not be trusted. Printed
//! after fio's disk stats, after the quick table and wherever a human reads a result, set
//! apart so that fio-format parsers that stop at `Disk stats` are not disturbed.

use std::io::{self, Write};

use storbench_core::result::{Note, NoteLevel, RunResult, Verdict};

/// Message shown when a run was stopped early.
pub const INTERRUPTED: &str = "the run was interrupted: the figures cover only what ran";

/// A run's notes block, ending with one verdict line per judged entry.
pub fn render_run(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    render(&run.notes, run.interrupted, out)?;
    if run.verdicts.is_empty() {
        return Ok(());
    }
    if run.notes.is_empty() && !run.interrupted {
        writeln!(out, "\nstorbench notes:")?;
    }
    for v in &run.verdicts {
        writeln!(out, "  {:<8} {}", "verdict", verdict_line(v))?;
    }
    Ok(())
}

/// `seqread: suspect (cache, steady)`: the entry, its verdict and the checks behind it
/// (the notes above give each with its figure).
pub fn verdict_line(v: &Verdict) -> String {
    let mut checks: Vec<&str> = Vec::new();
    for r in v.reasons.iter().filter(|r| r.validity > Default::default()) {
        if !checks.contains(&r.check.as_str()) {
            checks.push(&r.check);
        }
    }
    if checks.is_empty() {
        format!("{}: {}", v.job, v.validity.name())
    } else {
        format!("{}: {} ({})", v.job, v.validity.name(), checks.join(", "))
    }
}

/// Writes the block (nothing when there are no notes and the run was not interrupted):
/// a blank line, `storbench notes:`, then one line per note, warnings first.
pub fn render(notes: &[Note], interrupted: bool, out: &mut dyn Write) -> io::Result<()> {
    if notes.is_empty() && !interrupted {
        return Ok(());
    }
    writeln!(out, "\nstorbench notes:")?;
    // Analysis already notes an interruption in the run's own notes; say it once.
    if interrupted && !notes.iter().any(|n| n.code == "warn.interrupted") {
        writeln!(out, "  {:<8} {INTERRUPTED}", "warning")?;
    }
    for level in [NoteLevel::Warning, NoteLevel::Limit, NoteLevel::Info] {
        for n in notes.iter().filter(|n| n.level == level) {
            writeln!(out, "  {:<8} {} [{}]", level_name(level), n.message, n.code)?;
        }
    }
    Ok(())
}

/// Lower-case name of a level, as in the JSON outputs.
pub fn level_name(level: NoteLevel) -> &'static str {
    match level {
        NoteLevel::Info => "info",
        NoteLevel::Limit => "limit",
        NoteLevel::Warning => "warning",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(level: NoteLevel, code: &str, message: &str) -> Note {
        Note {
            level,
            code: code.into(),
            message: message.into(),
        }
    }

    #[test]
    fn empty_without_notes() {
        let mut out = Vec::new();
        render(&[], false, &mut out).unwrap();
        assert!(out.is_empty());
    }

    #[test]
    fn warnings_come_first() {
        let notes = [
            note(
                NoteLevel::Info,
                "info.engine",
                "io_uring with 8 registered buffers",
            ),
            note(
                NoteLevel::Warning,
                "warn.page-cache",
                "the 64 MiB test file fits in RAM",
            ),
            note(
                NoteLevel::Limit,
                "limit.cpu",
                "one CPU was busy 98% of the time",
            ),
        ];
        let mut out = Vec::new();
        render(&notes, true, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "\nstorbench notes:\n  warning  the run was interrupted: the figures cover only what ran\n  warning  the 64 MiB test file fits in RAM [warn.page-cache]\n  limit    one CPU was busy 98% of the time [limit.cpu]\n  info     io_uring with 8 registered buffers [info.engine]\n"
        );
    }
}
