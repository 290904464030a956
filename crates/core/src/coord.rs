//! The points where one run agrees with the other processes of a multi-host run
//! (docs/multihost.md): before anything is written, and at each stonewall group's start.
//!
//! Core knows no MPI: the CLI installs a [`Coordinator`] once when it runs as one rank of
//! many; without one (every single-host run) each agreement is a no-op that always succeeds.
//! An agreement is a collective "all ready?": every rank says whether it is ready, and each
//! learns whether all were, so a rank whose check failed ends the run everywhere at once
//! instead of leaving the others waiting; an implementation bounds its wait by a timeout,
//! so a rank that died cannot hold the others forever.

use std::sync::OnceLock;

use crate::error::{EngineError, ErrorKind};

/// Where in a run an agreement is made, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// After each rank's safety checks, before any lay-out writes.
    BeforeLayout,
    /// Every worker of a stonewall group is set up (files laid out and open): the group
    /// starts on every rank together.
    GroupStart,
    /// A point of another front end, named by it (bonnie's: the start of each test).
    Named(&'static str),
}

impl Point {
    pub fn name(self) -> &'static str {
        match self {
            Point::BeforeLayout => "the checks before lay-out",
            Point::GroupStart => "the start of a stonewall group",
            Point::Named(name) => name,
        }
    }
}

/// One collective agreement across the processes of a multi-host run.
pub trait Coordinator: Send + Sync {
    /// Tells the others whether this process is `ready` at `at`, waits (bounded) for theirs
    /// and returns `Err` with one line when any was not ready or did not answer in time.
    fn agree(&self, at: Point, ready: bool) -> Result<(), String>;
    /// This process's number among them, from 0 (fio's `$clientuid` in file names).
    fn rank(&self) -> u32;
}

static INSTALLED: OnceLock<Box<dyn Coordinator>> = OnceLock::new();

/// Installs the process's coordinator; only the first call has an effect (one per process).
pub fn install(c: Box<dyn Coordinator>) {
    let _ = INSTALLED.set(c);
}

/// True when this process is one of several coordinated ones.
pub fn active() -> bool {
    INSTALLED.get().is_some()
}

/// This process's rank; 0 without a coordinator.
pub fn rank() -> u32 {
    INSTALLED.get().map_or(0, |c| c.rank())
}

/// The file name format a job's generated names follow: fio's default gains the rank
/// (`$clientuid`) in a multi-host run when the job keeps fio's `unique_filename`, so ranks
/// sharing a directory (one NFS export) never open each other's files; without it, or
/// with a format the job gave, the format is kept as given.
pub fn file_format(format: &str, unique: bool) -> std::borrow::Cow<'_, str> {
    format_for(format, unique && active())
}

/// [`file_format`] for a run whose names carry the rank or not.
fn format_for(format: &str, with_rank: bool) -> std::borrow::Cow<'_, str> {
    if with_rank && format == DEFAULT_FORMAT {
        return MULTI_HOST_FORMAT.into();
    }
    format.into()
}

/// fio's default `filename_format`.
const DEFAULT_FORMAT: &str = "$jobname.$jobnum.$filenum";
/// The default in a multi-host run.
const MULTI_HOST_FORMAT: &str = "$jobname.$clientuid.$jobnum.$filenum";

/// Agrees at `at`: a no-op without a coordinator (a single-host run).
pub fn agree(at: Point, ready: bool) -> Result<(), EngineError> {
    match INSTALLED.get() {
        None => Ok(()),
        Some(c) => c
            .agree(at, ready)
            .map_err(|m| EngineError::new(ErrorKind::Os, m)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_coordinator_every_agreement_succeeds() {
        assert!(agree(Point::BeforeLayout, true).is_ok());
        assert!(agree(Point::GroupStart, false).is_ok());
        assert!(!active());
        assert_eq!(rank(), 0);
        assert_eq!(file_format(DEFAULT_FORMAT, true), DEFAULT_FORMAT);
    }

    /// fio's `unique_filename`: a multi-host run's default names carry the rank unless the
    /// job turns it off; a format the job gave is never changed.
    #[test]
    fn the_rank_joins_default_names_only_when_names_are_unique() {
        assert_eq!(format_for(DEFAULT_FORMAT, true), MULTI_HOST_FORMAT);
        assert_eq!(format_for(DEFAULT_FORMAT, false), DEFAULT_FORMAT);
        assert_eq!(format_for("$jobname.x", true), "$jobname.x");
        assert_eq!(file_format(DEFAULT_FORMAT, false), DEFAULT_FORMAT);
    }
}
