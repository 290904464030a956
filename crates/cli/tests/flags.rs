//! Consistent flags and numbers: `--label/--tag/--no-save` only where a run is made, filters
//! named as filters, one `--format` on every subcommand that prints results, and the one
//! number formatter in the text people read (grouped thousands, no `k` suffixes, whole CPU
//! percentages, one unit per latency column).

mod common;

use std::path::Path;

use clap::CommandFactory;
use common::{Run, storbench};

fn sub(name: &str) -> clap::Command {
    storbench::Cli::command()
        .find_subcommand(name)
        .unwrap_or_else(|| panic!("no subcommand {name}"))
        .clone()
}

fn arg<'a>(cmd: &'a clap::Command, long: &str) -> Option<&'a clap::Arg> {
    cmd.get_arguments().find(|a| a.get_long() == Some(long))
}

fn help_of(a: &clap::Arg) -> String {
    a.get_help().map(|h| h.to_string()).unwrap_or_default()
}

#[test]
fn run_flags_only_on_subcommands_that_make_runs() {
    for name in ["quick", "bonnie", "import"] {
        let c = sub(name);
        for long in ["no-save", "label", "tag"] {
            let a = arg(&c, long).unwrap_or_else(|| panic!("{name} has no --{long}"));
            assert!(!a.is_hide_set(), "{name} --{long} hidden");
        }
    }
    for name in [
        "rm", "show", "report", "compare", "export", "clean", "iscsi", "smb",
    ] {
        let c = sub(name);
        for long in ["no-save", "label", "tag"] {
            assert!(arg(&c, long).is_none(), "{name} offers --{long}");
        }
        let r = Run::of(storbench().args([name, "--no-save"]));
        assert_eq!(r.code, Some(2), "{name} --no-save: {r:?}");
        assert!(r.stderr.contains("--no-save"), "{}", r.stderr);
    }
}

#[test]
fn history_filters_are_named_as_filters() {
    let h = sub("history");
    assert!(arg(&h, "no-save").is_none());
    for long in ["label", "tag"] {
        let help = help_of(arg(&h, long).unwrap());
        assert!(
            help.starts_with("Only runs") && help.contains("filter"),
            "{help}"
        );
    }
    let r = Run::of(storbench().args(["history", "--help"]));
    assert_eq!(r.code, Some(0));
    assert!(!r.stdout.contains("A label for this run"), "{}", r.stdout);
}

/// The flags before the subcommand, as earlier scripts give them, still keep a run; before
/// a subcommand that makes none they are one line of error, not silently ignored.
#[test]
fn early_run_flags_are_refused_where_no_run_is_made() {
    for (args, says) in [
        (&["--label", "x", "rm", "1"][..], "makes none"),
        (&["--label", "x", "show", "1"][..], "makes none"),
        (&["--tag", "t", "history"][..], "after `history`"),
    ] {
        let r = Run::of(storbench().args(args));
        assert_eq!(r.code, Some(1), "{args:?}: {r:?}");
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    // An early --no-save asks for nothing a subcommand without runs does not already do.
    let r = Run::of(storbench().args(["--no-save", "completions", "bash"]));
    assert_eq!(r.code, Some(0), "{r:?}");
    let dir = tempfile::tempdir().unwrap();
    let r = Run::of(storbench().current_dir(dir.path()).args([
        "--no-save",
        "fio",
        "--name=n",
        "--ioengine=null",
        "--size=1m",
        "--output-format=terse",
    ]));
    assert_eq!(r.code, Some(0), "{r:?}");
}

#[test]
fn every_subcommand_that_prints_results_has_format() {
    let nested = |outer: &str, inner: &str| {
        sub(outer)
            .find_subcommand(inner)
            .unwrap_or_else(|| panic!("{outer} {inner}"))
            .clone()
    };
    for (name, c) in [
        ("history", sub("history")),
        ("show", sub("show")),
        ("compare", sub("compare")),
        ("quick", sub("quick")),
        ("bonnie", sub("bonnie")),
        ("iscsi discover", nested("iscsi", "discover")),
        ("smb shares", nested("smb", "shares")),
    ] {
        let f = arg(&c, "format").unwrap_or_else(|| panic!("{name} has no --format"));
        assert!(!f.is_hide_set(), "{name}");
        if let Some(json) = arg(&c, "json") {
            assert!(json.is_hide_set(), "{name} --json is shown beside --format");
        }
    }
}

fn quick(dir: &Path, extra: &[&str]) -> Run {
    let target = tempfile::tempdir_in("/dev/shm").unwrap();
    Run::of(
        storbench()
            .current_dir(dir)
            .args(["quick", target.path().to_str().unwrap()])
            .args([
                "--size",
                "8m",
                "--runtime",
                "100ms",
                "--no-save",
                "--buffered",
            ])
            .args(extra),
    )
}

#[test]
fn quick_chooses_its_output_with_format() {
    let dir = tempfile::tempdir().unwrap();
    let md = quick(dir.path(), &["--format", "markdown"]);
    assert_eq!(md.code, Some(0), "{}", md.stderr);
    let rows = md.stdout.lines().filter(|l| l.starts_with("| ")).count();
    assert!(rows >= 8, "{}", md.stdout);
    let json = quick(dir.path(), &["--json"]);
    assert_eq!(json.code, Some(0), "{}", json.stderr);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("--json is JSON");
    assert_eq!(v["tests"].as_array().map(Vec::len), Some(8), "{v}");
    let bad = quick(dir.path(), &["--format", "nope"]);
    assert_eq!(bad.code, Some(2));
    assert!(bad.stderr.contains("markdown"), "{}", bad.stderr);
}

/// A number cell as the formatter writes it: grouped digits, no `k`, at most 4 significant
/// digits below 1000.
fn formatted(cell: &str) -> bool {
    let cell = cell.trim_end_matches('%');
    let whole = cell.split('.').next().unwrap_or_default();
    let groups: Vec<&str> = whole.split(',').collect();
    let groups_ok = (1..=3).contains(&groups[0].len())
        && groups[1..].iter().all(|g| g.len() == 3)
        && cell
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == '.')
        && cell.matches('.').count() <= 1;
    let significant = cell.replace([',', '.'], "");
    let significant = significant.trim_start_matches('0').len();
    groups_ok && (cell.contains(',') || !cell.contains('.') || significant <= 4)
}

#[test]
fn quick_table_reads_with_the_one_formatter() {
    let dir = tempfile::tempdir().unwrap();
    let r = quick(dir.path(), &[]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let header = r
        .stdout
        .lines()
        .find(|l| l.starts_with("Test "))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    // Each latency column names its one unit.
    for p in ["p50 ", "p99 ", "p99.9 "] {
        let unit = header
            .split(p)
            .nth(1)
            .and_then(|t| t.split_whitespace().next());
        assert!(
            matches!(unit, Some("ns" | "µs" | "ms" | "s")),
            "{p}: {header}"
        );
    }
    for row in r
        .stdout
        .lines()
        .filter(|l| l.starts_with("SEQ1M") || l.starts_with("RND4K"))
    {
        let cells: Vec<&str> = row.split_whitespace().collect();
        // test (2 words), dir, MB/s, MiB/s, IOPS, p50, p99, p99.9, CPU, verdict.
        assert_eq!(cells.len(), 11, "{row}");
        for c in &cells[3..10] {
            assert!(formatted(c), "{c:?} in {row}");
        }
        assert!(cells[9].ends_with('%') && !cells[9].contains('.'), "{row}");
    }
}

#[test]
fn history_and_compare_use_the_one_formatter() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    for label in ["a", "b"] {
        let r = Run::of(storbench().current_dir(dir.path()).args([
            "--db",
            db,
            "fio",
            "--name=n",
            "--ioengine=null",
            "--size=256m",
            "--bs=4k",
            "--rw=randread",
            "--output-format=terse",
            "--label",
            label,
        ]));
        assert_eq!(r.code, Some(0), "{r:?}");
    }
    let h = Run::of(storbench().args(["--db", db, "history"]));
    assert_eq!(h.code, Some(0), "{h:?}");
    let row = h.stdout.lines().nth(1).unwrap();
    // The null engine's IOPS run to millions: grouped, never `1234.5k`.
    assert!(!row.contains('k'), "{row}");
    let iops = row.split_whitespace().rev().nth(1).unwrap();
    assert!(iops.contains(',') && formatted(iops), "{row}");
    let c = Run::of(storbench().args(["--db", db, "compare", "a", "b"]));
    assert_eq!(c.code, Some(0), "{c:?}");
    let cpu = c
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("CPU %"))
        .unwrap_or_else(|| panic!("{}", c.stdout));
    let values: Vec<&str> = cpu
        .split_whitespace()
        .filter(|w| w.ends_with('%'))
        .collect();
    assert!(values.len() >= 2, "{cpu}");
    for v in values.iter().filter(|v| !v.starts_with(['+', '-'])) {
        assert!(!v.contains('.'), "CPU as a whole percentage: {cpu}");
    }
}
