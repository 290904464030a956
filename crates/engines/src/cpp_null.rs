//! `cpp_null`: fio's example of an engine written in C++ (its `engines/null.c` built with
//! g++ as an external engine, `examples/cpp_null.fio`), which does what `null` does: the
//! same engine under that name.

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "cpp_null";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(crate::null::named(job, NAME))
}
