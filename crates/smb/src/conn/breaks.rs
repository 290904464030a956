//! Lease breaks: remembered when handle caching goes (the open is then no longer durable)
//! and acknowledged as soon as credits allow.

use super::{Conn, Req, SLOTS, Slot, SlotState};
use crate::error::Result;
use crate::header::Command;

impl Conn {
    /// Acknowledges the lease breaks that wait for it, as far as credits allow (the rest
    /// go when credits come back). Sent whole, between the staged data requests' sends.
    pub(super) fn send_acks(&mut self, op: &'static str) -> Result<()> {
        while let Some(&(key, state)) = self.acks_due.last() {
            let Some(mid) = self.take_mid(1) else {
                return Ok(());
            };
            self.acks_due.pop();
            let body = crate::lease::break_ack_body(&key, state);
            let msg = self.request(Command::OplockBreak, mid, 1, &body, false);
            self.slots[mid as usize % SLOTS] = Slot {
                state: SlotState::Sent,
                mid,
                charge: 1,
                op: 0,
                req: Req::Ack,
            };
            self.send_message(&msg, &[], op)?;
            self.lease_acks += 1;
        }
        Ok(())
    }

    /// A break notification: remembered when handle caching went, acknowledged when the
    /// server waits for it (with the state it offers: nothing is cached, so nothing is
    /// written back first).
    pub(super) fn lease_break(&mut self, msg: &[u8], op: &'static str) -> Result<()> {
        let Some(b) = crate::lease::parse_break(msg).map_err(|e| self.garbage(op, e))? else {
            return Ok(()); // an oplock break: none are asked for
        };
        self.lease_breaks += 1;
        if b.new_state & crate::lease::HANDLE == 0 && !self.lost_handle.contains(&b.key) {
            self.lost_handle.push(b.key);
        }
        if b.ack_required {
            self.acks_due.push((b.key, b.new_state));
        }
        Ok(())
    }

    /// Lease breaks received and acknowledged so far.
    pub fn lease_breaks(&self) -> (u64, u64) {
        (self.lease_breaks, self.lease_acks)
    }

    /// False once a break took handle caching from the lease `key` (its open is then no
    /// longer durable).
    pub fn handle_lease_kept(&self, key: &[u8; 16]) -> bool {
        !self.lost_handle.contains(key)
    }
}
