//! The report's HTML outside the charts: head, run list, comparison tables, environments.

use std::fmt::Write as _;

use storbench_core::result::{Environment, RunResult, TargetInfo};

use super::escape;
use crate::compare::render::{fmt_change, fmt_value};
use crate::compare::{Better, Comparison, NamedRun, TestTable};

/// Nothing may be fetched: scripts and styles are inline, images only `data:`.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'";

pub fn head(html: &mut String, runs: &[NamedRun<'_>], uplot_css: &str, css: &str) {
    let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>storbench report: {}</title>\n<style>{uplot_css}\n{css}</style>\n</head>\n",
        escape(&names.join(" vs "))
    );
}

pub fn body(html: &mut String, runs: &[NamedRun<'_>], c: &Comparison) {
    html.push_str("<body>\n<header><h1>storbench report</h1>\n");
    let _ = writeln!(
        html,
        "<p>{} runs; changes are against <b>{}</b>. Charts need JavaScript; the tables do not.</p>",
        runs.len(),
        escape(&runs[c.baseline].name)
    );
    html.push_str(
        "<nav><a href=\"#runs\">Runs</a> <a href=\"#bars\">Figures</a> \
         <a href=\"#latency\">Latency</a> <a href=\"#timeline\">Over time</a> \
         <a href=\"#tables\">Tables</a> <a href=\"#env\">Environment</a></nav></header>\n<main>\n",
    );
    run_list(html, runs);
    html.push_str(
        "<section id=\"bars\"><h2>Figures across runs</h2><div class=\"charts\" \
         id=\"bar-charts\"></div></section>\n<section id=\"latency\"><h2>Completion latency \
         percentiles</h2><div class=\"charts\" id=\"latency-charts\"></div></section>\n\
         <section id=\"timeline\"><h2>Bandwidth and IOPS over time</h2><div class=\"charts\" \
         id=\"timeline-charts\"></div></section>\n",
    );
    tables(html, c);
    environments(html, runs);
    html.push_str("</main>\n");
}

fn run_list(html: &mut String, runs: &[NamedRun<'_>]) {
    html.push_str(
        "<section id=\"runs\"><h2>Runs</h2><table class=\"runs\"><tr><th>run</th><th>id</th>\
         <th>mode</th><th>started (UTC)</th><th>tool</th><th>command</th></tr>\n",
    );
    for r in runs {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            escape(&r.name),
            r.id,
            format!("{:?}", r.run.mode).to_lowercase(),
            utc(r.run.started_unix_ms),
            escape(&r.run.tool_version),
            escape(&r.run.command_line.join(" "))
        );
    }
    html.push_str("</table></section>\n");
}

fn tables(html: &mut String, c: &Comparison) {
    html.push_str("<section id=\"tables\"><h2>Comparison tables</h2>\n");
    preamble(html, c);
    if c.tests.is_empty() {
        html.push_str("<p>These runs share no test.</p>\n");
    }
    for t in &c.tests {
        table(html, c, t);
    }
    if !c.notes.is_empty() {
        html.push_str("<ul class=\"notes\">\n");
        for n in &c.notes {
            let _ = writeln!(html, "<li>{}</li>", escape(n));
        }
        html.push_str("</ul>\n");
    }
    html.push_str("</section>\n");
}

/// Settings that differ (warnings), environment differences, rounds, and what the marks
/// in the Δ columns mean.
fn preamble(html: &mut String, c: &Comparison) {
    if !c.warnings.is_empty() {
        html.push_str("<ul class=\"warnings\">\n");
        for w in &c.warnings {
            let _ = writeln!(
                html,
                "<li>warning: {}; these runs do not measure the same thing</li>",
                escape(w)
            );
        }
        html.push_str("</ul>\n");
    }
    if !c.environment.is_empty() {
        html.push_str("<p>Environments differ:</p>\n<ul class=\"env-diff\">\n");
        for e in &c.environment {
            let _ = writeln!(html, "<li>{}</li>", escape(e));
        }
        html.push_str("</ul>\n");
    }
    if c.runs.iter().any(|r| r.rounds > 1) {
        html.push_str(
            "<p>A run with rounds shows its rounds' mean ± the half width of its 95% interval.</p>\n",
        );
    }
    if c.tests
        .iter()
        .flat_map(|t| &t.rows)
        .any(|r| r.verdicts.iter().any(Option::is_some))
    {
        let _ = writeln!(
            html,
            "<p>Δ <b>real</b>: a change beyond the noise, <b>noise</b>: within it (Welch's \
             t-test, 95%, on the runs' rounds, and at least {}%); <b>real~</b>/<b>noise~</b>: \
             judged from per-second rates (batch means), weaker than rounds.</p>",
            crate::compare::noise::NOISE_FLOOR_PCT
        );
    }
}

fn table(html: &mut String, c: &Comparison, t: &TestTable) {
    let _ = write!(
        html,
        "<h3>{}</h3>\n<table class=\"cmp\"><tr><th>metric</th>",
        escape(&t.test)
    );
    for (i, r) in c.runs.iter().enumerate() {
        let _ = write!(html, "<th>{}</th>", escape(&r.name));
        if i != t.reference {
            html.push_str("<th>Δ</th>");
        }
    }
    html.push_str("</tr>\n");
    for row in &t.rows {
        let title = if row.metric.label() == row.unit {
            row.unit.to_string()
        } else {
            format!("{} {}", row.metric.label(), row.unit)
        };
        let _ = write!(html, "<tr><td>{}</td>", escape(&title));
        for i in 0..c.runs.len() {
            let v = match row.intervals[i] {
                Some(iv) => crate::intervals::plus_minus(iv.mean, iv.half_width()),
                None => row.cell(i, fmt_value),
            };
            let _ = write!(html, "<td class=\"num\">{}</td>", escape(&v));
            if i == t.reference {
                continue;
            }
            let verdict = row.verdicts[i];
            let marked = |p: f64| match verdict {
                Some(v) => v.significant,
                None => p.abs() >= 1.0,
            };
            let class = match row.change_pct[i] {
                Some(p) if marked(p) && (p > 0.0) == (row.better == Better::Higher) => "good",
                Some(p) if marked(p) => "bad",
                _ => "",
            };
            let mut text = row.change_pct[i].map_or("-".to_string(), fmt_change);
            if let Some(v) = verdict {
                text = format!("{text} {}", v.mark());
            }
            let _ = write!(html, "<td class=\"num {class}\">{text}</td>");
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
}

fn environments(html: &mut String, runs: &[NamedRun<'_>]) {
    html.push_str("<section id=\"env\"><h2>Environment</h2>\n");
    for r in runs {
        let _ = writeln!(html, "<h3>{} (run {})</h3>", escape(&r.name), r.id);
        match &r.run.environment {
            Some(env) => environment(html, env),
            None => html.push_str("<p>No environment was recorded (imported result).</p>\n"),
        }
        extras(html, r.run);
    }
    html.push_str("</section>\n");
}

fn kv_table(html: &mut String, rows: &[(&str, String)]) {
    html.push_str("<table class=\"kv\">\n");
    for (k, v) in rows.iter().filter(|(_, v)| !v.is_empty()) {
        let _ = writeln!(html, "<tr><th>{k}</th><td>{}</td></tr>", escape(v));
    }
    html.push_str("</table>\n");
}

fn environment(html: &mut String, env: &Environment) {
    kv_table(
        html,
        &[
            ("host", env.hostname.clone()),
            ("CPU", format!("{} × {}", env.ncpus, env.cpu_model)),
            (
                "memory",
                format!("{:.1} GiB", env.mem_bytes as f64 / (1u64 << 30) as f64),
            ),
            ("kernel", env.kernel.clone()),
            ("storbench", env.storbench_version.clone()),
        ],
    );
    for t in &env.targets {
        target(html, t);
    }
}

fn target(html: &mut String, t: &TargetInfo) {
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    let rotational = t.rotational.map_or(String::new(), |r| {
        if r {
            "yes (HDD)".into()
        } else {
            "no (SSD/NVMe/virtual)".into()
        }
    });
    kv_table(
        html,
        &[
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
        ],
    );
}

/// Notes, disks and job files: what the reader needs to judge the figures.
fn extras(html: &mut String, run: &RunResult) {
    if !run.verdicts.is_empty() {
        html.push_str("<ul class=\"verdicts\">\n");
        for v in &run.verdicts {
            let _ = writeln!(
                html,
                "<li class=\"{}\">{}</li>",
                v.validity.name(),
                escape(&crate::notes::verdict_line(v))
            );
        }
        html.push_str("</ul>\n");
    }
    if !run.notes.is_empty() {
        html.push_str("<ul class=\"notes\">\n");
        for n in &run.notes {
            let _ = writeln!(
                html,
                "<li class=\"{:?}\">{}</li>",
                n.level,
                escape(&n.message)
            );
        }
        html.push_str("</ul>\n");
    }
    if let Some(s) = &run.server_stats {
        super::server::section(html, s);
    }
    for d in &run.disks {
        let _ = writeln!(
            html,
            "<p>disk {}: {} reads, {} writes, {:.1}% busy</p>",
            escape(&d.name),
            d.read_ios,
            d.write_ios,
            d.util
        );
    }
    for (path, text) in &run.job_files {
        let _ = writeln!(
            html,
            "<details><summary>job file {}</summary><pre>{}</pre></details>",
            escape(path),
            escape(text)
        );
    }
}

/// `2026-11-29 20:43:05` in UTC (the report may be read anywhere).
fn utc(unix_ms: u64) -> String {
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
