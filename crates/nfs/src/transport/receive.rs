//! Reading replies: whole records through the record buffer, and large READ payloads (an
//! NFSv3 READ's, or the data a call's sink locates, an NFSv4 READ's) straight into the
//! caller's buffer once the reply header has arrived (one copy less, and
//! the dominant cost of a fast sequential read).

use super::{Req, SlotState, Transport};
use crate::conn::{DirectRead, Received};
use crate::error::{DecodeError, NfsError};
use crate::framing::FrameError;
use crate::proto;
use crate::reply::{self, Outcome};
use crate::rpc::{self, ReplyStatus};

/// Payload still to come below which a READ is not worth reading directly.
const DIRECT_MIN: usize = 32 << 10;

impl Transport {
    /// Reads everything connection `c` has for us now; true if anything arrived.
    pub(super) fn receive(&mut self, c: usize) -> bool {
        let mut progressed = false;
        loop {
            match self.conns[c].read_some() {
                Received::Nothing => return progressed,
                Received::Bytes => {
                    progressed = true;
                    if self.conns[c].direct.is_none() {
                        self.process(c);
                        self.try_direct(c);
                    }
                }
                Received::DirectDone(idx, count) => {
                    progressed = true;
                    self.progress = true;
                    let conn = &mut self.conns[c];
                    conn.inflight = conn.inflight.saturating_sub(1);
                    let slot = &mut self.slots[idx as usize];
                    if let Req::Call { .. } = slot.req {
                        // A call with a sink: its reply up to the data is in `reply`.
                        slot.placed = Some(count);
                        slot.state = SlotState::Answered;
                    } else {
                        self.finish_slot(idx, u64::from(count));
                    }
                }
            }
            if self.fatal.is_some() {
                return progressed;
            }
        }
    }

    /// Decodes every complete record buffered on connection `c`.
    fn process(&mut self, c: usize) {
        loop {
            let range = match self.conns[c].reader.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => return,
                Err(e) => {
                    let detail = DecodeError::Invalid(match e {
                        FrameError::TooLarge { .. } => "reply record too large",
                        FrameError::EmptyFragment => "empty record fragment",
                    });
                    self.fail(NfsError::Garbage {
                        server: self.cfg.server.clone(),
                        op: self.oldest_op_name(),
                        detail,
                    });
                    return;
                }
            };
            let conn = &mut self.conns[c];
            let record = conn.reader.record(range);
            let mut cx = reply::Ctx {
                slots: &mut self.slots,
                paths: &self.paths,
                server: &self.cfg.server,
                conn: c,
                sent_total: conn.sent_total,
                inflight: &mut conn.inflight,
            };
            match reply::handle(&mut cx, record) {
                Ok((idx, outcome)) => self.apply(idx, outcome),
                Err(e) => {
                    self.fail(e);
                    return;
                }
            }
        }
    }

    fn apply(&mut self, idx: u32, outcome: Outcome) {
        // A server asking again and again to try later makes no progress.
        match outcome {
            Outcome::Jukebox => self.stall.jukeboxes += 1,
            _ => self.progress = true,
        }
        match outcome {
            Outcome::Read(count) => self.finish_slot(idx, u64::from(count)),
            Outcome::Write(ack) => self.write_acked(idx, ack),
            Outcome::Commit(verf) => self.commit_acked(idx, verf),
            Outcome::Answered => self.slots[idx as usize].state = SlotState::Answered,
            Outcome::Jukebox => self.delay(idx, super::JUKEBOX_DELAY),
        }
    }

    /// If the record being received on `c` is a successful READ reply with a large payload
    /// still to come, copies what is buffered to the caller's buffer and arranges for the
    /// rest to be read there directly. Anything unusual is left to the whole-record path,
    /// which checks it.
    fn try_direct(&mut self, c: usize) {
        let conn = &mut self.conns[c];
        let Some((head, frag_left)) = conn.reader.partial() else {
            return;
        };
        let Ok(xid) = rpc::reply_xid(head) else {
            return;
        };
        let idx = (xid as usize) & (super::MAX_SLOTS - 1);
        let Some(slot) = self.slots.get(idx) else {
            return;
        };
        let (len, buf, locate) = match (slot.req, slot.sink) {
            (Req::Read { len, buf, .. }, _) => (len, buf, None),
            (Req::Call { .. }, Some(sink)) => (sink.cap, sink.dst, Some(sink.locate)),
            _ => return,
        };
        if slot.state != SlotState::Sent
            || slot.xid != xid
            || slot.conn != c
            || slot.sent_end > conn.sent_total
        {
            return;
        }
        let Ok(header) = rpc::parse_reply(head) else {
            return;
        };
        if header.status != ReplyStatus::Success {
            return;
        }
        let found = match locate {
            None => proto::res_read_head(&head[header.body..]),
            Some(locate) => locate(&head[header.body..]).map(|(at, n)| (n as u32, at)),
        };
        let Some((count, at)) = found else {
            return;
        };
        let data = header.body + at;
        let pad = proto::xdr_pad(count as usize).len();
        let (n, total) = (count as usize, head.len() + frag_left);
        if count > len || data > head.len() || data + n + pad != total {
            return;
        }
        let have = (head.len() - data).min(n);
        if n - have < DIRECT_MIN {
            return;
        }
        // SAFETY: `buf` holds `len` >= `count` bytes (the submitter's contract) and
        // `data + have` is within the buffered record.
        unsafe { std::ptr::copy_nonoverlapping(head[data..].as_ptr(), buf, have) };
        if locate.is_some() {
            let reply = &mut self.slots[idx].reply;
            reply.clear();
            reply.extend_from_slice(&head[header.body..data]);
        }
        conn.reader.drop_partial();
        conn.direct = Some(DirectRead {
            slot: idx as u32,
            // SAFETY: still within the caller's buffer.
            dst: unsafe { buf.add(have) },
            left: n - have,
            pad,
            count,
        });
    }
}
