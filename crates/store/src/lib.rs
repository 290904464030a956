//! The results store: every run is kept in one SQLite file (rusqlite's bundled SQLite, no
//! system library) so runs can be listed, shown again, compared and reported later.
//!
//! The whole [`RunResult`](storbench_model::result::RunResult) is stored as JSON, the source of
//! truth; a few indexed columns (time, label, tags, target, mode, headline figures) serve
//! listing and filtering. Schema changes go through numbered migrations ([`schema`]). A file
//! that is not ours, or is damaged, is reported and never written to.
//!
//! [`import`] turns fio JSON/json+ output and bonnie++ CSV lines into the same result model.

mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod headline;
pub mod import;
pub mod schema;
mod store;

pub use error::StoreError;
pub use headline::Headline;
pub use store::{ImportRun, Imported, RunFilter, RunId, RunMeta, RunSummary, Store, StoredRun};

/// Environment variable naming the database file; the CLI binds `--db` to it too.
pub const DB_ENV: &str = "STORBENCH_DB";
