//! Every output format, one entry each: its name, what it reads and its writer. `show`,
//! `fio --output-format`, `compare --format` and `quick --format` choose from [`FORMATS`], so a
//! new format is one writer and one entry here (see docs/ARCHITECTURE.md).
//!
//! Names are unique per input: `json` is fio's JSON for a run and the comparison's JSON for
//! `compare`.

use std::io::{self, Write};

use storbench_model::result::{RunMode, RunResult};

use crate::bonnie_csv::{self, CsvFormat};
use crate::compare::{Comparison, Format as CompareFormat};
use crate::fio::{FioFormat, FioOpts};
use crate::{bonnie_table, diagnose, quick};

/// What a format reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// One finished run made in one of these modes.
    Run(&'static [RunMode]),
    /// A comparison of stored runs.
    Comparison,
}

/// Settings a writer may use; the others ignore them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// Colour improvements and regressions (comparison text).
    pub color: bool,
    /// The terminal's width in columns; None when not writing to a terminal.
    pub width: Option<usize>,
}

/// Writes a run or a comparison.
#[derive(Clone, Copy)]
pub enum Writer {
    Run(fn(&RunResult, &mut dyn Write) -> io::Result<()>),
    Comparison(fn(&Comparison, Style, &mut dyn Write) -> io::Result<()>),
}

/// One output format.
#[derive(Clone, Copy)]
pub struct Format {
    /// The name users type.
    pub name: &'static str,
    /// Other names, shown after the name in lists.
    pub aliases: &'static [&'static str],
    /// Other names accepted but not listed (`minimal`, `table`).
    pub hidden_aliases: &'static [&'static str],
    pub reads: Reads,
    /// The mode whose runs are shown in this format when none is asked for.
    pub default_for: Option<RunMode>,
    /// Text for people (`show` heads it with a line naming the run), not a document.
    pub for_people: bool,
    pub writer: Writer,
}

impl Format {
    fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name) || self.hidden_aliases.contains(&name)
    }

    fn reads_mode(&self, mode: RunMode) -> bool {
        matches!(self.reads, Reads::Run(modes) if modes.contains(&mode))
    }

    /// Writes a run; an error if this format reads comparisons.
    pub fn write_run(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        match self.writer {
            Writer::Run(w) => w(run, out),
            Writer::Comparison(_) => Err(io::Error::other(format!(
                "format '{}' writes comparisons, not runs",
                self.name
            ))),
        }
    }

    /// Writes a comparison; an error if this format reads runs.
    pub fn write_comparison(
        &self,
        c: &Comparison,
        style: Style,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        match self.writer {
            Writer::Comparison(w) => w(c, style, out),
            Writer::Run(_) => Err(io::Error::other(format!(
                "format '{}' writes runs, not comparisons",
                self.name
            ))),
        }
    }
}

const FIO_SHAPED: &[RunMode] = &[RunMode::Fio, RunMode::Quick];
const ALL_MODES: &[RunMode] = &[RunMode::Fio, RunMode::Quick, RunMode::Bonnie];
const DIAGNOSE: &[RunMode] = &[RunMode::Diagnose];
/// Every mode: the stored model itself shows any run.
const EVERY_MODE: &[RunMode] = &[
    RunMode::Fio,
    RunMode::Quick,
    RunMode::Bonnie,
    RunMode::Diagnose,
];

/// An entry for one of fio's formats, named as storbench-job names it.
const fn fio_entry(
    f: FioFormat,
    hidden_aliases: &'static [&'static str],
    writer: fn(&RunResult, &mut dyn Write) -> io::Result<()>,
) -> Format {
    Format {
        name: f.name(),
        aliases: &[],
        hidden_aliases,
        reads: Reads::Run(FIO_SHAPED),
        default_for: match f {
            FioFormat::Normal => Some(RunMode::Fio),
            _ => None,
        },
        for_people: matches!(f, FioFormat::Normal),
        writer: Writer::Run(writer),
    }
}

/// Every format, in the order lists show them.
pub static FORMATS: &[Format] = &[
    Format {
        name: "quick",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(&[RunMode::Quick]),
        default_for: Some(RunMode::Quick),
        for_people: true,
        writer: Writer::Run(quick::render),
    },
    Format {
        name: "quick-json",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(&[RunMode::Quick]),
        default_for: None,
        for_people: false,
        writer: Writer::Run(quick::render_json),
    },
    fio_entry(FioFormat::Normal, &[], |r, o| {
        fio_one(r, FioFormat::Normal, o)
    }),
    fio_entry(FioFormat::Json, &[], |r, o| fio_one(r, FioFormat::Json, o)),
    fio_entry(FioFormat::JsonPlus, &[], |r, o| {
        fio_one(r, FioFormat::JsonPlus, o)
    }),
    fio_entry(FioFormat::Terse, &["minimal"], |r, o| {
        fio_one(r, FioFormat::Terse, o)
    }),
    Format {
        name: "bonnie",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(&[RunMode::Bonnie]),
        default_for: Some(RunMode::Bonnie),
        for_people: true,
        writer: Writer::Run(bonnie_table::render),
    },
    Format {
        name: "csv",
        aliases: &["csv-1.98"],
        hidden_aliases: &[],
        reads: Reads::Run(&[RunMode::Bonnie]),
        default_for: None,
        for_people: false,
        writer: Writer::Run(|r, o| bonnie_csv::render(r, CsvFormat::V198, o)),
    },
    Format {
        name: "csv-1.03",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(&[RunMode::Bonnie]),
        default_for: None,
        for_people: false,
        writer: Writer::Run(|r, o| bonnie_csv::render(r, CsvFormat::V103, o)),
    },
    Format {
        name: "markdown",
        aliases: &["md"],
        hidden_aliases: &[],
        reads: Reads::Run(ALL_MODES),
        default_for: None,
        for_people: false,
        writer: Writer::Run(crate::summary::render_markdown),
    },
    Format {
        name: "csv",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(FIO_SHAPED),
        default_for: None,
        for_people: false,
        writer: Writer::Run(crate::summary::render_csv),
    },
    Format {
        name: "json",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(&[RunMode::Bonnie]),
        default_for: None,
        for_people: false,
        writer: Writer::Run(crate::summary::render_json),
    },
    Format {
        name: "text",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(DIAGNOSE),
        default_for: Some(RunMode::Diagnose),
        for_people: true,
        writer: Writer::Run(diagnose::render),
    },
    Format {
        name: "json",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(DIAGNOSE),
        default_for: None,
        for_people: false,
        writer: Writer::Run(diagnose::render_json),
    },
    Format {
        name: "markdown",
        aliases: &["md"],
        hidden_aliases: &[],
        reads: Reads::Run(DIAGNOSE),
        default_for: None,
        for_people: false,
        writer: Writer::Run(diagnose::render_markdown),
    },
    Format {
        name: "raw",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Run(EVERY_MODE),
        default_for: None,
        for_people: false,
        writer: Writer::Run(raw),
    },
    Format {
        name: "text",
        aliases: &[],
        hidden_aliases: &["table"],
        reads: Reads::Comparison,
        default_for: None,
        for_people: true,
        writer: Writer::Comparison(|c, s, o| {
            crate::compare::render(
                c,
                CompareFormat::Text {
                    color: s.color,
                    width: s.width,
                },
                o,
            )
        }),
    },
    Format {
        name: "markdown",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Comparison,
        default_for: None,
        for_people: true,
        writer: Writer::Comparison(|c, _, o| crate::compare::render(c, CompareFormat::Markdown, o)),
    },
    Format {
        name: "csv",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Comparison,
        default_for: None,
        for_people: false,
        writer: Writer::Comparison(|c, _, o| crate::compare::render(c, CompareFormat::Csv, o)),
    },
    Format {
        name: "json",
        aliases: &[],
        hidden_aliases: &[],
        reads: Reads::Comparison,
        default_for: None,
        for_people: false,
        writer: Writer::Comparison(|c, _, o| crate::compare::render(c, CompareFormat::Json, o)),
    },
];

fn fio_one(run: &RunResult, f: FioFormat, out: &mut dyn Write) -> io::Result<()> {
    crate::fio::render(run, f, &FioOpts::default(), out)
}

/// The stored result model itself, as JSON.
fn raw(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, run)?;
    writeln!(out)
}

/// The formats that can show a run of `mode`, in list order.
pub fn for_mode(mode: RunMode) -> impl Iterator<Item = &'static Format> {
    FORMATS.iter().filter(move |f| f.reads_mode(mode))
}

/// The formats that write comparisons, in list order.
pub fn for_comparisons() -> impl Iterator<Item = &'static Format> {
    FORMATS.iter().filter(|f| f.reads == Reads::Comparison)
}

/// The format named `name` that can show a run of `mode`.
pub fn for_run(name: &str, mode: RunMode) -> Option<&'static Format> {
    for_mode(mode).find(|f| f.is_named(name))
}

/// The comparison format named `name`.
pub fn for_comparison(name: &str) -> Option<&'static Format> {
    for_comparisons().find(|f| f.is_named(name))
}

/// The format a run of `mode` is shown in when none is asked for.
pub fn default_for(mode: RunMode) -> &'static Format {
    FORMATS
        .iter()
        .find(|f| f.default_for == Some(mode))
        .expect("every run mode has a default format")
}

/// `quick, quick-json, normal, … or raw`: the names (with their listed aliases) that can
/// show a run of `mode`.
pub fn names_for(mode: RunMode) -> String {
    let names: Vec<String> = for_mode(mode)
        .map(|f| match f.aliases {
            [] => f.name.to_string(),
            a => format!("{} ({})", f.name, a.join(", ")),
        })
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Writes fio's `--output-format` list in fio's order and combinations (see
/// [`crate::fio::render_many`]).
pub fn write_fio(run: &RunResult, formats: &[FioFormat], out: &mut dyn Write) -> io::Result<()> {
    crate::fio::render_many(run, formats, &FioOpts::default(), out)
}

/// Writes a run in the format named `name`, which must be able to show it.
pub fn write_run(name: &str, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    match for_run(name, run.mode) {
        Some(f) => f.write_run(run, out),
        None => Err(io::Error::other(format!(
            "format '{name}' is not available for this run"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_one_default_that_reads_it() {
        for mode in EVERY_MODE {
            let defaults: Vec<_> = FORMATS
                .iter()
                .filter(|f| f.default_for == Some(*mode))
                .collect();
            assert_eq!(defaults.len(), 1, "{mode:?}");
            assert!(defaults[0].reads_mode(*mode), "{mode:?}");
        }
    }

    #[test]
    fn names_are_unique_per_input() {
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for f in FORMATS {
            let modes: Vec<&str> = match f.reads {
                Reads::Run(m) => m.iter().map(mode_key).collect(),
                Reads::Comparison => vec!["comparison"],
            };
            let names = std::iter::once(f.name)
                .chain(f.aliases.iter().copied())
                .chain(f.hidden_aliases.iter().copied());
            for name in names {
                for m in &modes {
                    assert!(!seen.contains(&(name, m)), "{name} twice for {m}");
                    seen.push((name, m));
                }
            }
        }
    }

    fn mode_key(m: &RunMode) -> &'static str {
        match m {
            RunMode::Fio => "fio",
            RunMode::Quick => "quick",
            RunMode::Bonnie => "bonnie",
            RunMode::Diagnose => "diagnose",
        }
    }

    #[test]
    fn fio_entries_carry_fio_names() {
        for f in FioFormat::ALL {
            let e = for_run(f.name(), RunMode::Fio).expect("listed");
            assert_eq!(e.name, f.name());
        }
        assert_eq!(for_run("minimal", RunMode::Fio).unwrap().name, "terse");
    }

    #[test]
    fn lists_read_as_before() {
        assert_eq!(
            names_for(RunMode::Fio),
            "normal, json, json+, terse, markdown (md), csv or raw"
        );
        assert_eq!(
            names_for(RunMode::Quick),
            "quick, quick-json, normal, json, json+, terse, markdown (md), csv or raw"
        );
        assert_eq!(
            names_for(RunMode::Bonnie),
            "bonnie, csv (csv-1.98), csv-1.03, markdown (md), json or raw"
        );
        let cmp: Vec<&str> = for_comparisons().map(|f| f.name).collect();
        assert_eq!(cmp, ["text", "markdown", "csv", "json"]);
        assert!(for_comparison("table").is_some());
    }
}
