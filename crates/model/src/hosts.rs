//! A multi-host run (docs/multihost.md): the results of every rank merged into one, with
//! IOR's aggregate timing per stonewall group.
//!
//! Each rank measures on its own; this module only combines finished results, so it is
//! plain arithmetic, tested without MPI. IOR's aggregate bandwidth of a phase is all bytes
//! moved by every rank over the time from the earliest rank's start to the latest rank's
//! end: a rank that starts late or finishes late lowers the figure, as it lowers what a
//! server delivered to all its clients together. Times of other ranks are put on rank 0's
//! clock with the offset measured when the run started.

use serde::{Deserialize, Serialize};

use crate::result::{JobResult, Note, NoteLevel, RunResult, TimelinePoint};

/// What a multi-host run adds to its result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MultiHost {
    /// How the processes were started and coordinated (`mpi`).
    pub launcher: String,
    /// One entry per rank, in rank order.
    pub ranks: Vec<RankInfo>,
    /// One entry per reporting group that ran, in group order.
    pub groups: Vec<GroupAggregate>,
    /// A bonnie run's per-host suites and per-test aggregates (the merged run's `bonnie`
    /// is the aggregate suite); None for fio and quick runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bonnie: Option<bonnie::BonnieHosts>,
}

/// One process of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    pub rank: u32,
    /// The host name the rank ran on.
    pub host: String,
    /// The rank's clock minus rank 0's at the start, ms (as measured: both read their
    /// clock on leaving one barrier).
    pub clock_offset_ms: f64,
    /// Why the rank has no result (it failed before measuring anything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The host's CPUs busy (user + system) over its run, percent of all of them; None
    /// where unknown (a failed rank, an older result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_busy_percent: Option<f64>,
    /// How many CPUs the host has, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncpus: Option<u32>,
}

/// One group over all ranks, IOR's way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupAggregate {
    pub group: u32,
    /// Bytes moved by all ranks: read, write, trim.
    pub bytes: [u64; 3],
    /// The earliest rank's start, ms since the Unix epoch on rank 0's clock.
    pub start_unix_ms: u64,
    /// From the earliest start to the first rank's end and to the last rank's end, ms.
    pub first_done_ms: u64,
    pub last_done_ms: u64,
    /// bytes / last_done_ms, bytes/s per direction: IOR's aggregate bandwidth.
    pub aggregate_bw: [f64; 3],
    /// The rate while every rank was still running (IOR's and elbencho's "stonewall" or
    /// "first done" figure): each rank's bytes up to the first end, taken at the rank's
    /// own mean rate, over first_done_ms; bytes/s per direction.
    pub first_done_bw: [f64; 3],
    pub per_rank: Vec<RankSpan>,
    /// What all ranks completed in each second after the earliest start, on rank 0's
    /// clock (each rank's points moved by its clock offset); empty where the ranks kept
    /// no timelines (older results, imports).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelinePoint>,
}

/// One rank's part of a group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSpan {
    pub rank: u32,
    pub bytes: [u64; 3],
    /// Its measured start and end, ms after the group's earliest start.
    pub start_ms: u64,
    pub end_ms: u64,
    /// Its own bandwidth, bytes over its own runtime, bytes/s per direction (as its jobs
    /// report it).
    pub bw: [f64; 3],
    /// The network interface the rank's jobs used and its rate (the lower of its stated
    /// speed and a shaping qdisc's), Mbit/s; None for local targets or where unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_mbps: Option<u64>,
}

/// One rank's finished run (or why it has none), as gathered on rank 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankRun {
    pub rank: u32,
    pub host: String,
    pub clock_offset_ms: f64,
    pub result: Result<RunResult, String>,
}

/// How a rank's entries are named in the merged result: its host, with the rank when
/// several ranks share a host (fio's client mode prefixes each job with its host).
pub fn labels(ranks: &[RankRun]) -> Vec<String> {
    ranks
        .iter()
        .map(|r| {
            let shared = ranks.iter().filter(|o| o.host == r.host).count() > 1;
            if shared {
                format!("{}#{}", r.host, r.rank)
            } else {
                r.host.clone()
            }
        })
        .collect()
}

/// Merges the ranks' runs into one result: rank 0's run (or the first rank's that has
/// one) is the frame; every group holds the jobs of every rank, renamed `LABEL:job`; notes
/// and verdicts are kept per rank under the same names; [`MultiHost`] holds the aggregate.
/// `Err` when no rank has a result.
pub fn merge(launcher: &str, ranks: Vec<RankRun>) -> Result<RunResult, String> {
    let labels = labels(&ranks);
    let infos: Vec<RankInfo> = ranks
        .iter()
        .map(|r| RankInfo {
            rank: r.rank,
            host: r.host.clone(),
            clock_offset_ms: r.clock_offset_ms,
            error: r.result.as_ref().err().cloned(),
            cpu_busy_percent: r.result.as_ref().ok().and_then(limits::cpu_busy_percent),
            ncpus: r
                .result
                .as_ref()
                .ok()
                .and_then(|run| run.system_cpu.as_ref())
                .map(|c| c.ncpus),
        })
        .collect();
    let Some(frame) = ranks.iter().find_map(|r| r.result.as_ref().ok()) else {
        let why: Vec<String> = ranks
            .iter()
            .filter_map(|r| {
                r.result
                    .as_ref()
                    .err()
                    .map(|e| format!("rank {}: {e}", r.rank))
            })
            .collect();
        return Err(why.join("; "));
    };
    let mut run = frame.clone();
    run.notes.clear();
    run.verdicts.clear();
    for g in &mut run.groups {
        g.jobs.clear();
    }
    for (r, label) in ranks.iter().zip(&labels) {
        let Ok(own) = &r.result else {
            run.notes.push(Note {
                level: NoteLevel::Warning,
                code: "warn.rank".into(),
                message: format!(
                    "{label} (rank {}) has no result: {}",
                    r.rank,
                    r.result.as_ref().err().map_or("", String::as_str)
                ),
            });
            continue;
        };
        run.interrupted |= own.interrupted;
        for g in &own.groups {
            let jobs = g.jobs.iter().map(|j| renamed(j, label));
            match run.groups.iter_mut().find(|m| m.id == g.id) {
                Some(m) => m.jobs.extend(jobs),
                None => {
                    let mut m = g.clone();
                    m.jobs = jobs.collect();
                    run.groups.push(m);
                }
            }
        }
        run.notes.extend(own.notes.iter().map(|n| Note {
            message: format!("{label}: {}", n.message),
            ..n.clone()
        }));
        run.verdicts.extend(own.verdicts.iter().map(|v| {
            let mut v = v.clone();
            v.job = format!("{label}:{}", v.job);
            v
        }));
        run.started_unix_ms = run.started_unix_ms.min(own.started_unix_ms);
        run.finished_unix_ms = run.finished_unix_ms.max(own.finished_unix_ms);
    }
    run.groups.sort_by_key(|g| g.id);
    let groups = run.groups.iter().map(|g| g.id).collect::<Vec<_>>();
    let aggregates: Vec<GroupAggregate> = groups
        .into_iter()
        .filter_map(|gid| aggregate(gid, &ranks))
        .collect();
    run.notes.extend(stragglers(&aggregates, &labels, &ranks));
    run.notes
        .extend(limits::host_limits(&aggregates, &labels, &ranks, &infos));
    let bonnie = bonnie::combine(&ranks, &labels).map(|(all, per_host)| {
        let named: Vec<(u32, String)> = ranks.iter().map(|r| r.rank).zip(labels).collect();
        run.notes.push(bonnie::aggregate_note(&all));
        run.notes.extend(bonnie::stragglers(&per_host, &named));
        run.bonnie = Some(all);
        per_host
    });
    run.hosts = Some(Box::new(MultiHost {
        launcher: launcher.to_string(),
        ranks: infos,
        groups: aggregates,
        bonnie,
    }));
    Ok(run)
}

/// A merged job name split into its rank's label and the job's own name (`host#1:seq` →
/// `("host#1", "seq")`); a name without a label is all job.
pub fn split_name(name: &str) -> (&str, &str) {
    name.split_once(':').unwrap_or(("", name))
}

/// A rank below this share of the ranks' median bandwidth is named: it held the aggregate
/// back (IOR's aggregate ends with the last rank).
pub const STRAGGLER_SHARE: f64 = 0.7;

/// The ranks' median bandwidth in direction `d` of a group, and the ranks below
/// [`STRAGGLER_SHARE`] of it (none for a group of one rank).
pub fn stragglers_in(g: &GroupAggregate, d: usize) -> (f64, Vec<&RankSpan>) {
    let mut rates: Vec<f64> = g.per_rank.iter().map(|p| p.bw[d]).collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    if n < 2 {
        return (rates.first().copied().unwrap_or(0.0), Vec::new());
    }
    let median = if n % 2 == 1 {
        rates[n / 2]
    } else {
        (rates[n / 2 - 1] + rates[n / 2]) / 2.0
    };
    let slow = g
        .per_rank
        .iter()
        .filter(|p| p.bw[d] < STRAGGLER_SHARE * median)
        .collect();
    (median, slow)
}

/// One warning per rank and direction whose bandwidth in a group was below
/// [`STRAGGLER_SHARE`] of the median over the ranks.
fn stragglers(groups: &[GroupAggregate], labels: &[String], ranks: &[RankRun]) -> Vec<Note> {
    let mut notes = Vec::new();
    for g in groups {
        for d in (0..3).filter(|&d| g.bytes[d] > 0) {
            let (median, slow) = stragglers_in(g, d);
            for p in slow {
                let label = ranks
                    .iter()
                    .position(|r| r.rank == p.rank)
                    .map_or("?", |i| labels[i].as_str());
                notes.push(Note {
                    level: NoteLevel::Warning,
                    code: "warn.straggler".into(),
                    message: format!(
                        "group {}: {label} (rank {}) {} at {:.1} MB/s, below {:.0}% of the ranks' median {:.1} MB/s: it held the aggregate back",
                        g.group,
                        p.rank,
                        ["read", "wrote", "trimmed"][d],
                        p.bw[d] / 1e6,
                        STRAGGLER_SHARE * 100.0,
                        median / 1e6
                    ),
                });
            }
        }
    }
    notes
}

fn renamed(j: &JobResult, label: &str) -> JobResult {
    let mut j = j.clone();
    j.name = format!("{label}:{}", j.name);
    j
}

/// One rank's part of a group on rank 0's clock: start and end (ms since the Unix epoch),
/// bytes and bandwidth per direction, and the link its jobs used.
type Span = (f64, f64, [u64; 3], [f64; 3], Option<(String, Option<u64>)>);

/// One rank's span and bytes in group `gid`, on rank 0's clock.
fn span_of(run: &RunResult, gid: u32, offset_ms: f64) -> Option<Span> {
    let jobs: Vec<&JobResult> = run
        .groups
        .iter()
        .filter(|g| g.id == gid)
        .flat_map(|g| &g.jobs)
        .filter(|j| j.runtime_ms > 0)
        .collect();
    let start = jobs
        .iter()
        .map(|j| j.end_unix_ms as f64 - j.runtime_ms as f64)
        .reduce(f64::min)?;
    let end = jobs.iter().map(|j| j.end_unix_ms as f64).reduce(f64::max)?;
    let mut bytes = [0u64; 3];
    let mut bw = [0f64; 3];
    for j in &jobs {
        for d in 0..3 {
            bytes[d] += j.dirs[d].io_bytes;
            bw[d] += j.dirs[d].bw_bytes();
        }
    }
    let link = jobs.iter().find_map(|j| limits::job_link(run, j));
    Some((start - offset_ms, end - offset_ms, bytes, bw, link))
}

/// IOR's figures for group `gid` over the ranks that ran it; None when none did IO.
pub fn aggregate(gid: u32, ranks: &[RankRun]) -> Option<GroupAggregate> {
    let spans: Vec<(u32, Span)> = ranks
        .iter()
        .filter_map(|r| {
            let run = r.result.as_ref().ok()?;
            Some((r.rank, span_of(run, gid, r.clock_offset_ms)?))
        })
        .collect();
    let start = spans.iter().map(|(_, s)| s.0).reduce(f64::min)?;
    let first_end = spans.iter().map(|(_, s)| s.1).reduce(f64::min)?;
    let last_end = spans.iter().map(|(_, s)| s.1).reduce(f64::max)?;
    let mut bytes = [0u64; 3];
    let mut first_bytes = [0f64; 3];
    for (_, (s, e, b, _, _)) in &spans {
        // The share of its bytes this rank had moved when the first rank ended, at its
        // own mean rate.
        let share = if e > s {
            ((first_end - s) / (e - s)).clamp(0.0, 1.0)
        } else {
            1.0
        };
        for d in 0..3 {
            bytes[d] += b[d];
            first_bytes[d] += b[d] as f64 * share;
        }
    }
    let last_done = (last_end - start).max(0.0);
    let first_done = (first_end - start).max(0.0);
    let rate = |b: f64, ms: f64| if ms > 0.0 { b * 1000.0 / ms } else { 0.0 };
    Some(GroupAggregate {
        group: gid,
        bytes,
        start_unix_ms: start.max(0.0).round() as u64,
        first_done_ms: first_done.round() as u64,
        last_done_ms: last_done.round() as u64,
        aggregate_bw: bytes.map(|b| rate(b as f64, last_done)),
        first_done_bw: first_bytes.map(|b| rate(b, first_done)),
        per_rank: spans
            .iter()
            .map(|(rank, (s, e, b, bw, link))| RankSpan {
                rank: *rank,
                bytes: *b,
                start_ms: (s - start).max(0.0).round() as u64,
                end_ms: (e - start).max(0.0).round() as u64,
                bw: *bw,
                link: link.as_ref().map(|l| l.0.clone()),
                link_mbps: link.as_ref().and_then(|l| l.1),
            })
            .collect(),
        timeline: timeline::aggregate_timeline(gid, ranks, start),
    })
}

pub mod bonnie;
mod limits;

/// TCP/IP over Ethernet carries about 94% of the line rate as payload; a transfer within
/// 90% of that has filled the link (core's analysis judges one host's link by it too).
pub const LINK_FULL: f64 = 0.94 * 0.9;

#[cfg(test)]
mod bonnie_tests;
#[cfg(test)]
mod tests;
mod timeline;
