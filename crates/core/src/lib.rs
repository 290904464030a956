//! storbench's measurement core: the engine interface, the runner and worker loop, latency
//! histograms, CPU/disk/NIC accounting, and the result model every consumer reads.
//!
//! This crate depends on no protocol, UI, template or SQLite crate.

pub mod engine;
pub mod error;
pub mod histogram;
pub mod merge;
pub mod result;
pub mod stop;

pub use engine::{
    Attr, Caps, Completion, Engine, EngineInfo, EngineSetup, FileId, FileSpec, IoKind, IoUnit,
    MetaOps, OpenOptions, Queued,
};
pub use error::{EngineError, ErrorKind};
pub use histogram::Histogram;
