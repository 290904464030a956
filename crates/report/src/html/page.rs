//! The report's page: a view model of plain strings built here from the runs and their
//! comparison, rendered by the minijinja template `templates/report.html.j2` (which escapes
//! every value; only the inlined assets, the JSON data and the cards' SVG go in as they are).

use minijinja::value::Serde;
use minijinja::{Environment, Value, context};
use serde::Serialize;
use storbench_model::result::{Environment as RunEnv, RunResult, TargetInfo};

use super::Opts;
use crate::compare::render::{display_unit, fmt_change, row_title, row_value};
use crate::compare::{Better, Comparison, NamedRun, TestTable};

const TEMPLATE: &str = include_str!("../../templates/report.html.j2");

/// Nothing may be fetched: scripts and styles are inline, images only `data:`.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'";

/// What the page inlines as it is: styles, scripts and the chart data.
pub struct Assets<'a> {
    pub uplot_css: &'a str,
    pub css: &'a str,
    pub uplot_license: &'a str,
    pub uplot_js: &'a str,
    pub data_json: &'a str,
    pub report_js: &'a str,
}

#[derive(Serialize)]
struct Card {
    name: String,
    svg: String,
}

#[derive(Serialize)]
struct RunLine {
    name: String,
    id: i64,
    mode: String,
    started: String,
    tool: String,
    command: String,
}

#[derive(Serialize)]
struct Table {
    test: String,
    headers: Vec<Header>,
    rows: Vec<TableRow>,
}

#[derive(Serialize)]
struct Header {
    name: String,
    delta: bool,
}

#[derive(Serialize)]
struct TableRow {
    title: String,
    cells: Vec<TableCell>,
}

#[derive(Serialize)]
struct TableCell {
    text: String,
    class: &'static str,
}

#[derive(Serialize)]
struct Classed {
    class: String,
    text: String,
}

#[derive(Serialize)]
struct JobFile {
    path: String,
    text: String,
}

#[derive(Serialize)]
struct Env {
    name: String,
    id: i64,
    /// The machine, then each target: (key, value) rows, empty values left out.
    tables: Vec<Vec<(&'static str, String)>>,
    verdicts: Vec<Classed>,
    notes: Vec<Classed>,
    disks: Vec<String>,
    job_files: Vec<JobFile>,
    /// The server's side read over SNMP, as HTML escaped where it is built (server.rs).
    server: String,
    /// A diagnosis's ladder, as HTML escaped where it is built (ladder.rs).
    diagnosis: String,
    /// A multi-host run's per-rank table, as HTML escaped where it is built (hosts.rs).
    hosts: String,
}

/// The whole page.
pub fn render(
    runs: &[NamedRun<'_>],
    c: &Comparison,
    opts: &Opts,
    assets: &Assets<'_>,
) -> Result<String, minijinja::Error> {
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    let title = opts
        .title
        .clone()
        .unwrap_or_else(|| format!("storbench report: {}", names.join(" vs ")));
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("report.html", TEMPLATE)?;
    let noise = c
        .tests
        .iter()
        .flat_map(|t| &t.rows)
        .any(|r| r.verdicts.iter().any(Option::is_some));
    env.get_template("report.html")?.render(context! {
        csp => CSP,
        title,
        heading => opts.title.as_deref().unwrap_or("storbench report"),
        baseline => runs[c.baseline].name.as_str(),
        cards => Value::from(Serde(cards(runs, opts))),
        runs => Value::from(Serde(runs.iter().map(run_line).collect::<Vec<_>>())),
        warnings => Value::from(Serde(&c.warnings)),
        env_diff => Value::from(Serde(&c.environment)),
        rounds => c.runs.iter().any(|r| r.rounds > 1),
        noise_floor => noise.then_some(crate::compare::noise::NOISE_FLOOR_PCT),
        tables => Value::from(Serde(c.tests.iter().map(|t| table(c, t)).collect::<Vec<_>>())),
        notes => Value::from(Serde(&crate::notes::merge_messages(&c.notes))),
        envs => Value::from(Serde(runs.iter().map(environment).collect::<Vec<_>>())),
        uplot_css => assets.uplot_css,
        css => assets.css,
        uplot_license => assets.uplot_license.replace("*/", "* /"),
        uplot_js => assets.uplot_js,
        data_json => assets.data_json,
        report_js => assets.report_js,
    })
}

/// The summary card of every quick run, first in the page: what people post.
fn cards(runs: &[NamedRun<'_>], opts: &Opts) -> Vec<Card> {
    runs.iter()
        .filter_map(|r| {
            let title = match (&opts.title, runs.len()) {
                (Some(t), 1) => t.clone(),
                (Some(t), _) => format!("{t}: {}", r.name),
                (None, _) => format!("storbench quick: {}", r.name),
            };
            Some(Card {
                name: r.name.clone(),
                svg: crate::card::svg(r.run, Some(&title), &opts.privacy)?,
            })
        })
        .collect()
}

fn run_line(r: &NamedRun<'_>) -> RunLine {
    RunLine {
        name: r.name.clone(),
        id: r.id,
        mode: format!("{:?}", r.run.mode).to_lowercase(),
        started: utc(r.run.started_unix_ms),
        tool: r.run.tool_version.clone(),
        command: r.run.command_line.join(" "),
    }
}

fn table(c: &Comparison, t: &TestTable) -> Table {
    let headers = c
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| Header {
            name: r.name.clone(),
            delta: i != t.reference,
        })
        .collect();
    let rows = t
        .rows
        .iter()
        .map(|row| {
            let (unit, div) = display_unit(row);
            let title = row_title(row, unit);
            let mut cells = Vec::new();
            for i in 0..c.runs.len() {
                let text = match row.intervals[i] {
                    Some(iv) => {
                        crate::intervals::interval_cell(iv.mean / div, iv.low / div, iv.high / div)
                    }
                    None => row.cell(i, |v| row_value(row, v, div)),
                };
                cells.push(TableCell { text, class: "num" });
                if i == t.reference {
                    continue;
                }
                let verdict = row.verdicts[i];
                let marked = |p: f64| match verdict {
                    Some(v) => v.significant,
                    None => p.abs() >= 1.0,
                };
                let class = match row.change_pct[i] {
                    Some(p) if marked(p) && (p > 0.0) == (row.better == Better::Higher) => {
                        "num good"
                    }
                    Some(p) if marked(p) => "num bad",
                    _ => "num",
                };
                let mut text = row.change_pct[i].map_or("-".to_string(), fmt_change);
                if let Some(v) = verdict {
                    text = format!("{text} {}", v.mark());
                }
                cells.push(TableCell { text, class });
            }
            TableRow { title, cells }
        })
        .collect();
    Table {
        test: t.test.clone(),
        headers,
        rows,
    }
}

fn environment(r: &NamedRun<'_>) -> Env {
    let run = r.run;
    let tables = run.environment.as_ref().map_or(Vec::new(), machine);
    Env {
        name: r.name.clone(),
        id: r.id,
        tables,
        verdicts: run
            .verdicts
            .iter()
            .map(|v| Classed {
                class: v.validity.name().to_string(),
                text: crate::notes::verdict_line(v),
            })
            .collect(),
        // Repeated notes merged into one line, as in the text outputs.
        notes: crate::notes::for_people(&run.notes)
            .into_iter()
            .map(|(level, message, _)| Classed {
                class: format!("{level:?}"),
                text: message,
            })
            .collect(),
        disks: disks(run),
        server: run.server_stats.as_ref().map_or(String::new(), |st| {
            let mut html = String::new();
            super::server::section(&mut html, st);
            html
        }),
        diagnosis: run.diagnosis.as_deref().map_or(String::new(), |d| {
            let mut html = String::new();
            super::ladder::section(&mut html, d);
            html
        }),
        hosts: run.hosts.as_deref().map_or(String::new(), |h| {
            let mut html = String::new();
            super::hosts::section(&mut html, h);
            html
        }),
        job_files: run
            .job_files
            .iter()
            .map(|(path, text)| JobFile {
                path: path.clone(),
                text: text.clone(),
            })
            .collect(),
    }
}

fn disks(run: &RunResult) -> Vec<String> {
    run.disks
        .iter()
        .map(|d| {
            format!(
                "disk {}: {} reads, {} writes, {:.1}% busy",
                d.name, d.read_ios, d.write_ios, d.util
            )
        })
        .collect()
}

fn non_empty(rows: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    rows.into_iter().filter(|(_, v)| !v.is_empty()).collect()
}

fn machine(env: &RunEnv) -> Vec<Vec<(&'static str, String)>> {
    let mut tables = vec![non_empty(vec![
        ("host", env.hostname.clone()),
        ("CPU", format!("{} × {}", env.ncpus, env.cpu_model)),
        (
            "memory",
            format!("{:.1} GiB", env.mem_bytes as f64 / (1u64 << 30) as f64),
        ),
        ("kernel", env.kernel.clone()),
        ("storbench", env.storbench_version.clone()),
    ])];
    tables.extend(env.targets.iter().map(target));
    tables
}

fn target(t: &TargetInfo) -> Vec<(&'static str, String)> {
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    let rotational = t.rotational.map_or(String::new(), |r| {
        if r {
            "yes (HDD)".into()
        } else {
            "no (SSD/NVMe/virtual)".into()
        }
    });
    non_empty(vec![
        ("target", t.target.clone()),
        ("file system", opt(&t.fs_type)),
        ("mount options", opt(&t.mount_options)),
        ("device", opt(&t.device)),
        ("model", opt(&t.device_model)),
        ("rotational", rotational),
        ("scheduler", opt(&t.scheduler)),
        (
            "size",
            t.size_bytes.map_or(String::new(), |b| {
                format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
            }),
        ),
        ("server", opt(&t.server)),
        ("interface", opt(&t.interface)),
        (
            "link speed",
            t.link_speed_mbps
                .map_or(String::new(), |s| format!("{s} Mbit/s")),
        ),
    ])
}

/// `2026-11-29 20:43:05` in UTC (the report may be read anywhere).
pub(crate) fn utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00");
        assert_eq!(super::utc(1_795_972_858_000), "2026-11-29 17:20:58");
        assert_eq!(super::utc(951_782_400_000), "2000-02-29 00:00:00");
    }
}
