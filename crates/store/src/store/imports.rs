//! Saving imported runs so that importing the same file twice, or an export back into its
//! own database, adds nothing: a run already held (same start time, same stored result) is
//! skipped and named, as merging a database skips it. Results are compared as JSON values
//! with numbers equal to 12 significant digits: a float read back from JSON may differ from
//! the one written in its last bit, so the stored text of a run and of its export differ.

use rusqlite::{OptionalExtension, TransactionBehavior};
use serde_json::Value;
use storbench_model::result::RunResult;

use super::{RunId, RunMeta, Store, check_label, insert_run};
use crate::error::StoreError;

/// A run to import: the result, what to attach to it, and its id where it came from (a
/// storbench export names it; other tools' files do not).
pub struct ImportRun {
    pub run: RunResult,
    pub meta: RunMeta,
    pub exported_id: Option<RunId>,
}

/// What became of one imported run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imported {
    /// Saved as this new run.
    Added(RunId),
    /// The same run is held already as this one: skipped.
    Held(RunId),
    /// Saved as the new run `id`, although the database's run with the exported id holds a
    /// different run: ids are per database, so that one is another run.
    AddedBesideSameId { id: RunId },
}

impl Store {
    /// Saves `runs` in one transaction (all or none), skipping each run the database holds
    /// already, including one saved earlier in the same call.
    pub fn import_all(&mut self, runs: &[ImportRun]) -> Result<Vec<Imported>, StoreError> {
        for r in runs {
            check_label(r.meta.label.as_deref())?;
        }
        let path = self.path.clone();
        let sq = |op| {
            let path = path.clone();
            move |e| StoreError::sqlite(&path, op, e)
        };
        // Immediate: the check for runs held and the save are one write transaction, so a
        // concurrent import waits for the lock instead of failing to upgrade a read.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sq("begin"))?;
        let mut out = Vec::with_capacity(runs.len());
        for r in runs {
            let json = serde_json::to_string(&r.run)?;
            if let Some(held) = held_copy(&tx, &r.run).map_err(sq("find run"))? {
                out.push(Imported::Held(held));
                continue;
            }
            let same_id = match r.exported_id {
                Some(id) => tx
                    .query_row("SELECT 1 FROM runs WHERE id = ?1", [id], |_| Ok(()))
                    .optional()
                    .map_err(sq("find run"))?
                    .is_some(),
                None => false,
            };
            let id = insert_run(&tx, &r.run, &r.meta, &json).map_err(sq("save run"))?;
            out.push(if same_id {
                Imported::AddedBesideSameId { id }
            } else {
                Imported::Added(id)
            });
        }
        tx.commit().map_err(sq("commit"))?;
        Ok(out)
    }
}

/// The run held with the same start time and the same result as `run`, if any.
fn held_copy(tx: &rusqlite::Transaction<'_>, run: &RunResult) -> rusqlite::Result<Option<RunId>> {
    let incoming = serde_json::to_value(run).unwrap_or(Value::Null);
    let mut stmt = tx.prepare_cached(
        "SELECT id, result_json FROM runs WHERE started_unix_ms = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([run.started_unix_ms as i64], |r| {
        Ok((r.get::<_, RunId>(0)?, r.get::<_, String>(1)?))
    })?;
    for row in rows {
        let (id, json) = row?;
        if serde_json::from_str::<Value>(&json).is_ok_and(|held| same(&held, &incoming)) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Equal JSON values, floats compared to 12 significant digits (integers exactly).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_equal_to_their_last_bits_are_the_same() {
        let a = serde_json::json!({"x": [0.1 + 0.2, 1u64 << 60, "s"]});
        let b = serde_json::json!({"x": [0.3, 1u64 << 60, "s"]});
        assert!(same(&a, &b));
        let c = serde_json::json!({"x": [0.31, 1u64 << 60, "s"]});
        assert!(!same(&a, &c));
        let d = serde_json::json!({"x": [0.3, (1u64 << 60) + 1, "s"]});
        assert!(!same(&a, &d));
        assert!(!same(
            &serde_json::json!({"x": 1}),
            &serde_json::json!({"y": 1})
        ));
    }
}
