//! The suite's errors: each one line that names the flag, the path or the operation.

use storbench_core::EngineError;

/// A flag value bonnie++ would reject, or flags that contradict each other.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// One flag's value is malformed or out of range.
    #[error("{flag} {value}: {reason}")]
    BadValue {
        flag: &'static str,
        value: String,
        reason: String,
    },
    /// The flags are each valid but do not work together (or bonnie++'s checks refuse them).
    #[error("{0}")]
    Conflict(String),
    /// A bonnie++ flag storbench deliberately does not implement.
    #[error("{flag}: {reason}")]
    Unsupported { flag: &'static str, reason: String },
}

impl FlagError {
    pub(crate) fn bad(flag: &'static str, value: &str, reason: impl Into<String>) -> Self {
        FlagError::BadValue {
            flag,
            value: value.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Why a suite run stopped.
#[derive(Debug, thiserror::Error)]
pub enum BonnieError {
    #[error(transparent)]
    Flag(#[from] FlagError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A stop signal arrived; everything the run created has been removed.
    #[error("interrupted during {test}; removed the files the run had created")]
    Interrupted { test: &'static str },
    /// Refused to protect data that is not ours (a `Bonnie.<pid>` left by someone else).
    #[error("{0}")]
    Refused(String),
    /// The file system did not behave as the test requires (short read, missing files).
    #[error("{0}")]
    Check(String),
    /// Cleanup after a failure did not complete; the leftovers are named.
    #[error("{error}; cleanup also failed: {cleanup}")]
    Cleanup {
        error: Box<BonnieError>,
        cleanup: String,
    },
}

pub type Result<T, E = BonnieError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    /// Error printers that walk `source()` (anyhow's `{:#}`) must not repeat the message.
    #[test]
    fn engine_errors_print_once() {
        let e = BonnieError::from(EngineError::unsupported("link x: no hard links"));
        assert_eq!(e.to_string(), "link x: no hard links");
        assert!(e.source().is_none());
        let f = BonnieError::from(FlagError::Conflict("nothing to test".into()));
        assert!(f.source().is_none());
    }
}
