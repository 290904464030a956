//! Opening the database safely, saving runs, and reading them back.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use storbench_model::result::{RESULT_SCHEMA, RunResult};

use crate::error::StoreError;
use crate::headline::{Headline, target_text};
use crate::schema::{self, APPLICATION_ID, LATEST};

mod imports;

pub use imports::{ImportRun, Imported};

/// A run's id in the database; ids are never reused.
pub type RunId = i64;

/// How long a save waits for another process holding the write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// What the user attached to a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunMeta {
    pub label: Option<String>,
    pub tags: Vec<String>,
    /// The file a run was imported from; None for runs storbench measured.
    pub source: Option<String>,
}

/// A run as stored: the result plus what was attached to it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRun {
    pub id: RunId,
    pub meta: RunMeta,
    pub saved_unix_ms: u64,
    pub run: RunResult,
}

/// One line of `history`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub id: RunId,
    pub started_unix_ms: u64,
    pub mode: String,
    pub meta: RunMeta,
    pub target: String,
    pub tool_version: String,
    pub hostname: Option<String>,
    pub headline: Headline,
    /// Stopped by a signal: its figures cover only the part that ran.
    pub interrupted: bool,
}

/// Filters for [`Store::list`]; every field that is set must match.
#[derive(Clone, Debug, Default)]
pub struct RunFilter {
    pub label: Option<String>,
    /// Runs carrying all of these tags.
    pub tags: Vec<String>,
    /// Substring of the target text.
    pub target: Option<String>,
    /// `fio`, `quick` or `bonnie`.
    pub mode: Option<String>,
    pub since_unix_ms: Option<u64>,
    pub until_unix_ms: Option<u64>,
    /// Keep only the newest `limit` runs.
    pub limit: Option<usize>,
}

/// An open results database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// `$STORBENCH_DB`, else `$XDG_DATA_HOME/storbench/results.db`, else
    /// `~/.local/share/storbench/results.db`.
    pub fn default_path() -> Result<PathBuf, StoreError> {
        let env = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(p) = env(crate::DB_ENV) {
            return Ok(p);
        }
        let data = match env("XDG_DATA_HOME").filter(|p| p.is_absolute()) {
            Some(d) => d,
            None => env("HOME")
                .ok_or(StoreError::NoDataDir)?
                .join(".local/share"),
        };
        Ok(data.join("storbench").join("results.db"))
    }

    /// Opens (creating the file and its folders if needed) and migrates the database. A file
    /// that is not a storbench database, is damaged, or is newer than this build is refused
    /// before anything is written to it.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        check_header(&path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|cause| StoreError::CreateDir {
                dir: dir.to_path_buf(),
                cause,
            })?;
        }
        let sq = |op| {
            let path = path.clone();
            move |e| StoreError::sqlite(&path, op, e)
        };
        let mut conn = Connection::open(&path).map_err(sq("open"))?;
        // SQLite falls back to reading a file it cannot write; the first save would fail.
        if conn
            .is_readonly(rusqlite::MAIN_DB)
            .map_err(sq("check write access"))?
        {
            return Err(StoreError::ReadOnly { path });
        }
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(sq("set busy timeout"))?;
        check_identity(&conn, &path)?;
        set_wal(&conn).map_err(sq("switch to WAL journal"))?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(sq("enable foreign keys"))?;
        schema::migrate_to(&mut conn, LATEST).map_err(sq("migrate schema"))?;
        Ok(Store { conn, path })
    }

    /// Opens an existing database for a command that only reads (history, show, compare,
    /// report). Nothing is created or migrated, so it works on a database in a read-only
    /// directory or file system, and it leaves no `-wal`/`-shm` files behind:
    /// - where the directory and file are writable, SQLite's usual read-write connection is
    ///   used with `query_only` set: the last connection to close removes the WAL files;
    /// - otherwise a read-only connection (`mode=ro`), which works when the WAL files exist
    ///   already, else `immutable=1` (no locking, no WAL files; nobody can write there).
    ///
    /// A database from an older build (schema below the latest) is migrated through
    /// [`Store::open`] when it is writable, and refused with the reason when it is not.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        check_header(&path)?;
        let sq = |op| {
            let path = path.clone();
            move |e| StoreError::sqlite(&path, op, e)
        };
        let writable = can_write(&path);
        let conn = if writable {
            let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_WRITE)
                .map_err(sq("open"))?;
            conn.busy_timeout(BUSY_TIMEOUT)
                .map_err(sq("set busy timeout"))?;
            conn
        } else {
            open_unwritable(&path).map_err(sq("open read-only"))?
        };
        check_identity(&conn, &path)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sq("read schema version"))?;
        if version < LATEST {
            drop(conn);
            if writable {
                return Store::open(path);
            }
            return Err(StoreError::Foreign {
                path: path.clone(),
                reason: format!(
                    "its schema (version {version}) is older than this build's ({LATEST}) and                      it is read-only here, so it cannot be upgraded"
                ),
            });
        }
        conn.pragma_update(None, "query_only", true)
            .map_err(sq("set query_only"))?;
        Ok(Store { conn, path })
    }

    /// Opens another storbench database to copy its runs into this one (`import other.db`)
    /// without changing a byte of it or creating a file beside it: a read-only connection
    /// ([`open_untouched`]), and a schema older than this build's is upgraded on a copy in
    /// memory (SQLite's backup API), never in the file. The copy holds the whole database
    /// in RAM, which a results database (a few KiB per run) affords.
    pub fn open_to_import(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        check_header(&path)?;
        let sq = |op| {
            let path = path.clone();
            move |e| StoreError::sqlite(&path, op, e)
        };
        let conn = open_untouched(&path).map_err(sq("open read-only"))?;
        check_identity(&conn, &path)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(sq("read schema version"))?;
        let mut conn = if version < LATEST {
            let mut copy = Connection::open_in_memory().map_err(sq("open a copy in memory"))?;
            rusqlite::backup::Backup::new(&conn, &mut copy)
                .and_then(|b| b.run_to_completion(1024, Duration::ZERO, None))
                .map_err(sq("copy into memory"))?;
            copy
        } else {
            conn
        };
        schema::migrate_to(&mut conn, LATEST).map_err(sq("upgrade the copy in memory"))?;
        conn.pragma_update(None, "query_only", true)
            .map_err(sq("set query_only"))?;
        Ok(Store { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| StoreError::sqlite(&self.path, op, e)
    }

    /// Saves one run; returns its new id.
    pub fn save(&mut self, run: &RunResult, meta: &RunMeta) -> Result<RunId, StoreError> {
        let ids = self.save_all(&[(run.clone(), meta.clone())])?;
        Ok(ids[0])
    }

    /// Saves runs in one transaction: all are saved or none.
    pub fn save_all(&mut self, runs: &[(RunResult, RunMeta)]) -> Result<Vec<RunId>, StoreError> {
        for (_, meta) in runs {
            check_label(meta.label.as_deref())?;
        }
        let encoded = runs
            .iter()
            .map(|(run, _)| serde_json::to_string(run))
            .collect::<Result<Vec<_>, _>>()?;
        let path = self.path.clone();
        let sq = |op| {
            let path = path.clone();
            move |e| StoreError::sqlite(&path, op, e)
        };
        let tx = self.conn.transaction().map_err(sq("begin"))?;
        let mut ids = Vec::with_capacity(runs.len());
        for ((run, meta), json) in runs.iter().zip(&encoded) {
            ids.push(insert_run(&tx, run, meta, json).map_err(sq("save run"))?);
        }
        tx.commit().map_err(sq("commit"))?;
        Ok(ids)
    }

    /// Copies every run of `other` (another results database) into this one, with its
    /// label and tags, in one transaction, one run in memory at a time. A run already here
    /// (same start time and same stored result) is skipped, so merging twice adds nothing.
    /// Returns (runs added, runs skipped).
    pub fn merge_from(&mut self, other: &Store) -> Result<(usize, usize), StoreError> {
        let ids: Vec<RunId> = other
            .conn
            .prepare("SELECT id FROM runs ORDER BY started_unix_ms, id")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get(0))
                    .and_then(|rows| rows.collect::<Result<Vec<RunId>, _>>())
            })
            .map_err(other.err("list runs"))?;
        let path = self.path.clone();
        let sq = |op| {
            let path = path.clone();
            move |e| StoreError::sqlite(&path, op, e)
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sq("begin"))?;
        let (mut added, mut skipped) = (0, 0);
        for id in ids {
            let stored = other.load(id)?;
            check_label(stored.meta.label.as_deref())?;
            let json = serde_json::to_string(&stored.run)?;
            let present: Option<i64> = tx
                .query_row(
                    "SELECT id FROM runs WHERE started_unix_ms = ?1 AND result_json = ?2",
                    params![stored.run.started_unix_ms as i64, json],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sq("find run"))?;
            if present.is_some() {
                skipped += 1;
                continue;
            }
            let mut meta = stored.meta;
            meta.source = Some(match meta.source {
                Some(src) => src,
                None => format!("{} run {id}", other.path.display()),
            });
            insert_run(&tx, &stored.run, &meta, &json).map_err(sq("save run"))?;
            added += 1;
        }
        tx.commit().map_err(sq("commit"))?;
        Ok((added, skipped))
    }

    /// Loads a stored run with everything attached to it.
    pub fn load(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT label, source, saved_unix_ms, result_json FROM runs WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get::<_, Option<String>>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                },
            )
            .optional()
            .map_err(self.err("load run"))?
            .ok_or(StoreError::NoSuchRun(id))?;
        let (label, source, saved, json) = row;
        Ok(StoredRun {
            id,
            meta: RunMeta {
                label,
                tags: self.tags(id)?,
                source,
            },
            saved_unix_ms: saved.max(0) as u64,
            run: decode_result(id, &json)?,
        })
    }

    fn tags(&self, id: RunId) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT tag FROM tags WHERE run_id = ?1 ORDER BY tag")
            .map_err(self.err("read tags"))?;
        let tags = stmt
            .query_map([id], |r| r.get(0))
            .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
            .map_err(self.err("read tags"))?;
        Ok(tags)
    }

    /// Runs matching `filter`, oldest first (the newest `limit` when a limit is set).
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let (sql, args) = list_query(filter);
        let mut stmt = self.conn.prepare(&sql).map_err(self.err("list runs"))?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), summary_from_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(self.err("list runs"))?;
        let mut out = Vec::with_capacity(rows.len());
        for mut s in rows {
            s.meta.tags = self.tags(s.id)?;
            out.push(s);
        }
        out.reverse();
        Ok(out)
    }

    /// Deletes a run and its tags.
    pub fn delete(&mut self, id: RunId) -> Result<(), StoreError> {
        let n = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [id])
            .map_err(self.err("delete run"))?;
        if n == 0 {
            return Err(StoreError::NoSuchRun(id));
        }
        Ok(())
    }

    /// A run id from a token: digits are an id, anything else a label, which selects the
    /// newest run carrying it. Also returns how many runs carry the label (1 for an id).
    pub fn resolve(&self, token: &str) -> Result<(RunId, usize), StoreError> {
        if let Ok(id) = token.trim_start_matches('#').parse::<RunId>() {
            let exists: Option<i64> = self
                .conn
                .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                .optional()
                .map_err(self.err("find run"))?;
            return exists.map(|id| (id, 1)).ok_or(StoreError::NoSuchRun(id));
        }
        let (newest, count): (Option<i64>, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT id FROM runs WHERE label = ?1
                         ORDER BY started_unix_ms DESC, id DESC LIMIT 1),
                        (SELECT count(*) FROM runs WHERE label = ?1)",
                [token],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(self.err("find label"))?;
        newest
            .map(|id| (id, count as usize))
            .ok_or_else(|| StoreError::NoSuchLabel(token.to_string()))
    }
}

/// Labels that read as numbers would be taken for run ids by `compare` and `report`.
fn check_label(label: Option<&str>) -> Result<(), StoreError> {
    match label {
        Some(l) if l.trim_start_matches('#').parse::<i64>().is_ok() => {
            Err(StoreError::NumericLabel(l.to_string()))
        }
        _ => Ok(()),
    }
}

/// Refuses a non-empty file that does not start with SQLite's magic, before SQLite opens it.
fn check_header(path: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(cause) => {
            return Err(StoreError::ReadFile {
                path: path.into(),
                cause,
            });
        }
    };
    let mut head = [0u8; 16];
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(cause) => {
                return Err(StoreError::ReadFile {
                    path: path.into(),
                    cause,
                });
            }
        }
    }
    if got == 0 || &head[..got] == b"SQLite format 3\0" {
        return Ok(());
    }
    Err(StoreError::Foreign {
        path: path.into(),
        reason: "the file is not a SQLite database".into(),
    })
}

/// Accepts our own database or an empty one; anything else belongs to someone else. The
/// reads share one transaction so a concurrent creator is seen either before or after.
fn check_identity(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let sq = |op| move |e| StoreError::sqlite(path, op, e);
    let tx = conn.unchecked_transaction().map_err(sq("begin"))?;
    let app_id: i64 = tx
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(sq("read application id"))?;
    let version: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(sq("read schema version"))?;
    let objects: i64 = tx
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(sq("read schema"))?;
    tx.commit().map_err(sq("end read"))?;
    let empty = app_id == 0 && version == 0 && objects == 0;
    if app_id != APPLICATION_ID && !empty {
        return Err(StoreError::Foreign {
            path: path.into(),
            reason: format!(
                "a SQLite database of another program: application id {app_id:#x}, \
                 {objects} schema objects"
            ),
        });
    }
    if version > LATEST {
        return Err(StoreError::TooNew {
            path: path.into(),
            found: version,
            known: LATEST,
        });
    }
    Ok(())
}

/// Whether this process may write the database file and create files beside it (its WAL
/// and shared-memory files): `access(2)`, which also answers for read-only mounts and for
/// root.
fn can_write(path: &Path) -> bool {
    use rustix::fs::{Access, AtFlags, CWD, accessat};
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d,
        None => Path::new("."),
    };
    let ok = |p: &Path| accessat(CWD, p, Access::WRITE_OK, AtFlags::EACCESS).is_ok();
    ok(dir) && ok(path)
}

/// A connection to a database this process cannot write. `mode=ro` reads a WAL database
/// whose `-wal` and `-shm` exist (a writer elsewhere may be using them); without them it
/// cannot start, and `immutable=1` reads the file as it is, creating nothing.
fn open_unwritable(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let uri = |query: &str| format!("file:{}?{query}", uri_path(path));
    if let Ok(conn) = Connection::open_with_flags(uri("mode=ro"), flags) {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        if conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .is_ok()
        {
            return Ok(conn);
        }
    }
    Connection::open_with_flags(uri("mode=ro&immutable=1"), flags)
}

/// A read-only connection that creates nothing beside the file: a WAL database that has no
/// `-wal` file has nothing outside the file to read, and `immutable=1` reads it without the
/// `-wal` and `-shm` files a read-only connection in a writable directory would create;
/// one with a `-wal` (a writer may be using it) is read through it with `mode=ro`.
fn open_untouched(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let uri = |query: &str| format!("file:{}?{query}", uri_path(path));
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if Path::new(&wal).exists() {
        let conn = Connection::open_with_flags(uri("mode=ro"), flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        return Ok(conn);
    }
    Connection::open_with_flags(uri("mode=ro&immutable=1"), flags)
}

/// A path as the path part of a SQLite `file:` URI: `?`, `#` and `%` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'?' | b'#' | b'%' => out.push_str(&format!("%{b:02X}")),
            _ if b.is_ascii() => out.push(*b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// WAL lets readers and one writer work at once; switching needs a moment of exclusivity,
/// so retry while a concurrent opener holds the file.
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    if mode.eq_ignore_ascii_case("wal") {
        return Ok(());
    }
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e),
        }
    }
}

fn now_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn insert_run(
    tx: &rusqlite::Transaction<'_>,
    run: &RunResult,
    meta: &RunMeta,
    json: &str,
) -> rusqlite::Result<RunId> {
    let h = Headline::of(run);
    let mode = serde_json::to_value(run.mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    tx.execute(
        "INSERT INTO runs (started_unix_ms, finished_unix_ms, saved_unix_ms, mode, label,
             target, tool_version, hostname, read_bw, write_bw, read_iops, write_iops,
             result_schema, result_json, source, interrupted, bw_test, iops_test)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            run.started_unix_ms as i64,
            run.finished_unix_ms as i64,
            now_unix_ms(),
            mode,
            meta.label,
            target_text(run),
            run.tool_version,
            run.environment.as_ref().map(|e| e.hostname.clone()),
            h.read_bw,
            h.write_bw,
            h.read_iops,
            h.write_iops,
            run.schema,
            json,
            meta.source,
            run.interrupted,
            h.bw_test,
            h.iops_test,
        ],
    )?;
    let id = tx.last_insert_rowid();
    let mut tag_stmt =
        tx.prepare_cached("INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?1, ?2)")?;
    for tag in &meta.tags {
        tag_stmt.execute(params![id, tag])?;
    }
    Ok(id)
}

/// Reads a stored result, refusing ones written by a newer result schema.
fn decode_result(id: RunId, json: &str) -> Result<RunResult, StoreError> {
    let bad = |e: serde_json::Error| StoreError::BadResult {
        id,
        detail: e.to_string(),
    };
    let value: serde_json::Value = serde_json::from_str(json).map_err(bad)?;
    let schema = value.get("schema").and_then(|s| s.as_u64()).unwrap_or(0);
    if schema > RESULT_SCHEMA as u64 {
        return Err(StoreError::ResultTooNew {
            id,
            found: schema,
            known: RESULT_SCHEMA,
        });
    }
    // Result schema 1 is the only one so far; older shapes would be upgraded here.
    let mut run: RunResult = serde_json::from_value(value).map_err(bad)?;
    // Runs saved before secrets were masked on the way in are masked on the way out.
    storbench_model::redact::run(&mut run)
        .map_err(|detail| StoreError::BadResult { id, detail })?;
    Ok(run)
}

fn list_query(f: &RunFilter) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut sql = String::from(
        "SELECT id, started_unix_ms, mode, label, source, target, tool_version, hostname,
                read_bw, write_bw, read_iops, write_iops, interrupted, bw_test, iops_test
         FROM runs WHERE 1=1",
    );
    let mut args: Vec<Value> = Vec::new();
    let mut add = |cond: &str, v: Value| {
        args.push(v);
        sql.push_str(&cond.replace('?', &format!("?{}", args.len())));
    };
    if let Some(l) = &f.label {
        add(" AND label = ?", Value::Text(l.clone()));
    }
    for t in &f.tags {
        add(
            " AND id IN (SELECT run_id FROM tags WHERE tag = ?)",
            Value::Text(t.clone()),
        );
    }
    if let Some(t) = &f.target {
        add(" AND instr(target, ?) > 0", Value::Text(t.clone()));
    }
    if let Some(m) = &f.mode {
        add(" AND mode = ?", Value::Text(m.clone()));
    }
    if let Some(s) = f.since_unix_ms {
        add(" AND started_unix_ms >= ?", Value::Integer(s as i64));
    }
    if let Some(u) = f.until_unix_ms {
        add(" AND started_unix_ms <= ?", Value::Integer(u as i64));
    }
    sql.push_str(" ORDER BY started_unix_ms DESC, id DESC");
    if let Some(n) = f.limit {
        sql.push_str(&format!(" LIMIT {n}"));
    }
    (sql, args)
}

fn summary_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        id: r.get(0)?,
        started_unix_ms: r.get::<_, i64>(1)?.max(0) as u64,
        mode: r.get(2)?,
        meta: RunMeta {
            label: r.get(3)?,
            tags: Vec::new(),
            source: r.get(4)?,
        },
        // Runs saved before secrets were masked on the way in are masked on the way out.
        target: storbench_model::redact::text(&r.get::<_, String>(5)?).into_owned(),
        tool_version: r.get(6)?,
        hostname: r.get(7)?,
        headline: Headline {
            read_bw: r.get(8)?,
            write_bw: r.get(9)?,
            read_iops: r.get(10)?,
            write_iops: r.get(11)?,
            bw_test: r.get(13)?,
            iops_test: r.get(14)?,
        },
        interrupted: r.get(12)?,
    })
}
