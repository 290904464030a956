//! Synchronous calls (set-up and metadata): one request, or a compounded chain of them,
//! sent and waited for while data completions arriving meanwhile are kept.

use super::{Conn, Req, SLOTS, Slot, SlotState};
use crate::error::Result;
use crate::header::{self, Command, FLAG_RELATED, FLAG_SIGNED, HEADER_LEN, Header};

impl Conn {
    /// Sends one request and waits for its reply; returns the reply's header. The whole
    /// reply is then in [`Conn::reply`]. Data completions arriving meanwhile are kept.
    /// `sign` forces a signature (TREE_CONNECT on 3.1.1) when a key exists.
    pub fn call(&mut self, cmd: Command, body: &[u8], sign: bool) -> Result<Header> {
        self.call_charged(cmd, body, 1, sign)
    }

    pub fn call_charged(
        &mut self,
        cmd: Command,
        body: &[u8],
        charge: u16,
        sign: bool,
    ) -> Result<Header> {
        self.commit()?;
        let mid = loop {
            if let Some(mid) = self.take_mid(charge) {
                break mid;
            }
            if self.in_flight == 0 {
                return Err(self.protocol(cmd.name(), "the server granted no credits"));
            }
            self.receive(cmd.name())?;
        };
        let msg = self.request(cmd, mid, charge, body, sign);
        if cmd == Command::Create {
            self.creates_sent += 1;
        }
        self.slots[mid as usize % SLOTS] = Slot {
            state: SlotState::Sent,
            mid,
            charge: charge.max(1),
            op: 0,
            req: Req::Call,
        };
        self.send_message(&msg, &[], cmd.name())?;
        self.last_request = msg;
        loop {
            if self.slots[mid as usize % SLOTS].state == SlotState::Answered {
                self.slots[mid as usize % SLOTS].state = SlotState::Free;
                return Header::decode(&self.reply).map_err(|e| self.garbage(cmd.name(), e));
            }
            self.receive(cmd.name())?;
        }
    }

    /// One request message (header first), signed where the session signs or `sign`.
    pub(super) fn request(
        &self,
        cmd: Command,
        mid: u64,
        charge: u16,
        body: &[u8],
        sign: bool,
    ) -> Vec<u8> {
        let mut h = self.header(cmd, mid, charge);
        let mut msg = vec![0u8; HEADER_LEN];
        msg.extend_from_slice(body);
        let signed = self.signer.is_some() && (self.sign_all || sign) && self.sealer.is_none();
        if signed {
            h.flags |= FLAG_SIGNED;
        }
        h.encode(&mut msg);
        if signed && let Some(s) = &self.signer {
            let sig = s.sign(mid, false, &msg);
            msg[header::SIGNATURE_AT..header::SIGNATURE_AT + 16].copy_from_slice(&sig);
        }
        msg
    }

    /// Sends `reqs` as one compounded message, each after the first related to the one
    /// before it (same session and tree; a FileId of all ones names the file the first
    /// opened), and waits for every reply: one round trip instead of one per request.
    /// Returns the replies (header first) in request order.
    pub fn call_chain(&mut self, reqs: &[(Command, &[u8])]) -> Result<Vec<Vec<u8>>> {
        self.commit()?;
        let op = reqs.first().map_or("compound", |(c, _)| c.name());
        let signed = self.signer.is_some() && self.sign_all && self.sealer.is_none();
        let mut mids = Vec::with_capacity(reqs.len());
        for (cmd, _) in reqs {
            if *cmd == Command::Create {
                self.creates_sent += 1;
            }
            let mid = loop {
                if let Some(mid) = self.take_mid(1) {
                    break mid;
                }
                if self.in_flight == 0 {
                    return Err(self.protocol(op, "the server granted no credits"));
                }
                self.receive(op)?;
            };
            mids.push(mid);
        }
        let mut msg = Vec::with_capacity(512);
        for (i, ((cmd, body), &mid)) in reqs.iter().zip(&mids).enumerate() {
            let start = msg.len();
            let last = i + 1 == reqs.len();
            let len = HEADER_LEN + body.len();
            let padded = if last { len } else { len.next_multiple_of(8) };
            let mut h = self.header(*cmd, mid, 1);
            if i > 0 {
                h.flags |= FLAG_RELATED;
            }
            if signed {
                h.flags |= FLAG_SIGNED;
            }
            if !last {
                h.next_command = padded as u32;
            }
            msg.resize(start + HEADER_LEN, 0);
            h.encode(&mut msg[start..]);
            msg.extend_from_slice(body);
            msg.resize(start + padded, 0);
            // Each request of a chain is signed on its own, padding included.
            if signed && let Some(sg) = &self.signer {
                let sig = sg.sign(mid, false, &msg[start..]);
                let at = start + header::SIGNATURE_AT;
                msg[at..at + 16].copy_from_slice(&sig);
            }
            self.slots[mid as usize % SLOTS] = Slot {
                state: SlotState::Sent,
                mid,
                charge: 1,
                op: 0,
                req: Req::Chain(i as u8),
            };
        }
        self.chain_replies = vec![Vec::new(); reqs.len()];
        self.send_message(&msg, &[], op)?;
        while mids
            .iter()
            .any(|&m| self.slots[m as usize % SLOTS].state != SlotState::Answered)
        {
            self.receive(op)?;
        }
        for &m in &mids {
            self.slots[m as usize % SLOTS].state = SlotState::Free;
        }
        Ok(std::mem::take(&mut self.chain_replies))
    }

    /// The last synchronous reply, header first.
    pub fn reply(&self) -> &[u8] {
        &self.reply
    }
}
