//! `netsplice`: fio's net engine moving its data through a pipe with splice(2). What a
//! peer and the results see is the net engine's, so storbench runs the net engine's code
//! under this name.

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "netsplice";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(super::net::Net::new(job, NAME)))
}
