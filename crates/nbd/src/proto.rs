//! Wire constants and the fixed-size encodings of the NBD protocol (`doc/proto.md` of the
//! NBD project). Everything is big-endian.

/// `NBDMAGIC`, the server's greeting.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: newstyle negotiation, and the prefix of every option the client sends.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Oldstyle servers send this after `NBDMAGIC` instead.
pub const CLISERV_MAGIC: u64 = 0x0000_4202_8186_1253;
/// Prefix of every option reply.
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;

pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
pub const FLAG_NO_ZEROES: u16 = 2;
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
pub const FLAG_C_NO_ZEROES: u32 = 2;

pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;

pub const REP_ACK: u32 = 1;
pub const REP_INFO: u32 = 3;
pub const REP_FLAG_ERROR: u32 = 1 << 31;

pub const INFO_EXPORT: u16 = 0;
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags (`NBD_FLAG_*` of an export).
pub const TF_HAS_FLAGS: u16 = 1 << 0;
pub const TF_READ_ONLY: u16 = 1 << 1;
pub const TF_SEND_FLUSH: u16 = 1 << 2;
pub const TF_SEND_FUA: u16 = 1 << 3;
pub const TF_ROTATIONAL: u16 = 1 << 4;
pub const TF_SEND_TRIM: u16 = 1 << 5;
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;

pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;

pub const CMD_FLAG_FUA: u16 = 1 << 0;

pub const REPLY_FLAG_DONE: u16 = 1;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_OFFSET_HOLE: u16 = 2;
pub const REPLY_TYPE_ERROR_BIT: u16 = 1 << 15;
pub const REPLY_TYPE_ERROR: u16 = REPLY_TYPE_ERROR_BIT | 1;
pub const REPLY_TYPE_ERROR_OFFSET: u16 = REPLY_TYPE_ERROR_BIT | 2;

pub const REQUEST_LEN: usize = 28;
pub const SIMPLE_REPLY_LEN: usize = 16;
pub const STRUCTURED_REPLY_LEN: usize = 20;
/// Largest error message a structured error chunk may carry.
pub const MAX_ERROR_MESSAGE: usize = 4096;
/// Largest data request a client may send when the server states no limit.
pub const DEFAULT_MAX_PAYLOAD: u32 = 32 << 20;

/// One request header: magic, flags, type, cookie, offset, length.
pub fn encode_request(flags: u16, cmd: u16, cookie: u64, offset: u64, len: u32) -> [u8; 28] {
    let mut b = [0u8; REQUEST_LEN];
    b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.to_be_bytes());
    b[6..8].copy_from_slice(&cmd.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b[16..24].copy_from_slice(&offset.to_be_bytes());
    b[24..28].copy_from_slice(&len.to_be_bytes());
    b
}

/// An option: `IHAVEOPT`, option number, length, data.
pub fn encode_option(option: u32, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + data.len());
    b.extend_from_slice(&IHAVEOPT.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    b
}

/// `NBD_OPT_GO`'s data: the export name and the information asked for (the export's size
/// and flags always come; block-size constraints only when asked, and asking says the
/// client honours them).
pub fn go_data(export: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + export.len());
    b.extend_from_slice(&(export.len() as u32).to_be_bytes());
    b.extend_from_slice(export.as_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    b
}

/// The fixed part of an option reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptReply {
    pub option: u32,
    pub kind: u32,
    pub len: u32,
}

pub fn parse_opt_reply(b: &[u8; 20]) -> Result<OptReply, String> {
    let magic = be64(&b[0..8]);
    if magic != OPT_REPLY_MAGIC {
        return Err(format!("option reply magic {magic:#018x}"));
    }
    Ok(OptReply {
        option: be32(&b[8..12]),
        kind: be32(&b[12..16]),
        len: be32(&b[16..20]),
    })
}

/// What an `NBD_REP_INFO` reply says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Info {
    Export {
        size: u64,
        flags: u16,
    },
    BlockSize {
        min: u32,
        preferred: u32,
        max: u32,
    },
    /// Information not asked for or not used (name, description).
    Other(u16),
}

pub fn parse_info(data: &[u8]) -> Result<Info, String> {
    if data.len() < 2 {
        return Err(format!("NBD_REP_INFO of {} bytes", data.len()));
    }
    let kind = be16(&data[0..2]);
    let body = &data[2..];
    match kind {
        INFO_EXPORT if body.len() == 10 => Ok(Info::Export {
            size: be64(&body[0..8]),
            flags: be16(&body[8..10]),
        }),
        INFO_BLOCK_SIZE if body.len() == 12 => {
            let (min, preferred, max) = (be32(&body[0..4]), be32(&body[4..8]), be32(&body[8..12]));
            let pow2 = |v: u32| v.is_power_of_two();
            if !pow2(min) || min > 65536 || !pow2(preferred) || preferred < min.max(512) {
                return Err(format!(
                    "block sizes min {min}, preferred {preferred}, max {max}"
                ));
            }
            if max != u32::MAX && (max < preferred || max % min != 0) {
                return Err(format!(
                    "block sizes min {min}, preferred {preferred}, max {max}"
                ));
            }
            Ok(Info::BlockSize {
                min,
                preferred,
                max,
            })
        }
        INFO_EXPORT | INFO_BLOCK_SIZE => {
            Err(format!("NBD_REP_INFO type {kind} of {} bytes", data.len()))
        }
        k => Ok(Info::Other(k)),
    }
}

/// The name of an `NBD_REP_ERR_*` reply, with what it means for a user.
pub fn rep_error_name(kind: u32) -> &'static str {
    match kind & !REP_FLAG_ERROR {
        1 => "NBD_REP_ERR_UNSUP (option not supported)",
        2 => "NBD_REP_ERR_POLICY (forbidden by the server's policy)",
        3 => "NBD_REP_ERR_INVALID (invalid option data)",
        4 => "NBD_REP_ERR_PLATFORM (not available on this platform)",
        5 => "NBD_REP_ERR_TLS_REQD (the server requires TLS)",
        6 => "NBD_REP_ERR_UNKNOWN (no such export)",
        7 => "NBD_REP_ERR_SHUTDOWN (the server is shutting down)",
        8 => "NBD_REP_ERR_BLOCK_SIZE_REQD (block size constraints required)",
        9 => "NBD_REP_ERR_TOO_BIG (request too big)",
        _ => "unknown NBD_REP_ERR",
    }
}

/// The name of an NBD error number (they are Linux's errno values).
pub fn errno_name(e: u32) -> &'static str {
    match e {
        1 => "EPERM",
        5 => "EIO",
        12 => "ENOMEM",
        22 => "EINVAL",
        28 => "ENOSPC",
        75 => "EOVERFLOW",
        95 => "ENOTSUP",
        108 => "ESHUTDOWN",
        _ => "an unknown error",
    }
}

/// The command's name, for messages.
pub fn cmd_name(cmd: u16) -> &'static str {
    match cmd {
        CMD_READ => "READ",
        CMD_WRITE => "WRITE",
        CMD_DISC => "DISC",
        CMD_FLUSH => "FLUSH",
        CMD_TRIM => "TRIM",
        CMD_WRITE_ZEROES => "WRITE_ZEROES",
        _ => "command",
    }
}

pub fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

pub fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

pub fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes() {
        let b = encode_request(CMD_FLAG_FUA, CMD_WRITE, 0x0102_0304_0506_0708, 4096, 512);
        assert_eq!(
            b,
            [
                0x25, 0x60, 0x95, 0x13, 0, 1, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0x10,
                0, 0, 0, 2, 0
            ]
        );
    }

    #[test]
    fn go_option_bytes() {
        let b = encode_option(OPT_GO, &go_data("ab"));
        assert_eq!(&b[..8], b"IHAVEOPT");
        assert_eq!(
            &b[8..],
            [0, 0, 0, 7, 0, 0, 0, 10, 0, 0, 0, 2, b'a', b'b', 0, 1, 0, 3]
        );
    }

    #[test]
    fn info_replies() {
        let mut e = vec![0, 0];
        e.extend_from_slice(&(1u64 << 30).to_be_bytes());
        e.extend_from_slice(&0x016du16.to_be_bytes());
        assert_eq!(
            parse_info(&e),
            Ok(Info::Export {
                size: 1 << 30,
                flags: 0x016d
            })
        );
        let bs = |min: u32, pref: u32, max: u32| {
            let mut b = vec![0, 3];
            for v in [min, pref, max] {
                b.extend_from_slice(&v.to_be_bytes());
            }
            parse_info(&b)
        };
        assert_eq!(
            bs(1, 4096, 32 << 20),
            Ok(Info::BlockSize {
                min: 1,
                preferred: 4096,
                max: 32 << 20
            })
        );
        assert!(bs(3, 4096, 1 << 20).is_err());
        assert!(bs(512, 256, 1 << 20).is_err());
        assert!(bs(4096, 4096, 1000).is_err());
        assert!(parse_info(&[0, 0, 1]).is_err());
        assert!(parse_info(&[0]).is_err());
        assert_eq!(parse_info(&[0, 2, b'x']), Ok(Info::Other(2)));
    }

    #[test]
    fn opt_reply_header() {
        let mut b = [0u8; 20];
        b[..8].copy_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
        b[8..12].copy_from_slice(&OPT_GO.to_be_bytes());
        b[12..16].copy_from_slice(&REP_ACK.to_be_bytes());
        assert_eq!(
            parse_opt_reply(&b),
            Ok(OptReply {
                option: OPT_GO,
                kind: REP_ACK,
                len: 0
            })
        );
        b[0] = 9;
        assert!(parse_opt_reply(&b).is_err());
    }
}
