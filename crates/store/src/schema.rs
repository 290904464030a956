//! Numbered schema migrations. `PRAGMA user_version` holds the number of migrations applied;
//! `PRAGMA application_id` marks the file as ours so a foreign database is never touched.
//!
//! Add a migration by appending to [`MIGRATIONS`]; never edit one that has shipped. Tests build
//! a database at every earlier version and open it with the current code.

use rusqlite::{Connection, TransactionBehavior};

/// "STBR": marks a SQLite file as a storbench results database.
pub const APPLICATION_ID: i64 = 0x5354_4252;

/// Each entry moves the schema from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs with their listing columns, and tags.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_unix_ms INTEGER NOT NULL,
        finished_unix_ms INTEGER NOT NULL,
        saved_unix_ms INTEGER NOT NULL,
        mode TEXT NOT NULL,
        label TEXT,
        target TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        hostname TEXT,
        read_bw REAL,
        write_bw REAL,
        read_iops REAL,
        write_iops REAL,
        result_schema INTEGER NOT NULL,
        result_json TEXT NOT NULL
    );
    CREATE INDEX runs_started ON runs(started_unix_ms);
    CREATE INDEX runs_label ON runs(label);
    CREATE TABLE tags (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        PRIMARY KEY (run_id, tag)
    );
    CREATE INDEX tags_tag ON tags(tag);",
    // 2: where a run came from (NULL: measured by storbench; else the imported file), and
    // an index for filtering by mode.
    "ALTER TABLE runs ADD COLUMN source TEXT;
    CREATE INDEX runs_mode ON runs(mode);",
    // 3: runs stopped by a signal, so history can mark them without loading each result
    // (filled from the stored result for runs saved before).
    "ALTER TABLE runs ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
    UPDATE runs SET interrupted = 1 WHERE json_extract(result_json, '$.interrupted') = 1;",
    // 4: the quick tests the headline figures summarise; quick runs saved before have their
    // figures computed again by the one rule ([`refill_quick_headlines`]).
    "ALTER TABLE runs ADD COLUMN bw_test TEXT;
    ALTER TABLE runs ADD COLUMN iops_test TEXT;",
];

/// The migration after which quick runs' headlines are computed again.
const QUICK_TESTS_NAMED: usize = 4;

/// The schema version this build writes.
pub const LATEST: i64 = MIGRATIONS.len() as i64;

/// Brings the database up to `target` (normally [`LATEST`]) in one immediate transaction, so
/// two processes opening a new file at once apply each migration exactly once.
pub fn migrate_to(conn: &mut Connection, target: i64) -> rusqlite::Result<()> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if current >= target {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have migrated while we waited for the lock.
    let current: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(current.max(0) as usize)
    {
        tx.execute_batch(sql)?;
        if i + 1 == QUICK_TESTS_NAMED {
            refill_quick_headlines(&tx)?;
        }
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.commit()
}

/// Computes every stored quick run's headline again, with the tests it names. A result that
/// no longer reads keeps its figures.
fn refill_quick_headlines(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let runs: Vec<(i64, String)> = tx
        .prepare("SELECT id, result_json FROM runs WHERE mode = 'quick'")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = tx.prepare(
        "UPDATE runs SET read_bw = ?2, write_bw = ?3, read_iops = ?4, write_iops = ?5,
             bw_test = ?6, iops_test = ?7 WHERE id = ?1",
    )?;
    for (id, json) in runs {
        let Ok(run) = serde_json::from_str(&json) else {
            continue;
        };
        let h = crate::headline::Headline::of(&run);
        update.execute(rusqlite::params![
            id,
            h.read_bw,
            h.write_bw,
            h.read_iops,
            h.write_iops,
            h.bw_test,
            h.iops_test
        ])?;
    }
    Ok(())
}
