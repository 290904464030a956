//! SCSI sense data (SPC-4 4.5): fixed (0x70/0x71) and descriptor (0x72/0x73) formats, decoded
//! into the three numbers that matter and a readable sentence.

use std::fmt;

/// The sense key, ASC and ASCQ of a CHECK CONDITION, plus the information field if given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sense {
    pub key: u8,
    pub asc: u8,
    pub ascq: u8,
    /// The INFORMATION field (often the failing LBA) when the target marked it valid.
    pub information: Option<u64>,
}

/// Sense keys that callers react to.
pub mod key {
    pub const NO_SENSE: u8 = 0x0;
    pub const RECOVERED_ERROR: u8 = 0x1;
    pub const NOT_READY: u8 = 0x2;
    pub const MEDIUM_ERROR: u8 = 0x3;
    pub const HARDWARE_ERROR: u8 = 0x4;
    pub const ILLEGAL_REQUEST: u8 = 0x5;
    pub const UNIT_ATTENTION: u8 = 0x6;
    pub const DATA_PROTECT: u8 = 0x7;
    pub const ABORTED_COMMAND: u8 = 0xb;
}

impl Sense {
    /// Decodes sense bytes as carried in a SCSI Response data segment (after the 2-byte
    /// length). Returns `None` when the bytes are too short or of an unknown format.
    pub fn parse(bytes: &[u8]) -> Option<Sense> {
        let code = *bytes.first()? & 0x7f;
        match code {
            0x70 | 0x71 => {
                if bytes.len() < 3 {
                    return None;
                }
                let key = bytes[2] & 0x0f;
                let asc = bytes.get(12).copied().unwrap_or(0);
                let ascq = bytes.get(13).copied().unwrap_or(0);
                let information = if bytes[0] & 0x80 != 0 && bytes.len() >= 7 {
                    Some(u32::from_be_bytes([bytes[3], bytes[4], bytes[5], bytes[6]]) as u64)
                } else {
                    None
                };
                Some(Sense {
                    key,
                    asc,
                    ascq,
                    information,
                })
            }
            0x72 | 0x73 => {
                if bytes.len() < 4 {
                    return None;
                }
                Some(Sense {
                    key: bytes[1] & 0x0f,
                    asc: bytes[2],
                    ascq: bytes[3],
                    information: descriptor_information(bytes),
                })
            }
            _ => None,
        }
    }

    /// The ASC/ASCQ meaning, or `None` for codes not in the short table.
    pub fn description(&self) -> Option<&'static str> {
        asc_text(self.asc, self.ascq)
    }

    pub fn is_unit_attention(&self) -> bool {
        self.key == key::UNIT_ATTENTION
    }

    /// ILLEGAL REQUEST / INVALID COMMAND OPERATION CODE: the target lacks this CDB.
    pub fn is_invalid_opcode(&self) -> bool {
        self.key == key::ILLEGAL_REQUEST && self.asc == 0x20 && self.ascq == 0x00
    }
}

/// The INFORMATION descriptor (type 0) of descriptor-format sense, if present and valid.
fn descriptor_information(bytes: &[u8]) -> Option<u64> {
    let add_len = *bytes.get(7)? as usize;
    let end = (8 + add_len).min(bytes.len());
    let mut at = 8;
    while at + 2 <= end {
        let (kind, len) = (bytes[at], bytes[at + 1] as usize);
        if kind == 0 && len >= 0x0a && at + 12 <= end && bytes[at + 2] & 0x80 != 0 {
            let mut v = [0u8; 8];
            v.copy_from_slice(&bytes[at + 4..at + 12]);
            return Some(u64::from_be_bytes(v));
        }
        at += 2 + len;
    }
    None
}

/// SPC sense key names.
pub fn key_name(key: u8) -> &'static str {
    match key {
        0x0 => "NO SENSE",
        0x1 => "RECOVERED ERROR",
        0x2 => "NOT READY",
        0x3 => "MEDIUM ERROR",
        0x4 => "HARDWARE ERROR",
        0x5 => "ILLEGAL REQUEST",
        0x6 => "UNIT ATTENTION",
        0x7 => "DATA PROTECT",
        0x8 => "BLANK CHECK",
        0x9 => "VENDOR SPECIFIC",
        0xa => "COPY ABORTED",
        0xb => "ABORTED COMMAND",
        0xd => "VOLUME OVERFLOW",
        0xe => "MISCOMPARE",
        _ => "RESERVED",
    }
}

/// The additional sense codes a benchmark is likely to meet, in plain words.
fn asc_text(asc: u8, ascq: u8) -> Option<&'static str> {
    Some(match (asc, ascq) {
        (0x04, 0x00) => "logical unit not ready",
        (0x04, 0x01) => "logical unit becoming ready",
        (0x04, 0x02) => "logical unit not ready, initializing command required",
        (0x04, 0x03) => "logical unit not ready, manual intervention required",
        (0x04, _) => "logical unit not ready",
        (0x08, 0x01) => "logical unit communication timeout",
        (0x0c, 0x00) => "write error",
        (0x11, 0x00) => "unrecovered read error",
        (0x1a, 0x00) => "parameter list length error",
        (0x20, 0x00) => "invalid command operation code",
        (0x21, 0x00) => "LBA out of range",
        (0x24, 0x00) => "invalid field in CDB",
        (0x25, 0x00) => "logical unit not supported",
        (0x26, 0x00) => "invalid field in parameter list",
        (0x27, 0x00) => "write protected",
        (0x27, 0x01) => "hardware write protected",
        (0x27, 0x02) => "logical unit software write protected",
        (0x27, 0x07) => "space allocation failed write protect",
        (0x27, _) => "write protected",
        (0x28, 0x00) => "not ready to ready change, medium may have changed",
        (0x29, 0x00) => "power on, reset, or bus device reset occurred",
        (0x29, 0x01) => "power on occurred",
        (0x29, 0x02) => "SCSI bus reset occurred",
        (0x29, 0x03) => "bus device reset function occurred",
        (0x29, 0x07) => "I_T nexus loss occurred",
        (0x29, _) => "reset occurred",
        (0x2a, 0x01) => "mode parameters changed",
        (0x2a, 0x09) => "capacity data has changed",
        (0x2a, _) => "parameters changed",
        (0x3a, _) => "medium not present",
        (0x3f, 0x0e) => "reported LUNs data has changed",
        (0x3f, _) => "target operating conditions have changed",
        (0x44, 0x00) => "internal target failure",
        (0x47, _) => "SCSI parity error",
        (0x4b, _) => "data phase error",
        (0x55, 0x03) => "insufficient resources",
        (0x55, _) => "system resource failure",
        _ => return None,
    })
}

impl fmt::Display for Sense {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = key_name(self.key);
        match self.description() {
            Some(text) => write!(f, "{text} ({name}")?,
            None => write!(f, "{name} (")?,
        }
        if self.description().is_some() {
            f.write_str(", ")?;
        }
        write!(f, "ASC {:#04x} ASCQ {:#04x}", self.asc, self.ascq)?;
        if let Some(info) = self.information {
            write!(f, ", information {info}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_format_lba_out_of_range() {
        let mut b = [0u8; 18];
        b[0] = 0xf0;
        b[2] = key::ILLEGAL_REQUEST;
        b[3..7].copy_from_slice(&1234u32.to_be_bytes());
        b[7] = 10;
        b[12] = 0x21;
        let s = Sense::parse(&b).unwrap();
        assert_eq!(s.key, key::ILLEGAL_REQUEST);
        assert_eq!(s.information, Some(1234));
        assert_eq!(
            s.to_string(),
            "LBA out of range (ILLEGAL REQUEST, ASC 0x21 ASCQ 0x00, information 1234)"
        );
    }

    #[test]
    fn descriptor_format_with_information() {
        let b = [
            0x72, 0x07, 0x27, 0x00, 0, 0, 0, 12, 0x00, 0x0a, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x00,
        ];
        let s = Sense::parse(&b).unwrap();
        assert_eq!(s.key, key::DATA_PROTECT);
        assert_eq!(s.information, Some(0x1000));
        assert!(s.to_string().starts_with("write protected (DATA PROTECT"));
    }

    #[test]
    fn unknown_code_is_named_by_key() {
        let b = [0x70, 0, 0x03, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x99, 0x01];
        let s = Sense::parse(&b).unwrap();
        assert_eq!(s.to_string(), "MEDIUM ERROR (ASC 0x99 ASCQ 0x01)");
    }

    #[test]
    fn garbage_is_rejected() {
        assert_eq!(Sense::parse(&[]), None);
        assert_eq!(Sense::parse(&[0x12, 1, 2]), None);
        assert_eq!(Sense::parse(&[0x70, 0]), None);
    }
}
