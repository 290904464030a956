//! The summary card: one quick run in CrystalDiskMark's layout (its tests as rows, read and
//! write as columns, MB/s large and IOPS below), as an SVG that the HTML report inlines and
//! `storbench report --svg` writes, and as a PNG (`--png`) rasterised in process by resvg with
//! an embedded font, so the static binary needs no browser, font or library at run time.
//! Bars run on a log scale so that a 4 KiB random test stays visible next to SEQ1M.

use minijinja::value::Serde;
use minijinja::{Environment, Value, context};
use serde::Serialize;
use storbench_model::result::{RunMode, RunResult, Validity};

use crate::compare::MetricId;
use crate::intervals::TestIntervals;
use crate::numfmt::num;
use crate::privacy::Privacy;
use crate::quick::{QuickRow, rows};

const TEMPLATE: &str = include_str!("../templates/card.svg.j2");
/// DejaVu Sans Bold (Bitstream Vera licence, `assets/DejaVuSans.LICENSE`).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans-Bold.ttf");

const WIDTH: u32 = 960;
const LABEL_W: u32 = 200;
const CELL_W: u32 = 356;
const ROW_H: u32 = 92;
const GAP: u32 = 10;
const TOP: u32 = 120;
const FOOT: u32 = 44;

#[derive(Serialize)]
struct Row {
    test: String,
    detail: String,
    y: u32,
    cells: Vec<Cell>,
}

#[derive(Serialize)]
struct Cell {
    x: u32,
    mbps: String,
    iops: String,
    /// Bar length in px, log scale from 1 MB/s to the card's top.
    bar: u32,
    color: &'static str,
    /// `suspect`/`invalid`/`failed`, when the test was not clean.
    mark: &'static str,
}

/// Whether the card can be drawn for `run`: a quick run with at least one test.
pub fn applies(run: &RunResult) -> bool {
    run.mode == RunMode::Quick && !rows(run).is_empty()
}

/// The card as an SVG document; `None` for a run that is not a quick run.
pub fn svg(run: &RunResult, title: Option<&str>, privacy: &Privacy) -> Option<String> {
    if !applies(run) {
        return None;
    }
    let intervals = crate::intervals::of_run(run);
    let quick = with_means(rows(run), &intervals);
    let top = scale_top(&quick);
    let mut tests: Vec<(String, Vec<&QuickRow>)> = Vec::new();
    for r in &quick {
        match tests.iter_mut().find(|(t, _)| *t == r.test) {
            Some((_, v)) => v.push(r),
            None => tests.push((r.test.clone(), vec![r])),
        }
    }
    let rows: Vec<Row> = tests
        .iter()
        .enumerate()
        .map(|(i, (test, dirs))| {
            let (name, detail) = test.split_once(' ').unwrap_or((test.as_str(), ""));
            let y = TOP + i as u32 * (ROW_H + GAP);
            let cells = ["read", "write"]
                .iter()
                .enumerate()
                .map(|(c, dir)| {
                    let x = 16 + LABEL_W + GAP + c as u32 * (CELL_W + GAP);
                    let row = dirs.iter().find(|r| r.direction == *dir);
                    let half = row.and_then(|r| bandwidth_half_width(&intervals, r));
                    cell(run, x, top, row, half)
                })
                .collect();
            Row {
                test: name.to_string(),
                detail: detail.to_string(),
                y,
                cells,
            }
        })
        .collect();
    let height = TOP + rows.len() as u32 * (ROW_H + GAP) + FOOT;
    let mut env = Environment::new();
    // SVG is XML: the same escaping as HTML is right for its text and attributes.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("card.svg", TEMPLATE).ok()?;
    let text = env
        .get_template("card.svg")
        .and_then(|t| {
            t.render(context! {
                width => WIDTH, height, title => title.unwrap_or("storbench quick"),
                subtitle => subtitle(run, privacy), footer => footer(run),
                rows => Value::from(Serde(&rows)), label_w => LABEL_W, cell_w => CELL_W, row_h => ROW_H,
                read_x => 16 + LABEL_W + GAP, write_x => 16 + LABEL_W + 2 * GAP + CELL_W,
                scale_top => format!("{} MB/s", num(top)),
            })
        })
        .expect("the card template renders");
    Some(text)
}

/// A repeated run's rows with each rate the mean over its rounds, as the table, the charts
/// and `compare` show it; a run without rounds keeps its figures.
fn with_means(mut rows: Vec<QuickRow>, intervals: &[TestIntervals]) -> Vec<QuickRow> {
    for r in &mut rows {
        let Some(iv) = test_intervals(intervals, r) else {
            continue;
        };
        if let Some(m) = iv.get(MetricId::BandwidthMb) {
            r.mb_per_s = m.interval.mean;
        }
        if let Some(m) = iv.get(MetricId::Iops) {
            r.iops = m.interval.mean;
        }
    }
    rows
}

fn test_intervals<'a>(intervals: &'a [TestIntervals], r: &QuickRow) -> Option<&'a TestIntervals> {
    let name = format!("{} {}", r.test, r.direction);
    intervals.iter().find(|t| t.test == name.trim())
}

fn bandwidth_half_width(intervals: &[TestIntervals], r: &QuickRow) -> Option<f64> {
    test_intervals(intervals, r)?
        .get(MetricId::BandwidthMb)
        .map(|m| m.half_width)
}

/// `half` is the half width of the MB/s figure's 95% interval, for a repeated run.
fn cell(run: &RunResult, x: u32, top: f64, row: Option<&&QuickRow>, half: Option<f64>) -> Cell {
    let Some(r) = row else {
        return Cell {
            x,
            mbps: "-".into(),
            iops: "not run".into(),
            bar: 0,
            color: "#8aa",
            mark: "",
        };
    };
    let validity = run
        .verdicts
        .iter()
        .find(|v| v.job == format!("{} {}", r.test, r.direction))
        .map(|v| v.validity);
    let mark = match (r.failed, validity) {
        (true, _) => "failed",
        (_, Some(Validity::Invalid)) => "invalid",
        (_, Some(Validity::Suspect)) => "suspect",
        _ => "",
    };
    let fraction = if r.mb_per_s > 1.0 {
        (r.mb_per_s.log10() / top.log10()).clamp(0.0, 1.0)
    } else {
        0.0
    };
    Cell {
        x,
        mbps: num(r.mb_per_s),
        iops: match half {
            Some(h) => format!(
                "± {} MB/s · {} IOPS",
                crate::intervals::plus_minus(r.mb_per_s, h)
                    .split_once(" ± ")
                    .map_or(String::new(), |(_, h)| h.to_string()),
                num(r.iops)
            ),
            None => format!("{} IOPS", num(r.iops)),
        },
        bar: (fraction * f64::from(CELL_W)).round() as u32,
        color: if r.direction == "read" {
            "#2456a6"
        } else {
            "#d9822b"
        },
        mark,
    }
}

/// The power of ten at or above the fastest test, at least 10 MB/s.
fn scale_top(rows: &[QuickRow]) -> f64 {
    let max = rows.iter().map(|r| r.mb_per_s).fold(10.0, f64::max);
    10f64.powf(max.log10().ceil())
}

/// `nas · nfs on zfs · 1 GiB file · 2026-11-29 17:20 UTC`, without the host when hidden.
fn subtitle(run: &RunResult, privacy: &Privacy) -> String {
    let mut parts = Vec::new();
    if let Some(env) = &run.environment {
        if !privacy.hide_host && !env.hostname.is_empty() {
            parts.push(env.hostname.clone());
        }
        if let Some(t) = env.targets.first() {
            parts.push(privacy.target(&t.target));
            if let Some(fs) = &t.fs_type {
                parts.push(fs.clone());
            }
            if let Some(model) = &t.device_model {
                parts.push(model.clone());
            }
        }
    }
    parts.push(format!(
        "{} UTC",
        crate::html::utc_minutes(run.started_unix_ms)
    ));
    parts.join(" · ")
}

fn footer(run: &RunResult) -> String {
    let version = run
        .environment
        .as_ref()
        .map_or(run.tool_version.clone(), |e| {
            format!("storbench {}", e.storbench_version)
        });
    let judged = run
        .verdicts
        .iter()
        .filter(|v| v.validity != Validity::Valid);
    let version = match storbench_model::profile::Profile::of_options(&run.global_options) {
        Some(p) => format!("{version} · profile {}", p.title()),
        None => version,
    };
    let version = match crate::intervals::rounds_used(run) {
        n if n > 1 => format!("{version} · means of {n} rounds ± 95% interval"),
        _ => version,
    };
    match judged.count() {
        0 => version,
        n => format!("{version} · {n} test(s) marked: see the report's verdicts"),
    }
}

/// Rasterises a card made by [`svg`] at twice its size (sharp on high-density screens).
pub fn png(svg: &str) -> Result<Vec<u8>, String> {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_font_data(FONT.to_vec());
    opt.font_family = "DejaVu Sans".into();
    let tree = resvg::usvg::Tree::from_str(svg, &opt).map_err(|e| format!("card SVG: {e}"))?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width() * 2, size.height() * 2)
        .ok_or("card too large to rasterise")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::from_scale(2.0, 2.0),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| format!("card PNG: {e}"))
}
