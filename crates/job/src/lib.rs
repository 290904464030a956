//! The workload description, pure code: fio's option table, the fio argv and job-file
//! readers, validation into [`JobSpec`]s, and the presets.
//!
//! Data flows one way: [`argv`]/[`ini`] produce raw ordered sections ([`low`]), [`resolve`]
//! applies them through the one option table ([`options`]) with fio's precedence, and
//! [`build`] turns each job into a validated [`JobSpec`]. The CLI calls
//! [`parse_fio_args`]; `--cmdhelp` and docs/fio-compat.md come from the same table.

mod argv;
mod build;
pub mod catalogue;
pub mod cmdprio;
mod docs;
pub mod engine_options;
mod error;
pub mod errors;
mod expr;
mod flags;
#[doc(hidden)]
pub mod fuzzing;
mod help;
mod host;
mod ini;
mod invocation;
mod low;
pub mod options;
pub mod presets;
pub mod relpath;
mod resolve;
pub mod spec;
pub mod target;
pub mod units;

pub use docs::fio_compat_markdown;
pub use engine_options::{CpuMode, EngineOptions, NetOptions, NetProtocol};
pub use error::{JobError, Origin};
pub use flags::{Arity, GLOBAL_FLAGS, GlobalFlag};
pub use help::{cmdhelp, enghelp};
pub use host::HostFacts;
pub use ini::{
    IncludeLoader, SourceReader, parse_job_text, read_job_file, read_job_file_with, read_source,
};
pub use invocation::{
    Eta, FIO_RELEASE, FioInvocation, OutputFormat, fio_style_version, parse_fio_args,
    parse_fio_args_with,
};
pub use low::{LowFile, LowSection, RawOpt};
pub use spec::*;
