//! One figure everywhere, end to end: a repeated quick run (`--repeat 3` on a tmpfs
//! directory) shows the same SEQ1M Q8T1 read figure, the mean over its rounds, in the
//! terminal table, the card (SVG), the report's card, `history` (named after its test),
//! `compare` and `show --format markdown`.

mod common;

use std::path::{Path, PathBuf};

use common::{Run, storbench};
use storbench_report::numfmt::num;

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

fn sb(db: &Path, cwd: &Path, args: &[&str]) -> Run {
    let mut c = storbench();
    c.current_dir(cwd).env("STORBENCH_DB", db).args(args);
    Run::of(&mut c)
}

#[test]
fn a_repeated_quick_run_shows_one_figure_in_every_output() {
    let dir = scratch();
    let home = tempfile::tempdir().unwrap();
    let db: PathBuf = home.path().join("results.db");
    let cwd = home.path();
    let target = dir.path().to_str().unwrap();
    let run = sb(
        &db,
        cwd,
        &[
            "quick",
            "--size",
            "4m",
            "--runtime",
            "200ms",
            "--buffered",
            "--repeat",
            "3",
            "--label",
            "q",
            target,
        ],
    );
    let table = run.ok().to_string();

    let json = sb(&db, cwd, &["show", "q", "--format", "quick-json"]).json();
    let m = json["repeats"]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["test"] == "SEQ1M Q8T1 read")
        .and_then(|t| {
            t["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["metric"] == "bandwidth_mb")
        })
        .unwrap_or_else(|| panic!("no SEQ1M Q8T1 read MB/s interval: {json}"))
        .clone();
    let (mean, low, high) = (
        m["mean"].as_f64().unwrap(),
        m["low"].as_f64().unwrap(),
        m["high"].as_f64().unwrap(),
    );
    let figure = num(mean);
    let cell = storbench_report::intervals::interval_cell(mean, low, high);

    let row = table
        .lines()
        .find(|l| l.split_whitespace().take(3).eq(["SEQ1M", "Q8T1", "read"]))
        .unwrap_or_else(|| panic!("no SEQ1M Q8T1 read row: {table}"));
    assert!(row.contains(&cell), "table row {row} lacks {cell}");

    let svg_path = home.path().join("card.svg");
    sb(
        &db,
        cwd,
        &["report", "q", "--svg", svg_path.to_str().unwrap()],
    )
    .ok();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(
        svg.contains(&format!(">{figure}</text>")),
        "card lacks {figure}"
    );

    let html_path = home.path().join("r.html");
    sb(
        &db,
        cwd,
        &["report", "q", "-o", html_path.to_str().unwrap()],
    )
    .ok();
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains(&format!(">{figure}</text>")),
        "the report's card lacks {figure}"
    );

    let history = sb(&db, cwd, &["history"]).ok().to_string();
    assert!(
        history.contains(&format!("SEQ1M-Q8T1 {figure}")),
        "history lacks SEQ1M-Q8T1 {figure}: {history}"
    );

    sb(
        &db,
        cwd,
        &[
            "quick",
            "--size",
            "4m",
            "--runtime",
            "100ms",
            "--buffered",
            "--label",
            "other",
            target,
        ],
    )
    .ok();
    let compare = sb(&db, cwd, &["compare", "q", "other"]).ok().to_string();
    assert!(
        compare.contains(&figure),
        "compare lacks {figure}: {compare}"
    );

    let md = sb(&db, cwd, &["show", "q", "--format", "markdown"])
        .ok()
        .to_string();
    let md_row = md
        .lines()
        .find(|l| l.starts_with("| SEQ1M Q8T1 read |"))
        .unwrap_or_else(|| panic!("no SEQ1M Q8T1 read row: {md}"));
    assert!(
        md_row.contains(&figure),
        "markdown row {md_row} lacks {figure}"
    );
}
