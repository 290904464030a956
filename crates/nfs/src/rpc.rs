//! ONC RPC v2 (RFC 5531): call headers with AUTH_SYS credentials, reply headers, and the
//! record-marking framing used over TCP.

use crate::error::DecodeError;
use crate::xdr::{Dec, Enc};

pub const PROG_PORTMAP: u32 = 100_000;
pub const PROG_NFS: u32 = 100_003;
pub const PROG_MOUNT: u32 = 100_005;

/// Bit set in a record mark for the last fragment of a record.
pub const LAST_FRAGMENT: u32 = 0x8000_0000;

/// An encoded credential and verifier, built once per client.
#[derive(Clone, Debug)]
pub struct Auth {
    encoded: Vec<u8>,
}

impl Auth {
    /// AUTH_SYS with the given identity; `machine` is truncated to the 255-byte limit.
    pub fn sys(machine: &str, uid: u32, gid: u32) -> Self {
        let name = &machine.as_bytes()[..machine.len().min(255)];
        let mut body = Vec::new();
        Enc::new(&mut body)
            .u32(0) // stamp
            .opaque(name)
            .u32(uid)
            .u32(gid)
            .u32(1) // supplementary groups: just the primary one
            .u32(gid);
        let mut encoded = Vec::new();
        Enc::new(&mut encoded).u32(1).opaque(&body).u32(0).u32(0); // cred, then AUTH_NONE verf
        Auth { encoded }
    }
}

/// Appends a record mark placeholder and a call header; returns the mark's position, to be
/// passed to [`finish_record`] after the arguments are appended.
pub fn start_call(
    buf: &mut Vec<u8>,
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    auth: &Auth,
) -> usize {
    let mark = buf.len();
    Enc::new(buf)
        .u32(0)
        .u32(xid)
        .u32(0) // CALL
        .u32(2) // RPC version
        .u32(prog)
        .u32(vers)
        .u32(proc_);
    buf.extend_from_slice(&auth.encoded);
    mark
}

/// Fills in the record mark at `mark` for a single-fragment record ending at the buffer's end.
pub fn finish_record(buf: &mut [u8], mark: usize) {
    let len = buf.len() - mark - 4;
    set_record_len(buf, mark, len);
}

/// Fills in the record mark at `mark` for a single-fragment record of `len` bytes (some of
/// which may be sent from elsewhere than `buf`).
pub fn set_record_len(buf: &mut [u8], mark: usize, len: usize) {
    buf[mark..mark + 4].copy_from_slice(&(LAST_FRAGMENT | len as u32).to_be_bytes());
}

/// How the server answered a call, before the procedure's own result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyStatus {
    Success,
    /// Accepted but not executed: PROG_UNAVAIL, PROC_UNAVAIL, GARBAGE_ARGS, …
    NotExecuted(String),
    /// Denied: RPC version mismatch or authentication error.
    Denied(String),
}

/// A parsed reply header: the XID, the outcome, and where the result body starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplyHeader {
    pub xid: u32,
    pub status: ReplyStatus,
    pub body: usize,
}

/// Only the XID of a record (to find the call it answers before decoding the rest).
pub fn reply_xid(record: &[u8]) -> Result<u32, DecodeError> {
    Dec::new(record).u32()
}

pub fn parse_reply(record: &[u8]) -> Result<ReplyHeader, DecodeError> {
    let mut d = Dec::new(record);
    let xid = d.u32()?;
    match d.u32()? {
        1 => {}
        v => {
            return Err(DecodeError::BadValue {
                what: "message type",
                value: v,
            });
        }
    }
    let status = match d.u32()? {
        0 => {
            let _flavor = d.u32()?;
            d.opaque(400, "verifier")?;
            accepted(&mut d)?
        }
        1 => ReplyStatus::Denied(denied(&mut d)?),
        v => {
            return Err(DecodeError::BadValue {
                what: "reply status",
                value: v,
            });
        }
    };
    Ok(ReplyHeader {
        xid,
        status,
        body: d.pos(),
    })
}

fn accepted(d: &mut Dec<'_>) -> Result<ReplyStatus, DecodeError> {
    let text = match d.u32()? {
        0 => return Ok(ReplyStatus::Success),
        1 => "program unavailable (PROG_UNAVAIL)".to_string(),
        2 => {
            let (lo, hi) = (d.u32()?, d.u32()?);
            format!("program version not supported, server has {lo}..{hi} (PROG_MISMATCH)")
        }
        3 => "procedure unavailable (PROC_UNAVAIL)".to_string(),
        4 => "server could not decode the arguments (GARBAGE_ARGS)".to_string(),
        5 => "server system error (SYSTEM_ERR)".to_string(),
        v => {
            return Err(DecodeError::BadValue {
                what: "accept status",
                value: v,
            });
        }
    };
    Ok(ReplyStatus::NotExecuted(text))
}

fn denied(d: &mut Dec<'_>) -> Result<String, DecodeError> {
    Ok(match d.u32()? {
        0 => {
            let (lo, hi) = (d.u32()?, d.u32()?);
            format!("RPC version mismatch, server has {lo}..{hi}")
        }
        1 => {
            let why = match d.u32()? {
                1 => "bad credential (AUTH_BADCRED)",
                2 => "credential rejected, begin new session (AUTH_REJECTEDCRED)",
                3 => "bad verifier (AUTH_BADVERF)",
                4 => "verifier expired (AUTH_REJECTEDVERF)",
                5 => {
                    "security too weak (AUTH_TOOWEAK): the server wants another flavour than AUTH_SYS"
                }
                _ => "authentication error",
            };
            why.to_string()
        }
        v => {
            return Err(DecodeError::BadValue {
                what: "reject status",
                value: v,
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_header_layout() {
        let auth = Auth::sys("host", 1000, 100);
        let mut buf = Vec::new();
        let mark = start_call(&mut buf, 0x1234, PROG_NFS, 3, 1, &auth);
        buf.extend_from_slice(&[9, 9, 9, 9]);
        finish_record(&mut buf, mark);
        let len = buf.len() as u32 - 4;
        assert_eq!(&buf[0..4], &(LAST_FRAGMENT | len).to_be_bytes());
        let mut d = Dec::new(&buf[4..]);
        let words: Vec<u32> = (0..7).map(|_| d.u32().unwrap()).collect();
        assert_eq!(words, [0x1234, 0, 2, PROG_NFS, 3, 1, 1]);
        let body = d.opaque(400, "cred").unwrap();
        let mut b = Dec::new(body);
        assert_eq!(b.u32().unwrap(), 0);
        assert_eq!(b.opaque(255, "name").unwrap(), b"host");
        assert_eq!((b.u32().unwrap(), b.u32().unwrap()), (1000, 100));
    }

    #[test]
    fn parses_success_and_rejections() {
        let mut ok = Vec::new();
        Enc::new(&mut ok)
            .u32(7)
            .u32(1)
            .u32(0)
            .u32(0)
            .u32(0)
            .u32(0)
            .u32(42);
        let h = parse_reply(&ok).unwrap();
        assert_eq!(
            (h.xid, h.status.clone(), h.body),
            (7, ReplyStatus::Success, 24)
        );

        let mut mismatch = Vec::new();
        Enc::new(&mut mismatch)
            .u32(7)
            .u32(1)
            .u32(0)
            .u32(0)
            .u32(0)
            .u32(2)
            .u32(2)
            .u32(2);
        let h = parse_reply(&mismatch).unwrap();
        assert!(matches!(h.status, ReplyStatus::NotExecuted(t) if t.contains("2..2")));

        let mut weak = Vec::new();
        Enc::new(&mut weak).u32(7).u32(1).u32(1).u32(1).u32(5);
        let h = parse_reply(&weak).unwrap();
        assert!(matches!(h.status, ReplyStatus::Denied(t) if t.contains("AUTH_TOOWEAK")));
    }

    #[test]
    fn a_call_is_not_a_reply() {
        let mut call = Vec::new();
        Enc::new(&mut call).u32(7).u32(0);
        assert!(parse_reply(&call).is_err());
        assert!(parse_reply(&[1, 2]).is_err());
    }
}
