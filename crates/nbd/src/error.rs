//! Typed errors. Every message is one line that names the server and what was being done,
//! so the CLI prints it as is.

use std::io;

pub type Result<T> = std::result::Result<T, NbdError>;

/// Errors of the NBD client.
#[derive(Debug, thiserror::Error)]
pub enum NbdError {
    #[error("bad NBD URI {uri:?}: {reason}")]
    Url { uri: String, reason: String },
    #[error("cannot resolve NBD server {host}: {source}")]
    Resolve { host: String, source: io::Error },
    #[error("cannot connect to NBD server {server}: {source}")]
    Connect { server: String, source: io::Error },
    #[error("NBD server {server}: {during}: {source}")]
    Io {
        server: String,
        during: &'static str,
        source: io::Error,
    },
    #[error("NBD server {server} closed the connection during {during}")]
    Closed {
        server: String,
        during: &'static str,
    },
    #[error("NBD server {server}: no answer within {secs} s during {during}")]
    Timeout {
        server: String,
        during: &'static str,
        secs: u64,
    },
    /// The server sent something the protocol does not allow.
    #[error("NBD server {server}: malformed {during}: {what}")]
    Protocol {
        server: String,
        during: &'static str,
        what: String,
    },
    /// The server refused an option (an unknown export, TLS required, ...).
    #[error("NBD server {server}: {what}")]
    Refused { server: String, what: String },
    /// A request this client will not send (beyond the export, over the size limit, a
    /// command the export does not offer).
    #[error("NBD export {server}: {what}")]
    Invalid { server: String, what: String },
}

impl NbdError {
    /// Whether the connection is unusable after this error.
    pub fn is_connection_loss(&self) -> bool {
        matches!(
            self,
            NbdError::Io { .. } | NbdError::Closed { .. } | NbdError::Timeout { .. }
        )
    }

    /// The OS error behind it, if any.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            NbdError::Connect { source, .. } | NbdError::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}
