//! Typed errors. Every message is one line that names the server and the operation, so the
//! CLI can print it as is.

use std::fmt;
use std::io;

use crate::proto::NfsStat;

/// Why a reply could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated at byte {at} (needed {need} more)")]
    Truncated { at: usize, need: usize },
    #[error("{what} of {len} bytes exceeds the protocol limit")]
    TooLong { what: &'static str, len: usize },
    #[error("invalid {what} value {value}")]
    BadValue { what: &'static str, value: u32 },
    #[error("{0}")]
    Invalid(&'static str),
}

/// MOUNT v3 status codes (RFC 1813, appendix I).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MountStat(pub u32);

impl fmt::Display for MountStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (name, text) = match self.0 {
            1 => ("MNT3ERR_PERM", "not owner"),
            2 => ("MNT3ERR_NOENT", "no such export or directory"),
            5 => ("MNT3ERR_IO", "I/O error"),
            13 => ("MNT3ERR_ACCES", "access denied"),
            20 => ("MNT3ERR_NOTDIR", "not a directory"),
            22 => ("MNT3ERR_INVAL", "invalid argument"),
            63 => ("MNT3ERR_NAMETOOLONG", "path name too long"),
            10004 => ("MNT3ERR_NOTSUPP", "operation not supported"),
            10006 => ("MNT3ERR_SERVERFAULT", "server fault"),
            _ => return write!(f, "unknown MOUNT status {}", self.0),
        };
        write!(f, "{name} ({text})")
    }
}

/// Errors of the NFS client.
#[derive(Debug, thiserror::Error)]
pub enum NfsError {
    #[error("bad NFS URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("cannot resolve NFS server {host}: {source}")]
    Resolve { host: String, source: io::Error },
    #[error("cannot connect to {server} for {op}: {source}")]
    Connect {
        server: String,
        op: &'static str,
        source: io::Error,
    },
    #[error("{server}: {op} failed: {source}")]
    Io {
        server: String,
        op: &'static str,
        source: io::Error,
    },
    #[error("{server}: no reply to {op} within {secs} s")]
    Timeout {
        server: String,
        op: &'static str,
        secs: u64,
    },
    #[error("{server}: {op} rejected: {reason}")]
    Rpc {
        server: String,
        op: &'static str,
        reason: String,
    },
    #[error("{server}: malformed reply to {op}: {detail}")]
    Garbage {
        server: String,
        op: &'static str,
        detail: DecodeError,
    },
    #[error("{server}: reply for unknown XID {xid:#010x} (protocol error)")]
    UnknownXid { server: String, xid: u32 },
    /// `exports` is the server's export list: servers such as ganesha answer a path that is
    /// no export with MNT3ERR_ACCES, which alone reads as a permission problem.
    #[error("{server}: MOUNT {export} failed: {status} (the server's exports: {exports})")]
    Mount {
        server: String,
        export: String,
        status: MountStat,
        exports: String,
    },
    #[error("{server}: no export contains {path} (exports: {exports})")]
    NoExport {
        server: String,
        path: String,
        exports: String,
    },
    #[error("{server}: {op} {path}: {status}")]
    Status {
        server: String,
        op: &'static str,
        path: String,
        status: NfsStat,
    },
    #[error("{server}: connection lost during {op}; no reconnect within {secs} s: {last}")]
    Disconnected {
        server: String,
        op: &'static str,
        secs: u64,
        last: String,
    },
    #[error("{server}: {op} {path}: {status}")]
    Status4 {
        server: String,
        op: &'static str,
        path: String,
        status: crate::v4::Nfs4Stat,
    },
    /// NFS4ERR_DELAY or NFS4ERR_GRACE still answered when the request's retries reached
    /// their limit (`limit` says which, in words).
    #[error(
        "{server}: {op} {path}: {status} after {tries} retries over {secs:.1} s (retried for {limit})"
    )]
    Busy4 {
        server: String,
        op: &'static str,
        path: String,
        status: crate::v4::Nfs4Stat,
        tries: u32,
        secs: f64,
        limit: String,
    },
    /// Calls outstanding with no complete reply past the timeout and then the whole
    /// reconnect window, although the server accepted connections (or never closed one).
    #[error(
        "{server}: server lost: no reply completed {op} for {secs} s ({why}); gave up after timeout={timeout} s and reconnect={window} s"
    )]
    Stalled {
        server: String,
        op: &'static str,
        secs: u64,
        why: String,
        timeout: u64,
        window: u64,
    },
    /// A call after the transport gave up: the message it gave up with.
    #[error("{0}")]
    GaveUp(String),
    #[error("{server}: {op} interrupted by a stop request")]
    Aborted { server: String, op: &'static str },
    #[error("{0}")]
    Unsupported(String),
}

impl NfsError {
    /// The NFS status for status errors (so callers can react to e.g. NFS3ERR_EXIST).
    pub fn nfs_status(&self) -> Option<NfsStat> {
        match self {
            NfsError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The same error naming `path` (for errors built before the path was known).
    pub fn with_path(self, path: String) -> NfsError {
        match self {
            NfsError::Status4 {
                server, op, status, ..
            } => NfsError::Status4 {
                server,
                op,
                path,
                status,
            },
            NfsError::Busy4 {
                server,
                op,
                status,
                tries,
                secs,
                limit,
                ..
            } => NfsError::Busy4 {
                server,
                op,
                path,
                status,
                tries,
                secs,
                limit,
            },
            other => other,
        }
    }

    /// An errno that fits the error, for callers that report errno values.
    pub fn errno(&self) -> Option<i32> {
        match self {
            NfsError::Status { status, .. } => Some(status.errno()),
            NfsError::Status4 { status, .. } | NfsError::Busy4 { status, .. } => {
                Some(status.errno())
            }
            NfsError::Connect { source, .. } | NfsError::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

pub type Result<T, E = NfsError> = std::result::Result<T, E>;
