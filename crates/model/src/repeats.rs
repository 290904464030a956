//! Repeated runs (`--repeat N`, fio's `numruns`): the same workload measured N times and
//! kept as ONE run with N rounds. The run's own figures (its `groups`, disks, notes) are
//! those of the last round, which is what fio's layouts print; every round's groups are
//! kept in [`Repeats`], from which reporters compute each metric's mean and 95% interval
//! ([`crate::confidence`]). Kept apart from the rest of the result model so that results
//! without repeats are unchanged.

use serde::{Deserialize, Serialize};

use crate::result::{GroupResult, Note, NoteLevel, RunResult};

/// The most rounds one run may have: enough for any interval (the t quantile at 99 degrees
/// of freedom is within 1% of its limit), few enough that a typo (`--repeat 1000`) is
/// caught before it takes a day.
pub const MAX_ROUNDS: u32 = 100;

/// Reads a round count: a whole number from 1 to [`MAX_ROUNDS`]. The error is a phrase for
/// the caller to put after the option's name and value (`--repeat 0: at least 1 …`).
pub fn parse_count(s: &str) -> Result<u32, String> {
    let n: i128 = s
        .trim()
        .parse()
        .map_err(|_| "not a whole number of rounds".to_string())?;
    if n < 1 {
        return Err("at least 1 round is needed".into());
    }
    if n > i128::from(MAX_ROUNDS) {
        return Err(format!(
            "at most {MAX_ROUNDS} rounds (repeat in several runs for more)"
        ));
    }
    Ok(n as u32)
}

/// Every round of a repeated run, in the order they ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Repeats {
    /// The rounds asked for (more than were run when a round failed or a signal stopped it).
    pub requested: u32,
    pub rounds: Vec<Round>,
}

/// One round: the groups it measured, as a run without repeats holds them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    /// Stopped by a signal or an error: its figures are left out of the intervals.
    pub interrupted: bool,
    pub groups: Vec<GroupResult>,
}

impl Repeats {
    /// The rounds that ran to their end, which the intervals are computed over.
    pub fn complete(&self) -> impl Iterator<Item = &Round> {
        self.rounds.iter().filter(|r| !r.interrupted)
    }
}

/// One run of `rounds` (in the order they ran; at least one): the last round's result with
/// the first round's start, every round kept, and notes of earlier rounds that the last one
/// lacks added with their round number. A single round is returned as it is.
pub fn combine(mut rounds: Vec<RunResult>, requested: u32) -> Option<RunResult> {
    if rounds.len() <= 1 && requested <= 1 {
        return rounds.pop();
    }
    let mut run = rounds.last()?.clone();
    run.started_unix_ms = rounds[0].started_unix_ms;
    run.interrupted = rounds.iter().any(|r| r.interrupted);
    let last = rounds.len();
    for (i, r) in rounds.iter().enumerate().take(last - 1) {
        for n in &r.notes {
            if !run.notes.iter().any(|m| m.code == n.code) {
                run.notes.push(Note {
                    message: format!("round {} of {last}: {}", i + 1, n.message),
                    ..n.clone()
                });
            }
        }
    }
    if (rounds.len() as u32) < requested {
        run.notes.insert(
            0,
            Note {
                level: NoteLevel::Warning,
                code: "warn.rounds".into(),
                message: format!(
                    "{} of the {requested} rounds asked for ran: the intervals cover those",
                    rounds.len()
                ),
            },
        );
    }
    run.repeats = Some(Repeats {
        requested,
        rounds: rounds
            .into_iter()
            .map(|r| Round {
                started_unix_ms: r.started_unix_ms,
                finished_unix_ms: r.finished_unix_ms,
                interrupted: r.interrupted,
                groups: r.groups,
            })
            .collect(),
    });
    Some(run)
}

/// Each complete round as a run of its own (the run's settings and environment with the
/// round's groups), for reporters that read figures from runs.
pub fn round_runs(run: &RunResult) -> Vec<RunResult> {
    let Some(rep) = &run.repeats else {
        return Vec::new();
    };
    rep.complete()
        .map(|r| RunResult {
            started_unix_ms: r.started_unix_ms,
            finished_unix_ms: r.finished_unix_ms,
            groups: r.groups.clone(),
            notes: Vec::new(),
            repeats: None,
            interrupted: false,
            ..run.clone_without_groups()
        })
        .collect()
}

impl RunResult {
    /// The run without its groups and rounds (cheap to clone for per-round views).
    fn clone_without_groups(&self) -> RunResult {
        RunResult {
            global_options: self.global_options.clone(),
            interrupted: self.interrupted,
            ..RunResult::new(
                self.mode,
                self.tool_version.clone(),
                self.started_unix_ms,
                self.finished_unix_ms,
            )
        }
    }
}

#[cfg(test)]
mod round_count_tests {
    use super::*;

    #[test]
    fn counts_are_checked() {
        assert_eq!(parse_count("3"), Ok(3));
        assert_eq!(parse_count("100"), Ok(100));
        for (bad, why) in [
            ("0", "at least 1"),
            ("-2", "at least 1"),
            ("101", "at most 100"),
            (
                "1000000000000000000000000000000000000000",
                "not a whole number",
            ),
            ("x", "not a whole number"),
            ("2.5", "not a whole number"),
            ("", "not a whole number"),
        ] {
            let e = parse_count(bad).unwrap_err();
            assert!(e.starts_with(why), "{bad}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
