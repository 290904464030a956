//! The notes block: what limits a run's figures and why some should not be trusted. Printed
//! after fio's disk stats, after the quick table and wherever a human reads a result, set
//! apart so that fio-format parsers that stop at `Disk stats` are not disturbed.

use std::io::{self, Write};

use storbench_model::result::{Note, NoteLevel, RunResult, Verdict};

/// Message shown when a run was stopped early.
pub const INTERRUPTED: &str = "the run was interrupted: the figures cover only what ran";

/// A run's notes block, ending with one verdict line per judged entry.
pub fn render_run(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    render(&run.notes, run.interrupted, out)?;
    render_verdicts(run, out)
}

/// How a terminal reader gets the notes: wrapped to `width` columns (unwrapped when
/// `None`), and the verdict lines only when `verdicts` (they repeat a table's Valid column).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub width: Option<usize>,
    pub verdicts: bool,
}

/// The notes block as [`render_run`] writes it, laid out for a terminal.
pub fn render_run_for(run: &RunResult, layout: Layout, out: &mut dyn Write) -> io::Result<()> {
    let mut block = Vec::new();
    render(&run.notes, run.interrupted, &mut block)?;
    if layout.verdicts {
        render_verdicts(run, &mut block)?;
    }
    let text = String::from_utf8_lossy(&block);
    match layout.width {
        Some(w) => {
            for line in text.lines() {
                writeln!(out, "{}", wrap(line, w, NOTE_INDENT))?;
            }
            Ok(())
        }
        None => out.write_all(text.as_bytes()),
    }
}

/// Where a note's text starts: two spaces, the level in eight columns, a space.
const NOTE_INDENT: usize = 11;

/// `line` broken at spaces so that no line is wider than `width` columns (a word longer
/// than that stands alone), continuation lines indented by `indent` spaces.
pub fn wrap(line: &str, width: usize, indent: usize) -> String {
    let width = width.max(indent + 20);
    if line.chars().count() <= width {
        return line.to_string();
    }
    let lead = line.len() - line.trim_start().len();
    let mut out = String::with_capacity(line.len() + 16);
    out.push_str(&line[..lead]);
    let mut col = lead;
    let mut first = true;
    for word in line[lead..].split(' ') {
        let len = word.chars().count();
        if !first && col + 1 + len > width {
            out.truncate(out.trim_end().len());
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else if !first {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += len;
        first = false;
    }
    out
}

fn render_verdicts(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
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
    for (level, message, code) in for_people(notes) {
        writeln!(out, "  {:<8} {message} [{code}]", level_name(level))?;
    }
    Ok(())
}

/// The notes as people read them, in every text output (the fio-style block, quick, the
/// bonnie table, the HTML report): warnings first, then limits, then information, and
/// repeated notes merged into one line (see [`merged`]). Each is (level, message, code).
pub fn for_people(notes: &[Note]) -> Vec<(NoteLevel, String, &str)> {
    let mut out = Vec::new();
    for level in [NoteLevel::Warning, NoteLevel::Limit, NoteLevel::Info] {
        let of_level: Vec<&Note> = notes.iter().filter(|n| n.level == level).collect();
        out.extend(
            merged(&of_level)
                .into_iter()
                .map(|(message, code)| (level, message, code)),
        );
    }
    out
}

/// Plain messages (a comparison's notes) merged as notes are: `SEQ1M: a finished too fast`
/// and `RND4K: a finished too fast` read `a finished too fast (2 tests: SEQ1M, RND4K)`.
pub fn merge_messages(messages: &[String]) -> Vec<String> {
    let notes: Vec<Note> = messages
        .iter()
        .map(|m| Note {
            level: NoteLevel::Info,
            code: String::new(),
            message: m.clone(),
        })
        .collect();
    let refs: Vec<&Note> = notes.iter().collect();
    merged(&refs).into_iter().map(|(m, _)| m).collect()
}

/// Notes that say the same of several tests (`SEQ1M Q8T1 read: the client used 99% CPU…`
/// seven times) as one line: the figures that differ as a range, the tests named after it
/// (`the client used 97–99% CPU… (7 tests: SEQ1M Q8T1 read, …)`). A note about one test, or
/// one without the `TEST: ` form, stays as it is. Only the text for people is merged; the
/// JSON outputs keep every note.
fn merged<'a>(notes: &[&'a Note]) -> Vec<(String, &'a str)> {
    // (code, shape, [(entry, numbers)]), in the order of first appearance.
    type Group<'a> = (&'a str, String, Vec<(&'a str, Vec<f64>, &'a Note)>);
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut out_order: Vec<Result<usize, &'a Note>> = Vec::new();
    for n in notes {
        let Some((entry, rest)) = n.message.split_once(": ") else {
            out_order.push(Err(n));
            continue;
        };
        let (shape, numbers) = shape_of(rest);
        match groups
            .iter()
            .position(|(c, s, _)| *c == n.code && *s == shape)
        {
            Some(i) => groups[i].2.push((entry, numbers, n)),
            None => {
                groups.push((n.code.as_str(), shape, vec![(entry, numbers, n)]));
                out_order.push(Ok(groups.len() - 1));
            }
        }
    }
    out_order
        .into_iter()
        .map(|item| match item {
            Err(n) => (n.message.clone(), n.code.as_str()),
            Ok(i) => {
                let (code, shape, members) = &groups[i];
                if let [(_, _, only)] = members.as_slice() {
                    return (only.message.clone(), *code);
                }
                let slots = members[0].1.len();
                let lo: Vec<f64> = (0..slots)
                    .map(|k| members.iter().map(|m| m.1[k]).fold(f64::INFINITY, f64::min))
                    .collect();
                let hi: Vec<f64> = (0..slots)
                    .map(|k| {
                        members
                            .iter()
                            .map(|m| m.1[k])
                            .fold(f64::NEG_INFINITY, f64::max)
                    })
                    .collect();
                let names: Vec<&str> = members.iter().map(|m| m.0).collect();
                (
                    format!(
                        "{} ({} tests: {})",
                        fill(shape, &lo, &hi),
                        members.len(),
                        names.join(", ")
                    ),
                    *code,
                )
            }
        })
        .collect()
}

/// `the client used 99% CPU` → (`the client used \u{0}% CPU`, [99]). A token of digits
/// with more than one dot (an IPv4 address `10.202.0.2`, a version `3.1.1`) is a name, not
/// a figure: it stays in the shape as written.
fn shape_of(text: &str) -> (String, Vec<f64>) {
    let mut shape = String::with_capacity(text.len());
    let mut numbers = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !c.is_ascii_digit() {
            shape.push(c);
            continue;
        }
        let mut end = i + 1;
        while let Some(&(j, d)) = chars.peek() {
            let inner_dot = d == '.' && text[j + 1..].starts_with(|x: char| x.is_ascii_digit());
            if !(d.is_ascii_digit() || inner_dot) {
                break;
            }
            end = j + 1;
            chars.next();
        }
        let token = &text[i..end];
        match token.parse() {
            Ok(v) if token.matches('.').count() <= 1 => {
                numbers.push(v);
                shape.push('\u{0}');
            }
            _ => shape.push_str(token),
        }
    }
    (shape, numbers)
}

/// The shape with each number slot filled by `lo[k]`, or `lo[k]–hi[k]` where they differ.
fn fill(shape: &str, lo: &[f64], hi: &[f64]) -> String {
    let mut out = String::with_capacity(shape.len() + 8 * lo.len());
    let mut k = 0;
    for c in shape.chars() {
        if c != '\u{0}' {
            out.push(c);
            continue;
        }
        let (a, b) = (lo.get(k).copied(), hi.get(k).copied());
        k += 1;
        match (a, b) {
            (Some(a), Some(b)) if a == b => out.push_str(&plain(a)),
            (Some(a), Some(b)) => out.push_str(&format!("{}–{}", plain(a), plain(b))),
            _ => {}
        }
    }
    out
}

/// A number as it was written in the note (no added digits).
fn plain(v: f64) -> String {
    let text = format!("{v}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_string)
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
mod wrap_tests {
    use super::wrap;

    #[test]
    fn notes_wrap_at_word_boundaries() {
        let line = "  warning  other processes used 98–109% CPU of this machine's 200% during the run: the host was busy [verdict.host]";
        let w = wrap(line, 60, 11);
        for l in w.lines() {
            assert!(l.chars().count() <= 60, "{l:?}");
        }
        assert_eq!(
            w.replace("\n           ", " "),
            line,
            "only spaces become breaks"
        );
        assert!(
            w.lines()
                .skip(1)
                .all(|l| l.starts_with("           ") && !l[11..].starts_with(' '))
        );
        assert_eq!(wrap("  info     short", 80, 11), "  info     short");
        let long = format!("  info     {} x", "y".repeat(100));
        let lines: Vec<String> = wrap(&long, 40, 11).lines().map(String::from).collect();
        assert_eq!(lines.len(), 3, "a long word stands alone: {lines:?}");
        assert_eq!(lines[0], "  info");
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
    fn repeated_notes_are_merged() {
        let cpu = |test: &str, pct: u32| {
            note(
                NoteLevel::Limit,
                "limit.cpu",
                &format!("{test}: the client used {pct}% CPU: the host may be the limit"),
            )
        };
        let notes = [
            cpu("SEQ1M Q8T1 read", 97),
            note(NoteLevel::Limit, "limit.device", "sda was 100% busy"),
            cpu("RND4K Q32T1 read", 99),
            cpu("RND4K Q1T1 write", 98),
            note(
                NoteLevel::Limit,
                "limit.cpu",
                "RND4K Q1T1 read: 2 of 2.5 CPUs busy",
            ),
        ];
        let mut out = Vec::new();
        render(&notes, false, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "\nstorbench notes:\n  limit    the client used 97–99% CPU: the host may be the limit \
             (3 tests: SEQ1M Q8T1 read, RND4K Q32T1 read, RND4K Q1T1 write) [limit.cpu]\n  \
             limit    sda was 100% busy [limit.device]\n  \
             limit    RND4K Q1T1 read: 2 of 2.5 CPUs busy [limit.cpu]\n"
        );
    }

    #[test]
    fn plain_messages_are_merged() {
        let m = |s: &str| s.to_string();
        let merged = merge_messages(&[
            m("SEQ1M: b finished too fast to measure"),
            m("runs 1 and 2 differ"),
            m("RND4K: b finished too fast to measure"),
        ]);
        assert_eq!(
            merged,
            [
                "b finished too fast to measure (2 tests: SEQ1M, RND4K)",
                "runs 1 and 2 differ"
            ]
        );
    }

    #[test]
    fn addresses_and_versions_in_merged_notes_stay_as_written() {
        let m = |s: &str| s.to_string();
        let merged = merge_messages(&[
            m("SEQ1M: 10.202.0.2 answered after 3 s over NFS 3.0.1"),
            m("RND4K: 10.202.0.2 answered after 5 s over NFS 3.0.1"),
        ]);
        assert_eq!(
            merged,
            ["10.202.0.2 answered after 3–5 s over NFS 3.0.1 (2 tests: SEQ1M, RND4K)"]
        );
        let apart = merge_messages(&[m("a: lost 10.0.0.1"), m("b: lost 10.0.0.2")]);
        assert_eq!(apart, ["a: lost 10.0.0.1", "b: lost 10.0.0.2"]);
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
