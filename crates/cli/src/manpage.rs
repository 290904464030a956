//! The sections `storbench man` adds to clap's pages: EXAMPLES, the README's own examples
//! (its "Using it" block) that run the page's subcommand, and for `storbench-fio(1)` the
//! fio options, read from the option table as `--cmdhelp` reads them.

use std::fmt::Write;

use storbench_job::options::{self, Category};

/// The README, whose first `sh` block under "## Using it" holds the examples.
const README: &str = include_str!("../../../README.md");

/// One example: the comment lines above it and the command (continuation lines joined).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    pub comment: Vec<String>,
    pub command: String,
}

impl Example {
    /// The subcommand words after `storbench` (`VAR=value` prefixes skipped), or None for
    /// a command that is not storbench's.
    fn words(&self) -> Option<Vec<&str>> {
        let mut words = self
            .command
            .split_whitespace()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'));
        (words.next()? == "storbench").then(|| words.collect())
    }

    /// Whether this example runs the subcommand `path` (`["iscsi", "discover"]`); the main
    /// page (`[]`) has every example.
    fn runs(&self, path: &[String]) -> bool {
        if path.is_empty() {
            return true;
        }
        self.words()
            .is_some_and(|w| w.len() >= path.len() && w.iter().zip(path).all(|(a, b)| a == b))
    }
}

/// The README's examples, in order.
pub fn examples() -> Vec<Example> {
    let Some(section) = README.split("\n## Using it").nth(1) else {
        return Vec::new();
    };
    let Some(block) = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut comment: Vec<String> = Vec::new();
    let mut command = String::new();
    for line in block.lines() {
        let line = line.trim_end();
        if command.is_empty() && line.is_empty() {
            comment.clear();
            continue;
        }
        if command.is_empty() && line.starts_with('#') {
            if out.last().is_some_and(|e: &Example| e.comment == comment) && !comment.is_empty() {
                comment.clear();
            }
            comment.push(line.trim_start_matches('#').trim().to_string());
            continue;
        }
        let (text, more) = match line.strip_suffix('\\') {
            Some(t) => (t.trim_end(), true),
            None => (line, false),
        };
        if !command.is_empty() {
            command.push(' ');
        }
        command.push_str(text.trim_start());
        if !more {
            out.push(Example {
                comment: comment.clone(),
                command: std::mem::take(&mut command),
            });
        }
    }
    out
}

/// Text as roff reads it literally: backslashes escaped, hyphens as minus signs (what a
/// reader types), and a leading `.` or `'` kept from being read as a request.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// The EXAMPLES section of the page of subcommand `path`, or an empty string when the
/// README has none for it.
pub fn examples_section(path: &[String]) -> String {
    let chosen: Vec<Example> = examples().into_iter().filter(|e| e.runs(path)).collect();
    if chosen.is_empty() {
        return String::new();
    }
    let mut out = String::from(".SH EXAMPLES\n");
    let mut last_comment: Option<&Vec<String>> = None;
    for e in &chosen {
        if last_comment != Some(&e.comment) && !e.comment.is_empty() {
            let _ = writeln!(out, ".PP\n{}", roff(&e.comment.join(" ")));
        }
        last_comment = Some(&e.comment);
        let _ = writeln!(out, ".RS 4\n.nf\n{}\n.fi\n.RE", roff(&e.command));
    }
    out
}

/// The FIO OPTIONS section: every option of the option table by category, with its type,
/// fio's default and its help.
pub fn fio_options_section() -> String {
    let mut out = String::from(
        ".SH \"FIO OPTIONS\"\nAs \\fB\\-\\-NAME=VALUE\\fR on the command line or \\fBNAME=VALUE\\fR in a job file; \\fBstorbench fio \\-\\-cmdhelp=NAME\\fR describes one.\n",
    );
    for cat in Category::ALL {
        let _ = writeln!(out, ".SS \"{}\"", roff(cat.title()));
        for o in options::all().filter(|o| o.category == cat) {
            let default = if o.default.is_empty() {
                String::new()
            } else {
                format!(" (default: {})", roff(o.default))
            };
            let _ = writeln!(
                out,
                ".TP\n\\fB\\-\\-{}\\fR=\\fI{}\\fR{default}\n{}",
                roff(o.name),
                roff(o.kind.describe()),
                roff(o.help)
            );
        }
    }
    out
}

/// `page` (clap_mangen's roff) with the sections of subcommand `path` added before its
/// VERSION section (at the end when it has none).
pub fn with_sections(page: &str, path: &[String]) -> String {
    let mut extra = String::new();
    if path == ["fio"] {
        extra.push_str(&fio_options_section());
    }
    extra.push_str(&examples_section(path));
    match page.find("\n.SH VERSION") {
        Some(at) => format!("{}\n{}{}", &page[..at], extra, &page[at + 1..]),
        None => format!("{page}{extra}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn the_readmes_examples_are_found_with_their_comments() {
        let all = examples();
        let quick = all
            .iter()
            .find(|e| e.command == "storbench quick /mnt/pool")
            .expect("the first quick example");
        assert!(quick.comment[0].starts_with("The quick set"), "{quick:?}");
        let fio = all
            .iter()
            .find(|e| e.command.starts_with("storbench fio --bs=128k"))
            .expect("the continued fio example");
        assert!(fio.command.ends_with("--time_based"), "{fio:?}");
        assert!(!fio.command.contains('\\'), "{fio:?}");
    }

    #[test]
    fn a_page_gets_the_examples_of_its_subcommand_only() {
        let quick = examples_section(&path(&["quick"]));
        assert!(quick.starts_with(".SH EXAMPLES"));
        assert!(quick.contains("storbench quick /mnt/pool"));
        assert!(!quick.contains("storbench bonnie"));
        // Examples behind an environment variable belong to their subcommand too.
        assert!(quick.contains("STORBENCH_SMB_PASSWORD=... storbench quick smb://"));
        let discover = examples_section(&path(&["iscsi", "discover"]));
        assert!(discover.contains("storbench iscsi discover nas.lan"));
        assert!(examples_section(&path(&["rm"])).is_empty());
    }

    #[test]
    fn roff_text_is_read_literally() {
        assert_eq!(roff("--size 4g"), "\\-\\-size 4g");
        assert_eq!(roff(".hidden"), "\\&.hidden");
        assert_eq!(roff("a\\b"), "a\\eb");
    }
}
