//! Raw, ordered input as the readers produce it, before any option is interpreted: the
//! ripgrep "low args" layer. Each option keeps where it came from for error messages.

use crate::error::Origin;

/// One `key[=value]` as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOpt {
    pub key: String,
    /// `None` for a bare key (`time_based`, `--group_reporting`).
    pub value: Option<String>,
    pub origin: Origin,
    /// From a job file: `${ENV}` is expanded (fio does not expand on the command line,
    /// the shell does).
    pub from_file: bool,
}

/// A `[section]` of a job file, or the options following one `--name=` on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowSection {
    pub name: String,
    pub origin: Origin,
    pub opts: Vec<RawOpt>,
}

impl LowSection {
    /// fio treats every section whose name starts with `global` as the global section.
    pub fn is_global(&self) -> bool {
        self.name.starts_with("global")
    }
}

/// A job file: its sections in order, and every file read for it (itself and its
/// includes) as (path, contents).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowFile {
    pub path: String,
    pub sections: Vec<LowSection>,
    pub sources: Vec<(String, String)>,
}
