//! A bonnie suite run on several hosts at once (docs/multihost.md): each rank ran the
//! suite in its own directory, every test starting on all ranks together after an
//! agreement; this combines their finished results, IOR's way.
//!
//! A test's aggregate is what all ranks did (KiB, seeks or files) over the time from the
//! earliest rank's start to the latest rank's end, as IOR and mdtest compute theirs: a
//! rank that lags lowers it, as it lowers what the server gave all its clients together.
//! Each rank keeps its own figures too, for one row per host in the table and the CSV.

use serde::{Deserialize, Serialize};

use super::{RankRun, STRAGGLER_SHARE};
use crate::result::{BonnieResult, BonnieTest, BonnieTestId, Note, NoteLevel, TestSpan};

/// bonnie++'s MinTime: a test shorter than this shows `+++++` instead of a rate (the
/// suite's own rule, which the aggregate row follows too).
pub const MIN_TIME_NS: u64 = 500_000_000;

/// What a multi-host bonnie run adds to [`super::MultiHost`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BonnieHosts {
    /// Each rank's own figures, named by its host label, in rank order.
    pub hosts: Vec<BonnieHost>,
    /// Each test over all ranks, in the suite's order.
    pub tests: Vec<TestAggregate>,
}

/// One rank's suite.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BonnieHost {
    pub rank: u32,
    pub result: BonnieResult,
}

/// One test over all ranks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestAggregate {
    pub id: BonnieTestId,
    /// What all ranks did, in the unit of the test's rate (KiB, seeks, files).
    pub work: f64,
    /// The earliest rank's start, ns since the Unix epoch on rank 0's clock.
    pub start_unix_ns: u64,
    /// From the earliest start to the first and to the last rank's end, ns.
    pub first_done_ns: u64,
    pub last_done_ns: u64,
    /// work / last_done: IOR's aggregate rate, per second.
    pub rate: f64,
    pub per_rank: Vec<RankTest>,
}

/// One rank's part of a test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankTest {
    pub rank: u32,
    pub work: f64,
    /// Its start and end, ns after the test's earliest start.
    pub start_ns: u64,
    pub end_ns: u64,
    /// work over its own span, per second.
    pub rate: f64,
}

/// The ranks' bonnie results combined: the aggregate suite (the merged run's `bonnie`,
/// named `all N`) and the per-host detail. None when no rank has a bonnie result.
pub fn combine(ranks: &[RankRun], labels: &[String]) -> Option<(BonnieResult, BonnieHosts)> {
    let hosts: Vec<BonnieHost> = ranks
        .iter()
        .zip(labels)
        .filter_map(|(r, label)| {
            let mut result = r.result.as_ref().ok()?.bonnie.clone()?;
            result.name = label.clone();
            Some(BonnieHost {
                rank: r.rank,
                result,
            })
        })
        .collect();
    let frame = hosts.first()?.result.clone();
    let offsets: Vec<(u32, f64)> = ranks.iter().map(|r| (r.rank, r.clock_offset_ms)).collect();
    let tests: Vec<TestAggregate> = frame
        .tests
        .iter()
        .filter_map(|t| aggregate(t.id, &hosts, &offsets))
        .collect();
    let all = BonnieResult {
        name: format!("all {}", hosts.len()),
        concurrency: hosts.iter().map(|h| h.result.concurrency).sum(),
        tests: tests.iter().map(|a| aggregate_test(a, &hosts)).collect(),
        ..frame
    };
    Some((all, BonnieHosts { hosts, tests }))
}

/// IOR's figures of test `id` over the ranks that timed it; None when none did.
pub fn aggregate(
    id: BonnieTestId,
    hosts: &[BonnieHost],
    offsets: &[(u32, f64)],
) -> Option<TestAggregate> {
    // Each rank's (rank, work, start, end), ns on rank 0's clock.
    let spans: Vec<(u32, f64, f64, f64)> = hosts
        .iter()
        .filter_map(|h| {
            let t = h.result.tests.iter().find(|t| t.id == id)?;
            let s = t.span?;
            let offset_ns = offsets
                .iter()
                .find(|(r, _)| *r == h.rank)
                .map_or(0.0, |o| o.1 * 1e6);
            let start = s.start_unix_ns as f64 - offset_ns;
            Some((h.rank, s.work, start, start + t.elapsed_ns as f64))
        })
        .collect();
    let start = spans.iter().map(|s| s.2).reduce(f64::min)?;
    let first_end = spans.iter().map(|s| s.3).reduce(f64::min)?;
    let last_end = spans.iter().map(|s| s.3).reduce(f64::max)?;
    let work: f64 = spans.iter().map(|s| s.1).sum();
    let per_s = |w: f64, ns: f64| if ns > 0.0 { w * 1e9 / ns } else { 0.0 };
    Some(TestAggregate {
        id,
        work,
        start_unix_ns: start.max(0.0).round() as u64,
        first_done_ns: (first_end - start).max(0.0).round() as u64,
        last_done_ns: (last_end - start).max(0.0).round() as u64,
        rate: per_s(work, last_end - start),
        per_rank: spans
            .iter()
            .map(|&(rank, w, s, e)| RankTest {
                rank,
                work: w,
                start_ns: (s - start).max(0.0).round() as u64,
                end_ns: (e - start).max(0.0).round() as u64,
                rate: per_s(w, e - s),
            })
            .collect(),
    })
}

/// The aggregate as a bonnie test: the rate by bonnie++'s rule (none under half a
/// second), CPU as all ranks' CPU time over the aggregate span (bonnie++'s %CP, which
/// exceeds 100 with several processes), the longest operation of any rank.
fn aggregate_test(a: &TestAggregate, hosts: &[BonnieHost]) -> BonnieTest {
    let own: Vec<&BonnieTest> = hosts
        .iter()
        .filter_map(|h| h.result.tests.iter().find(|t| t.id == a.id))
        .collect();
    let cpu_ns: Option<u64> = own.iter().map(|t| t.span.map(|s| s.cpu_ns)).sum();
    let measured = a.last_done_ns >= MIN_TIME_NS;
    BonnieTest {
        id: a.id,
        rate: measured.then_some(a.rate),
        cpu_pct: cpu_ns
            .filter(|_| measured)
            .map(|c| c as f64 / a.last_done_ns as f64 * 100.0),
        elapsed_ns: a.last_done_ns,
        max_latency_ns: own.iter().filter_map(|t| t.max_latency_ns).max(),
        span: Some(TestSpan {
            start_unix_ns: a.start_unix_ns,
            work: a.work,
            cpu_ns: cpu_ns.unwrap_or(0),
        }),
    }
}

/// What the aggregate row is, for the notes above the table.
pub fn aggregate_note(all: &BonnieResult) -> Note {
    Note {
        level: NoteLevel::Info,
        code: "info.hosts.bonnie".into(),
        message: format!(
            "{}: each test's work on every host over the time from the earliest host's start to the latest host's end (IOR's aggregate); its %CP is all hosts' CPU time over that time",
            all.name
        ),
    }
}

/// The ranks' median rate in a test and the ranks below [`STRAGGLER_SHARE`] of it. Only
/// a test every rank timed for at least bonnie++'s minimum is judged (a shorter one has
/// no rate bonnie++ would show), and only with two ranks or more.
pub fn stragglers_in(a: &TestAggregate) -> (f64, Vec<&RankTest>) {
    let mut rates: Vec<f64> = a.per_rank.iter().map(|p| p.rate).collect();
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    let median = match n {
        0 => return (0.0, Vec::new()),
        _ if n % 2 == 1 => rates[n / 2],
        _ => (rates[n / 2 - 1] + rates[n / 2]) / 2.0,
    };
    let long = a
        .per_rank
        .iter()
        .all(|p| p.end_ns.saturating_sub(p.start_ns) >= MIN_TIME_NS);
    if n < 2 || !long {
        return (median, Vec::new());
    }
    let slow = a
        .per_rank
        .iter()
        .filter(|p| p.rate < STRAGGLER_SHARE * median)
        .collect();
    (median, slow)
}

/// One warning per test and rank that [`stragglers_in`] names: it held the aggregate
/// back.
pub fn stragglers(h: &BonnieHosts, labels: &[(u32, String)]) -> Vec<Note> {
    let mut notes = Vec::new();
    for a in &h.tests {
        let (median, slow) = stragglers_in(a);
        for p in slow {
            let label = labels
                .iter()
                .find(|(r, _)| *r == p.rank)
                .map_or("?", |l| l.1.as_str());
            notes.push(Note {
                level: NoteLevel::Warning,
                code: "warn.straggler".into(),
                message: format!(
                    "{}: {label} (rank {}) at {:.1} {}, below {:.0}% of the ranks' median {:.1}: it held the aggregate back",
                    test_label(a.id),
                    p.rank,
                    p.rate,
                    unit(a.id),
                    STRAGGLER_SHARE * 100.0,
                    median
                ),
            });
        }
    }
    notes
}

/// The unit of a test's rate.
pub fn unit(id: BonnieTestId) -> &'static str {
    use BonnieTestId::*;
    match id {
        Putc | PutBlock | Rewrite | Getc | GetBlock => "KiB/s",
        Seeks => "seeks/s",
        _ => "files/s",
    }
}

/// A short name for messages.
pub fn test_label(id: BonnieTestId) -> &'static str {
    use BonnieTestId::*;
    match id {
        Putc => "per-char write",
        PutBlock => "block write",
        Rewrite => "rewrite",
        Getc => "per-char read",
        GetBlock => "block read",
        Seeks => "seeks",
        SeqCreate => "sequential create",
        SeqStat => "sequential stat",
        SeqDel => "sequential delete",
        RanCreate => "random create",
        RanStat => "random stat",
        RanDel => "random delete",
    }
}
