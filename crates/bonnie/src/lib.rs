//! storbench's bonnie++ suite: bonnie++ 2.00a's tests with its flags, defaults, timing
//! rules and result figures, run through any engine with metadata operations (local files
//! through psync, NFS exports through the user-space client).
//!
//! Where bonnie++ is defective storbench differs on purpose, and every result says so in
//! its notes (see `docs/bonnie.md`): incompressible block-write data by default, `-D`
//! applied to every phase that can use O_DIRECT, `-b` syncing every write as documented,
//! `-c` running real concurrent copies.
//!
//! ```text
//! Flags --Config::from_flags--> Config --run_once--> RunResult (mode Bonnie)
//! ```

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;
use storbench_model::result::{BonnieTest, BonnieTestId};

pub mod config;
pub mod error;
mod file_tests;
pub mod flags;
mod io;
mod io_tests;
pub mod marker;
mod names;
mod notes;
mod phase;
pub mod progress;
mod ranks;
mod seeks;
mod space;
mod suite;
pub mod target;
mod timing;
mod waiting;
mod worker;

pub use config::{Config, Host};
pub use error::{BonnieError, FlagError};
pub use flags::Flags;
pub use suite::{MIN_TIME_NS, run_once, run_once_with};
pub use target::Target;

/// The version bonnie results carry (the CSV's `bonnie_version` field).
pub const VERSION: &str = concat!("storbench-", env!("CARGO_PKG_VERSION"));

/// Builds one engine for one thread; called for every concurrent copy and every seeker
/// (the engines' table in [`run_once`], a test's own engines in [`run_once_with`]).
pub type Factory = dyn Fn(&JobSpec) -> Result<Box<dyn Engine>, EngineError> + Sync;

/// Progress of a run, for the live display.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Started(BonnieTestId),
    Finished(BonnieTest),
}

/// What bonnie++ prints when a test starts (without `-q`).
pub fn start_message(id: BonnieTestId) -> &'static str {
    match id {
        BonnieTestId::Putc => "Writing a byte at a time...",
        BonnieTestId::PutBlock => "Writing intelligently...",
        BonnieTestId::Rewrite => "Rewriting...",
        BonnieTestId::Getc => "Reading a byte at a time...",
        BonnieTestId::GetBlock => "Reading intelligently...",
        BonnieTestId::Seeks => "Seeking...",
        BonnieTestId::SeqCreate => "Create files in sequential order...",
        BonnieTestId::SeqStat => "Stat files in sequential order...",
        BonnieTestId::SeqDel => "Delete files in sequential order...",
        BonnieTestId::RanCreate => "Create files in random order...",
        BonnieTestId::RanStat => "Stat files in random order...",
        BonnieTestId::RanDel => "Delete files in random order...",
    }
}
