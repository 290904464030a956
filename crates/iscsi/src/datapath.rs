//! The session's hot path: submitting tasks within the CmdSN window, writing Data-Out for
//! immediate, unsolicited and R2T-requested data, reading PDUs (Data-In straight into the
//! caller's buffer), and completing tasks by ITT with SCSI status handling.

use std::time::{Duration, Instant};

use crate::error::{Error, Result, ScsiFailure};
use crate::pdu::{self, BHS_LEN, Bhs, DataOut, RESERVED_TAG, ScsiCommand, flag, op, pad_len};
use crate::scsi::{self, Cdb};
use crate::sense::Sense;
use crate::session::{Phase, Session};
use crate::task::{Dir, Finished, Outcome, State};
use crate::wire::RECV_TICK;

/// Payload left to read above which Data-In goes straight from the socket into the caller's
/// buffer instead of through the receive buffer.
const DIRECT_MIN: usize = 32 * 1024;
/// BUSY / TASK SET FULL: retries and the longest back-off between them.
const MAX_BUSY_RETRIES: u16 = 300;
const MAX_BACKOFF: Duration = Duration::from_millis(100);

const STATUS_GOOD: u8 = 0x00;
const STATUS_CHECK_CONDITION: u8 = 0x02;
const STATUS_CONDITION_MET: u8 = 0x04;
const STATUS_BUSY: u8 = 0x08;
const STATUS_TASK_SET_FULL: u8 = 0x28;

/// A slice of caller memory, empty for a null pointer.
///
/// # Safety
/// `ptr` must be valid for `len` bytes (or `len` is 0).
unsafe fn raw<'a>(ptr: *const u8, len: u32) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(ptr, len as usize) }
    }
}

impl Session {
    /// Accepts a task; it is sent at once if the CmdSN window allows, else as soon as it
    /// opens. Ok(false) when every task slot is in use.
    ///
    /// # Safety
    /// `buf` must be valid for `len` bytes (reads: writable) and stay untouched by the caller
    /// until the task with `tag` is handed back by [`Session::drain_finished`] or the session
    /// is dropped.
    pub unsafe fn submit(
        &mut self,
        tag: u64,
        cdb: Cdb,
        dir: Dir,
        buf: *mut u8,
        len: u32,
    ) -> Result<bool> {
        if self.logged_out {
            return Err(Error::Invalid {
                portal: self.wire.portal.clone(),
                reason: "the session is already logged out".into(),
            });
        }
        let Some(idx) = self.tasks.alloc() else {
            return Ok(false);
        };
        let t = self.tasks.get_mut(idx);
        t.tag = tag;
        t.cdb = cdb;
        t.dir = if len == 0 { Dir::None } else { dir };
        t.buf = buf;
        t.len = len;
        t.received = 0;
        t.unit_attention_retries = 0;
        t.busy_retries = 0;
        t.not_before = None;
        t.state = State::Waiting;
        if self.waiting.is_empty() && self.window_open() {
            self.send_task(idx);
        } else {
            self.waiting.push_back(idx);
        }
        Ok(true)
    }

    /// Writes what is queued, without waiting.
    pub fn flush(&mut self) -> Result<()> {
        self.wire.flush().map(|_| ())
    }

    /// Tasks that ended since the last drain.
    pub fn drain_finished(&mut self) -> std::vec::Drain<'_, Finished> {
        self.finished.drain(..)
    }

    /// Reads, sends and waits until at least `min` tasks have finished (capped at the number
    /// accepted); `min == 0` only collects what is ready. Errors mean the connection is lost
    /// (see [`Error::is_connection_loss`]) or the target broke the protocol.
    pub fn wait_finished(&mut self, min: usize) -> Result<()> {
        let mut seen = self.finished.len();
        let mut last_progress: Option<Instant> = None;
        loop {
            self.wire.flush()?;
            self.pump()?;
            if !self.delayed.is_empty() {
                self.release_delayed(Instant::now());
            }
            if !self.waiting.is_empty() {
                self.send_waiting();
            }
            self.wire.flush()?;
            let need = min.min(self.finished.len() + self.tasks.in_use());
            if self.finished.len() >= need {
                return Ok(());
            }
            let now = Instant::now();
            if self.finished.len() > seen || last_progress.is_none() {
                seen = self.finished.len();
                last_progress = Some(now);
            }
            let since = last_progress.unwrap_or(now);
            self.check_liveness(now, since)?;
            let wake = self.next_wakeup(now, since);
            self.wait_input(wake)?;
        }
    }

    /// Sleeps until input arrives or `wake` passes. Between PDUs, with nothing to send and no
    /// deadline nearer than [`RECV_TICK`], this is one blocking receive that also reads the
    /// input (a `poll` then a `recv` otherwise): the common case at every queue depth.
    fn wait_input(&mut self, wake: Duration) -> Result<()> {
        let between_pdus = matches!(self.phase, Phase::Header);
        if between_pdus && self.wire.out.is_empty() && wake >= RECV_TICK {
            let max = if self.rx_exact {
                (BHS_LEN + self.wire.header_digest.len())
                    .saturating_sub(self.wire.rx.available().len())
                    .max(1)
            } else {
                usize::MAX
            };
            self.wire.fill_blocking(max)?;
            return Ok(());
        }
        self.wire.wait(wake).map(|_| ())
    }

    fn check_liveness(&mut self, now: Instant, since: Instant) -> Result<()> {
        let t = self.cfg.timeouts;
        if now.duration_since(since) > t.io {
            return Err(self.wire.timeout("waiting for SCSI responses", t.io));
        }
        match self.ping {
            Some((_, at)) if now.duration_since(at) > t.nop_timeout => {
                Err(self.wire.timeout("NOP-Out ping", t.nop_timeout))
            }
            None if now.duration_since(self.wire.last_rx) > t.nop_interval => {
                self.send_ping(now);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Queues a NOP-Out ping of ours (a fresh ITT, immediate): the target answers with a
    /// NOP-In of the same ITT, which clears `ping`.
    fn send_ping(&mut self, now: Instant) {
        let itt = self.session_itt();
        let mut bhs = Bhs::default();
        pdu::nop_out(
            &mut bhs,
            itt,
            RESERVED_TAG,
            self.cmd_sn,
            self.exp_stat_sn,
            0,
        );
        self.wire.queue_copy(&bhs, &[]);
        self.ping = Some((itt, now));
    }

    /// A NOP-Out ping, waited for: iSCSI's no-op, which the target answers without a SCSI
    /// task (the round trip is timed by it). Tasks in flight go on meanwhile.
    pub fn nop(&mut self) -> Result<()> {
        let since = Instant::now();
        if self.ping.is_none() {
            self.send_ping(since);
        }
        loop {
            self.wire.flush()?;
            self.pump()?;
            if self.ping.is_none() {
                return Ok(());
            }
            let now = Instant::now();
            self.check_liveness(now, since)?;
            let wake = self.next_wakeup(now, since);
            self.wait_input(wake)?;
        }
    }

    fn next_wakeup(&self, now: Instant, since: Instant) -> Duration {
        let t = self.cfg.timeouts;
        let mut wake = t
            .nop_interval
            .min((since + t.io).saturating_duration_since(now));
        if let Some((_, at)) = self.ping {
            wake = wake.min((at + t.nop_timeout).saturating_duration_since(now));
        }
        for &idx in &self.delayed {
            if let Some(at) = self.tasks.get(idx).not_before {
                wake = wake.min(at.saturating_duration_since(now));
            }
        }
        wake.max(Duration::from_millis(1))
    }

    fn release_delayed(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.delayed.len() {
            let idx = self.delayed[i];
            if self.tasks.get(idx).not_before.is_none_or(|at| at <= now) {
                self.delayed.swap_remove(i);
                self.tasks.get_mut(idx).not_before = None;
                self.waiting.push_back(idx);
            } else {
                i += 1;
            }
        }
    }

    #[inline]
    fn window_open(&self) -> bool {
        pdu::sn_le(self.cmd_sn, self.max_cmd_sn)
    }

    /// Sends waiting tasks while the window allows.
    pub(crate) fn send_waiting(&mut self) {
        while let Some(&idx) = self.waiting.front() {
            if !self.window_open() {
                break;
            }
            self.waiting.pop_front();
            self.send_task(idx);
        }
    }

    /// Queues the SCSI Command PDU with immediate data and any unsolicited Data-Out.
    fn send_task(&mut self, idx: u16) {
        let t = *self.tasks.get(idx);
        let neg = &self.neg;
        let (mut imm, mut unsolicited_end) = (0, 0);
        if t.dir == Dir::Write {
            let first = neg.first_burst_length.min(t.len);
            if neg.immediate_data {
                imm = first.min(neg.max_send_data_segment_length);
            }
            unsolicited_end = if neg.initial_r2t { imm } else { first };
        }
        let mut bhs = Bhs::default();
        ScsiCommand {
            lun: self.lun,
            itt: t.itt,
            cmd_sn: self.cmd_sn,
            exp_stat_sn: self.exp_stat_sn,
            read: t.dir == Dir::Read,
            write: t.dir == Dir::Write,
            expected_len: t.len,
            cdb: &t.cdb,
            data_len: imm,
        }
        .encode(&mut bhs);
        if unsolicited_end > imm {
            bhs.0[1] &= !flag::FINAL;
        }
        self.cmd_sn = self.cmd_sn.wrapping_add(1);
        // SAFETY: the task buffer stays valid until the task completes (submit's contract),
        // which is after the flush of this PDU.
        unsafe { self.wire.queue(&bhs, raw(t.buf, imm)) };
        self.queue_data_out(idx, RESERVED_TAG, imm, unsolicited_end - imm);
        self.tasks.get_mut(idx).state = State::Sent;
    }

    /// Queues Data-Out PDUs for bytes `offset..offset+len` of a write task.
    fn queue_data_out(&mut self, idx: u16, ttt: u32, offset: u32, len: u32) {
        let t = *self.tasks.get(idx);
        let max = self.neg.max_send_data_segment_length.max(512);
        let end = offset + len;
        let (mut at, mut data_sn) = (offset, 0);
        while at < end {
            let n = max.min(end - at);
            let mut bhs = Bhs::default();
            DataOut {
                lun: self.lun,
                itt: t.itt,
                ttt,
                exp_stat_sn: self.exp_stat_sn,
                data_sn,
                offset: at,
                len: n,
                last: at + n == end,
            }
            .encode(&mut bhs);
            // SAFETY: as in send_task; `at + n <= t.len` is checked by the callers.
            unsafe { self.wire.queue(&bhs, raw(t.buf.add(at as usize), n)) };
            at += n;
            data_sn += 1;
        }
    }

    /// Reads and handles every PDU the socket has ready.
    pub(crate) fn pump(&mut self) -> Result<()> {
        loop {
            let more = match self.phase {
                Phase::Header => self.header_step()?,
                Phase::Data { .. } => self.data_step()?,
            };
            if self.async_drop {
                return Err(Error::Closed {
                    portal: self.wire.portal.clone(),
                    op: "the session (the target announced it will drop the connection)",
                });
            }
            if !more || self.logged_out {
                return Ok(());
            }
        }
    }

    /// Ensures `n` bytes are buffered; false if the socket has no more now. While large
    /// Data-In payloads arrive, only the missing bytes are read (see [`Session::rx_exact`]).
    fn have(&mut self, n: usize) -> Result<bool> {
        if self.wire.rx.available().len() >= n {
            return Ok(true);
        }
        self.wire.make_room(n);
        loop {
            let missing = n.saturating_sub(self.wire.rx.available().len());
            if missing == 0 {
                return Ok(true);
            }
            let max = if self.rx_exact { missing } else { usize::MAX };
            if !self.wire.fill_at_most(max)? {
                return Ok(false);
            }
        }
    }

    fn header_step(&mut self) -> Result<bool> {
        let hd = self.wire.header_digest.len();
        if !self.have(BHS_LEN + hd)? {
            return Ok(false);
        }
        let bhs = Bhs::from_slice(self.wire.rx.available()).unwrap_or_default();
        let hdr_len = BHS_LEN + bhs.ahs_len() + hd;
        if !self.have(hdr_len)? {
            return Ok(false);
        }
        if hd > 0 {
            let b = self.wire.rx.available();
            if b[hdr_len - 4..hdr_len] != pdu::digest(&b[..hdr_len - 4]) {
                return Err(self.wire.proto("receive", "header digest mismatch".into()));
            }
        }
        self.wire.rx.consume(hdr_len);
        self.bhs = bhs;
        self.begin_data()?;
        Ok(true)
    }

    /// Picks where the data segment goes: the task buffer for Data-In, else scratch.
    fn begin_data(&mut self) -> Result<()> {
        let dlen = self.bhs.data_len();
        self.rx_task = None;
        if dlen == 0 {
            return self.dispatch();
        }
        if dlen as usize > self.scratch.capacity() {
            return Err(self.wire.proto(
                "receive",
                format!("data segment of {dlen} bytes exceeds our MaxRecvDataSegmentLength"),
            ));
        }
        let mut dst = std::ptr::null_mut();
        self.rx_exact = dlen as usize >= DIRECT_MIN && self.bhs.opcode() == op::DATA_IN;
        let task = match self.bhs.opcode() {
            op::DATA_IN => self.tasks.find(self.bhs.itt()),
            _ => None,
        };
        if let Some(idx) = task {
            let t = self.tasks.get(idx);
            let off = self.bhs.buffer_offset();
            if t.dir != Dir::Read || off as u64 + dlen as u64 > t.len as u64 {
                let why = format!(
                    "{dlen} bytes at offset {off} do not fit the {}-byte read",
                    t.len
                );
                return Err(self.wire.proto("Data-In", why));
            }
            // SAFETY: in bounds of the task buffer, checked just above.
            dst = unsafe { t.buf.add(off as usize) };
            self.rx_task = Some(idx);
        }
        if dst.is_null() {
            self.scratch.clear();
            self.scratch.resize(dlen as usize, 0);
            dst = self.scratch.as_mut_ptr();
        }
        self.phase = Phase::Data {
            dst,
            got: 0,
            crc: 0,
        };
        Ok(())
    }

    fn data_step(&mut self) -> Result<bool> {
        let Phase::Data {
            dst,
            mut got,
            mut crc,
        } = self.phase
        else {
            return Ok(true);
        };
        let dlen = self.bhs.data_len();
        let digest = !self.wire.data_digest.is_none();
        while got < dlen {
            let want = (dlen - got) as usize;
            // SAFETY: dst has room for dlen bytes (begin_data).
            let at = unsafe { dst.add(got as usize) };
            let avail = self.wire.rx.available();
            let n = if !avail.is_empty() {
                let n = avail.len().min(want);
                // SAFETY: n bytes fit at `at`; source and destination never overlap.
                unsafe { std::ptr::copy_nonoverlapping(avail.as_ptr(), at, n) };
                self.wire.rx.consume(n);
                n
            } else if want >= DIRECT_MIN || self.rx_exact {
                // SAFETY: `want` bytes fit at `at`.
                unsafe { self.wire.read_direct(at, want)? }
            } else if self.wire.fill()? {
                continue;
            } else {
                0
            };
            if n == 0 {
                self.phase = Phase::Data { dst, got, crc };
                return Ok(false);
            }
            if digest {
                // SAFETY: the n bytes just written at `at`.
                crc = crc32c::crc32c_append(crc, unsafe { raw(at, n as u32) });
            }
            got += n as u32;
        }
        self.phase = Phase::Data { dst, got, crc };
        let pad = pad_len(dlen as usize);
        let tail = pad + self.wire.data_digest.len();
        if tail > 0 {
            if !self.have(tail)? {
                return Ok(false);
            }
            if digest {
                let b = self.wire.rx.available();
                let crc = crc32c::crc32c_append(crc, &b[..pad]);
                if b[pad..pad + 4] != crc.to_le_bytes() {
                    return Err(self.wire.proto("receive", "data digest mismatch".into()));
                }
            }
            self.wire.rx.consume(tail);
        }
        self.phase = Phase::Header;
        self.dispatch()?;
        Ok(true)
    }

    fn dispatch(&mut self) -> Result<()> {
        let bhs = self.bhs;
        self.update_window(bhs.exp_cmd_sn(), bhs.max_cmd_sn());
        if bhs.carries_status() {
            let next = bhs.stat_sn().wrapping_add(1);
            if pdu::sn_lt(self.exp_stat_sn, next) {
                self.exp_stat_sn = next;
            }
        }
        match bhs.opcode() {
            op::DATA_IN => self.on_data_in(),
            op::SCSI_RESP => self.on_response(),
            op::R2T => self.on_r2t()?,
            op::NOP_IN => self.on_nop_in(),
            op::ASYNC => {
                // 1: logout requested, 2/3: connection(s) will be dropped.
                if matches!(bhs.0[36], 1..=3) {
                    self.async_drop = true;
                }
            }
            op::REJECT => self.on_reject(),
            op::LOGOUT_RESP => self.logged_out = true,
            op::TASK_MGMT_RESP | op::TEXT_RESP | op::LOGIN_RESP => {}
            other => {
                return Err(self
                    .wire
                    .proto("receive", format!("unexpected opcode {other:#04x}")));
            }
        }
        if !self.waiting.is_empty() {
            self.send_waiting();
        }
        Ok(())
    }

    fn update_window(&mut self, exp: u32, max: u32) {
        // MaxCmdSN = ExpCmdSN - 1 means a closed window; anything below is invalid.
        if pdu::sn_lt(max, exp.wrapping_sub(1)) {
            return;
        }
        if pdu::sn_lt(self.exp_cmd_sn, exp) {
            self.exp_cmd_sn = exp;
        }
        if pdu::sn_lt(self.max_cmd_sn, max) {
            self.max_cmd_sn = max;
        }
    }

    fn on_data_in(&mut self) {
        let bhs = self.bhs;
        let Some(idx) = self.rx_task.take().or_else(|| self.tasks.find(bhs.itt())) else {
            return; // a late reply to a task already re-issued or finished
        };
        let t = self.tasks.get_mut(idx);
        t.received = t.received.saturating_add(bhs.data_len());
        if bhs.flags() & flag::STATUS != 0 {
            let residual = if bhs.flags() & flag::UNDERFLOW != 0 {
                bhs.u32_44()
            } else {
                0
            };
            self.complete(idx, bhs.status(), None, residual);
        }
    }

    fn on_response(&mut self) {
        let bhs = self.bhs;
        let Some(idx) = self.tasks.find(bhs.itt()) else {
            return;
        };
        if bhs.byte2() != 0 {
            self.fail(idx, ScsiFailure::Response(bhs.byte2()));
            return;
        }
        let sense = if bhs.status() == STATUS_CHECK_CONDITION && self.scratch.len() >= 2 {
            let n = u16::from_be_bytes([self.scratch[0], self.scratch[1]]) as usize;
            Sense::parse(&self.scratch[2..(2 + n).min(self.scratch.len())])
        } else {
            None
        };
        let residual = if bhs.flags() & flag::RESP_UNDERFLOW != 0 {
            bhs.u32_44()
        } else {
            0
        };
        self.complete(idx, bhs.status(), sense, residual);
    }

    fn complete(&mut self, idx: u16, status: u8, sense: Option<Sense>, residual: u32) {
        let t = *self.tasks.get(idx);
        match (status, sense) {
            (STATUS_GOOD | STATUS_CONDITION_MET, _) => {
                self.finish(idx, Outcome::Done(t.len.saturating_sub(residual)));
            }
            (STATUS_CHECK_CONDITION, Some(s))
                if s.is_unit_attention() && t.unit_attention_retries == 0 =>
            {
                self.tasks.get_mut(idx).unit_attention_retries = 1;
                self.retry(idx, None);
            }
            (STATUS_CHECK_CONDITION, Some(s))
                if s.is_invalid_opcode() && to_cdb10(&t.cdb).is_some() =>
            {
                self.use_cdb10 = true;
                self.tasks.get_mut(idx).cdb = to_cdb10(&t.cdb).unwrap_or(t.cdb);
                self.retry(idx, None);
            }
            (STATUS_CHECK_CONDITION, Some(s)) => self.fail(idx, ScsiFailure::Check(s)),
            (STATUS_BUSY | STATUS_TASK_SET_FULL, _) if t.busy_retries < MAX_BUSY_RETRIES => {
                let n = t.busy_retries + 1;
                self.tasks.get_mut(idx).busy_retries = n;
                let backoff = Duration::from_micros(500u64 << n.min(8)).min(MAX_BACKOFF);
                self.retry(idx, Some(Instant::now() + backoff));
            }
            _ => self.fail(idx, ScsiFailure::Status(status)),
        }
    }

    fn retry(&mut self, idx: u16, not_before: Option<Instant>) {
        self.tasks.renew_itt(idx);
        let t = self.tasks.get_mut(idx);
        t.state = State::Waiting;
        t.received = 0;
        t.not_before = not_before;
        if not_before.is_some() {
            self.delayed.push(idx);
        } else {
            self.waiting.push_back(idx);
        }
    }

    fn fail(&mut self, idx: u16, failure: ScsiFailure) {
        let cdb = self.tasks.get(idx).cdb;
        self.finish(idx, Outcome::Failed { cdb, failure });
    }

    fn finish(&mut self, idx: u16, outcome: Outcome) {
        let tag = self.tasks.get(idx).tag;
        self.finished.push(Finished { tag, outcome });
        self.tasks.release(idx);
    }

    fn on_r2t(&mut self) -> Result<()> {
        let bhs = self.bhs;
        let Some(idx) = self.tasks.find(bhs.itt()) else {
            return Ok(());
        };
        let t = self.tasks.get(idx);
        let (off, len) = (bhs.buffer_offset(), bhs.u32_44());
        if t.dir != Dir::Write || len == 0 || off as u64 + len as u64 > t.len as u64 {
            return Err(self.wire.proto(
                "R2T",
                format!(
                    "{len} bytes at offset {off} requested for a {}-byte write",
                    t.len
                ),
            ));
        }
        self.queue_data_out(idx, bhs.ttt(), off, len);
        Ok(())
    }

    fn on_nop_in(&mut self) {
        let bhs = self.bhs;
        if bhs.ttt() != RESERVED_TAG {
            let mut out = Bhs::default();
            let dlen = self.scratch.len().min(bhs.data_len() as usize);
            pdu::nop_out(
                &mut out,
                RESERVED_TAG,
                bhs.ttt(),
                self.cmd_sn,
                self.exp_stat_sn,
                dlen as u32,
            );
            out.0[8..16].copy_from_slice(&bhs.lun());
            self.wire.queue_copy(&out, &self.scratch[..dlen]);
        }
        if self.ping.is_some_and(|(itt, _)| itt == bhs.itt()) {
            self.ping = None;
        }
    }

    fn on_reject(&mut self) {
        let reason = self.bhs.byte2();
        let Some(rejected) = Bhs::from_slice(&self.scratch) else {
            return;
        };
        if let Some(idx) = self.tasks.find(rejected.itt()) {
            self.fail(idx, ScsiFailure::Rejected(reason));
        }
    }
}

/// The 10-byte form of a 16-byte READ/WRITE/SYNCHRONIZE CACHE, if it fits.
fn to_cdb10(cdb: &Cdb) -> Option<Cdb> {
    let fua = cdb[1] & 0x08 != 0;
    let blocks = u32::from_be_bytes(cdb[10..14].try_into().ok()?);
    match cdb[0] {
        scsi::opcode::READ_16 => scsi::rw10(false, scsi::lba_of(cdb)?, blocks, fua),
        scsi::opcode::WRITE_16 => scsi::rw10(true, scsi::lba_of(cdb)?, blocks, fua),
        scsi::opcode::SYNCHRONIZE_CACHE_16 => Some(scsi::sync_cache10()),
        _ => None,
    }
}
