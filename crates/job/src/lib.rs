//! The workload description, pure code: fio's option table, the fio argv and job-file
//! readers, validation into [`JobSpec`]s, and the presets.

pub mod spec;

pub use spec::*;
