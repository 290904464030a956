//! Receiving one message and filing it: its credits granted, a data reply completing its
//! part (a READ's payload read straight into the caller's buffer), a call's reply kept, a
//! sealed message opened first, a compounded one filed part by part.

use std::time::Instant;

use super::{Conn, Req, SLOTS, SlotState};
use crate::error::{DecodeError, NtStatus, Result};
use crate::header::{
    self, FLAG_ASYNC, FLAG_RESPONSE, FLAG_SIGNED, HEADER_LEN, Header, TRANSFORM_ID,
};
use crate::proto::{self, READ_RESP_LEN};

impl Conn {
    /// Receives one message (blocking up to the timeout), accounts its credits and files it:
    /// a data reply completes its part, a call's reply is kept in `reply`; then sends the
    /// lease break acknowledgments that are due.
    pub(super) fn receive(&mut self, op: &'static str) -> Result<()> {
        self.receive_one(op)?;
        if self.acks_due.is_empty() {
            return Ok(());
        }
        self.send_acks(op)
    }

    pub(super) fn receive_one(&mut self, op: &'static str) -> Result<()> {
        let mut nb = [0u8; 4];
        self.read_exact(&mut nb, op)?;
        if nb[0] != 0 {
            return Err(self.garbage(
                op,
                DecodeError::BadValue {
                    what: "Direct TCP header",
                    value: nb[0].into(),
                },
            ));
        }
        let len = u32::from_be_bytes(nb) as usize;
        if len < HEADER_LEN.min(52) {
            return Err(self.garbage(
                op,
                DecodeError::Truncated {
                    at: len,
                    need: 64 - len,
                },
            ));
        }
        let mut first = [0u8; HEADER_LEN];
        let head = HEADER_LEN.min(len);
        self.read_exact(&mut first[..head], op)?;
        if first[..4] == TRANSFORM_ID {
            return self.receive_sealed(&first[..head], len, op);
        }
        if len < HEADER_LEN {
            return Err(self.garbage(
                op,
                DecodeError::Truncated {
                    at: len,
                    need: 64 - len,
                },
            ));
        }
        let h = Header::decode(&first).map_err(|e| self.garbage(op, e))?;
        if h.flags & FLAG_RESPONSE == 0 {
            return Err(self.garbage(op, DecodeError::Invalid("a request from the server")));
        }
        let slot = self.slots[h.message_id as usize % SLOTS];
        if let Req::Read { buf, len: want } = slot.req
            && slot.state == SlotState::Sent
            && slot.mid == h.message_id
            && h.status == 0
            && h.next_command == 0
        {
            return self.receive_read_data(&first, &h, len, buf, want, op);
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&first);
        self.scratch.resize(len, 0);
        let mut rest = std::mem::take(&mut self.scratch);
        let r = self.read_exact(&mut rest[HEADER_LEN..], op);
        self.scratch = rest;
        r?;
        let msg = std::mem::take(&mut self.scratch);
        let r = self.file_chain(&msg, true, op);
        self.scratch = msg;
        r
    }

    /// Files each reply of a (possibly compounded) plain message, checking each one's
    /// signature where `check` (not for a message that was sealed as a whole).
    pub(super) fn file_chain(&mut self, msg: &[u8], check: bool, op: &'static str) -> Result<()> {
        let mut at = 0;
        loop {
            let (h, end, last) = header::chain_part(msg, at).map_err(|e| self.garbage(op, e))?;
            let part = &msg[at..end];
            if check {
                self.check_signature(&h, part, op)?;
            }
            self.file_reply(&h, part, op)?;
            if last {
                return Ok(());
            }
            at = end;
        }
    }

    /// A reply in plain form (after unsealing or reading whole): credits, then its slot.
    pub(super) fn file_reply(&mut self, h: &Header, msg: &[u8], op: &'static str) -> Result<()> {
        self.grant(h.credits);
        if h.message_id == u64::MAX {
            return self.lease_break(msg, op);
        }
        if h.status == NtStatus::PENDING.0 && h.flags & FLAG_ASYNC != 0 {
            return Ok(()); // interim: the final reply comes later
        }
        let idx = h.message_id as usize % SLOTS;
        let slot = self.slots[idx];
        if slot.state != SlotState::Sent || slot.mid != h.message_id {
            return Err(self.garbage(
                op,
                DecodeError::BadValue {
                    what: "MessageId (no such request outstanding)",
                    value: h.message_id,
                },
            ));
        }
        self.in_flight -= u32::from(slot.charge);
        match slot.req {
            Req::Call => {
                self.reply.clear();
                self.reply.extend_from_slice(msg);
                self.slots[idx].state = SlotState::Answered;
            }
            Req::Ack => self.slots[idx].state = SlotState::Free,
            Req::Chain(n) => {
                if let Some(r) = self.chain_replies.get_mut(n as usize) {
                    r.clear();
                    r.extend_from_slice(msg);
                }
                self.slots[idx].state = SlotState::Answered;
            }
            Req::Read { buf, len } => {
                self.slots[idx].state = SlotState::Free;
                let res = if h.status == 0 {
                    let fixed = msg.get(HEADER_LEN..).unwrap_or(&[]);
                    let (off, n) =
                        proto::parse_read_fixed(fixed).map_err(|e| self.garbage(op, e))?;
                    if n > len as usize {
                        return Err(
                            self.garbage(op, DecodeError::Invalid("READ returned more than asked"))
                        );
                    }
                    let data = crate::wire::slice(msg, off, n).map_err(|e| self.garbage(op, e))?;
                    // SAFETY: the caller's buffer holds `len` ≥ n bytes (checked above).
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, n) };
                    Ok(n as u64)
                } else if h.status == NtStatus::END_OF_FILE.0 {
                    Ok(0)
                } else {
                    Err(NtStatus(h.status))
                };
                self.part_done(slot.op, res);
            }
            Req::Write { len } => {
                self.slots[idx].state = SlotState::Free;
                let res = if h.status == 0 {
                    let n = proto::parse_write(msg).map_err(|e| self.garbage(op, e))?;
                    if n > len {
                        return Err(
                            self.garbage(op, DecodeError::Invalid("WRITE wrote more than sent"))
                        );
                    }
                    Ok(u64::from(n))
                } else {
                    Err(NtStatus(h.status))
                };
                self.part_done(slot.op, res);
            }
        }
        Ok(())
    }

    /// A successful READ reply: its data goes straight into the caller's buffer.
    pub(super) fn receive_read_data(
        &mut self,
        first: &[u8; HEADER_LEN],
        h: &Header,
        len: usize,
        buf: *mut u8,
        want: u32,
        op: &'static str,
    ) -> Result<()> {
        let mut fixed = [0u8; READ_RESP_LEN];
        if len < HEADER_LEN + READ_RESP_LEN {
            return Err(self.garbage(
                op,
                DecodeError::Truncated {
                    at: len,
                    need: 80 - len,
                },
            ));
        }
        self.read_exact(&mut fixed, op)?;
        let (off, n) = proto::parse_read_fixed(&fixed).map_err(|e| self.garbage(op, e))?;
        let data_at = HEADER_LEN + READ_RESP_LEN;
        if n > want as usize || off < data_at || off.saturating_add(n) > len {
            return Err(self.garbage(op, DecodeError::Invalid("READ data outside the reply")));
        }
        let mut pad = [0u8; 64];
        let pad_len = off - data_at;
        if pad_len > pad.len() {
            return Err(self.garbage(op, DecodeError::Invalid("READ data offset too far")));
        }
        self.read_exact(&mut pad[..pad_len], op)?;
        // SAFETY: the caller's buffer holds `want` ≥ n bytes until completion.
        let data = unsafe { std::slice::from_raw_parts_mut(buf, n) };
        self.read_exact(data, op)?;
        let mut tail = len - off - n;
        let mut sink = [0u8; 256];
        let signer = self.signer.clone();
        let t = Instant::now();
        let mut mac = match &signer {
            Some(s) if h.flags & FLAG_SIGNED != 0 => {
                let mut hz = *first;
                header::zero_signature(&mut hz);
                let mut m = s.start(h.message_id, true, false);
                m.update(&hz);
                m.update(&fixed);
                m.update(&pad[..pad_len]);
                m.update(data);
                Some(m)
            }
            _ => None,
        };
        while tail > 0 {
            let k = tail.min(sink.len());
            self.read_exact(&mut sink[..k], op)?;
            if let Some(m) = &mut mac {
                m.update(&sink[..k]);
            }
            tail -= k;
        }
        let checked = mac.map(|m| m.finish() == h.signature);
        if checked.is_some() {
            self.crypto_ns += t.elapsed().as_nanos() as u64;
        }
        match checked {
            Some(false) => {
                return Err(self.protocol(op, "READ reply with a bad signature"));
            }
            Some(true) => {}
            None if self.sign_all && self.signer.is_some() && self.sealer.is_none() => {
                return Err(self.protocol(op, "unsigned READ reply on a signed session"));
            }
            None => {}
        }
        self.grant(h.credits);
        let idx = h.message_id as usize % SLOTS;
        let slot = self.slots[idx];
        self.in_flight -= u32::from(slot.charge);
        self.slots[idx].state = SlotState::Free;
        self.part_done(slot.op, Ok(n as u64));
        Ok(())
    }

    /// A TRANSFORM_HEADER message: read whole, decrypted, then filed as a plain reply.
    pub(super) fn receive_sealed(
        &mut self,
        first: &[u8],
        len: usize,
        op: &'static str,
    ) -> Result<()> {
        let mut msg = std::mem::take(&mut self.scratch);
        msg.clear();
        msg.extend_from_slice(first);
        msg.resize(len, 0);
        let got = first.len();
        let r = self.read_exact(&mut msg[got..], op);
        if let Err(e) = r {
            self.scratch = msg;
            return Err(e);
        }
        let t = Instant::now();
        let plain = match &self.sealer {
            Some(s) => s.open(&mut msg),
            None => Err(DecodeError::Invalid(
                "encrypted reply on a session without keys",
            )),
        };
        self.crypto_ns += t.elapsed().as_nanos() as u64;
        let res = match plain {
            Ok(range) => self.file_chain(&msg[range], false, op),
            Err(e) => Err(self.garbage(op, e)),
        };
        self.scratch = msg;
        res
    }
}
