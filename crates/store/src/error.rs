//! One error type for the store; every message is one line naming the file or the run.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: not a storbench results database ({reason}); it was left untouched", path.display())]
    Foreign { path: PathBuf, reason: String },
    #[error("{}: the database is damaged ({detail}); it was left untouched", path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{}: written by a newer storbench (database schema {found}, this one knows up to \
         {known}); upgrade storbench to read it",
        path.display()
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    // Each message below shows its cause, so the cause is no `#[source]`: an error chain
    // printed whole (`{:#}`) would repeat it.
    #[error("{}: {op}: {cause}", path.display())]
    Sqlite {
        path: PathBuf,
        op: &'static str,
        cause: rusqlite::Error,
    },
    #[error(
        "{}: the database cannot be written (a read-only file or file system)",
        path.display()
    )]
    ReadOnly { path: PathBuf },
    #[error("cannot create the folder {} for the results database: {cause}", dir.display())]
    CreateDir { dir: PathBuf, cause: std::io::Error },
    #[error("{}: cannot read the file: {cause}", path.display())]
    ReadFile {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("no data folder for the results database: set STORBENCH_DB, XDG_DATA_HOME or HOME")]
    NoDataDir,
    #[error("no run with id {0}")]
    NoSuchRun(i64),
    #[error("no run labelled '{0}'")]
    NoSuchLabel(String),
    #[error("run {id}: the stored result cannot be read: {detail}")]
    BadResult { id: i64, detail: String },
    #[error(
        "run {id} was saved by a newer storbench (result schema {found}, this one reads up to \
         {known}); upgrade storbench to read it"
    )]
    ResultTooNew { id: i64, found: u64, known: u32 },
    #[error("label '{0}' is a plain number, which would read as a run id; choose another label")]
    NumericLabel(String),
    #[error("cannot encode the result as JSON: {0}")]
    Encode(serde_json::Error),
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Encode(e)
    }
}

impl StoreError {
    /// Wraps a SQLite error, turning "corrupt" and "not a database" codes into [`Corrupt`].
    ///
    /// [`Corrupt`]: StoreError::Corrupt
    pub(crate) fn sqlite(path: &std::path::Path, op: &'static str, e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match e.sqlite_error_code() {
            Some(DatabaseCorrupt) | Some(NotADatabase) => StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("{op}: {e}"),
            },
            _ => StoreError::Sqlite {
                path: path.to_path_buf(),
                op,
                cause: e,
            },
        }
    }
}
