//! A diagnosis in the HTML report: the ladder as a table with a bar per stage (the share of
//! its ceiling the measurement used), then the limit.

use std::fmt::Write as _;

use storbench_model::diagnose::Diagnosis;

use super::server::escape;
use crate::diagnose::figure;

/// Bars stop at this share, so one far over its ceiling does not widen the table.
const BAR_MAX: f64 = 120.0;

pub fn section(html: &mut String, d: &Diagnosis) {
    let _ = writeln!(
        html,
        "<div class=\"diagnosis\"><p>limit: <b>{}</b>: {}</p><table>\
         <tr><th>stage</th><th>measured</th><th>ceiling</th><th>used</th><th>note</th></tr>",
        d.limit.stage.name(),
        escape(&d.limit.message)
    );
    for s in &d.stages {
        let measured = s.measured.map(|m| figure(m, s.unit)).unwrap_or_default();
        let ceiling = s
            .ceiling
            .map(|c| format!("{} {}", figure(c, s.unit), s.ceiling_what))
            .unwrap_or_default();
        let used = s.share_percent().map_or(String::new(), |p| {
            format!(
                "<svg width=\"120\" height=\"10\" role=\"img\" aria-label=\"{p:.0}%\">\
                 <rect width=\"{:.0}\" height=\"10\" fill=\"#4a7\"/></svg> {p:.0}%",
                p.clamp(0.0, BAR_MAX)
            )
        });
        let note = s
            .skipped
            .as_ref()
            .map_or(s.note.clone(), |why| format!("skipped: {why}"));
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{used}</td><td>{}</td></tr>",
            s.stage.label(),
            escape(&measured),
            escape(&ceiling),
            escape(&note)
        );
    }
    let _ = writeln!(html, "</table>");
    for r in &d.remarks {
        let _ = writeln!(html, "<p>{}</p>", escape(r));
    }
    let _ = writeln!(html, "</div>");
}
