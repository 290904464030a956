//! Leases and durable handles ([MS-SMB2] 2.2.13.2, 2.2.14.2, 2.2.23.2, 2.2.24.2).
//!
//! A server keeps an open alive across a lost connection (a *durable* handle) only when the
//! open holds handle caching: a batch oplock or a lease with `H`. So a data file is opened
//! with a lease request for read and handle caching (`RH`: never `W`, so opens of the same
//! file by other connections, including a job's other workers, need no break) and a durable
//! request; on a new connection it is reclaimed with its FileId (and, for 3.x, the
//! CreateGuid) instead of being opened again by name. The lease is not used to cache
//! anything: every read and write still goes to the server.

use crate::error::DecodeError;
use crate::header::HEADER_LEN;
use crate::proto::FileId;
use crate::wire::{Rd, put_u16, put_u32, put_u64, slice};

/// Lease states.
pub const READ: u32 = 1;
pub const HANDLE: u32 = 2;
pub const WRITE: u32 = 4;
/// What the client asks for: enough for durability, nothing that excludes other opens.
pub const ASKED: u32 = READ | HANDLE;
/// `RequestedOplockLevel` of a CREATE that carries a lease request.
pub const OPLOCK_LEVEL_LEASE: u8 = 0xff;
/// A lease break the server waits to see acknowledged.
const BREAK_ACK_REQUIRED: u32 = 1;

/// What a durable open needs to be reclaimed on a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Durable {
    pub file: FileId,
    pub lease_key: [u8; 16],
    /// 3.x: the CreateGuid of the DH2Q request (DH2C names it).
    pub create_guid: [u8; 16],
    /// Lease V2 and DH2Q/DH2C (3.x) rather than V1 and DHnQ/DHnC (2.1).
    pub v2: bool,
}

/// The lease request (`RqLs`, V1 or V2) and the durable request (`DHnQ` or `DH2Q`).
pub fn request_contexts(lease_key: &[u8; 16], create_guid: &[u8; 16], v2: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    put_context(&mut out, b"RqLs", &lease_data(lease_key, v2), false);
    if v2 {
        let mut d = Vec::with_capacity(32);
        put_u32(&mut d, 0); // Timeout: the server's default
        put_u32(&mut d, 0); // Flags: not persistent
        put_u64(&mut d, 0);
        d.extend_from_slice(create_guid);
        put_context(&mut out, b"DH2Q", &d, true);
    } else {
        put_context(&mut out, b"DHnQ", &[0; 16], true);
    }
    out
}

/// The reconnect request (`DHnC` or `DH2C`) with the same lease request, which a leased
/// open must repeat to be found again.
pub fn reclaim_contexts(d: &Durable) -> Vec<u8> {
    let mut out = Vec::with_capacity(160);
    put_context(&mut out, b"RqLs", &lease_data(&d.lease_key, d.v2), false);
    if d.v2 {
        let mut data = Vec::with_capacity(36);
        data.extend_from_slice(&d.file.0);
        data.extend_from_slice(&d.create_guid);
        put_u32(&mut data, 0); // Flags: not persistent
        put_context(&mut out, b"DH2C", &data, true);
    } else {
        put_context(&mut out, b"DHnC", &d.file.0, true);
    }
    out
}

fn lease_data(key: &[u8; 16], v2: bool) -> Vec<u8> {
    let mut d = Vec::with_capacity(52);
    d.extend_from_slice(key);
    put_u32(&mut d, ASKED);
    put_u32(&mut d, 0); // Flags
    put_u64(&mut d, 0); // LeaseDuration
    if v2 {
        d.extend_from_slice(&[0; 16]); // ParentLeaseKey
        put_u16(&mut d, 0); // Epoch
        put_u16(&mut d, 0);
    }
    d
}

/// One create context: 16 bytes of header, the 4-byte name padded to 8, the data; every
/// context but the last padded to 8 and chained by `Next`.
fn put_context(out: &mut Vec<u8>, name: &[u8; 4], data: &[u8], last: bool) {
    let start = out.len();
    let len = 24 + data.len();
    let padded = if last { len } else { len.next_multiple_of(8) };
    put_u32(out, if last { 0 } else { padded as u32 });
    put_u16(out, 16); // NameOffset
    put_u16(out, 4); // NameLength
    put_u16(out, 0);
    put_u16(out, 24); // DataOffset
    put_u32(out, data.len() as u32);
    out.extend_from_slice(name);
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(data);
    out.resize(start + padded, 0);
}

/// What the server granted in a CREATE reply's contexts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Granted {
    pub oplock_level: u8,
    /// The lease key and the state granted.
    pub lease: Option<([u8; 16], u32)>,
    /// A durable (DHnQ or DH2Q) response was there.
    pub durable: bool,
}

/// The create contexts of a CREATE reply. Unknown contexts are skipped; a lease or durable
/// context of the wrong size, or a chain that leaves the reply, is an error.
pub fn parse_granted(msg: &[u8]) -> Result<Granted, DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    let size = r.u16()?;
    if size != 89 {
        return Err(DecodeError::BadValue {
            what: "StructureSize",
            value: size.into(),
        });
    }
    let mut g = Granted {
        oplock_level: r.u8()?,
        ..Granted::default()
    };
    let mut r = Rd::at(msg, HEADER_LEN + 80)?;
    let off = r.u32()? as usize;
    let len = r.u32()? as usize;
    if len == 0 {
        return Ok(g);
    }
    let all = slice(msg, off, len)?;
    let mut at = 0usize;
    loop {
        let ctx = &all[at..];
        let mut c = Rd::new(ctx);
        let next = c.u32()? as usize;
        let name_off = c.u16()? as usize;
        let name_len = c.u16()? as usize;
        c.skip(2)?;
        let data_off = c.u16()? as usize;
        let data_len = c.u32()? as usize;
        let end = if next == 0 { ctx.len() } else { next };
        if end > ctx.len() || (next != 0 && (next < 16 || !next.is_multiple_of(8))) {
            return Err(DecodeError::BadValue {
                what: "create context Next",
                value: next as u64,
            });
        }
        let ctx = &ctx[..end];
        let name = slice(ctx, name_off, name_len)?;
        let data = if data_len == 0 {
            &[][..]
        } else {
            slice(ctx, data_off, data_len)?
        };
        granted_context(name, data, &mut g)?;
        if next == 0 {
            return Ok(g);
        }
        at += next;
    }
}

fn granted_context(name: &[u8], data: &[u8], g: &mut Granted) -> Result<(), DecodeError> {
    match name {
        b"RqLs" => {
            if data.len() != 32 && data.len() != 52 {
                return Err(DecodeError::BadValue {
                    what: "lease context length",
                    value: data.len() as u64,
                });
            }
            let mut d = Rd::new(data);
            let key: [u8; 16] = d.array()?;
            let state = d.u32()?;
            if state & !(READ | HANDLE | WRITE) != 0 {
                return Err(DecodeError::BadValue {
                    what: "lease state",
                    value: state.into(),
                });
            }
            g.lease = Some((key, state));
        }
        b"DHnQ" | b"DH2Q" => {
            if data.len() != 8 {
                return Err(DecodeError::BadValue {
                    what: "durable handle context length",
                    value: data.len() as u64,
                });
            }
            g.durable = true;
        }
        _ => {}
    }
    Ok(())
}

/// A lease break notification (OPLOCK_BREAK with StructureSize 44).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseBreak {
    pub key: [u8; 16],
    pub new_state: u32,
    pub ack_required: bool,
}

/// `None` for an oplock break (StructureSize 24), which this client never asks for.
pub fn parse_break(msg: &[u8]) -> Result<Option<LeaseBreak>, DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    match r.u16()? {
        44 => {}
        24 => return Ok(None),
        v => {
            return Err(DecodeError::BadValue {
                what: "break StructureSize",
                value: v.into(),
            });
        }
    }
    r.skip(2)?; // NewEpoch
    let flags = r.u32()?;
    let key = r.array()?;
    r.skip(4)?; // CurrentLeaseState
    let new_state = r.u32()?;
    if new_state & !(READ | HANDLE | WRITE) != 0 {
        return Err(DecodeError::BadValue {
            what: "lease state",
            value: new_state.into(),
        });
    }
    Ok(Some(LeaseBreak {
        key,
        new_state,
        ack_required: flags & BREAK_ACK_REQUIRED != 0,
    }))
}

/// LEASE_BREAK_ACKNOWLEDGMENT: the client holds `state` from now on.
pub fn break_ack_body(key: &[u8; 16], state: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(36);
    put_u16(&mut b, 36);
    put_u16(&mut b, 0);
    put_u32(&mut b, 0); // Flags
    b.extend_from_slice(key);
    put_u32(&mut b, state);
    put_u64(&mut b, 0); // LeaseDuration
    b
}

#[cfg(test)]
mod tests;
