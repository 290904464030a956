//! What limited a group across hosts (issue item "the why across hosts"): the clients'
//! links together, something past them (the server's link, CPU or storage), or a client
//! host's CPU. Each rank's own analysis already judged its jobs on its host; this compares
//! the ranks' sum with their links, which no single rank can see.

use super::{GroupAggregate, LINK_FULL, RankInfo, RankRun};
use crate::result::{JobResult, Note, NoteLevel, RunResult};

/// A host whose CPUs were this busy over its run is named: its share may have been held
/// back by its own CPU rather than by the network or the server.
pub const HOST_CPU_BUSY: f64 = 90.0;

/// The interface a job used (its engine's `interface` detail) and that interface's rate
/// as the rank recorded it.
pub(super) fn job_link(run: &RunResult, job: &JobResult) -> Option<(String, Option<u64>)> {
    let iface = job
        .engine_details
        .iter()
        .find(|(k, _)| k == "interface")
        .map(|(_, v)| v.as_str())?;
    let speed = run
        .nics
        .iter()
        .find(|n| n.name == iface)
        .and_then(|n| n.speed_mbps);
    Some((iface.to_string(), speed))
}

/// The host's CPUs busy (user + system) over its run, percent of all of them.
pub(super) fn cpu_busy_percent(run: &RunResult) -> Option<f64> {
    let c = run.system_cpu.as_ref().filter(|c| c.ncpus > 0)?;
    Some((c.user + c.system) / c.ncpus as f64)
}

/// Notes naming the limit of each group across the hosts, and hosts whose CPU was busy.
pub(super) fn host_limits(
    groups: &[GroupAggregate],
    labels: &[String],
    ranks: &[RankRun],
    infos: &[RankInfo],
) -> Vec<Note> {
    let label = |rank: u32| {
        ranks
            .iter()
            .position(|r| r.rank == rank)
            .map_or("?", |i| labels[i].as_str())
    };
    let mut notes: Vec<Note> = groups
        .iter()
        .filter_map(|g| group_link_limit(g, &label))
        .collect();
    for i in infos {
        let Some(busy) = i.cpu_busy_percent.filter(|&b| b >= HOST_CPU_BUSY) else {
            continue;
        };
        notes.push(limit(
            "limit.hosts.cpu",
            format!(
                "{} (rank {})'s CPUs were {busy:.0}% busy over its run ({} CPUs): that host's CPU may have held its share back",
                label(i.rank),
                i.rank,
                i.ncpus.map_or("?".to_string(), |n| n.to_string()),
            ),
        ));
    }
    notes
}

/// The clients' links against what the ranks moved together in one group: all of them
/// full is "the clients' links are the limit"; none of them full while the sum falls short
/// is "the limit lies past the clients". Judged on the busier direction, and only when
/// every rank's link rate is known.
fn group_link_limit<'a>(g: &GroupAggregate, label: &impl Fn(u32) -> &'a str) -> Option<Note> {
    let d = if g.aggregate_bw[0] >= g.aggregate_bw[1] {
        0
    } else {
        1
    };
    if g.per_rank.len() < 2 || g.aggregate_bw[d] <= 0.0 {
        return None;
    }
    let links: Vec<u64> = g
        .per_rank
        .iter()
        .map(|p| p.link_mbps)
        .collect::<Option<_>>()?;
    let sum: u64 = links.iter().sum();
    if sum == 0 {
        return None;
    }
    let agg = g.aggregate_bw[d] * 8.0 / 1e6;
    let share = agg / sum as f64 * 100.0;
    let each: Vec<String> = g
        .per_rank
        .iter()
        .zip(&links)
        .map(|(p, l)| format!("{} {l}", label(p.rank)))
        .collect();
    let moved = format!(
        "group {}: the {} ranks {} {:.1} MB/s ({agg:.0} Mbit/s) together, {share:.0}% of their links' {sum} Mbit/s ({} Mbit/s)",
        g.group,
        g.per_rank.len(),
        ["read", "wrote"][d],
        agg / 8.0,
        each.join(", ")
    );
    if agg >= sum as f64 * LINK_FULL {
        return Some(limit(
            "limit.hosts.client_links",
            format!("{moved}: the clients' links are the limit"),
        ));
    }
    let (fullest, fill) = g
        .per_rank
        .iter()
        .zip(&links)
        .map(|(p, &l)| (p.rank, p.bw[d] * 8.0 / 1e6 / l.max(1) as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if fill >= LINK_FULL {
        return None;
    }
    Some(limit(
        "limit.hosts.server_side",
        format!(
            "{moved}, and none filled its own (the fullest, {}, at {:.0}%): not the clients' links; the limit lies past them: the server's link, CPU or storage",
            label(fullest),
            fill * 100.0
        ),
    ))
}

fn limit(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Limit,
        code: code.into(),
        message,
    }
}
