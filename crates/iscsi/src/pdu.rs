//! The 48-byte Basic Header Segment (RFC 7143 11.2) and the PDUs an initiator builds.
//!
//! Headers are plain byte arrays read and written through named accessors, so the hot path
//! neither allocates nor copies: building a SCSI Command is 48 stores into a send buffer.

/// Length of the Basic Header Segment.
pub const BHS_LEN: usize = 48;
/// The reserved tag value ("no task" / "no transfer").
pub const RESERVED_TAG: u32 = 0xffff_ffff;
/// Largest data segment the 24-bit length field can describe.
pub const MAX_DATA_SEGMENT: u32 = 0x00ff_ffff;

/// Opcodes (byte 0, low six bits).
pub mod op {
    pub const NOP_OUT: u8 = 0x00;
    pub const SCSI_CMD: u8 = 0x01;
    pub const TASK_MGMT: u8 = 0x02;
    pub const LOGIN_REQ: u8 = 0x03;
    pub const TEXT_REQ: u8 = 0x04;
    pub const DATA_OUT: u8 = 0x05;
    pub const LOGOUT_REQ: u8 = 0x06;
    pub const NOP_IN: u8 = 0x20;
    pub const SCSI_RESP: u8 = 0x21;
    pub const TASK_MGMT_RESP: u8 = 0x22;
    pub const LOGIN_RESP: u8 = 0x23;
    pub const TEXT_RESP: u8 = 0x24;
    pub const DATA_IN: u8 = 0x25;
    pub const LOGOUT_RESP: u8 = 0x26;
    pub const R2T: u8 = 0x31;
    pub const ASYNC: u8 = 0x32;
    pub const REJECT: u8 = 0x3f;
}

/// Flag bits of byte 1.
pub mod flag {
    pub const FINAL: u8 = 0x80;
    /// SCSI Command: data flows to the initiator.
    pub const READ: u8 = 0x40;
    /// SCSI Command: data flows to the target.
    pub const WRITE: u8 = 0x20;
    /// Simple task attribute.
    pub const ATTR_SIMPLE: u8 = 0x01;
    /// Login: transit to the next stage.
    pub const TRANSIT: u8 = 0x80;
    /// Login / Text: more text follows.
    pub const CONTINUE: u8 = 0x40;
    /// Data-In: acknowledge requested (ERL > 0 only).
    pub const ACK: u8 = 0x40;
    /// Data-In: residual overflow / underflow; S: status is included.
    pub const OVERFLOW: u8 = 0x04;
    pub const UNDERFLOW: u8 = 0x02;
    pub const STATUS: u8 = 0x01;
    /// SCSI Response: residual overflow / underflow.
    pub const RESP_OVERFLOW: u8 = 0x04;
    pub const RESP_UNDERFLOW: u8 = 0x02;
}

/// The immediate-delivery bit of byte 0.
pub const IMMEDIATE: u8 = 0x40;

/// A Basic Header Segment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Bhs(pub [u8; BHS_LEN]);

impl std::fmt::Debug for Bhs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Bhs(op {:#04x}, flags {:#04x}, itt {:#x}, dlen {})",
            self.opcode(),
            self.flags(),
            self.itt(),
            self.data_len()
        )
    }
}

impl Default for Bhs {
    fn default() -> Self {
        Bhs([0; BHS_LEN])
    }
}

impl Bhs {
    pub fn from_slice(bytes: &[u8]) -> Option<Bhs> {
        let arr: [u8; BHS_LEN] = bytes.get(..BHS_LEN)?.try_into().ok()?;
        Some(Bhs(arr))
    }

    #[inline]
    pub fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes([self.0[at], self.0[at + 1], self.0[at + 2], self.0[at + 3]])
    }

    #[inline]
    pub fn set_u32(&mut self, at: usize, v: u32) {
        self.0[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }

    #[inline]
    pub fn u16_at(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.0[at], self.0[at + 1]])
    }

    #[inline]
    pub fn opcode(&self) -> u8 {
        self.0[0] & 0x3f
    }

    #[inline]
    pub fn is_immediate(&self) -> bool {
        self.0[0] & IMMEDIATE != 0
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        self.0[1]
    }

    /// Total AHS length in bytes (the field counts 4-byte words).
    #[inline]
    pub fn ahs_len(&self) -> usize {
        self.0[4] as usize * 4
    }

    #[inline]
    pub fn data_len(&self) -> u32 {
        u32::from_be_bytes([0, self.0[5], self.0[6], self.0[7]])
    }

    #[inline]
    pub fn set_data_len(&mut self, len: u32) {
        let b = len.to_be_bytes();
        self.0[5..8].copy_from_slice(&b[1..]);
    }

    #[inline]
    pub fn lun(&self) -> [u8; 8] {
        self.0[8..16].try_into().unwrap_or([0; 8])
    }

    #[inline]
    pub fn itt(&self) -> u32 {
        self.u32_at(16)
    }

    /// Target Transfer Tag (NOP, Data-In, R2T, Text) at bytes 20..24.
    #[inline]
    pub fn ttt(&self) -> u32 {
        self.u32_at(20)
    }

    /// StatSN at 24 in every target PDU.
    #[inline]
    pub fn stat_sn(&self) -> u32 {
        self.u32_at(24)
    }

    #[inline]
    pub fn exp_cmd_sn(&self) -> u32 {
        self.u32_at(28)
    }

    #[inline]
    pub fn max_cmd_sn(&self) -> u32 {
        self.u32_at(32)
    }

    /// Data-In DataSN / R2T R2TSN / SCSI Response ExpDataSN at 36.
    #[inline]
    pub fn sn36(&self) -> u32 {
        self.u32_at(36)
    }

    /// Data-In / R2T Buffer Offset at 40.
    #[inline]
    pub fn buffer_offset(&self) -> u32 {
        self.u32_at(40)
    }

    /// R2T Desired Data Transfer Length, Data-In / SCSI Response residual count, at 44.
    #[inline]
    pub fn u32_44(&self) -> u32 {
        self.u32_at(44)
    }

    /// SCSI Response `response` byte; Logout Response `response`; Reject `reason`.
    #[inline]
    pub fn byte2(&self) -> u8 {
        self.0[2]
    }

    /// SCSI status (SCSI Response, Data-In with S).
    #[inline]
    pub fn status(&self) -> u8 {
        self.0[3]
    }

    /// Login Response status class and detail.
    pub fn login_status(&self) -> (u8, u8) {
        (self.0[36], self.0[37])
    }

    pub fn tsih(&self) -> u16 {
        self.u16_at(14)
    }

    /// Whether the StatSN of this target PDU acknowledges a status (and so advances
    /// ExpStatSN). R2T and unsolicited NOP-In only repeat the next StatSN.
    pub fn carries_status(&self) -> bool {
        match self.opcode() {
            op::SCSI_RESP | op::LOGIN_RESP | op::TEXT_RESP | op::LOGOUT_RESP => true,
            op::TASK_MGMT_RESP | op::ASYNC | op::REJECT => true,
            op::DATA_IN => self.flags() & flag::STATUS != 0,
            op::NOP_IN => self.itt() != RESERVED_TAG,
            _ => false,
        }
    }
}

/// Encodes a LUN number in the SAM-5 form targets expect: peripheral addressing below 256,
/// flat space addressing up to 16383.
pub fn encode_lun(lun: u64) -> [u8; 8] {
    let mut out = [0u8; 8];
    if lun < 256 {
        out[1] = lun as u8;
    } else {
        let l = (lun & 0x3fff) as u16;
        out[0] = 0x40 | (l >> 8) as u8;
        out[1] = l as u8;
    }
    out
}

/// Decodes the first level of an 8-byte LUN from REPORT LUNS.
pub fn decode_lun(b: [u8; 8]) -> u64 {
    match b[0] >> 6 {
        0 => b[1] as u64 | (((b[0] & 0x3f) as u64) << 8),
        1 => (((b[0] & 0x3f) as u64) << 8) | b[1] as u64,
        _ => u64::from_be_bytes(b),
    }
}

/// Sequence numbers compare in serial number arithmetic (RFC 1982, 32 bits).
#[inline]
pub fn sn_lt(a: u32, b: u32) -> bool {
    a != b && (b.wrapping_sub(a) as i32) > 0
}

#[inline]
pub fn sn_le(a: u32, b: u32) -> bool {
    a == b || sn_lt(a, b)
}

/// Fields of a SCSI Command PDU.
#[derive(Clone, Copy, Debug)]
pub struct ScsiCommand<'a> {
    pub lun: [u8; 8],
    pub itt: u32,
    pub cmd_sn: u32,
    pub exp_stat_sn: u32,
    pub read: bool,
    pub write: bool,
    pub expected_len: u32,
    pub cdb: &'a [u8],
    /// Immediate data carried in this PDU.
    pub data_len: u32,
}

impl ScsiCommand<'_> {
    /// Writes the header; `cdb` beyond 16 bytes would need an AHS and is refused by callers.
    pub fn encode(&self, out: &mut Bhs) {
        out.0 = [0; BHS_LEN];
        out.0[0] = op::SCSI_CMD;
        let mut f = flag::FINAL | flag::ATTR_SIMPLE;
        if self.read {
            f |= flag::READ;
        }
        if self.write {
            f |= flag::WRITE;
        }
        out.0[1] = f;
        out.set_data_len(self.data_len);
        out.0[8..16].copy_from_slice(&self.lun);
        out.set_u32(16, self.itt);
        out.set_u32(20, self.expected_len);
        out.set_u32(24, self.cmd_sn);
        out.set_u32(28, self.exp_stat_sn);
        let n = self.cdb.len().min(16);
        out.0[32..32 + n].copy_from_slice(&self.cdb[..n]);
    }
}

/// Fields of a Data-Out PDU.
#[derive(Clone, Copy, Debug)]
pub struct DataOut {
    pub lun: [u8; 8],
    pub itt: u32,
    pub ttt: u32,
    pub exp_stat_sn: u32,
    pub data_sn: u32,
    pub offset: u32,
    pub len: u32,
    pub last: bool,
}

impl DataOut {
    pub fn encode(&self, out: &mut Bhs) {
        out.0 = [0; BHS_LEN];
        out.0[0] = op::DATA_OUT;
        out.0[1] = if self.last { flag::FINAL } else { 0 };
        out.set_data_len(self.len);
        out.0[8..16].copy_from_slice(&self.lun);
        out.set_u32(16, self.itt);
        out.set_u32(20, self.ttt);
        out.set_u32(28, self.exp_stat_sn);
        out.set_u32(36, self.data_sn);
        out.set_u32(40, self.offset);
    }
}

/// A NOP-Out: a ping of ours (`itt` fresh, `ttt` reserved) or the answer to a target's
/// NOP-In (`itt` reserved, `ttt` echoed).
pub fn nop_out(out: &mut Bhs, itt: u32, ttt: u32, cmd_sn: u32, exp_stat_sn: u32, dlen: u32) {
    immediate_final(out, op::NOP_OUT, [itt, ttt, cmd_sn, exp_stat_sn], dlen);
}

/// The layout NOP-Out and Text Request share: immediate, final, no LUN, then the ITT, the
/// TTT, CmdSN and ExpStatSN (`words`, at bytes 16 to 31).
fn immediate_final(out: &mut Bhs, opcode: u8, words: [u32; 4], dlen: u32) {
    out.0 = [0; BHS_LEN];
    out.0[0] = opcode | IMMEDIATE;
    out.0[1] = flag::FINAL;
    out.set_data_len(dlen);
    for (i, word) in words.into_iter().enumerate() {
        out.set_u32(16 + 4 * i, word);
    }
}

/// Login stages (CSG/NSG).
pub mod stage {
    pub const SECURITY: u8 = 0;
    pub const OPERATIONAL: u8 = 1;
    pub const FULL_FEATURE: u8 = 3;
}

/// Fields of a Login Request.
#[derive(Clone, Copy, Debug)]
pub struct LoginRequest {
    pub transit: bool,
    pub csg: u8,
    pub nsg: u8,
    pub isid: [u8; 6],
    pub tsih: u16,
    pub itt: u32,
    pub cid: u16,
    pub cmd_sn: u32,
    pub exp_stat_sn: u32,
    pub data_len: u32,
}

impl LoginRequest {
    pub fn encode(&self, out: &mut Bhs) {
        out.0 = [0; BHS_LEN];
        out.0[0] = op::LOGIN_REQ | IMMEDIATE;
        let mut f = (self.csg & 3) << 2;
        if self.transit {
            f |= flag::TRANSIT | (self.nsg & 3);
        }
        out.0[1] = f;
        out.0[2] = 0; // version-max
        out.0[3] = 0; // version-min
        out.set_data_len(self.data_len);
        out.0[8..14].copy_from_slice(&self.isid);
        out.0[14..16].copy_from_slice(&self.tsih.to_be_bytes());
        out.set_u32(16, self.itt);
        out.0[20..22].copy_from_slice(&self.cid.to_be_bytes());
        out.set_u32(24, self.cmd_sn);
        out.set_u32(28, self.exp_stat_sn);
    }
}

/// A Text Request (final, no continuation) carrying `dlen` bytes of key=value text.
pub fn text_request(out: &mut Bhs, itt: u32, ttt: u32, cmd_sn: u32, exp_stat_sn: u32, dlen: u32) {
    immediate_final(out, op::TEXT_REQ, [itt, ttt, cmd_sn, exp_stat_sn], dlen);
}

/// A Logout Request closing the whole session (reason 0).
pub fn logout_request(out: &mut Bhs, itt: u32, cid: u16, cmd_sn: u32, exp_stat_sn: u32) {
    out.0 = [0; BHS_LEN];
    out.0[0] = op::LOGOUT_REQ | IMMEDIATE;
    out.0[1] = flag::FINAL;
    out.set_u32(16, itt);
    out.0[20..22].copy_from_slice(&cid.to_be_bytes());
    out.set_u32(24, cmd_sn);
    out.set_u32(28, exp_stat_sn);
}

/// Bytes of padding after a data segment of `len` bytes.
#[inline]
pub fn pad_len(len: usize) -> usize {
    (4 - (len & 3)) & 3
}

/// The iSCSI digest: CRC32C, sent least significant byte first (as Linux and tgtd do).
#[inline]
pub fn digest(data: &[u8]) -> [u8; 4] {
    crc32c::crc32c(data).to_le_bytes()
}

/// The target-side names of login status codes (RFC 7143 11.13.5).
pub fn login_status_text(class: u8, detail: u8) -> &'static str {
    match (class, detail) {
        (0, _) => "success",
        (1, 1) => "target moved temporarily",
        (1, 2) => "target moved permanently",
        (1, _) => "redirection",
        (2, 0) => "initiator error",
        (2, 1) => "authentication failure",
        (2, 2) => "authorization failure (initiator not allowed)",
        (2, 3) => "target not found",
        (2, 4) => "target removed",
        (2, 5) => "unsupported iSCSI version",
        (2, 6) => "too many connections",
        (2, 7) => "missing parameter",
        (2, 8) => "cannot include connection in session",
        (2, 9) => "session type not supported",
        (2, 10) => "session does not exist",
        (2, 11) => "invalid request during login",
        (2, _) => "initiator error",
        (3, 0) => "target error",
        (3, 1) => "service unavailable",
        (3, 2) => "out of resources",
        (3, _) => "target error",
        _ => "unknown status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn scsi_command_round_trips(itt: u32, sn: u32, esn: u32, edtl: u32, read: bool,
                                    lun in 0u64..16384, dlen in 0u32..=MAX_DATA_SEGMENT,
                                    cdb in proptest::collection::vec(any::<u8>(), 16)) {
            let mut h = Bhs::default();
            ScsiCommand { lun: encode_lun(lun), itt, cmd_sn: sn, exp_stat_sn: esn, read,
                          write: !read, expected_len: edtl, cdb: &cdb, data_len: dlen }
                .encode(&mut h);
            prop_assert_eq!(h.opcode(), op::SCSI_CMD);
            prop_assert_eq!(h.itt(), itt);
            prop_assert_eq!(h.u32_at(20), edtl);
            prop_assert_eq!(h.u32_at(24), sn);
            prop_assert_eq!(h.u32_at(28), esn);
            prop_assert_eq!(h.data_len(), dlen);
            prop_assert_eq!(decode_lun(h.lun()), lun);
            prop_assert_eq!(h.flags() & flag::READ != 0, read);
            prop_assert_eq!(&h.0[32..48], &cdb[..]);
        }

        #[test]
        fn data_out_round_trips(itt: u32, ttt: u32, dsn: u32, off: u32,
                                len in 0u32..=MAX_DATA_SEGMENT, last: bool) {
            let mut h = Bhs::default();
            DataOut { lun: encode_lun(1), itt, ttt, exp_stat_sn: 7, data_sn: dsn, offset: off,
                      len, last }.encode(&mut h);
            prop_assert_eq!(h.opcode(), op::DATA_OUT);
            prop_assert_eq!((h.itt(), h.ttt(), h.sn36(), h.buffer_offset()), (itt, ttt, dsn, off));
            prop_assert_eq!(h.data_len(), len);
            prop_assert_eq!(h.flags() & flag::FINAL != 0, last);
        }

        #[test]
        fn serial_order_is_antisymmetric(a: u32, d in 1u32..0x7fff_ffff) {
            let b = a.wrapping_add(d);
            prop_assert!(sn_lt(a, b));
            prop_assert!(!sn_lt(b, a));
            prop_assert!(sn_le(a, a));
        }
    }

    #[test]
    fn login_request_layout() {
        let mut h = Bhs::default();
        LoginRequest {
            transit: true,
            csg: stage::OPERATIONAL,
            nsg: stage::FULL_FEATURE,
            isid: [0x80, 1, 2, 3, 4, 5],
            tsih: 0x1234,
            itt: 9,
            cid: 1,
            cmd_sn: 5,
            exp_stat_sn: 6,
            data_len: 100,
        }
        .encode(&mut h);
        assert_eq!(h.0[0], 0x43);
        assert_eq!(h.0[1], 0x80 | 0x04 | 0x03);
        assert_eq!(&h.0[8..14], &[0x80, 1, 2, 3, 4, 5]);
        assert_eq!(h.tsih(), 0x1234);
        assert_eq!(h.data_len(), 100);
    }

    #[test]
    fn digest_matches_rfc_test_vector() {
        // RFC 3720 B.4: 32 bytes of zeros give CRC32C 0x8a9136aa.
        assert_eq!(digest(&[0u8; 32]), 0x8a91_36aau32.to_le_bytes());
    }

    #[test]
    fn lun_encoding_forms() {
        assert_eq!(encode_lun(5), [0, 5, 0, 0, 0, 0, 0, 0]);
        assert_eq!(encode_lun(300), [0x41, 0x2c, 0, 0, 0, 0, 0, 0]);
        assert_eq!(decode_lun(encode_lun(300)), 300);
    }
}
