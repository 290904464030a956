//! SCSI command descriptor blocks (SBC-3 / SPC-4) and the replies a benchmark reads.

/// A CDB of up to 16 bytes, zero-padded as the iSCSI header field is.
pub type Cdb = [u8; 16];

pub mod opcode {
    pub const TEST_UNIT_READY: u8 = 0x00;
    pub const INQUIRY: u8 = 0x12;
    pub const READ_CAPACITY_10: u8 = 0x25;
    pub const READ_10: u8 = 0x28;
    pub const WRITE_10: u8 = 0x2a;
    pub const SYNCHRONIZE_CACHE_10: u8 = 0x35;
    pub const UNMAP: u8 = 0x42;
    pub const READ_16: u8 = 0x88;
    pub const WRITE_16: u8 = 0x8a;
    pub const SYNCHRONIZE_CACHE_16: u8 = 0x91;
    pub const SERVICE_ACTION_IN_16: u8 = 0x9e;
    pub const REPORT_LUNS: u8 = 0xa0;
}

/// The FUA (force unit access) bit of READ/WRITE(10/16).
const FUA: u8 = 0x08;

/// READ(16) or WRITE(16).
pub fn rw16(write: bool, lba: u64, blocks: u32, fua: bool) -> Cdb {
    let mut c = [0u8; 16];
    c[0] = if write {
        opcode::WRITE_16
    } else {
        opcode::READ_16
    };
    c[1] = if fua { FUA } else { 0 };
    c[2..10].copy_from_slice(&lba.to_be_bytes());
    c[10..14].copy_from_slice(&blocks.to_be_bytes());
    c
}

/// READ(10) or WRITE(10), for targets without the 16-byte forms; `None` when the LBA or the
/// block count does not fit.
pub fn rw10(write: bool, lba: u64, blocks: u32, fua: bool) -> Option<Cdb> {
    let lba = u32::try_from(lba).ok()?;
    let blocks = u16::try_from(blocks).ok()?;
    let mut c = [0u8; 16];
    c[0] = if write {
        opcode::WRITE_10
    } else {
        opcode::READ_10
    };
    c[1] = if fua { FUA } else { 0 };
    c[2..6].copy_from_slice(&lba.to_be_bytes());
    c[7..9].copy_from_slice(&blocks.to_be_bytes());
    Some(c)
}

/// SYNCHRONIZE CACHE(16) of the whole LUN.
pub fn sync_cache16() -> Cdb {
    let mut c = [0u8; 16];
    c[0] = opcode::SYNCHRONIZE_CACHE_16;
    c
}

/// SYNCHRONIZE CACHE(10) of the whole LUN.
pub fn sync_cache10() -> Cdb {
    let mut c = [0u8; 16];
    c[0] = opcode::SYNCHRONIZE_CACHE_10;
    c
}

pub fn test_unit_ready() -> Cdb {
    [0u8; 16]
}

/// Standard INQUIRY data, `alloc` bytes.
pub fn inquiry(alloc: u16) -> Cdb {
    let mut c = [0u8; 16];
    c[0] = opcode::INQUIRY;
    c[3..5].copy_from_slice(&alloc.to_be_bytes());
    c
}

/// READ CAPACITY(16) (SERVICE ACTION IN 0x10), 32 bytes.
pub fn read_capacity16() -> Cdb {
    let mut c = [0u8; 16];
    c[0] = opcode::SERVICE_ACTION_IN_16;
    c[1] = 0x10;
    c[10..14].copy_from_slice(&32u32.to_be_bytes());
    c
}

pub fn read_capacity10() -> Cdb {
    let mut c = [0u8; 16];
    c[0] = opcode::READ_CAPACITY_10;
    c
}

pub fn report_luns(alloc: u32) -> Cdb {
    let mut c = [0u8; 16];
    c[0] = opcode::REPORT_LUNS;
    c[6..10].copy_from_slice(&alloc.to_be_bytes());
    c
}

/// UNMAP with a parameter list of `len` bytes (see [`unmap_params`]).
pub fn unmap(len: u16) -> Cdb {
    let mut c = [0u8; 16];
    c[0] = opcode::UNMAP;
    c[7..9].copy_from_slice(&len.to_be_bytes());
    c
}

/// Length of an UNMAP parameter list with one block descriptor.
pub const UNMAP_PARAMS_LEN: usize = 24;

/// The UNMAP parameter list for one extent.
pub fn unmap_params(lba: u64, blocks: u32) -> [u8; UNMAP_PARAMS_LEN] {
    let mut p = [0u8; UNMAP_PARAMS_LEN];
    p[0..2].copy_from_slice(&22u16.to_be_bytes());
    p[2..4].copy_from_slice(&16u16.to_be_bytes());
    p[8..16].copy_from_slice(&lba.to_be_bytes());
    p[16..20].copy_from_slice(&blocks.to_be_bytes());
    p
}

/// The short name of a CDB, for error messages.
pub fn name(cdb: &Cdb) -> &'static str {
    match cdb[0] {
        opcode::TEST_UNIT_READY => "TEST UNIT READY",
        opcode::INQUIRY => "INQUIRY",
        opcode::READ_CAPACITY_10 => "READ CAPACITY(10)",
        opcode::READ_10 => "READ(10)",
        opcode::WRITE_10 => "WRITE(10)",
        opcode::SYNCHRONIZE_CACHE_10 => "SYNCHRONIZE CACHE(10)",
        opcode::UNMAP => "UNMAP",
        opcode::READ_16 => "READ(16)",
        opcode::WRITE_16 => "WRITE(16)",
        opcode::SYNCHRONIZE_CACHE_16 => "SYNCHRONIZE CACHE(16)",
        opcode::SERVICE_ACTION_IN_16 => "READ CAPACITY(16)",
        opcode::REPORT_LUNS => "REPORT LUNS",
        _ => "SCSI command",
    }
}

/// The LBA a READ/WRITE CDB addresses (for error messages).
pub fn lba_of(cdb: &Cdb) -> Option<u64> {
    match cdb[0] {
        opcode::READ_16 | opcode::WRITE_16 => Some(u64::from_be_bytes(cdb[2..10].try_into().ok()?)),
        opcode::READ_10 | opcode::WRITE_10 => {
            Some(u32::from_be_bytes(cdb[2..6].try_into().ok()?) as u64)
        }
        _ => None,
    }
}

/// What INQUIRY tells about a LUN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inquiry {
    /// Peripheral device type (0 = direct-access block device).
    pub device_type: u8,
    /// Peripheral qualifier (0 = connected; 3 = no LUN here).
    pub qualifier: u8,
    pub vendor: String,
    pub product: String,
    pub revision: String,
}

impl Inquiry {
    pub fn parse(d: &[u8]) -> Option<Inquiry> {
        if d.len() < 5 {
            return None;
        }
        let field = |r: std::ops::Range<usize>| {
            let bytes = d.get(r).unwrap_or(&[]);
            String::from_utf8_lossy(bytes).trim().to_string()
        };
        Some(Inquiry {
            device_type: d[0] & 0x1f,
            qualifier: d[0] >> 5,
            vendor: field(8..16),
            product: field(16..32),
            revision: field(32..36),
        })
    }

    /// The SPC name of the device type.
    pub fn device_type_name(&self) -> &'static str {
        match self.device_type {
            0x00 => "disk",
            0x01 => "tape",
            0x05 => "cd/dvd",
            0x07 => "optical",
            0x0c => "controller",
            0x0d => "enclosure",
            0x1f => "none",
            _ => "other",
        }
    }
}

/// READ CAPACITY results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// Number of logical blocks (last LBA + 1).
    pub blocks: u64,
    pub block_size: u32,
    /// Logical block provisioning management enabled (thin provisioning: UNMAP works).
    pub thin: bool,
}

impl Capacity {
    pub fn bytes(&self) -> u64 {
        self.blocks.saturating_mul(self.block_size as u64)
    }

    pub fn parse16(d: &[u8]) -> Option<Capacity> {
        if d.len() < 12 {
            return None;
        }
        let last = u64::from_be_bytes(d[0..8].try_into().ok()?);
        let block_size = u32::from_be_bytes(d[8..12].try_into().ok()?);
        Some(Capacity {
            blocks: last.checked_add(1)?,
            block_size,
            thin: d.get(14).is_some_and(|b| b & 0x80 != 0),
        })
    }

    pub fn parse10(d: &[u8]) -> Option<Capacity> {
        if d.len() < 8 {
            return None;
        }
        let last = u32::from_be_bytes(d[0..4].try_into().ok()?) as u64;
        Some(Capacity {
            blocks: last + 1,
            block_size: u32::from_be_bytes(d[4..8].try_into().ok()?),
            thin: false,
        })
    }
}

/// LUN numbers from REPORT LUNS data.
pub fn parse_report_luns(d: &[u8]) -> Vec<u64> {
    let Some(len) = d
        .get(0..4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
    else {
        return Vec::new();
    };
    let end = (8 + len as usize).min(d.len());
    d.get(8..end)
        .unwrap_or(&[])
        .chunks_exact(8)
        .filter_map(|c| c.try_into().ok())
        .map(crate::pdu::decode_lun)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn capacity16_of_tgtd_lun() {
        let mut d = [0u8; 32];
        d[0..8].copy_from_slice(&131_071u64.to_be_bytes());
        d[8..12].copy_from_slice(&512u32.to_be_bytes());
        let c = Capacity::parse16(&d).unwrap();
        assert_eq!(
            (c.blocks, c.block_size, c.bytes()),
            (131_072, 512, 64 << 20)
        );
        assert_eq!(Capacity::parse16(&[0xff; 12]), None);
    }

    #[test]
    fn report_luns_lists_entries() {
        let mut d = vec![0u8; 8];
        d[3] = 16;
        d.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        d.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse_report_luns(&d), vec![0, 1]);
        assert_eq!(parse_report_luns(&d[..12]), vec![]);
    }

    #[test]
    fn rw10_refuses_what_does_not_fit() {
        assert!(rw10(false, 1 << 33, 8, false).is_none());
        assert!(rw10(true, 5, 70_000, false).is_none());
        let c = rw10(true, 5, 8, true).unwrap();
        assert_eq!((c[0], c[1], c[5], c[8]), (opcode::WRITE_10, 0x08, 5, 8));
    }

    proptest! {
        #[test]
        fn rw16_encodes_lba_and_length(lba: u64, blocks: u32, write: bool) {
            let c = rw16(write, lba, blocks, false);
            prop_assert_eq!(lba_of(&c), Some(lba));
            prop_assert_eq!(u32::from_be_bytes(c[10..14].try_into().unwrap()), blocks);
        }

        #[test]
        fn parsers_never_panic(d in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Inquiry::parse(&d);
            let _ = Capacity::parse16(&d);
            let _ = Capacity::parse10(&d);
            let _ = parse_report_luns(&d);
        }
    }
}
