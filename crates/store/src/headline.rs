//! The few figures `history` lists for each run, computed once when the run is saved.

use storbench_model::result::{BonnieTestId, GroupResult, RunMode, RunResult};

/// Peak figures of a run, in bytes/s and operations/s.
///
/// fio: the best reporting-group aggregate per direction (a group's bytes over its longest
/// job runtime). quick: one named test per kind, the card's first row of each: the first
/// sequential test's read and write as MB/s (`SEQ1M Q8T1` in the default profile) and the
/// first random test's as IOPS, so a run stopped before the random tests lists no IOPS
/// rather than the sequential tests' few. bonnie: block write and block read as bandwidth,
/// random seeks/s as read IOPS. A repeated run (`--repeat`, `numruns`) lists the mean over
/// its complete rounds, the figure the card, the table and `compare` show
/// (docs/statistics.md).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Headline {
    pub read_bw: Option<f64>,
    pub write_bw: Option<f64>,
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
    /// The quick test the MB/s figures summarise (`SEQ1M Q8T1`); `None` for fio and bonnie.
    pub bw_test: Option<String>,
    /// The quick test the IOPS figures summarise (`RND4K Q32T1`).
    pub iops_test: Option<String>,
}

impl Headline {
    pub fn of(run: &RunResult) -> Headline {
        let rounds = storbench_model::repeats::round_runs(run);
        if rounds.len() >= 2 && run.mode != RunMode::Bonnie {
            return Self::mean(&rounds.iter().map(Self::of_one).collect::<Vec<_>>());
        }
        Self::of_one(run)
    }

    /// Each figure's mean over the rounds that have it; the tests are the last round's.
    fn mean(rounds: &[Headline]) -> Headline {
        let avg = |f: fn(&Headline) -> Option<f64>| {
            let v: Vec<f64> = rounds.iter().filter_map(f).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        Headline {
            read_bw: avg(|h| h.read_bw),
            write_bw: avg(|h| h.write_bw),
            read_iops: avg(|h| h.read_iops),
            write_iops: avg(|h| h.write_iops),
            bw_test: rounds.last().and_then(|h| h.bw_test.clone()),
            iops_test: rounds.last().and_then(|h| h.iops_test.clone()),
        }
    }

    fn of_one(run: &RunResult) -> Headline {
        match (run.mode, &run.bonnie) {
            (RunMode::Bonnie, Some(b)) => {
                let rate = |id| b.tests.iter().find(|t| t.id == id).and_then(|t| t.rate);
                Headline {
                    read_bw: rate(BonnieTestId::GetBlock).map(|k| k * 1024.0),
                    write_bw: rate(BonnieTestId::PutBlock).map(|k| k * 1024.0),
                    read_iops: rate(BonnieTestId::Seeks),
                    write_iops: None,
                    ..Headline::default()
                }
            }
            (RunMode::Quick, _) => {
                let seq = first_test(run, false);
                let random = first_test(run, true);
                let seq_figures = seq.map(|t| Self::of_groups(run, |g| quick_test(g) == Some(t)));
                let random_figures =
                    random.map(|t| Self::of_groups(run, |g| quick_test(g) == Some(t)));
                Headline {
                    read_bw: seq_figures.as_ref().and_then(|h| h.read_bw),
                    write_bw: seq_figures.as_ref().and_then(|h| h.write_bw),
                    read_iops: random_figures.as_ref().and_then(|h| h.read_iops),
                    write_iops: random_figures.as_ref().and_then(|h| h.write_iops),
                    bw_test: seq.map(str::to_string),
                    iops_test: random.map(str::to_string),
                }
            }
            _ => Self::of_groups(run, |_| true),
        }
    }

    /// The best of the groups `pick` takes.
    fn of_groups(run: &RunResult, pick: impl Fn(&GroupResult) -> bool) -> Headline {
        let mut best = [(None::<f64>, None::<f64>); 2];
        for group in run.groups.iter().filter(|g| pick(g)) {
            for (dir, slot) in best.iter_mut().enumerate() {
                let (bytes, ios, runtime) = group.jobs.iter().fold((0u64, 0u64, 0u64), |a, j| {
                    let d = &j.dirs[dir];
                    (
                        a.0.saturating_add(d.io_bytes),
                        a.1.saturating_add(d.total_ios),
                        a.2.max(d.runtime_ms),
                    )
                });
                if ios == 0 || runtime == 0 {
                    continue;
                }
                let secs = runtime as f64 / 1000.0;
                let (bw, iops) = (bytes as f64 / secs, ios as f64 / secs);
                slot.0 = Some(slot.0.map_or(bw, |b| b.max(bw)));
                slot.1 = Some(slot.1.map_or(iops, |b| b.max(iops)));
            }
        }
        Headline {
            read_bw: best[0].0,
            write_bw: best[1].0,
            read_iops: best[0].1,
            write_iops: best[1].1,
            ..Headline::default()
        }
    }
}

/// A quick group's test, its job's name without the direction: `SEQ1M Q8T1`.
fn quick_test(group: &GroupResult) -> Option<&str> {
    let name = &group.jobs.first()?.name;
    let test = [" read", " write", " mix"]
        .iter()
        .find_map(|d| name.strip_suffix(d));
    Some(test.unwrap_or(name))
}

/// The first sequential (or random) quick test that moved data, in the run's order.
fn first_test(run: &RunResult, random: bool) -> Option<&str> {
    run.groups
        .iter()
        .filter(|g| is_random(g) == random)
        .filter(|g| g.jobs.iter().flat_map(|j| &j.dirs).any(|d| d.total_ios > 0))
        .find_map(quick_test)
}

/// Whether a group's jobs do random IO (`randread`, `randwrite`, `randrw`, ...).
fn is_random(group: &GroupResult) -> bool {
    group.jobs.iter().any(|j| j.header.rw.starts_with("rand"))
}

/// What a run measured, for listing and filtering: the environment's targets, else the jobs'
/// files, else bonnie's name; at most three, joined with ", ".
pub fn target_text(run: &RunResult) -> String {
    let env_targets = run
        .environment
        .iter()
        .flat_map(|e| &e.targets)
        .map(|t| t.target.as_str());
    let job_targets = run
        .groups
        .iter()
        .flat_map(|g| &g.jobs)
        .flat_map(|j| &j.targets);
    let mut names = distinct(env_targets);
    if names.is_empty() {
        names = distinct(job_targets.map(String::as_str));
    }
    if names.is_empty()
        && let Some(b) = &run.bonnie
    {
        names = distinct(std::iter::once(b.name.as_str()));
    }
    let more = names.len().saturating_sub(3);
    let mut text = names[..names.len().min(3)].join(", ");
    if more > 0 {
        text.push_str(&format!(" (+{more})"));
    }
    text
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in items {
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}
