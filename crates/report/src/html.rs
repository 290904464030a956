//! The HTML report: one self-contained file (uPlot and the data inlined, a Content Security
//! Policy that forbids any network request) with bar charts of each metric across runs,
//! latency percentile curves, bandwidth and IOPS over time, the comparison tables and each
//! run's environment.

mod data;
mod page;
mod server;

use std::io::{self, Write};

use crate::compare::{NamedRun, compare};

const UPLOT_JS: &str = include_str!("../assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../assets/uPlot.LICENSE");
const REPORT_JS: &str = include_str!("../assets/report.js");
const REPORT_CSS: &str = include_str!("../assets/report.css");

/// Writes the report for `runs`, changes measured against `runs[baseline]`.
pub fn render(runs: &[NamedRun<'_>], baseline: usize, out: &mut dyn Write) -> io::Result<()> {
    let comparison = compare(runs, baseline);
    let chart_data = data::chart_data(runs, &comparison);
    let json = serde_json::to_string(&chart_data).map_err(io::Error::other)?;
    let mut html = String::with_capacity(UPLOT_JS.len() + json.len() + 64 * 1024);
    page::head(&mut html, runs, UPLOT_CSS, REPORT_CSS);
    page::body(&mut html, runs, &comparison);
    html.push_str("<script>/*! uPlot, inlined unchanged.\n");
    html.push_str(&UPLOT_LICENSE.replace("*/", "* /"));
    html.push_str("*/\n");
    html.push_str(UPLOT_JS);
    html.push_str("</script>\n<script type=\"application/json\" id=\"report-data\">");
    html.push_str(&script_safe(&json));
    html.push_str("</script>\n<script>");
    html.push_str(REPORT_JS);
    html.push_str("</script>\n</body>\n</html>\n");
    out.write_all(html.as_bytes())
}

/// JSON placed inside `<script>` must not close the element or open a comment.
fn script_safe(json: &str) -> String {
    json.replace("</", "<\\/").replace("<!--", "<\\!--")
}

/// Text for HTML element content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(
            script_safe(r#"{"a":"</script><!--"}"#),
            r#"{"a":"<\/script><\!--"}"#
        );
    }
}
