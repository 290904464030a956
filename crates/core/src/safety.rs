//! "Never lose data": what a device or LUN holds before storbench writes to it.
//!
//! The runner reads the first and last MiB of a device-like target (block device, iSCSI LUN)
//! through the job's engine and asks [`scan`] what they contain, then samples the region the
//! job will write ([`region_samples`], [`scan_sample`]): a file system or partition that
//! starts inside the device (its table lost, or an `--offset` past the ends) holds its
//! signature at its own start, which lies on a MiB boundary on any modern layout. Local block
//! devices are also checked for being mounted, used as swap, or held by another driver
//! ([`device_in_use`]), which `--allow-destructive` does not override.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// How much of each end is read.
pub const PROBE_BYTES: usize = 1 << 20;

/// Bytes read at each sampled place of the region a job writes: enough for every signature
/// [`scan`] knows at a volume's start (btrfs's is at 64 KiB) but the ZFS uberblocks.
pub const SAMPLE_BYTES: usize = 128 << 10;
/// At most this many places of a region are read.
pub const MAX_SAMPLES: u64 = 1024;
const MIB: u64 = 1 << 20;

/// The sampling rule, as said in refusals and docs.
pub const SAMPLING_RULE: &str = "the first and last MiB, and 128 KiB at every MiB boundary \
     of the region the job writes (every Nth MiB when that region is over 1 GiB, N = its \
     size in GiB rounded up, so at most 1024 places)";

/// Offsets to read in `[start, start + len)` of a device of `size` bytes: every MiB
/// boundary, from the one at or below `start`; in a region over [`MAX_SAMPLES`] MiB, every
/// `ceil(len / 1 GiB)`-th. Each read is [`SAMPLE_BYTES`] long, cut at the device's end.
pub fn region_samples(start: u64, len: u64, size: u64) -> impl Iterator<Item = u64> {
    let end = start.saturating_add(len).min(size);
    let first = start / MIB * MIB;
    let stride = (end.saturating_sub(first).div_ceil(MIB * MAX_SAMPLES)).max(1) * MIB;
    (0..MAX_SAMPLES)
        .map(move |i| first + i * stride)
        .take_while(move |&off| off < end)
}

/// What one sample of a written region holds: a signature at its start, or with
/// `strict_zero` (LUNs) non-zero data, named with its offset `at` on the device.
pub fn scan_sample(sample: &[u8], at: u64, strict_zero: bool) -> Option<String> {
    // An MBR's two-byte mark is a partition table only at a device's start (which `scan`
    // reads); inside a region of old data it would be a false alarm once in 65536 samples.
    if let Some(found) = head_signature(sample).filter(|f| !f.contains("MBR")) {
        return Some(format!("{found} starting at byte {at}"));
    }
    if strict_zero && let Some(pos) = sample.iter().position(|&b| b != 0) {
        return Some(format!(
            "non-zero data at byte {} (a fresh LUN reads as zeros)",
            at + pos as u64
        ));
    }
    None
}

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
    fn samples_every_mib_up_to_a_gib_then_spread() {
        let mib = 1u64 << 20;
        let v: Vec<u64> = region_samples(100 * mib + 5, 64 * mib, 1 << 40).collect();
        assert_eq!(v.len(), 65);
        assert_eq!((v[0], v[64]), (100 * mib, 164 * mib));
        assert_eq!(region_samples(0, 1 << 30, 1 << 40).count(), 1024);
        let big: Vec<u64> = region_samples(0, 10 << 30, 1 << 40).collect();
        assert_eq!((big.len(), big[1]), (1024, 10 * mib));
        assert_eq!(region_samples(0, 1 << 50, 1 << 50).count(), 1024);
        assert_eq!(region_samples(mib / 2, 1 << 30, 1 << 40).count(), 513);
        assert_eq!(region_samples(10 * mib, mib, 10 * mib).count(), 0);
        let mut s = blank();
        s[300] = 1;
        assert!(
            scan_sample(&s, mib, true)
                .unwrap()
                .contains(&format!("{}", mib + 300))
        );
        assert!(scan_sample(&s, mib, false).is_none());
        s[510] = 0x55;
        s[511] = 0xAA;
        assert!(scan_sample(&s, mib, false).is_none());
        s[0..4].copy_from_slice(b"XFSB");
        assert!(
            scan_sample(&s, mib, false)
                .unwrap()
                .contains("XFS file system starting at")
        );
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
