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
    let json = serde_json::to_string(&chart_data).map_err(io::Error::other)?;
    let data_json = script_safe(&json);
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

/// JSON placed inside `<script>` must not close the element or open a comment.
fn script_safe(json: &str) -> String {
    json.replace("</", "<\\/").replace("<!--", "<\\!--")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_escaping() {
        assert_eq!(
            script_safe(r#"{"a":"</script><!--"}"#),
            r#"{"a":"<\/script><\!--"}"#
        );
    }
}
