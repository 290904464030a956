//! "Never lose data": what a device or LUN holds before storbench writes to it.
//!
//! The runner reads the first and last MiB of a device-like target (block device, iSCSI LUN)
//! through the job's engine and asks [`scan`] what they contain; local block devices are also
//! checked for being mounted, used as swap, or held by another driver ([`device_in_use`]).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// How much of each end is read.
pub const PROBE_BYTES: usize = 1 << 20;

/// Names the first partition table, file-system or volume signature found in the head/tail
/// of a device, or — with `strict_zero` (LUNs, which a fresh target presents as zeros) —
/// the first non-zero byte. None: nothing found.
pub fn scan(head: &[u8], tail: &[u8], strict_zero: bool) -> Option<String> {
    if let Some(found) = head_signature(head) {
        return Some(found.to_string());
    }
    if tail_has_gpt_backup(tail) {
        return Some("a GPT partition table (backup header at the end)".into());
    }
    if tail_has_zfs_label(tail) {
        return Some("a ZFS pool label".into());
    }
    if strict_zero {
        if let Some(pos) = head.iter().position(|&b| b != 0) {
            return Some(format!(
                "non-zero data at byte {pos} (a fresh LUN reads as zeros)"
            ));
        }
        if let Some(pos) = tail.iter().position(|&b| b != 0) {
            return Some(format!(
                "non-zero data {} bytes before the end (a fresh LUN reads as zeros)",
                tail.len() - pos
            ));
        }
    }
    None
}

fn at(buf: &[u8], off: usize, magic: &[u8]) -> bool {
    buf.get(off..off + magic.len()) == Some(magic)
}

fn head_signature(h: &[u8]) -> Option<&'static str> {
    let checks: [(&str, bool); 12] = [
        ("a LUKS encrypted volume", at(h, 0, b"LUKS\xba\xbe")),
        ("an XFS file system", at(h, 0, b"XFSB")),
        ("an NTFS file system", at(h, 3, b"NTFS    ")),
        (
            "a FAT file system",
            at(h, 54, b"FAT1") || at(h, 82, b"FAT32   "),
        ),
        (
            "an LVM physical volume",
            (0..4).any(|s| at(h, s * 512, b"LABELONE") && at(h, s * 512 + 24, b"LVM2")),
        ),
        (
            "an ext2/3/4 file system",
            at(h, 1080, &[0x53, 0xEF]) && ext_superblock_plausible(h),
        ),
        (
            "a swap area",
            at(h, 4086, b"SWAPSPACE2") || at(h, 4086, b"SWAP-SPACE"),
        ),
        (
            "a Linux software-RAID member",
            at(h, 4096, &[0xfc, 0x4e, 0x2b, 0xa9]),
        ),
        ("a btrfs file system", at(h, 0x10040, b"_BHRfS_M")),
        (
            "a ZFS pool label",
            zfs_uberblock_in(h.get(128 << 10..256 << 10).unwrap_or(&[])),
        ),
        (
            "a GPT partition table",
            at(h, 512, b"EFI PART") || at(h, 4096, b"EFI PART"),
        ),
        ("an MBR partition table", at(h, 510, &[0x55, 0xAA])),
    ];
    checks
        .into_iter()
        .find(|(_, hit)| *hit)
        .map(|(name, _)| name)
}

/// ext's magic is only two bytes: also require a sane block-size exponent and inode count.
fn ext_superblock_plausible(h: &[u8]) -> bool {
    let le32 = |off: usize| {
        h.get(off..off + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    matches!((le32(1024), le32(1024 + 24)), (Some(inodes), Some(log_bs)) if inodes > 0 && log_bs <= 6)
}

fn tail_has_gpt_backup(t: &[u8]) -> bool {
    t.len() >= 4096 && (at(t, t.len() - 512, b"EFI PART") || at(t, t.len() - 4096, b"EFI PART"))
}

/// ZFS keeps two of its four labels in the last 512 KiB; each has an uberblock array.
fn tail_has_zfs_label(t: &[u8]) -> bool {
    let start = t.len().saturating_sub(512 << 10);
    zfs_uberblock_in(&t[start..])
}

fn zfs_uberblock_in(region: &[u8]) -> bool {
    const MAGIC_LE: [u8; 8] = [0x0c, 0xb1, 0xba, 0x00, 0, 0, 0, 0];
    const MAGIC_BE: [u8; 8] = [0, 0, 0, 0, 0x00, 0xba, 0xb1, 0x0c];
    region
        .chunks(1024)
        .any(|c| c.starts_with(&MAGIC_LE) || c.starts_with(&MAGIC_BE))
}

/// Why a local block device must not be written: mounted, active swap, or held by another
/// device (LVM, dm-crypt, RAID). None: not in use (or not a block device).
pub fn device_in_use(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    use std::os::unix::fs::FileTypeExt;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let (major, minor) = (libc::major(meta.rdev()), libc::minor(meta.rdev()));
    let sys = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let mut devs = vec![(major, minor, sys.clone())];
    // The device's partitions count too.
    if let Ok(entries) = std::fs::read_dir(&sys) {
        for e in entries.flatten() {
            if e.path().join("partition").exists()
                && let Some((ma, mi)) = read_dev_numbers(&e.path())
            {
                devs.push((ma, mi, e.path()));
            }
        }
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for (ma, mi, dir) in &devs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let key = format!("{ma}:{mi}");
        if let Some(line) = mountinfo
            .lines()
            .find(|l| l.split_whitespace().nth(2) == Some(key.as_str()))
        {
            let point = line.split_whitespace().nth(4).unwrap_or("?");
            return Some(format!("/dev/{name} is mounted on {point}"));
        }
        if std::fs::read_to_string("/proc/swaps")
            .unwrap_or_default()
            .lines()
            .any(|l| l.starts_with(&format!("/dev/{name} ")))
        {
            return Some(format!("/dev/{name} is an active swap area"));
        }
        let holders: Vec<String> = std::fs::read_dir(dir.join("holders"))
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !holders.is_empty() {
            return Some(format!("/dev/{name} is in use by {}", holders.join(", ")));
        }
    }
    None
}

fn read_dev_numbers(sys: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(sys.join("dev")).ok()?;
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank() -> Vec<u8> {
        vec![0u8; PROBE_BYTES]
    }

    #[test]
    fn zeros_are_clean_and_strict_zero_flags_data() {
        assert_eq!(scan(&blank(), &blank(), true), None);
        let mut h = blank();
        h[77] = 1;
        assert_eq!(scan(&h, &blank(), false), None);
        assert!(scan(&h, &blank(), true).unwrap().contains("byte 77"));
    }

    #[test]
    fn recognises_signatures() {
        let cases: Vec<(usize, &[u8], &str)> = vec![
            (510, &[0x55, 0xAA], "MBR"),
            (512, b"EFI PART", "GPT"),
            (0, b"XFSB", "XFS"),
            (0x10040, b"_BHRfS_M", "btrfs"),
            (3, b"NTFS    ", "NTFS"),
            (4086, b"SWAPSPACE2", "swap"),
            (0, b"LUKS\xba\xbe", "LUKS"),
        ];
        for (off, magic, name) in cases {
            let mut h = blank();
            h[off..off + magic.len()].copy_from_slice(magic);
            let found = scan(&h, &blank(), false).unwrap_or_default();
            assert!(found.contains(name), "{name}: got {found:?}");
        }
    }

    #[test]
    fn ext4_needs_a_plausible_superblock() {
        let mut h = blank();
        h[1080..1082].copy_from_slice(&[0x53, 0xEF]);
        assert_eq!(scan(&h, &blank(), false), None, "magic alone is not enough");
        h[1024..1028].copy_from_slice(&1024u32.to_le_bytes());
        h[1048..1052].copy_from_slice(&2u32.to_le_bytes());
        assert!(scan(&h, &blank(), false).unwrap().contains("ext2/3/4"));
    }

    #[test]
    fn lvm_and_zfs_and_backup_gpt() {
        let mut h = blank();
        h[512..520].copy_from_slice(b"LABELONE");
        h[536..540].copy_from_slice(b"LVM2");
        assert!(scan(&h, &blank(), false).unwrap().contains("LVM"));
        let mut t = blank();
        let at = t.len() - (300 << 10);
        t[at..at + 4].copy_from_slice(&[0x0c, 0xb1, 0xba, 0x00]);
        assert!(scan(&blank(), &t, false).unwrap().contains("ZFS"));
        let mut t = blank();
        let end = t.len() - 512;
        t[end..end + 8].copy_from_slice(b"EFI PART");
        assert!(scan(&blank(), &t, false).unwrap().contains("GPT"));
    }

    #[test]
    fn regular_files_are_not_devices_in_use() {
        assert_eq!(device_in_use(Path::new("/etc/hostname")), None);
    }
}
