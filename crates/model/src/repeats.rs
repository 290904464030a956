//! Repeated runs (`--repeat N`, fio's `numruns`): the same workload measured N times and
//! kept as ONE run with N rounds. The run's own figures (its `groups`, disks, notes) are
//! those of the last round, which is what fio's layouts print; every round's groups are
//! kept in [`Repeats`], from which reporters compute each metric's mean and 95% interval
//! ([`crate::confidence`]). Kept apart from the rest of the result model so that results
//! without repeats are unchanged.

use serde::{Deserialize, Serialize};

use crate::result::{GroupResult, Note, NoteLevel, RunResult};

pub use storbench_job::rounds::{MAX_ROUNDS, parse_count};

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
            schema: self.schema,
            mode: self.mode,
            tool_version: self.tool_version.clone(),
            started_unix_ms: self.started_unix_ms,
            finished_unix_ms: self.finished_unix_ms,
            command_line: Vec::new(),
            job_files: Vec::new(),
            global_options: self.global_options.clone(),
            groups: Vec::new(),
            disks: Vec::new(),
            nics: Vec::new(),
            system_cpu: None,
            notes: Vec::new(),
            environment: None,
            bonnie: None,
            verdicts: Vec::new(),
            hosts: None,
            server_stats: None,
            diagnosis: None,
            repeats: None,
            interrupted: self.interrupted,
        }
    }
}
