//! `storbench history`: the stored runs, newest last, with their headline figures.

use std::borrow::Cow;
use std::process::ExitCode;

use storbench_store::{RunFilter, RunSummary};

use storbench_report::label::shown;
use storbench_report::numfmt::num;

use crate::StoreArgs;
use crate::cmd::save::{db_path, open_store_read_only};
use crate::cmd::time::{format_local, parse_when};

/// List stored runs; every option but --format is a filter.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// Only runs with this label (a filter: it labels nothing).
    #[arg(long, value_name = "TEXT", value_parser = crate::non_blank)]
    pub label: Option<String>,
    /// Only runs with this tag (repeatable: runs with all of them; a filter).
    #[arg(long = "tag", value_name = "TEXT", value_parser = crate::non_blank)]
    pub tags: Vec<String>,
    /// Only runs whose target contains this text.
    #[arg(long, value_name = "TEXT")]
    pub target: Option<String>,
    /// Only runs of this mode.
    #[arg(long, value_parser = ["fio", "quick", "bonnie"])]
    pub mode: Option<String>,
    /// Only runs started at or after WHEN: `2026-11-01`, `2026-11-01 18:30`, or an age such
    /// as `7d`, `12h`, `30m`, `2w`.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only runs started at or before WHEN (same forms as --since).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only the newest N runs.
    #[arg(long, short = 'n', value_name = "N")]
    pub limit: Option<usize>,
    /// Output format.
    #[arg(long, default_value = "table", value_parser = ["table", "json", "csv"])]
    pub format: String,
}

pub fn run_history(args: HistoryArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let filter = RunFilter {
        label: args.label,
        tags: args.tags,
        target: args.target,
        mode: args.mode,
        since_unix_ms: args.since.as_deref().map(parse_when).transpose()?,
        until_unix_ms: args.until.as_deref().map(parse_when).transpose()?,
        limit: args.limit,
    };
    let path = db_path(store)?;
    if !path.exists() {
        crate::running::print_out(&format!(
            "no runs stored yet ({} does not exist)\n",
            path.display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let runs = open_store_read_only(store)?.list(&filter)?;
    let text = match args.format.as_str() {
        "json" => {
            serde_json::to_string_pretty(&runs.iter().map(json_row).collect::<Vec<_>>())? + "\n"
        }
        "csv" => csv(&runs),
        _ => storbench_report::terminal::escape(&table(&runs)).into_owned(),
    };
    crate::running::print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// What an interrupted run's mark means, in history, show, compare and report.
pub const PARTIAL: &str =
    "interrupted (Ctrl-C, SIGTERM or a hang-up): its figures cover only the part that ran";

/// Bandwidth in MB/s by the one number formatter (`1,412`, `48.21`) after the quick test it
/// summarises (`SEQ1M-Q8T1 1,412`); `-` when the run has no such figure.
fn mbs(v: Option<f64>, test: Option<&str>) -> String {
    v.map_or("-".into(), |b| named(test, num(b / 1e6)))
}

/// IOPS as every other output writes them (`70,988`, not `71.0k`), after their quick test.
fn iops(v: Option<f64>, test: Option<&str>) -> String {
    v.map_or("-".into(), |v| named(test, num(v)))
}

/// `figure` after `test` written as one word (`RND4K-Q32T1 70,988`), or alone.
fn named(test: Option<&str>, figure: String) -> String {
    match test {
        Some(t) => format!("{} {figure}", t.replace(' ', "-")),
        None => figure,
    }
}

fn table(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs stored (or none match)\n".into();
    }
    let head = [
        "ID",
        "STARTED",
        "LABEL",
        "MODE",
        "TARGET",
        "READ MB/s",
        "WRITE MB/s",
        "READ IOPS",
        "WRITE IOPS",
        "TAGS",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in runs {
        let h = &r.headline;
        let (bw_test, iops_test) = (h.bw_test.as_deref(), h.iops_test.as_deref());
        rows.push(vec![
            r.id.to_string(),
            format_local(r.started_unix_ms),
            r.meta
                .label
                .as_deref()
                .map_or("-".into(), |l| shown(l).into_owned()),
            format!("{}{}", r.mode, if r.interrupted { "*" } else { "" }),
            r.target.clone(),
            mbs(h.read_bw, bw_test),
            mbs(h.write_bw, bw_test),
            iops(h.read_iops, iops_test),
            iops(h.write_iops, iops_test),
            r.meta
                .tags
                .iter()
                .map(|t| shown(t))
                .collect::<Vec<_>>()
                .join(","),
        ]);
    }
    // Escaped before measuring: `\x1b` takes four columns where ESC took none.
    for row in rows.iter_mut() {
        for cell in row.iter_mut() {
            if let Cow::Owned(escaped) = storbench_report::terminal::escape(cell) {
                *cell = escaped;
            }
        }
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let numeric = |c: usize| c == 0 || (5..=8).contains(&c);
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| padded(s, widths[c], numeric(c)))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if runs.iter().any(|r| r.interrupted) {
        out.push_str(&format!("* {PARTIAL}\n"));
    }
    if runs.iter().any(|r| r.mode == "bonnie") {
        out.push_str("bonnie runs: block read/write as MB/s, random seeks/s as READ IOPS\n");
    }
    out
}

/// `s` padded with spaces to `width` columns, on the left when `right` (a number). Not by
/// `format!`'s width, which panics on widths of 65,536 or more.
fn padded(s: &str, width: usize, right: bool) -> String {
    let pad = " ".repeat(width.saturating_sub(s.chars().count()));
    if right { pad + s } else { format!("{s}{pad}") }
}

fn json_row(r: &RunSummary) -> serde_json::Value {
    serde_json::json!({
        "id": r.id,
        "started_unix_ms": r.started_unix_ms,
        "label": r.meta.label,
        "tags": r.meta.tags,
        "mode": r.mode,
        "target": r.target,
        "tool_version": r.tool_version,
        "hostname": r.hostname,
        "source": r.meta.source,
        "read_bw_bytes": r.headline.read_bw,
        "write_bw_bytes": r.headline.write_bw,
        "read_iops": r.headline.read_iops,
        "write_iops": r.headline.write_iops,
        "bw_test": r.headline.bw_test,
        "iops_test": r.headline.iops_test,
        "interrupted": r.interrupted,
    })
}

fn csv(runs: &[RunSummary]) -> String {
    let mut out = String::from(
        "id,started_unix_ms,label,mode,target,read_bw_bytes,write_bw_bytes,read_iops,write_iops,tags,interrupted,bw_test,iops_test\n",
    );
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let q = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    for r in runs {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.id,
            r.started_unix_ms,
            q(r.meta.label.as_deref().unwrap_or("")),
            r.mode,
            q(&r.target),
            opt(r.headline.read_bw),
            opt(r.headline.write_bw),
            opt(r.headline.read_iops),
            opt(r.headline.write_iops),
            q(&r.meta.tags.join(" ")),
            u8::from(r.interrupted),
            q(r.headline.bw_test.as_deref().unwrap_or("")),
            q(r.headline.iops_test.as_deref().unwrap_or("")),
        ));
    }
    out
}
