//! A multi-host run's ranks in the report (docs/multihost.md): one row per rank and group
//! with its bytes, rate, span on rank 0's clock, link and CPU, the straggler marked (below
//! 70% of the ranks' median, as its warning says), and the All clients row under them.
//! A bonnie run's ranks are listed per test instead (`hosts_bonnie.rs`).

use std::fmt::Write as _;

use storbench_model::hosts::{GroupAggregate, MultiHost, RankInfo, STRAGGLER_SHARE, stragglers_in};

use super::server::escape;

const DIRS: [&str; 3] = ["read", "write", "trim"];

pub fn section(html: &mut String, h: &MultiHost) {
    if let Some(b) = &h.bonnie {
        super::hosts_bonnie::section(html, h, b);
        return;
    }
    let what = format!(
        "{} ranks ({}); aggregate = all bytes / (latest end − earliest start)",
        h.ranks.len(),
        escape(&h.launcher)
    );
    let columns = "<th>group</th><th>rank</th><th>host</th><th>clock offset ms</th>\
         <th>dir</th><th>MB</th><th>MB/s</th><th>from ms</th><th>to ms</th><th>link Mbit/s</th>\
         <th>CPU %</th><th></th>";
    frame(html, h, &what, columns, |html| {
        for g in &h.groups {
            for d in (0..3).filter(|&d| g.bytes[d] > 0) {
                rows(html, h, g, d);
            }
        }
    });
}

/// The frame of both per-rank tables (this one and bonnie's per test): the line saying
/// what the table is, the table with its `columns` around the rows `body` writes, and a
/// warning for each rank without a result.
pub(super) fn frame(
    html: &mut String,
    h: &MultiHost,
    what: &str,
    columns: &str,
    body: impl FnOnce(&mut String),
) {
    let _ = writeln!(
        html,
        "<div class=\"hosts\"><p>{what}</p><table class=\"hosts\"><tr>{columns}</tr>"
    );
    body(html);
    html.push_str("</table>\n");
    for r in h.ranks.iter().filter(|r| r.error.is_some()) {
        let _ = writeln!(
            html,
            "<p class=\"Warning\">rank {} ({}) has no result: {}</p>",
            r.rank,
            escape(&r.host),
            escape(r.error.as_deref().unwrap_or(""))
        );
    }
    html.push_str("</div>\n");
}

/// A rank's first cells, shared by both tables: its host (escaped; `?` when the rank is
/// unknown) and its clock offset from rank 0.
pub(super) fn host_cells(info: Option<&RankInfo>) -> (String, String) {
    let host = info.map_or("?".to_string(), |r| escape(&r.host));
    let offset = info.map_or(String::new(), |r| format!("{:+.3}", r.clock_offset_ms));
    (host, offset)
}

/// The last cell of a rank's row: the straggler's mark with the median it fell below
/// (`median` as the table shows rates), else empty.
pub(super) fn straggler_cell(slow: bool, median: std::fmt::Arguments<'_>) -> String {
    if slow {
        format!(
            "<td class=\"Warning\">straggler: below {:.0}% of the median {median}</td>",
            STRAGGLER_SHARE * 100.0
        )
    } else {
        "<td></td>".to_string()
    }
}

fn rows(html: &mut String, h: &MultiHost, g: &GroupAggregate, d: usize) {
    let (median, slow) = stragglers_in(g, d);
    for p in &g.per_rank {
        let info = h.ranks.iter().find(|r| r.rank == p.rank);
        let (host, offset) = host_cells(info);
        let cpu = info
            .and_then(|r| r.cpu_busy_percent)
            .map_or(String::new(), |c| format!("{c:.0}"));
        let link = p.link_mbps.map_or(String::new(), |l| l.to_string());
        let is_slow = slow.iter().any(|s| s.rank == p.rank);
        let mark = straggler_cell(is_slow, format_args!("{:.1} MB/s", median / 1e6));
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{host}</td><td>{offset}</td><td>{}</td><td>{:.1}</td>\
             <td>{:.1}</td><td>{}</td><td>{}</td><td>{link}</td><td>{cpu}</td>{mark}</tr>",
            g.group,
            p.rank,
            DIRS[d],
            p.bytes[d] as f64 / 1e6,
            p.bw[d] / 1e6,
            p.start_ms,
            p.end_ms
        );
    }
    let _ = writeln!(
        html,
        "<tr class=\"all\"><td>{}</td><td colspan=\"3\">All clients</td><td>{}</td><td>{:.1}</td>\
         <td>{:.1}</td><td>0</td><td>{}</td><td colspan=\"3\">first done at {} ms: {:.1} MB/s</td></tr>",
        g.group,
        DIRS[d],
        g.bytes[d] as f64 / 1e6,
        g.aggregate_bw[d] / 1e6,
        g.last_done_ms,
        g.first_done_ms,
        g.first_done_bw[d] / 1e6
    );
}
