//! The result model: what a run measured, as plain data, and the arithmetic over it that
//! every reader shares (merging jobs and groups, a repeated run's rounds and their
//! intervals, multi-host aggregates, masking of secrets). The runner (storbench-core)
//! fills it; the reporters (storbench-report) and the store (storbench-store) read it
//! without compiling the runner, and the model depends on no other storbench crate.

pub mod confidence;
pub mod diagnose;
pub mod fio;
/// Results to test readers with (one job, a run of jobs), for this crate's tests and, with
/// the `fixtures` feature, other crates' tests.
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
pub mod histogram;
pub mod hosts;
pub mod iolog;
pub mod live;
pub mod merge;
pub mod profile;
pub mod redact;
pub mod repeats;
pub mod result;
pub mod rng;

pub use histogram::Histogram;
