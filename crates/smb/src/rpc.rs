//! Share listing: srvsvc `NetrShareEnum` (opnum 15, level 1) over DCE/RPC on the `srvsvc`
//! named pipe of `IPC$` ([MS-SRVS] 3.1.4.8, [C706] connection-oriented PDUs). Requests are
//! written to the pipe and responses read back fragment by fragment; only what a share
//! list needs is encoded, and the reply is decoded with bounds checks (a lying server gets
//! a [`DecodeError`], never a panic).

use crate::error::DecodeError;
use crate::wire::{Rd, from_utf16, put_u16, put_u32, utf16};

const PTYPE_REQUEST: u8 = 0;
const PTYPE_RESPONSE: u8 = 2;
const PTYPE_FAULT: u8 = 3;
const PTYPE_BIND: u8 = 11;
const PTYPE_BIND_ACK: u8 = 12;
const FIRST_FRAG: u8 = 1;
const LAST_FRAG: u8 = 2;
pub const MAX_FRAG: u16 = 4280;

/// srvsvc 4b324fc8-1670-01d3-1278-5a47bf6ee188 v3.0, as on the wire.
const SRVSVC: [u8; 16] = [
    0xc8, 0x4f, 0x32, 0x4b, 0x70, 0x16, 0xd3, 0x01, 0x12, 0x78, 0x5a, 0x47, 0xbf, 0x6e, 0xe1, 0x88,
];
/// NDR 8a885d04-1ceb-11c9-9fe8-08002b104860 v2.
const NDR: [u8; 16] = [
    0x04, 0x5d, 0x88, 0x8a, 0xeb, 0x1c, 0xc9, 0x11, 0x9f, 0xe8, 0x08, 0x00, 0x2b, 0x10, 0x48, 0x60,
];

fn header(out: &mut Vec<u8>, ptype: u8, call_id: u32) {
    out.extend_from_slice(&[5, 0, ptype, FIRST_FRAG | LAST_FRAG, 0x10, 0, 0, 0]);
    put_u16(out, 0); // frag length, set by `finish`
    put_u16(out, 0);
    put_u32(out, call_id);
}

fn finish(mut pdu: Vec<u8>) -> Vec<u8> {
    let len = pdu.len() as u16;
    pdu[8..10].copy_from_slice(&len.to_le_bytes());
    pdu
}

/// BIND to srvsvc v3.0 with the NDR transfer syntax.
pub fn bind(call_id: u32) -> Vec<u8> {
    let mut p = Vec::with_capacity(72);
    header(&mut p, PTYPE_BIND, call_id);
    put_u16(&mut p, MAX_FRAG);
    put_u16(&mut p, MAX_FRAG);
    put_u32(&mut p, 0); // assoc group
    p.extend_from_slice(&[1, 0, 0, 0]); // one context
    put_u16(&mut p, 0); // context id
    p.extend_from_slice(&[1, 0]); // one transfer syntax
    p.extend_from_slice(&SRVSVC);
    put_u16(&mut p, 3);
    put_u16(&mut p, 0);
    p.extend_from_slice(&NDR);
    put_u32(&mut p, 2);
    finish(p)
}

/// Checks a BIND_ACK: the one context must be accepted.
pub fn parse_bind_ack(pdu: &[u8]) -> Result<(), DecodeError> {
    let mut r = Rd::new(pdu);
    r.skip(2)?;
    let ptype = r.u8()?;
    if ptype != PTYPE_BIND_ACK {
        return Err(DecodeError::BadValue {
            what: "DCE/RPC reply to BIND (type)",
            value: ptype.into(),
        });
    }
    let mut r = Rd::at(pdu, 24)?;
    let sec_len = r.u16()? as usize;
    r.skip(sec_len)?;
    // The secondary address is padded to 4 bytes.
    let at = (24 + 2 + sec_len).div_ceil(4) * 4;
    let mut r = Rd::at(pdu, at)?;
    let n = r.u8()?;
    r.skip(3)?;
    let result = r.u16()?;
    if n < 1 || result != 0 {
        return Err(DecodeError::BadValue {
            what: "srvsvc BIND result",
            value: result.into(),
        });
    }
    Ok(())
}

/// REQUEST NetrShareEnum(\\server, level 1, no limit) with `call_id`.
pub fn share_enum(call_id: u32, server: &str) -> Vec<u8> {
    let mut stub = Vec::with_capacity(128);
    put_u32(&mut stub, 0x0002_0000); // ServerName referent
    let name = utf16(&format!("\\\\{server}\0"));
    let chars = (name.len() / 2) as u32;
    put_u32(&mut stub, chars);
    put_u32(&mut stub, 0);
    put_u32(&mut stub, chars);
    stub.extend_from_slice(&name);
    while !stub.len().is_multiple_of(4) {
        stub.push(0);
    }
    put_u32(&mut stub, 1); // Level
    put_u32(&mut stub, 1); // union switch
    put_u32(&mut stub, 0x0002_0004); // container referent
    put_u32(&mut stub, 0); // EntriesRead
    put_u32(&mut stub, 0); // Buffer: null
    put_u32(&mut stub, 0xFFFF_FFFF); // PreferedMaximumLength
    put_u32(&mut stub, 0); // ResumeHandle: null
    let mut p = Vec::with_capacity(24 + stub.len());
    header(&mut p, PTYPE_REQUEST, call_id);
    put_u32(&mut p, stub.len() as u32); // alloc hint
    put_u16(&mut p, 0); // context id
    put_u16(&mut p, 15); // opnum
    p.extend_from_slice(&stub);
    finish(p)
}

/// One response fragment: appends its stub data to `stub`, returns true on the last one.
pub fn response_fragment(pdu: &[u8], stub: &mut Vec<u8>) -> Result<bool, DecodeError> {
    let mut r = Rd::new(pdu);
    r.skip(2)?;
    let ptype = r.u8()?;
    let flags = r.u8()?;
    r.skip(4)?;
    let frag_len = r.u16()? as usize;
    let auth_len = r.u16()? as usize;
    if ptype == PTYPE_FAULT {
        let status = Rd::at(pdu, 24)?.u32()?;
        return Err(DecodeError::BadValue {
            what: "DCE/RPC fault status",
            value: status.into(),
        });
    }
    if ptype != PTYPE_RESPONSE {
        return Err(DecodeError::BadValue {
            what: "DCE/RPC reply type",
            value: ptype.into(),
        });
    }
    if frag_len > pdu.len() || frag_len < 24 + auth_len {
        return Err(DecodeError::Invalid("DCE/RPC fragment length"));
    }
    stub.extend_from_slice(&pdu[24..frag_len - auth_len]);
    Ok(flags & LAST_FRAG != 0)
}

/// A share as srvsvc lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    pub name: String,
    /// STYPE_DISKTREE 0, PRINTQ 1, DEVICE 2, IPC 3; bit 31: special (hidden, `$`).
    pub kind: u32,
    pub remark: String,
}

impl Share {
    pub fn kind_name(&self) -> &'static str {
        match self.kind & 0x0fff_ffff {
            0 => "disk",
            1 => "printer",
            2 => "device",
            3 => "IPC",
            _ => "other",
        }
    }
}

/// Decodes NetrShareEnum's level-1 result from the response stub.
pub fn parse_share_enum(stub: &[u8]) -> Result<Vec<Share>, DecodeError> {
    let mut r = Rd::new(stub);
    let level = r.u32()?;
    r.u32()?; // switch
    if level != 1 {
        return Err(DecodeError::BadValue {
            what: "share info level",
            value: level.into(),
        });
    }
    if r.u32()? == 0 {
        return Ok(Vec::new()); // no container
    }
    let count = r.u32()? as usize;
    if r.u32()? == 0 {
        return Ok(Vec::new()); // no array
    }
    let max = r.u32()? as usize;
    if max < count || count > stub.len() / 12 {
        return Err(DecodeError::Invalid("share count exceeds the reply"));
    }
    let mut fixed = Vec::with_capacity(count);
    for _ in 0..count {
        fixed.push((r.u32()?, r.u32()?, r.u32()?));
    }
    let mut out = Vec::with_capacity(count);
    for (name_ptr, kind, remark_ptr) in fixed {
        let name = if name_ptr != 0 {
            string(&mut r)?
        } else {
            String::new()
        };
        let remark = if remark_ptr != 0 {
            string(&mut r)?
        } else {
            String::new()
        };
        out.push(Share { name, kind, remark });
    }
    Ok(out)
}

/// A conformant varying UTF-16 string, 4-aligned after; the terminating NUL dropped.
fn string(r: &mut Rd) -> Result<String, DecodeError> {
    r.u32()?;
    r.u32()?;
    let n = r.u32()? as usize;
    let b = r.bytes(
        n.checked_mul(2)
            .ok_or(DecodeError::Invalid("string length"))?,
    )?;
    let pad = (4 - r.pos() % 4) % 4;
    r.skip(pad.min(r_remaining(r)))?;
    Ok(from_utf16(b).trim_end_matches('\0').to_string())
}

fn r_remaining(r: &Rd) -> usize {
    let mut probe = *r;
    let mut n = 0;
    while n < 4 && probe.u8().is_ok() {
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ndr_string(out: &mut Vec<u8>, s: &str) {
        let b = utf16(&format!("{s}\0"));
        let n = (b.len() / 2) as u32;
        for w in [n, 0, n] {
            put_u32(out, w);
        }
        out.extend_from_slice(&b);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }

    #[test]
    fn share_list_decodes_and_lies_are_errors() {
        let mut s = Vec::new();
        for w in [1u32, 1, 0x20000, 2, 0x20004, 2] {
            put_u32(&mut s, w);
        }
        for w in [0x20008u32, 0, 0x2000c, 0x20010, 0x8000_0003, 0x20014] {
            put_u32(&mut s, w);
        }
        ndr_string(&mut s, "data");
        ndr_string(&mut s, "");
        ndr_string(&mut s, "IPC$");
        ndr_string(&mut s, "IPC Service");
        let shares = parse_share_enum(&s).unwrap();
        assert_eq!(shares.len(), 2);
        assert_eq!(
            (shares[0].name.as_str(), shares[0].kind_name()),
            ("data", "disk")
        );
        assert_eq!(shares[1].remark, "IPC Service");
        assert_eq!(shares[1].kind_name(), "IPC");
        for cut in [3, 20, 40, s.len() - 5] {
            assert!(parse_share_enum(&s[..cut]).is_err(), "cut at {cut}");
        }
        let mut huge = s.clone();
        huge[12..16].copy_from_slice(&0x4000_0000u32.to_le_bytes());
        assert!(parse_share_enum(&huge).is_err());
    }

    #[test]
    fn bind_and_request_have_their_lengths_and_opnum() {
        let b = bind(1);
        assert_eq!(u16::from_le_bytes([b[8], b[9]]) as usize, b.len());
        assert_eq!(b[2], PTYPE_BIND);
        let r = share_enum(2, "srv");
        assert_eq!(u16::from_le_bytes([r[8], r[9]]) as usize, r.len());
        assert_eq!(u16::from_le_bytes([r[22], r[23]]), 15);
    }
}
