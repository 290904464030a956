//! Checking the signature of a reply where the session signs (a READ's payload is checked
//! where it lands, in `receive`).

use std::time::Instant;

use super::Conn;
use crate::error::{NtStatus, Result};
use crate::header::{self, FLAG_ASYNC, FLAG_SIGNED, HEADER_LEN, Header};

impl Conn {
    /// Checks the signature of one reply (`msg`, header first) where the session signs.
    pub(super) fn check_signature(
        &mut self,
        h: &Header,
        msg: &[u8],
        op: &'static str,
    ) -> Result<()> {
        let Some(s) = &self.signer else {
            return Ok(());
        };
        if h.flags & FLAG_SIGNED == 0 {
            let interim = h.status == NtStatus::PENDING.0 && h.flags & FLAG_ASYNC != 0;
            // Break notifications (MessageId all ones) are sent unsigned ([MS-SMB2] 3.3.4.7).
            let notice = h.message_id == u64::MAX;
            if self.sign_all && self.sealer.is_none() && !interim && !notice && h.session_id != 0 {
                return Err(self.protocol(op, "unsigned reply on a signed session"));
            }
            return Ok(());
        }
        let t = Instant::now();
        let mut m = s.start(h.message_id, true, false);
        let mut hz = [0u8; HEADER_LEN];
        hz.copy_from_slice(&msg[..HEADER_LEN]);
        header::zero_signature(&mut hz);
        m.update(&hz);
        m.update(&msg[HEADER_LEN..]);
        let good = m.finish() == h.signature;
        self.crypto_ns += t.elapsed().as_nanos() as u64;
        if !good {
            return Err(self.protocol(op, "reply with a bad signature"));
        }
        Ok(())
    }
}
