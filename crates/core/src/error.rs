//! Errors an engine reports: always one line that names the operation and the target.

use std::fmt;

/// What went wrong, so callers can react (e.g. suggest another engine) without parsing text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ErrorKind {
    /// A local syscall failed; see `errno`.
    Os,
    /// The engine or option is not available here (io_uring disabled, O_DIRECT refused, …).
    Unsupported,
    /// A network peer misbehaved or refused (NFS status, SCSI sense, login reject, timeout).
    Protocol,
    /// The connection to a network target was lost and could not be re-established.
    Disconnected,
    /// Refused to protect data (signature found, file not ours).
    Refused,
}

/// One-line error from an engine or the runner.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EngineError {
    pub kind: ErrorKind,
    pub errno: Option<i32>,
    pub message: String,
}

impl EngineError {
    /// A failed syscall: `"<op> <target>: <strerror>"`.
    pub fn os(op: &str, target: &str, err: std::io::Error) -> Self {
        let errno = err.raw_os_error();
        let text = match errno {
            Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
            None => err.to_string(),
        };
        EngineError {
            kind: ErrorKind::Os,
            errno,
            message: format!("{op} {target}: {text}"),
        }
    }

    /// A failed syscall given as a negative or positive errno value.
    pub fn errno(op: &str, target: &str, errno: i32) -> Self {
        Self::os(op, target, std::io::Error::from_raw_os_error(errno.abs()))
    }

    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        EngineError {
            kind,
            errno: None,
            message: message.into(),
        }
    }

    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }

    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Protocol, message)
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}
