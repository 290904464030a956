//! The HTML report: one self-contained file (uPlot and the data inlined, a Content Security
//! Policy that forbids any network request) with the quick runs' summary cards first, bar
//! charts of each metric across runs (rates on a log scale), latency percentile curves and
//! histograms, bandwidth and IOPS over time on a shared time base, the comparison tables
//! and each run's environment. The page is a minijinja template (`templates/`); what a
//! shared report leaves out (paths, host names) is removed from the runs first
//! ([`crate::privacy`]).

mod data;
mod hosts;
mod hosts_bonnie;
mod ladder;
mod page;
mod server;

use std::io::{self, Write};

use crate::compare::{NamedRun, compare};
use crate::privacy::Privacy;

const UPLOT_JS: &str = include_str!("../assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../assets/uPlot.LICENSE");
const REPORT_JS: &str = include_str!("../assets/report.js");
const REPORT_CSS: &str = include_str!("../assets/report.css");

/// How the report is made for sharing.
#[derive(Clone, Debug, Default)]
pub struct Opts {
    /// The page's heading and the cards' title (default: "storbench report").
    pub title: Option<String>,
    pub privacy: Privacy,
}

/// Writes the report for `runs`, changes measured against `runs[baseline]`.
pub fn render(
    runs: &[NamedRun<'_>],
    baseline: usize,
    opts: &Opts,
    out: &mut dyn Write,
) -> io::Result<()> {
    let private: Vec<_> = runs.iter().map(|r| opts.privacy.apply(r.run)).collect();
    let runs: Vec<NamedRun<'_>> = runs
        .iter()
        .zip(&private)
        .map(|(r, run)| NamedRun {
            id: r.id,
            name: r.name.clone(),
            run,
        })
        .collect();
    let runs = runs.as_slice();
    let comparison = compare(runs, baseline);
    let chart_data = data::chart_data(runs, &comparison);
    let data_json = script_json(&chart_data).map_err(io::Error::other)?;
    let assets = page::Assets {
        uplot_css: UPLOT_CSS,
        css: REPORT_CSS,
        uplot_license: UPLOT_LICENSE,
        uplot_js: UPLOT_JS,
        data_json: &data_json,
        report_js: REPORT_JS,
    };
    let html = page::render(runs, &comparison, opts, &assets).map_err(io::Error::other)?;
    out.write_all(html.as_bytes())
}

/// `2026-11-29 17:20` in UTC.
pub(crate) fn utc_minutes(unix_ms: u64) -> String {
    let mut s = page::utc(unix_ms);
    s.truncate(16);
    s
}

/// `value` as JSON to place inside a `<script>` element: `<`, `>` and `&` are written as
/// `\u003c`, `\u003e` and `\u0026`, and U+2028/U+2029 as `\u2028`/`\u2029`, so no text of
/// the user's (`</script>`, `<!--`) can close the element, open a comment or end a line of
/// script, and the content stays JSON that `JSON.parse` and serde read back unchanged.
pub fn script_json(value: &impl serde::Serialize) -> serde_json::Result<String> {
    let json = serde_json::to_string(value)?;
    let mut out = String::with_capacity(json.len());
    // Outside strings serde's JSON holds none of these characters, so escaping each one
    // wherever it appears keeps the document's meaning.
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_escaping() {
        let text = "</script><!--<script>&\u{2028}\u{2029}";
        let json = script_json(&serde_json::json!({ "a": text })).unwrap();
        assert_eq!(
            json,
            r#"{"a":"\u003c/script\u003e\u003c!--\u003cscript\u003e\u0026\u2028\u2029"}"#
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["a"], text);
    }
}
