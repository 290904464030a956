//! A multi-host bonnie run's ranks in the report (docs/multihost.md): per test, each
//! rank's work, rate and span on rank 0's clock, the straggler marked (by the rule its
//! warning follows: below 70% of the ranks' median), and the All clients row: all ranks'
//! work over the earliest start to the latest end (IOR's aggregate), with the first-done
//! time.

use std::fmt::Write as _;

use storbench_model::hosts::MultiHost;
use storbench_model::hosts::bonnie::{BonnieHosts, TestAggregate, stragglers_in, test_label, unit};

use super::hosts::{frame, host_cells, straggler_cell};
use super::server::escape;

pub fn section(html: &mut String, h: &MultiHost, b: &BonnieHosts) {
    let what = format!(
        "bonnie on {} ranks ({}); aggregate = all ranks' work / (latest end − earliest start)",
        h.ranks.len(),
        escape(&h.launcher)
    );
    let columns = "<th>test</th><th>rank</th><th>host</th><th>clock offset ms</th>\
         <th>work</th><th>rate</th><th>unit</th><th>from ms</th><th>to ms</th><th></th>";
    frame(html, h, &what, columns, |html| {
        for t in &b.tests {
            rows(html, h, t);
        }
    });
}

fn rows(html: &mut String, h: &MultiHost, t: &TestAggregate) {
    let (median, slow) = stragglers_in(t);
    let ms = |ns: u64| ns as f64 / 1e6;
    for p in &t.per_rank {
        let info = h.ranks.iter().find(|r| r.rank == p.rank);
        let (host, offset) = host_cells(info);
        let is_slow = slow.iter().any(|s| s.rank == p.rank);
        let mark = straggler_cell(is_slow, format_args!("{median:.1}"));
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{host}</td><td>{offset}</td><td>{:.0}</td>\
             <td>{:.1}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td>{mark}</tr>",
            test_label(t.id),
            p.rank,
            p.work,
            p.rate,
            unit(t.id),
            ms(p.start_ns),
            ms(p.end_ns)
        );
    }
    let _ = writeln!(
        html,
        "<tr class=\"all\"><td>{}</td><td colspan=\"3\">All clients</td><td>{:.0}</td>\
         <td>{:.1}</td><td>{}</td><td>0</td><td>{:.1}</td><td>first done at {:.1} ms</td></tr>",
        test_label(t.id),
        t.work,
        t.rate,
        unit(t.id),
        ms(t.last_done_ns),
        ms(t.first_done_ns)
    );
}
