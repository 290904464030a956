//! The data path's sending half: an op per caller IO, split into READ/WRITE requests of
//! at most MaxRead/MaxWrite, staged (headers signed over the payload where it lies) and
//! sent with `writev` at `commit`; a sealed request is sent at once.

use std::time::Instant;

use super::{Conn, Op, Req, SLOTS, Slot, SlotState, Staged, Submit};
use crate::error::Result;
use crate::header::{self, Command, FLAG_SIGNED, HEADER_LEN};
use crate::proto::{self, FileId, READ_BODY_LEN, WRITE_BODY_LEN};

impl Conn {
    pub(super) fn new_op(&mut self, user: u64, parts: u32) -> u32 {
        let op = Op {
            busy: true,
            user,
            pending: parts,
            bytes: 0,
            failed: None,
        };
        if let Some(i) = self.free_ops.pop() {
            self.ops[i as usize] = op;
            i
        } else {
            self.ops.push(op);
            (self.ops.len() - 1) as u32
        }
    }

    /// Queues a READ of `len` bytes at `offset` into `buf` as `max`-byte requests.
    ///
    /// # Safety
    /// `buf` must stay valid and unaliased for `len` bytes until the IO is reaped.
    pub unsafe fn submit_read(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *mut u8,
        len: u32,
        max: u32,
        user: u64,
    ) -> Result<Submit> {
        self.submit(id, offset, buf, len, max, user, false)
    }

    /// Queues a WRITE of `len` bytes from `buf` at `offset` as `max`-byte requests.
    ///
    /// # Safety
    /// `buf` must stay valid for `len` bytes until the IO is reaped.
    pub unsafe fn submit_write(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *const u8,
        len: u32,
        max: u32,
        user: u64,
    ) -> Result<Submit> {
        self.submit(id, offset, buf.cast_mut(), len, max, user, true)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn submit(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *mut u8,
        len: u32,
        max: u32,
        user: u64,
        write: bool,
    ) -> Result<Submit> {
        let max = max.max(1);
        let parts = len.div_ceil(max).max(1);
        // All parts or none: an IO never waits half-sent.
        let need: u32 = (0..parts)
            .map(|p| {
                let l = (len - p * max).min(max) as usize;
                u32::from(self.charge_for(l).max(1))
            })
            .sum();
        if self.credits < need {
            if self.ops_outstanding() == 0 && self.staged.is_empty() {
                return Err(self.protocol(
                    if write { "WRITE" } else { "READ" },
                    &format!(
                        "the server grants {} credits, the IO needs {need}",
                        self.credits
                    ),
                ));
            }
            self.credit_waits += 1;
            return Ok(Submit::Busy);
        }
        let op = self.new_op(user, parts);
        for p in 0..parts {
            let at = p * max;
            let l = (len - at).min(max);
            let charge = self.charge_for(l as usize);
            let Some(mid) = self.take_mid(charge) else {
                // A slot still busy (credits were checked): count the rest as busy parts
                // of a failed op would be wrong; this only happens with a stuck request.
                return Err(self.protocol("submit", "MessageId slot still in use"));
            };
            // SAFETY: within the caller's buffer of `len` bytes.
            let ptr = unsafe { buf.add(at as usize) };
            self.stage_data(id, offset + u64::from(at), ptr, l, charge, mid, write)?;
            self.slots[mid as usize % SLOTS] = Slot {
                state: SlotState::Sent,
                mid,
                charge: charge.max(1),
                op,
                req: if write {
                    Req::Write { len: l }
                } else {
                    Req::Read { buf: ptr, len: l }
                },
            };
        }
        Ok(Submit::Queued)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn stage_data(
        &mut self,
        id: FileId,
        offset: u64,
        ptr: *mut u8,
        len: u32,
        charge: u16,
        mid: u64,
        write: bool,
    ) -> Result<()> {
        let cmd = if write { Command::Write } else { Command::Read };
        let mut h = self.header(cmd, mid, charge);
        let body_len = if write { WRITE_BODY_LEN } else { READ_BODY_LEN };
        let payload: &[u8] = if write {
            // SAFETY: the caller's buffer of `len` bytes, valid until completion.
            unsafe { std::slice::from_raw_parts(ptr, len as usize) }
        } else {
            &[]
        };
        let mut head = [0u8; HEADER_LEN + READ_BODY_LEN];
        let signed = self.sign_all && self.signer.is_some() && self.sealer.is_none();
        if signed {
            h.flags |= FLAG_SIGNED;
        }
        h.encode(&mut head);
        if write {
            let b: &mut [u8; WRITE_BODY_LEN] = (&mut head[HEADER_LEN..HEADER_LEN + WRITE_BODY_LEN])
                .try_into()
                .unwrap();
            proto::write_body(b, id, offset, len);
        } else {
            let b: &mut [u8; READ_BODY_LEN] = (&mut head[HEADER_LEN..]).try_into().unwrap();
            proto::read_body(b, id, offset, len);
        }
        let head = &mut head[..HEADER_LEN + body_len];
        if let Some(sealer) = &mut self.sealer {
            // Sealed: the whole message is encrypted into the scratch buffer and sent now.
            let mut out = std::mem::take(&mut self.scratch);
            out.clear();
            let t = Instant::now();
            sealer.seal(self.session_id, head, payload, &mut out);
            self.crypto_ns += t.elapsed().as_nanos() as u64;
            let r = self.send_framed(&out, cmd.name());
            self.scratch = out;
            return r;
        }
        let at = self.stage.len();
        self.stage
            .extend_from_slice(&header::frame_len(head.len() + payload.len()));
        let hdr_at = self.stage.len();
        self.stage.extend_from_slice(head);
        if signed && let Some(s) = &self.signer {
            let t = Instant::now();
            let mut m = s.start(mid, false, false);
            m.update(&self.stage[hdr_at..]);
            m.update(payload);
            let sig = m.finish();
            let sat = hdr_at + header::SIGNATURE_AT;
            self.stage[sat..sat + 16].copy_from_slice(&sig);
            self.crypto_ns += t.elapsed().as_nanos() as u64;
        }
        self.staged.push(Staged {
            at,
            len: self.stage.len() - at,
            payload: ptr,
            payload_len: payload.len(),
        });
        Ok(())
    }

    /// Sends every staged request in as few `writev` calls as the kernel allows.
    pub fn commit(&mut self) -> Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        self.iov.clear();
        for s in &self.staged {
            self.iov.push(libc::iovec {
                // SAFETY: within `stage`, which is not touched until the send ends.
                iov_base: unsafe { self.stage.as_ptr().add(s.at) } as *mut libc::c_void,
                iov_len: s.len,
            });
            if s.payload_len > 0 {
                self.iov.push(libc::iovec {
                    iov_base: s.payload as *mut libc::c_void,
                    iov_len: s.payload_len,
                });
            }
        }
        let r = self.writev_all("send");
        self.frames_sent += 1;
        self.staged.clear();
        self.stage.clear();
        r
    }
}
