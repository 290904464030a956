//! storbench's measurement core: the engine interface, the worker loop, latency
//! histograms, CPU/disk/NIC accounting; it fills the result model (storbench-model) every
//! consumer reads. The runner that drives the workers over the engines is storbench-run.
//!
//! This crate depends on no protocol, UI, template or SQLite crate.

pub mod analysis;
pub mod ask;
pub mod buffers;
pub mod clock;
pub mod collect;
pub mod compress;
pub mod coord;
pub mod cpu;
pub mod disk;
pub mod engine;
pub mod env;
pub mod error;
#[cfg(test)]
use storbench_model::fixtures;
pub mod gate;
pub mod holes;
pub mod host;
pub mod layout;
pub mod metapath;
pub mod names;
pub mod nic;
pub mod numa;
pub mod observer;
pub mod offsets;
pub mod plan;
pub mod progress;
pub mod rate;
pub mod safety;
pub mod sampler;
pub mod server;
pub mod space;
pub mod stats;
pub mod steady;
pub mod stop;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod verify;
pub mod worker;
pub mod zeros;

pub use engine::{
    Access, Attr, Caps, Completion, DirRef, Engine, EngineInfo, EngineSetup, EntryKind, FileId,
    FileSpec, IoKind, IoUnit, Listed, MetaOps, MetaPath, OpenOptions, Queued, Reserved,
    checked_name, each_listed_by_name, refuse_create_in_open, stat_named, unlink_named,
};
pub use error::{EngineError, ErrorKind};
pub use names::{DirCursor, NameList};
pub use storbench_job::relpath::{RelPath, RelPathBuf};
