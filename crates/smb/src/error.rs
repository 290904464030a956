//! Typed errors. Every message is one line that names the server and the operation, so the
//! CLI can print it as is; none of them carries a password or a key.

use std::fmt;
use std::io;

/// Why a reply could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("truncated at byte {at} (needed {need} more)")]
    Truncated { at: usize, need: usize },
    #[error("invalid {what} value {value}")]
    BadValue { what: &'static str, value: u64 },
    #[error("{0}")]
    Invalid(&'static str),
}

/// An NTSTATUS code from a reply header, shown by name where we know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NtStatus(pub u32);

impl NtStatus {
    pub const SUCCESS: NtStatus = NtStatus(0);
    pub const PENDING: NtStatus = NtStatus(0x0000_0103);
    pub const MORE_PROCESSING_REQUIRED: NtStatus = NtStatus(0xC000_0016);
    pub const NO_MORE_FILES: NtStatus = NtStatus(0x8000_0006);
    pub const BUFFER_OVERFLOW: NtStatus = NtStatus(0x8000_0005);
    pub const END_OF_FILE: NtStatus = NtStatus(0xC000_0011);
    pub const LOGON_FAILURE: NtStatus = NtStatus(0xC000_006D);
    pub const ACCESS_DENIED: NtStatus = NtStatus(0xC000_0022);
    pub const BAD_NETWORK_NAME: NtStatus = NtStatus(0xC000_00CC);
    pub const OBJECT_NAME_NOT_FOUND: NtStatus = NtStatus(0xC000_0034);
    pub const OBJECT_PATH_NOT_FOUND: NtStatus = NtStatus(0xC000_003A);
    pub const OBJECT_NAME_COLLISION: NtStatus = NtStatus(0xC000_0035);
    pub const NETWORK_SESSION_EXPIRED: NtStatus = NtStatus(0xC000_035C);
    pub const USER_SESSION_DELETED: NtStatus = NtStatus(0xC000_0203);

    pub fn is_success(self) -> bool {
        self.0 == 0
    }

    fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "STATUS_SUCCESS",
            0x0000_0103 => "STATUS_PENDING",
            0x8000_0005 => "STATUS_BUFFER_OVERFLOW",
            0x8000_0006 => "STATUS_NO_MORE_FILES",
            0xC000_0001 => "STATUS_UNSUCCESSFUL",
            0xC000_0002 => "STATUS_NOT_IMPLEMENTED",
            0xC000_000D => "STATUS_INVALID_PARAMETER",
            0xC000_0010 => "STATUS_INVALID_DEVICE_REQUEST",
            0xC000_0011 => "STATUS_END_OF_FILE",
            0xC000_0016 => "STATUS_MORE_PROCESSING_REQUIRED",
            0xC000_0022 => "STATUS_ACCESS_DENIED",
            0xC000_0033 => "STATUS_OBJECT_NAME_INVALID",
            0xC000_0034 => "STATUS_OBJECT_NAME_NOT_FOUND",
            0xC000_0035 => "STATUS_OBJECT_NAME_COLLISION",
            0xC000_003A => "STATUS_OBJECT_PATH_NOT_FOUND",
            0xC000_0043 => "STATUS_SHARING_VIOLATION",
            0xC000_0056 => "STATUS_DELETE_PENDING",
            0xC000_006D => "STATUS_LOGON_FAILURE",
            0xC000_0071 => "STATUS_PASSWORD_EXPIRED",
            0xC000_0072 => "STATUS_ACCOUNT_DISABLED",
            0xC000_007F => "STATUS_DISK_FULL",
            0xC000_00BA => "STATUS_FILE_IS_A_DIRECTORY",
            0xC000_00BB => "STATUS_NOT_SUPPORTED",
            0xC000_00CC => "STATUS_BAD_NETWORK_NAME",
            0xC000_0101 => "STATUS_DIRECTORY_NOT_EMPTY",
            0xC000_0103 => "STATUS_NOT_A_DIRECTORY",
            0xC000_0203 => "STATUS_USER_SESSION_DELETED",
            0xC000_022A => "STATUS_DUPLICATE_OBJECTID",
            0xC000_035C => "STATUS_NETWORK_SESSION_EXPIRED",
            0xC000_0388 => "STATUS_DOWNGRADE_DETECTED",
            0xC000_A000 => "STATUS_INVALID_SIGNATURE",
            0xC000_A100 => "STATUS_NOT_SUPPORTED (encryption)",
            _ => return None,
        })
    }

    /// The errno a local file system would give for this status (EIO when none fits).
    pub fn errno(self) -> i32 {
        match self.0 {
            0xC000_0034 | 0xC000_003A | 0xC000_0056 => libc::ENOENT,
            0xC000_0035 => libc::EEXIST,
            0xC000_0022 => libc::EACCES,
            0xC000_00A2 => libc::EROFS,
            0xC000_007F => libc::ENOSPC,
            0xC000_0101 => libc::ENOTEMPTY,
            0xC000_00BA => libc::EISDIR,
            0xC000_0103 => libc::ENOTDIR,
            0xC000_0033 => libc::EINVAL,
            0xC000_0043 => libc::EBUSY,
            0xC000_00BB | 0xC000_0002 => libc::EOPNOTSUPP,
            _ => libc::EIO,
        }
    }

    /// What a user should read into a status, for the common refusals.
    fn hint(self) -> Option<&'static str> {
        Some(match self.0 {
            0xC000_006D => "bad user name or password",
            0xC000_0022 => "access denied",
            0xC000_00A2 => "the share is read-only",
            0xC000_00CC => "share not found",
            0xC000_0034 | 0xC000_003A => "no such file or directory",
            0xC000_0035 => "file exists",
            0xC000_007F => "disk full",
            _ => return None,
        })
    }
}

impl fmt::Display for NtStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name(), self.hint()) {
            (Some(n), Some(h)) => write!(f, "{n} ({h})"),
            (Some(n), None) => f.write_str(n),
            _ => write!(f, "NTSTATUS 0x{:08x}", self.0),
        }
    }
}

/// Errors of the SMB client.
#[derive(Debug, thiserror::Error)]
pub enum SmbError {
    #[error("bad SMB URL {url:?}: {reason}")]
    Url { url: String, reason: String },
    #[error("cannot resolve SMB server {host}: {source}")]
    Resolve { host: String, source: io::Error },
    #[error("cannot connect to SMB server {server}: {source}")]
    Connect { server: String, source: io::Error },
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
    #[error("{server}: gave up waiting for the reply to {op}: stop requested")]
    Aborted { server: String, op: &'static str },
    #[error("{server}: connection closed by the server during {op}")]
    Closed { server: String, op: &'static str },
    #[error("{server}: {op} {what}: {status}")]
    Status {
        server: String,
        op: &'static str,
        what: String,
        status: NtStatus,
    },
    #[error("{server}: malformed reply to {op}: {detail}")]
    Garbage {
        server: String,
        op: &'static str,
        detail: DecodeError,
    },
    #[error("{server}: {op}: {reason}")]
    Protocol {
        server: String,
        op: &'static str,
        reason: String,
    },
    #[error(
        "{server}: the connection was lost earlier in this run and not made again within \
         reconnect={secs} s; not trying again"
    )]
    Lost { server: String, secs: u64 },
    /// A [`Session`](crate::session::Session) gave up reconnecting: the cause, and why no
    /// new connection took its place. Every later call of that session fails with it.
    #[error("{0}")]
    GaveUp(String),
}

impl SmbError {
    /// The NTSTATUS of a refused request, if that is what this is.
    pub fn status(&self) -> Option<NtStatus> {
        match self {
            SmbError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True when the connection is gone (closed, reset, timed out).
    pub fn is_disconnect(&self) -> bool {
        matches!(
            self,
            SmbError::Closed { .. } | SmbError::Timeout { .. } | SmbError::Io { .. }
        )
    }
}

pub type Result<T> = std::result::Result<T, SmbError>;
