//! IO engines, one file each, all behind [`storbench_core::Engine`].
//!
//! Adding an engine is one new file and one line in [`ALL`].

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

/// How to build one engine, and what the CLI says about it.
pub struct EngineDef {
    /// fio's name (`psync`, `io_uring`, …).
    pub name: &'static str,
    /// Other fio names this definition serves (`sync`, `pvsync2`, …).
    pub aliases: &'static [&'static str],
    /// One line for `--enghelp` and docs.
    pub about: &'static str,
    /// Builds one instance for one worker thread of `job`.
    pub create: fn(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError>,
}

/// Every engine storbench has.
pub static ALL: &[EngineDef] = &[];

/// The definition serving fio engine name `name`.
pub fn find(name: &str) -> Option<&'static EngineDef> {
    ALL.iter()
        .find(|d| d.name == name || d.aliases.contains(&name))
}

/// Builds the engine a job asks for, with a one-line error for unknown names.
pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let def = find(&job.ioengine).ok_or_else(|| {
        let names: Vec<&str> = ALL.iter().map(|d| d.name).collect();
        EngineError::unsupported(format!(
            "ioengine={} is not available; storbench has: {}",
            job.ioengine,
            names.join(", ")
        ))
    })?;
    (def.create)(job)
}
