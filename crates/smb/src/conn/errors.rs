//! The connection's errors, each naming its server and the operation.

use std::io;

use super::Conn;
use crate::error::{DecodeError, NtStatus, SmbError};

impl Conn {
    pub(crate) fn io_err(&self, op: &'static str, source: io::Error) -> SmbError {
        SmbError::Io {
            server: self.cfg.server.clone(),
            op,
            source,
        }
    }

    pub(crate) fn garbage(&self, op: &'static str, detail: DecodeError) -> SmbError {
        SmbError::Garbage {
            server: self.cfg.server.clone(),
            op,
            detail,
        }
    }

    pub(crate) fn protocol(&self, op: &'static str, reason: &str) -> SmbError {
        SmbError::Protocol {
            server: self.cfg.server.clone(),
            op,
            reason: reason.to_string(),
        }
    }

    pub(crate) fn status_err(&self, op: &'static str, what: &str, status: u32) -> SmbError {
        SmbError::Status {
            server: self.cfg.server.clone(),
            op,
            what: what.to_string(),
            status: NtStatus(status),
        }
    }
}
