//! Collecting completions: an op completes when its last request does; `reap` takes what
//! arrived without waiting for replies still on their way; `quiesce` waits for them all.

use std::os::fd::AsRawFd;

use super::{Completion, Conn, IN_FLIGHT};
use crate::error::{NtStatus, Result};

impl Conn {
    /// Sends what is staged and waits until every request has its reply (completions stay
    /// queued for `reap`): a FLUSH after it covers every write issued before it.
    pub fn quiesce(&mut self) -> Result<()> {
        self.commit()?;
        while self.in_flight > 0 {
            self.receive(IN_FLIGHT)?;
        }
        Ok(())
    }

    /// Collects at least `min` completions into `out` (fewer only at an error).
    pub fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<()> {
        self.commit()?;
        let mut got = 0;
        loop {
            while let Some(c) = self.done.pop_front() {
                out.push(c);
                got += 1;
            }
            if got >= min {
                // Take what already arrived, never more: a reply only partly here would
                // hold the caller until its last byte, with nothing new sent meanwhile
                // (a stream of 1 MiB READ replies kept the socket readable until every
                // request in flight had its reply, and the link went idle each round).
                if !self.whole_reply_buffered() {
                    return Ok(());
                }
                self.receive(IN_FLIGHT)?;
                if self.done.is_empty() {
                    return Ok(());
                }
                continue;
            }
            if self.in_flight == 0 {
                return Err(self.protocol("reap", "waiting for IOs that were never sent"));
            }
            self.receive(IN_FLIGHT)?;
        }
    }

    /// True when the socket's buffer holds at least one whole message (its 4-byte length
    /// peeked, the bytes waiting counted), so receiving it cannot block.
    pub(super) fn whole_reply_buffered(&self) -> bool {
        let fd = self.sock.as_raw_fd();
        let mut waiting: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, the bytes waiting on our own socket.
        if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut waiting) } < 0 || waiting < 4 {
            return false;
        }
        let mut nb = [0u8; 4];
        // SAFETY: peeks at most 4 bytes into `nb`, without waiting or consuming them.
        let n = unsafe {
            libc::recv(
                fd,
                nb.as_mut_ptr().cast(),
                4,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n == 4 && waiting as u64 >= 4 + u64::from(u32::from_be_bytes(nb))
    }

    pub(super) fn part_done(&mut self, op: u32, res: std::result::Result<u64, NtStatus>) {
        let o = &mut self.ops[op as usize];
        match res {
            Ok(n) => o.bytes += n,
            Err(s) => {
                o.failed.get_or_insert(s);
            }
        }
        o.pending -= 1;
        if o.pending == 0 {
            o.busy = false;
            let c = Completion {
                user: o.user,
                result: match o.failed {
                    Some(s) => Err(s),
                    None => Ok(o.bytes),
                },
            };
            self.done.push_back(c);
            self.free_ops.push(op);
        }
    }

    /// Moves the completions received and not yet reaped into `out` (before this
    /// connection is given up for a new one).
    pub fn take_done(&mut self, out: &mut Vec<Completion>) {
        out.extend(self.done.drain(..));
    }
}
