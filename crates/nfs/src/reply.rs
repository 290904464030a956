//! Decoding one reply record against the call it answers. READ data is copied into the
//! caller's buffer here (the record is borrowed from the connection's buffer); everything
//! else is returned as an [`Outcome`] for the transport to act on.

use crate::error::{DecodeError, NfsError, Result};
use crate::proto::{self, NfsStat, Verf};
use crate::rpc::{self, ReplyStatus};
use crate::transport::{MAX_SLOTS, Req, Slot, SlotState, WriteAck};

const JUKEBOX: NfsStat = NfsStat(10008);

/// The parts of the transport decoding needs (split out so the record can stay borrowed
/// from the connection's buffer).
pub(crate) struct Ctx<'a> {
    pub(crate) slots: &'a mut Vec<Slot>,
    pub(crate) paths: &'a [String],
    pub(crate) server: &'a str,
    pub(crate) conn: usize,
    /// Bytes written on the connection so far.
    pub(crate) sent_total: u64,
    pub(crate) inflight: &'a mut u32,
}

/// What a well-formed successful (or retry-later) reply asks the transport to do.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The data is in the caller's buffer.
    Read(u32),
    Write(WriteAck),
    Commit(Verf),
    /// A synchronous call's body is in the slot.
    Answered,
    /// NFS3ERR_JUKEBOX: send again later.
    Jukebox,
}

/// Finds the call a record answers and decodes the reply; returns the slot and outcome.
pub(crate) fn handle(cx: &mut Ctx<'_>, record: &[u8]) -> Result<(u32, Outcome)> {
    let garbage = |op: &'static str, detail| NfsError::Garbage {
        server: cx.server.to_string(),
        op,
        detail,
    };
    let xid = rpc::reply_xid(record).map_err(|d| garbage("RPC", d))?;
    let idx = (xid as usize) & (MAX_SLOTS - 1);
    let known = cx
        .slots
        .get(idx)
        .is_some_and(|s| s.state == SlotState::Sent && s.xid == xid && s.conn == cx.conn);
    if !known {
        return Err(NfsError::UnknownXid {
            server: cx.server.to_string(),
            xid,
        });
    }
    let slot = &mut cx.slots[idx];
    let name = slot.req.name();
    if slot.sent_end > cx.sent_total {
        // The caller may reuse the buffer of a completed call: a reply that comes before
        // the call was even written out cannot be trusted.
        return Err(garbage(
            name,
            DecodeError::Invalid("reply arrived before its call was sent"),
        ));
    }
    let header = rpc::parse_reply(record).map_err(|d| garbage(name, d))?;
    if let ReplyStatus::NotExecuted(reason) | ReplyStatus::Denied(reason) = header.status {
        return Err(NfsError::Rpc {
            server: cx.server.to_string(),
            op: name,
            reason,
        });
    }
    *cx.inflight = cx.inflight.saturating_sub(1);
    let body = &record[header.body..];
    let path = cx.paths.get(slot.file as usize);
    let status = |status: NfsStat| NfsError::Status {
        server: cx.server.to_string(),
        op: name,
        path: path.cloned().unwrap_or_default(),
        status,
    };
    let outcome = match slot.req {
        Req::Call { .. } => {
            slot.reply.clear();
            let placed = slot.sink.and_then(|s| {
                let (at, n) = (s.locate)(body)?;
                let fits = n <= s.cap as usize && at.checked_add(n)? <= body.len();
                fits.then_some((s.dst, at, n))
            });
            slot.placed = placed.map(|(_, _, n)| n as u32);
            match placed {
                Some((dst, at, n)) => {
                    // SAFETY: the caller of `start_call_into` keeps `dst` valid for `cap`
                    // >= `n` bytes; `at + n` is within `body` (checked above).
                    unsafe { std::ptr::copy_nonoverlapping(body[at..].as_ptr(), dst, n) };
                    slot.reply.extend_from_slice(&body[..at]);
                }
                None => slot.reply.extend_from_slice(body),
            }
            Outcome::Answered
        }
        Req::Read { len, buf, .. } => match proto::res_read(body).map_err(|d| garbage(name, d))? {
            Ok((count, _eof, at)) => {
                if count > len {
                    return Err(garbage(
                        name,
                        DecodeError::Invalid("READ returned more than asked"),
                    ));
                }
                // SAFETY: `buf` holds `len` >= `count` bytes (the submitter's contract) and
                // `at + count` is within `body` (checked by the decoder).
                unsafe { std::ptr::copy_nonoverlapping(body[at..].as_ptr(), buf, count as usize) };
                Outcome::Read(count)
            }
            Err(s) if s == JUKEBOX => Outcome::Jukebox,
            Err(s) => return Err(status(s)),
        },
        Req::Write { len, .. } => match proto::res_write(body).map_err(|d| garbage(name, d))? {
            Ok((count, committed, verf)) => {
                if (count == 0 && len > 0) || count > len {
                    return Err(garbage(
                        name,
                        DecodeError::Invalid("WRITE count is zero or more than sent"),
                    ));
                }
                Outcome::Write(WriteAck {
                    count,
                    committed,
                    verf,
                })
            }
            Err(s) if s == JUKEBOX => Outcome::Jukebox,
            Err(s) => return Err(status(s)),
        },
        Req::Commit { .. } => match proto::res_commit(body).map_err(|d| garbage(name, d))? {
            Ok(verf) => Outcome::Commit(verf),
            Err(s) if s == JUKEBOX => Outcome::Jukebox,
            Err(s) => return Err(status(s)),
        },
    };
    Ok((idx as u32, outcome))
}
