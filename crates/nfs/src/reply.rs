//! Decoding one reply record and applying it to the call it answers: data lands in the
//! caller's buffer, short writes continue, JUKEBOX replies are retried later, and an op
//! completes when its last RPC does.

use std::collections::VecDeque;
use std::time::Instant;

use crate::error::{DecodeError, NfsError, Result};
use crate::proto::{self, NfsStat, Verf};
use crate::rpc::{self, ReplyStatus};
use crate::transport::{JUKEBOX_DELAY, MAX_SLOTS, Op, Req, Slot};

/// The parts of the transport a reply updates (split out so the record can stay borrowed
/// from the connection's buffer while slots change).
pub(crate) struct Ctx<'a> {
    pub(crate) slots: &'a mut Vec<Slot>,
    pub(crate) ops: &'a mut Vec<Op>,
    pub(crate) free_slots: &'a mut Vec<u32>,
    pub(crate) free_ops: &'a mut Vec<u32>,
    pub(crate) done: &'a mut VecDeque<(u64, u64)>,
    pub(crate) resend: &'a mut Vec<(u32, Option<Instant>)>,
    pub(crate) write_verf: &'a mut Option<Verf>,
    pub(crate) verf_changes: &'a mut u32,
    pub(crate) paths: &'a [String],
    pub(crate) server: &'a str,
    pub(crate) inflight: &'a mut u32,
}

pub(crate) fn handle_reply(cx: &mut Ctx<'_>, conn: usize, record: &[u8]) -> Result<()> {
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
        .is_some_and(|s| s.busy && !s.done && s.xid == xid && s.conn == conn);
    if !known {
        return Err(NfsError::UnknownXid {
            server: cx.server.to_string(),
            xid,
        });
    }
    let req = cx.slots[idx].req;
    let name = req.name();
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
    let status = |cx: &Ctx<'_>, status: NfsStat| {
        let op = cx.slots[idx].op as usize;
        let path = cx
            .paths
            .get(cx.ops[op].file as usize)
            .cloned()
            .unwrap_or_default();
        NfsError::Status {
            server: cx.server.to_string(),
            op: name,
            path,
            status,
        }
    };
    const JUKEBOX: NfsStat = NfsStat(10008);
    let bytes = match req {
        Req::Call { .. } => {
            let s = &mut cx.slots[idx];
            s.reply.clear();
            s.reply.extend_from_slice(body);
            s.done = true;
            return Ok(());
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
                count as u64
            }
            Err(s) if s == JUKEBOX => return retry_later(cx, idx),
            Err(s) => return Err(status(cx, s)),
        },
        Req::Write {
            fh,
            offset,
            len,
            buf,
            stable,
        } => match proto::res_write(body).map_err(|d| garbage(name, d))? {
            Ok((count, _committed, verf)) => {
                note_verifier(cx, verf);
                if count == 0 && len > 0 {
                    return Err(garbage(
                        name,
                        DecodeError::Invalid("WRITE made no progress"),
                    ));
                }
                if count < len {
                    // Short write: send the rest from the same slot.
                    let rest = count as usize;
                    cx.ops[cx.slots[idx].op as usize].bytes += count as u64;
                    // SAFETY: still within the submitter's buffer.
                    let p = unsafe { buf.add(rest) };
                    cx.slots[idx].req = Req::Write {
                        fh,
                        offset: offset + count as u64,
                        len: len - count,
                        buf: p,
                        stable,
                    };
                    cx.resend.push((idx as u32, None));
                    return Ok(());
                }
                count.min(len) as u64
            }
            Err(s) if s == JUKEBOX => return retry_later(cx, idx),
            Err(s) => return Err(status(cx, s)),
        },
        Req::Commit { .. } => match proto::res_commit(body).map_err(|d| garbage(name, d))? {
            Ok(verf) => {
                note_verifier(cx, verf);
                0
            }
            Err(s) if s == JUKEBOX => return retry_later(cx, idx),
            Err(s) => return Err(status(cx, s)),
        },
    };
    finish_slot(cx, idx, bytes);
    Ok(())
}

fn retry_later(cx: &mut Ctx<'_>, idx: usize) -> Result<()> {
    cx.resend
        .push((idx as u32, Some(Instant::now() + JUKEBOX_DELAY)));
    Ok(())
}

fn note_verifier(cx: &mut Ctx<'_>, verf: Verf) {
    match cx.write_verf {
        Some(v) if *v != verf => {
            *cx.verf_changes += 1;
            *v = verf;
        }
        Some(_) => {}
        None => *cx.write_verf = Some(verf),
    }
}

fn finish_slot(cx: &mut Ctx<'_>, idx: usize, bytes: u64) {
    let s = &mut cx.slots[idx];
    s.busy = false;
    let op_idx = s.op;
    cx.free_slots.push(idx as u32);
    let op = &mut cx.ops[op_idx as usize];
    op.bytes += bytes;
    op.pending -= 1;
    if op.pending == 0 {
        op.busy = false;
        cx.done.push_back((op.user, op.bytes));
        cx.free_ops.push(op_idx);
    }
}
