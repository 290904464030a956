//! A multi-host run's tests in `compare` and the report (docs/multihost.md): each rank's
//! jobs are tests already (named `HOST:job`, so two runs compare host by host); this adds
//! per group and direction the "All clients" test: IOR's aggregate bandwidth and IOPS
//! over the earliest start to the latest end, with the ranks' summed per-second timeline.
//! A bonnie run's tests are each host's (`HOST:Sequential Output Block`) and the
//! aggregate's (`All clients Sequential Output Block`).

use storbench_model::hosts::MultiHost;
use storbench_model::hosts::bonnie::BonnieHosts;
use storbench_model::result::BonnieResult;

use super::figures::{Better, MetricId, TestFigures, fig, per_second, unique_name};

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// The "All clients" tests of a run, named apart from the tests in `taken`, each with the
/// index of its group in `h.groups` and its direction.
pub(crate) fn all_clients(h: &MultiHost, taken: &[&str]) -> Vec<(TestFigures, usize, usize)> {
    let mut out: Vec<(TestFigures, usize, usize)> = Vec::new();
    for (gi, g) in h.groups.iter().enumerate() {
        for d in (0..3).filter(|&d| g.bytes[d] > 0) {
            let name = if h.groups.len() > 1 {
                format!("All clients g{} {}", g.group, DIRS[d])
            } else {
                format!("All clients {}", DIRS[d])
            };
            let name = unique_name(
                taken
                    .iter()
                    .copied()
                    .chain(out.iter().map(|t| t.0.test.as_str())),
                &name,
            );
            let bw = g.aggregate_bw[d];
            let ios: u64 = g.timeline.iter().map(|p| p.ios[d]).sum();
            let mut figures = vec![
                fig(
                    MetricId::BandwidthMb,
                    "MB/s",
                    Better::Higher,
                    Some(bw / 1e6),
                ),
                fig(
                    MetricId::BandwidthMib,
                    "MiB/s",
                    Better::Higher,
                    Some(bw / 1_048_576.0),
                ),
            ];
            if ios > 0 && g.last_done_ms > 0 {
                let iops = ios as f64 * 1000.0 / g.last_done_ms as f64;
                figures.push(fig(MetricId::Iops, "IOPS", Better::Higher, Some(iops)));
            }
            let test = TestFigures {
                test: name,
                figures,
                seconds: per_second(&g.timeline, &[d]),
            };
            out.push((test, gi, d));
        }
    }
    out
}

/// A multi-host bonnie run's tests: each host's bonnie tests named `HOST:test`, then the
/// aggregate suite `all`'s as `All clients test`.
pub(crate) fn bonnie_hosts(h: &BonnieHosts, all: &BonnieResult) -> Vec<TestFigures> {
    let named = |b: &BonnieResult, prefix: &str| {
        let mut tests = super::figures::bonnie_figures(b);
        for t in &mut tests {
            t.test = format!("{prefix}{}", t.test);
        }
        tests
    };
    h.hosts
        .iter()
        .flat_map(|host| named(&host.result, &format!("{}:", host.result.name)))
        .chain(named(all, "All clients "))
        .collect()
}
