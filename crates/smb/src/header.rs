//! The 64-byte SMB2 header ([MS-SMB2] 2.2.1) and the 4-byte Direct TCP transport header.

use crate::error::{DecodeError, NtStatus};
use crate::wire::Rd;

pub const HEADER_LEN: usize = 64;
pub const PROTOCOL_ID: [u8; 4] = [0xFE, b'S', b'M', b'B'];
pub const TRANSFORM_ID: [u8; 4] = [0xFD, b'S', b'M', b'B'];
/// Where the signature lies in the header.
pub const SIGNATURE_AT: usize = 48;

pub const FLAG_RESPONSE: u32 = 0x0000_0001;
pub const FLAG_ASYNC: u32 = 0x0000_0002;
pub const FLAG_RELATED: u32 = 0x0000_0004;
pub const FLAG_SIGNED: u32 = 0x0000_0008;

/// Commands, as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Command {
    Negotiate = 0,
    SessionSetup = 1,
    Logoff = 2,
    TreeConnect = 3,
    TreeDisconnect = 4,
    Create = 5,
    Close = 6,
    Flush = 7,
    Read = 8,
    Write = 9,
    Ioctl = 11,
    Echo = 13,
    QueryDirectory = 14,
    QueryInfo = 16,
    SetInfo = 17,
    OplockBreak = 18,
}

impl Command {
    pub fn name(self) -> &'static str {
        match self {
            Command::Negotiate => "NEGOTIATE",
            Command::SessionSetup => "SESSION_SETUP",
            Command::Logoff => "LOGOFF",
            Command::TreeConnect => "TREE_CONNECT",
            Command::TreeDisconnect => "TREE_DISCONNECT",
            Command::Create => "CREATE",
            Command::Close => "CLOSE",
            Command::Flush => "FLUSH",
            Command::Read => "READ",
            Command::Write => "WRITE",
            Command::Ioctl => "IOCTL",
            Command::Echo => "ECHO",
            Command::QueryDirectory => "QUERY_DIRECTORY",
            Command::QueryInfo => "QUERY_INFO",
            Command::SetInfo => "SET_INFO",
            Command::OplockBreak => "OPLOCK_BREAK",
        }
    }
}

/// The fields of a header a client sends or reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub credit_charge: u16,
    pub status: u32,
    pub command: u16,
    pub credits: u16,
    pub flags: u32,
    pub next_command: u32,
    pub message_id: u64,
    /// Sync: the tree id. Async replies carry an async id instead (`async_id`).
    pub tree_id: u32,
    pub async_id: u64,
    pub session_id: u64,
    pub signature: [u8; 16],
}

impl Header {
    pub fn request(command: Command, message_id: u64, session_id: u64, tree_id: u32) -> Header {
        Header {
            command: command as u16,
            message_id,
            session_id,
            tree_id,
            ..Header::default()
        }
    }

    /// Writes the header into `out[..64]`.
    pub fn encode(&self, out: &mut [u8]) {
        let o = &mut out[..HEADER_LEN];
        o[0..4].copy_from_slice(&PROTOCOL_ID);
        o[4..6].copy_from_slice(&64u16.to_le_bytes());
        o[6..8].copy_from_slice(&self.credit_charge.to_le_bytes());
        o[8..12].copy_from_slice(&self.status.to_le_bytes());
        o[12..14].copy_from_slice(&self.command.to_le_bytes());
        o[14..16].copy_from_slice(&self.credits.to_le_bytes());
        o[16..20].copy_from_slice(&self.flags.to_le_bytes());
        o[20..24].copy_from_slice(&self.next_command.to_le_bytes());
        o[24..32].copy_from_slice(&self.message_id.to_le_bytes());
        if self.flags & FLAG_ASYNC != 0 {
            o[32..40].copy_from_slice(&self.async_id.to_le_bytes());
        } else {
            o[32..36].fill(0);
            o[36..40].copy_from_slice(&self.tree_id.to_le_bytes());
        }
        o[40..48].copy_from_slice(&self.session_id.to_le_bytes());
        o[48..64].copy_from_slice(&self.signature);
    }

    pub fn decode(b: &[u8]) -> Result<Header, DecodeError> {
        let mut r = Rd::new(b);
        if r.array::<4>()? != PROTOCOL_ID {
            return Err(DecodeError::Invalid("not an SMB2 message"));
        }
        let size = r.u16()?;
        if size != 64 {
            return Err(DecodeError::BadValue {
                what: "header StructureSize",
                value: size.into(),
            });
        }
        let mut h = Header {
            credit_charge: r.u16()?,
            status: r.u32()?,
            command: r.u16()?,
            credits: r.u16()?,
            flags: r.u32()?,
            next_command: r.u32()?,
            message_id: r.u64()?,
            ..Header::default()
        };
        let id = r.u64()?;
        if h.flags & FLAG_ASYNC != 0 {
            h.async_id = id;
        } else {
            h.tree_id = (id >> 32) as u32;
        }
        h.session_id = r.u64()?;
        h.signature = r.array()?;
        Ok(h)
    }

    pub fn status(&self) -> NtStatus {
        NtStatus(self.status)
    }
}

/// Zeroes the signature field of an encoded header (before computing or checking one).
/// The reply of a (possibly compounded) message that starts at `at`: its header, where it
/// ends, and whether it is the last (NextCommand 0). Each next one starts where this ends.
pub fn chain_part(msg: &[u8], at: usize) -> Result<(Header, usize, bool), DecodeError> {
    let part = msg.get(at..).ok_or(DecodeError::Truncated {
        at,
        need: HEADER_LEN,
    })?;
    let h = Header::decode(part)?;
    let next = h.next_command as usize;
    if next == 0 {
        return Ok((h, msg.len(), true));
    }
    if next < HEADER_LEN || !next.is_multiple_of(8) || next >= part.len() {
        return Err(DecodeError::BadValue {
            what: "NextCommand",
            value: next as u64,
        });
    }
    Ok((h, at + next, false))
}

pub fn zero_signature(header: &mut [u8]) {
    header[SIGNATURE_AT..SIGNATURE_AT + 16].fill(0);
}

/// The Direct TCP transport header: a zero byte and a 24-bit big-endian length.
pub fn frame_len(len: usize) -> [u8; 4] {
    let l = (len as u32).to_be_bytes();
    [0, l[1], l[2], l[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CREATE reply of 89 bytes padded to 96, then a CLOSE reply: two parts; a
    /// NextCommand that is unaligned, too small or past the end is refused.
    #[test]
    fn compounded_replies_split_at_next_command() {
        let mut msg = vec![0u8; 96 + 124];
        let mut a = Header::request(Command::Create, 5, 1, 2);
        a.next_command = 96;
        a.encode(&mut msg[..64]);
        Header::request(Command::Close, 6, 1, 2).encode(&mut msg[96..160]);
        let (h, end, last) = chain_part(&msg, 0).unwrap();
        assert_eq!((h.message_id, end, last), (5, 96, false));
        let (h, end, last) = chain_part(&msg, 96).unwrap();
        assert_eq!((h.message_id, end, last), (6, msg.len(), true));
        for bad in [60u32, 100, 96 + 124, 4096] {
            a.next_command = bad;
            a.encode(&mut msg[..64]);
            assert!(chain_part(&msg, 0).is_err(), "NextCommand {bad}");
        }
        assert!(chain_part(&msg, 500).is_err());
    }

    #[test]
    fn header_round_trips_sync_and_async() {
        let mut h = Header::request(Command::Write, 77, 0x1122_3344_5566_7788, 9);
        h.credit_charge = 16;
        h.credits = 256;
        h.flags = FLAG_SIGNED;
        h.signature = [3; 16];
        let mut b = [0u8; 64];
        h.encode(&mut b);
        assert_eq!(&b[..4], b"\xfeSMB");
        assert_eq!(b[12], 9);
        assert_eq!(&b[36..40], &9u32.to_le_bytes());
        assert_eq!(Header::decode(&b).unwrap(), h);
        let mut a = h;
        a.flags |= FLAG_ASYNC | FLAG_RESPONSE;
        a.tree_id = 0;
        a.async_id = 0xdead_beef_0000_0001;
        a.encode(&mut b);
        assert_eq!(Header::decode(&b).unwrap(), a);
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(Header::decode(&[0xfe, b'S', b'M', b'B', 64]).is_err());
        let mut b = [0u8; 64];
        Header::default().encode(&mut b);
        b[4] = 65;
        assert!(Header::decode(&b).is_err());
        b[0] = 0xff;
        assert!(Header::decode(&b).is_err());
    }

    #[test]
    fn frame_length_is_24_bit_big_endian() {
        assert_eq!(frame_len(0x01_0203), [0, 1, 2, 3]);
    }
}
