//! `filedelete`: fio's metadata engine where each IO unlinks one file (see [`crate::meta`]).

use storbench_core::{Engine, EngineError};
use storbench_job::JobSpec;

use crate::meta::{self, MetaOp};

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "filedelete";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    meta::create(job, MetaOp::Delete)
}
