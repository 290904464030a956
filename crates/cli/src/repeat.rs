//! Runs one measurement `--repeat N` times (fio's `numruns`) and keeps the rounds as one
//! run (`storbench_model::repeats`). A stop (signal) ends the rounds after the one it
//! stopped; a round that fails after others ran ends them too, keeping those that ran,
//! with the error as a note (and exit code 1).

use storbench_model::repeats::combine;
use storbench_model::result::{Note, NoteLevel, RunResult};

/// The note of a round that failed after others ran.
pub const ROUND_FAILED: &str = "warn.round-failed";

/// Measures `rounds` rounds with `one(round)` (1-based) and combines them.
pub fn measure_rounds(
    rounds: u32,
    mut one: impl FnMut(u32) -> anyhow::Result<RunResult>,
) -> anyhow::Result<RunResult> {
    let mut done: Vec<RunResult> = Vec::new();
    let mut failure: Option<(u32, anyhow::Error)> = None;
    for k in 1..=rounds {
        if k > 1 && storbench_core::stop::requested() {
            break;
        }
        if rounds > 1 {
            eprintln!("storbench: round {k} of {rounds}");
        }
        match one(k) {
            Ok(run) => {
                let stopped = run.interrupted;
                done.push(run);
                if stopped {
                    break;
                }
            }
            Err(e) if done.is_empty() => return Err(e),
            Err(e) => {
                failure = Some((k, e));
                break;
            }
        }
    }
    let mut run = combine(done, rounds).ok_or_else(|| anyhow::anyhow!("no round ran"))?;
    if let Some((k, e)) = failure {
        eprintln!("storbench: round {k} of {rounds} failed: {e}");
        run.notes.insert(
            0,
            Note {
                level: NoteLevel::Warning,
                code: ROUND_FAILED.into(),
                message: format!("round {k} of {rounds} failed: {e}"),
            },
        );
    }
    Ok(run)
}
