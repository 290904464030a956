//! Credits as the window: what a request is charged, what it asks for to keep
//! [`ConnConfig::credits`](super::ConnConfig::credits) in hand, and taking MessageIds.

use super::{CREDIT_UNIT, Conn, MAX_CREDITS, SLOTS, SlotState};
use crate::header::{Command, Header};

impl Conn {
    /// Credits granted and unspent plus those charged by requests outstanding.
    pub fn credits_held(&self) -> u32 {
        self.credits + self.in_flight
    }

    pub(super) fn charge_for(&self, bytes: usize) -> u16 {
        if self.large_mtu {
            bytes.max(1).div_ceil(CREDIT_UNIT) as u16
        } else {
            1
        }
    }

    /// Credits to ask for in a request charging `charge`: enough to refill the window.
    pub(super) fn credit_request(&self, charge: u16) -> u16 {
        let held = self.credits_held();
        let want = u32::from(self.cfg.credits.min(MAX_CREDITS));
        (u32::from(charge) + want.saturating_sub(held)).min(u32::from(MAX_CREDITS)) as u16
    }

    /// Takes `charge` credits and MessageIds for a request, or `None` if there are too few
    /// credits or its slot is still busy.
    pub(super) fn take_mid(&mut self, charge: u16) -> Option<u64> {
        let spend = u32::from(charge.max(1));
        if self.credits < spend {
            return None;
        }
        let mid = self.next_mid;
        if self.slots[mid as usize % SLOTS].state != SlotState::Free {
            return None;
        }
        self.credits -= spend;
        self.in_flight += spend;
        self.next_mid += u64::from(spend);
        Some(mid)
    }

    pub(super) fn header(&self, cmd: Command, mid: u64, charge: u16) -> Header {
        let mut h = Header::request(cmd, mid, self.session_id, self.tree_id);
        if self.large_mtu {
            h.credit_charge = charge;
        }
        h.credits = self.credit_request(charge);
        h
    }

    pub(super) fn grant(&mut self, credits: u16) {
        self.credits += u32::from(credits);
        self.max_granted = self.max_granted.max(self.credits_held());
    }
}
