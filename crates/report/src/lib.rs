//! storbench's reporters. Each reads a finished [`storbench_model::result::RunResult`] and
//! writes one output format; none of them measures anything.
//!
//! One module per format family; [`registry`] lists every format (name, what it reads,
//! writer), and the subcommands choose from it. What is written while a run is going (the
//! live status line, fio's log files) is in [`live`], apart from the reporters.

pub mod bonnie_csv;
pub mod bonnie_table;
pub mod card;
pub mod compare;
pub mod diagnose;
pub mod fio;
#[doc(hidden)]
pub mod fuzzing;
pub mod html;
pub mod intervals;
pub mod label;
pub mod live;
pub mod multihost;
pub mod notes;
pub mod numfmt;
pub mod privacy;
pub mod quick;
pub mod registry;
pub mod summary;
pub mod terminal;

/// The live status line under its earlier path.
pub use live::status;
