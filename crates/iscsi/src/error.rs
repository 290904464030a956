//! One error type for the initiator. Every message is one line naming the portal (or target)
//! and the operation, so a user can tell which server refused what.

use crate::sense::Sense;

/// Everything that can go wrong talking to an iSCSI target.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The `iscsi://` URL could not be understood.
    #[error("invalid iSCSI URL {url:?}: {reason}")]
    Url { url: String, reason: String },

    /// A socket operation failed (connect, read, write).
    #[error("iSCSI {portal}: {op}: {source}")]
    Io {
        portal: String,
        op: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// A wait ran past its deadline.
    #[error("iSCSI {portal}: {op}: no answer within {secs:.0} s")]
    Timeout {
        portal: String,
        op: &'static str,
        secs: f64,
    },

    /// The target closed the connection.
    #[error("iSCSI {portal}: connection closed by the target during {op}")]
    Closed { portal: String, op: &'static str },

    /// The target refused the login with a status class and detail (RFC 7143 11.13.5).
    #[error(
        "iSCSI {portal}: login to {target} rejected: {text} (status class {class:#04x}, detail {detail:#04x})"
    )]
    LoginRejected {
        portal: String,
        target: String,
        class: u8,
        detail: u8,
        text: &'static str,
    },

    /// Authentication could not be completed (missing credentials, bad target response).
    #[error("iSCSI {portal}: authentication with {target} failed: {reason}")]
    Auth {
        portal: String,
        target: String,
        reason: String,
    },

    /// The target sent something this initiator cannot accept.
    #[error("iSCSI {portal}: {op}: protocol error: {reason}")]
    Protocol {
        portal: String,
        op: &'static str,
        reason: String,
    },

    /// A SCSI command ended with CHECK CONDITION or another non-GOOD status.
    #[error("iSCSI {portal} LUN {lun}: {command}{}: {status}", lba_text(*.lba))]
    Scsi {
        portal: String,
        lun: u64,
        command: &'static str,
        lba: Option<u64>,
        status: ScsiFailure,
    },

    /// The caller asked for something the LUN or the session cannot do.
    #[error("iSCSI {portal}: {reason}")]
    Invalid { portal: String, reason: String },
}

impl Error {
    /// True when the connection is gone and a new login may fix it.
    pub fn is_connection_loss(&self) -> bool {
        matches!(
            self,
            Error::Io { .. } | Error::Timeout { .. } | Error::Closed { .. }
        )
    }
}

/// A SCSI command's unhappy end, kept structured so callers can react to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScsiFailure {
    /// CHECK CONDITION with decoded sense data.
    Check(Sense),
    /// Another status byte (BUSY, RESERVATION CONFLICT, TASK SET FULL after retries, …).
    Status(u8),
    /// The iSCSI layer itself reported a failure (SCSI Response `response` byte != 0).
    Response(u8),
    /// The target rejected the PDU (Reject reason code).
    Rejected(u8),
}

impl std::fmt::Display for ScsiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScsiFailure::Check(sense) => write!(f, "CHECK CONDITION: {sense}"),
            ScsiFailure::Status(s) => write!(f, "SCSI status {} ({s:#04x})", status_name(*s)),
            ScsiFailure::Response(r) => write!(f, "iSCSI response {r:#04x} (target failure)"),
            ScsiFailure::Rejected(r) => write!(f, "PDU rejected by the target (reason {r:#04x})"),
        }
    }
}

fn lba_text(lba: Option<u64>) -> String {
    lba.map(|l| format!(" at LBA {l}")).unwrap_or_default()
}

/// SAM status names for the bytes a target may return.
pub fn status_name(status: u8) -> &'static str {
    match status {
        0x00 => "GOOD",
        0x02 => "CHECK CONDITION",
        0x04 => "CONDITION MET",
        0x08 => "BUSY",
        0x18 => "RESERVATION CONFLICT",
        0x28 => "TASK SET FULL",
        0x30 => "ACA ACTIVE",
        0x40 => "TASK ABORTED",
        _ => "unknown",
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
