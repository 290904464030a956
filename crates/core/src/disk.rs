//! Block-device statistics under a target (fio's `Disk stats`), from /proc/diskstats.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use storbench_model::result::DiskUtil;

/// The whole-disk device name (`vda`, `nvme0n1`, `loop3`) a local path lives on, if any.
pub fn device_of(path: &Path) -> Option<String> {
    let probe = existing_ancestor(path)?;
    let meta = std::fs::metadata(&probe).ok()?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = match std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")) {
        Ok(sys) => sys,
        // btrfs gives its files an anonymous device (0:42); its mount names the real one.
        Err(_) => {
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
            let source = mount_source(&mountinfo, major, minor, &probe)?;
            let rdev = std::fs::metadata(source).ok()?.rdev();
            let (major, minor) = (libc::major(rdev), libc::minor(rdev));
            std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?
        }
    };
    // A partition's sysfs directory sits inside its disk's and has a `partition` file.
    let disk = if sys.join("partition").exists() {
        sys.parent()?.to_path_buf()
    } else {
        sys
    };
    Some(disk.file_name()?.to_string_lossy().into_owned())
}

/// The block device (`/dev/loop0`) mounted where a file with device `major:minor` lives:
/// the mount with that device, else, for a btrfs subvolume inside a mounted one (a device
/// of its own that no mount shows), the deepest mount above `path` when it is btrfs. None
/// for a mount whose source is not under `/dev/` (tmpfs, a network file system).
fn mount_source(mountinfo: &str, major: u32, minor: u32, path: &Path) -> Option<String> {
    let dev = format!("{major}:{minor}");
    let path = std::fs::canonicalize(path).ok()?;
    // id parent major:minor root mount-point options... - fstype source super-options
    let mounts: Vec<(&str, &str, &str, &str)> = mountinfo
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let id = f.nth(2)?;
            let point = f.nth(1)?;
            let (_, after) = l.split_once(" - ")?;
            let mut a = after.split(' ');
            Some((id, point, a.next()?, a.next()?))
        })
        .collect();
    let found = match mounts.iter().rev().find(|m| m.0 == dev) {
        Some(m) => m,
        None => mounts
            .iter()
            .filter(|m| path.starts_with(m.1))
            .max_by_key(|m| m.1.len())
            .filter(|m| m.2 == "btrfs")?,
    };
    found.3.starts_with("/dev/").then(|| found.3.to_string())
}

/// This machine's disks: the whole block devices that are hardware (or a hypervisor's
/// virtual disk), i.e. have a `device` in sysfs; loop, dm, md, zram and ram devices have
/// none and hold nothing that is not on one of these. Used for a server on this host whose
/// backing device cannot be known from the client (its export path is not in the protocol).
pub fn machine_disks() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join("device").exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The disks that hold a device's data (`dm-0` → `vda`, `md0` → `sda` and `sdb`, `loop3` →
/// the disk its backing file lives on), followed through device-mapper and md members
/// (`/sys/block/X/slaves`), partitions and loop backing files: the devices whose counters
/// say what really reached a disk, since a loop device without direct IO, for one, is served
/// by the host's page cache. A device with nothing below it is its own disk. Empty when a
/// loop device's backing file is gone or cannot be followed.
pub fn underlying(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    follow(name, 0, &mut out);
    out
}

fn follow(name: &str, depth: u32, out: &mut Vec<String>) {
    if depth > 8 {
        return;
    }
    let sys = Path::new("/sys/class/block").join(name);
    let Ok(dir) = std::fs::canonicalize(&sys) else {
        return;
    };
    // A partition's disk is its sysfs parent.
    let disk = if dir.join("partition").exists() {
        match dir.parent() {
            Some(p) => p.to_path_buf(),
            None => return,
        }
    } else {
        dir
    };
    let Some(disk_name) = disk.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    if let Ok(backing) = std::fs::read_to_string(disk.join("loop/backing_file")) {
        let backing = backing.trim();
        if let Some(dev) = device_of(Path::new(backing)).filter(|_| Path::new(backing).exists()) {
            follow(&dev, depth + 1, out);
        }
        return;
    }
    let slaves: Vec<String> = std::fs::read_dir(disk.join("slaves"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if slaves.is_empty() {
        if !out.contains(&disk_name) {
            out.push(disk_name);
        }
        return;
    }
    for s in slaves {
        follow(&s, depth + 1, out);
    }
}

fn existing_ancestor(path: &Path) -> Option<std::path::PathBuf> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    abs.ancestors().find(|p| p.exists()).map(Path::to_path_buf)
}

/// One device's counters at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskSample {
    pub name: String,
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_ticks: u64,
    pub read_sectors: u64,
    pub write_sectors: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_ticks: u64,
    pub io_ticks: u64,
    pub in_queue: u64,
}

impl DiskSample {
    pub fn read(name: &str) -> Option<Self> {
        let text = std::fs::read_to_string("/proc/diskstats").ok()?;
        Self::parse(&text, name)
    }

    pub fn parse(text: &str, name: &str) -> Option<Self> {
        text.lines().find_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 14 || f[2] != name {
                return None;
            }
            let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
            Some(DiskSample {
                name: name.to_string(),
                read_ios: n(3),
                read_merges: n(4),
                read_ticks: n(6),
                read_sectors: n(5),
                write_sectors: n(9),
                write_ios: n(7),
                write_merges: n(8),
                write_ticks: n(10),
                io_ticks: n(12),
                in_queue: n(13),
            })
        })
    }

    /// Counters over an interval of `elapsed_ms`.
    pub fn since(&self, earlier: &DiskSample, elapsed_ms: u64) -> DiskUtil {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let busy = d(self.io_ticks, earlier.io_ticks);
        DiskUtil {
            name: self.name.clone(),
            read_ios: d(self.read_ios, earlier.read_ios),
            write_ios: d(self.write_ios, earlier.write_ios),
            read_merges: d(self.read_merges, earlier.read_merges),
            write_merges: d(self.write_merges, earlier.write_merges),
            read_ticks: d(self.read_ticks, earlier.read_ticks),
            write_ticks: d(self.write_ticks, earlier.write_ticks),
            in_queue: d(self.in_queue, earlier.in_queue),
            read_bytes: d(self.read_sectors, earlier.read_sectors) * 512,
            write_bytes: d(self.write_sectors, earlier.write_sectors) * 512,
            util: if elapsed_ms == 0 {
                0.0
            } else {
                (busy as f64 / elapsed_ms as f64 * 100.0).min(100.0)
            },
            leaf: false,
            below: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
 254       0 vda 41057 81 2000 1592 20184 0 3000 15797 0 17000 17391 0 0 0 0
 254       1 vda1 1 0 2 3 4 0 5 6 0 7 8 0 0 0 0";

    #[test]
    fn parses_the_named_device_only() {
        let s = DiskSample::parse(SAMPLE, "vda").unwrap();
        assert_eq!((s.read_ios, s.read_merges, s.read_ticks), (41057, 81, 1592));
        assert_eq!(
            (s.write_ios, s.write_ticks, s.io_ticks, s.in_queue),
            (20184, 15797, 17000, 17391)
        );
        assert!(DiskSample::parse(SAMPLE, "sda").is_none());
    }

    #[test]
    fn util_is_busy_time_over_elapsed() {
        let a = DiskSample {
            name: "vda".into(),
            io_ticks: 1000,
            ..Default::default()
        };
        let b = DiskSample {
            io_ticks: 1500,
            ..a.clone()
        };
        assert_eq!(b.since(&a, 1000).util, 50.0);
    }

    #[test]
    fn a_plain_disk_is_its_own_disk_and_unknown_names_have_none() {
        assert!(underlying("no-such-device-here").is_empty());
        let Some(dev) = device_of(Path::new("/tmp")) else {
            return;
        };
        let leaves = underlying(&dev);
        assert!(!leaves.is_empty(), "{dev}");
        for l in &leaves {
            let sys = Path::new("/sys/class/block").join(l);
            assert!(!sys.join("partition").exists(), "{l} is a partition");
            let slaves = std::fs::read_dir(sys.join("slaves")).map_or(0, |d| d.count());
            assert_eq!(slaves, 0, "{l} has devices below it");
        }
    }

    /// The disk under /tmp is one of this machine's disks (unless it is a loop or dm
    /// device's, which have no hardware of their own and are followed to one).
    #[test]
    fn the_disk_under_tmp_is_among_the_machines_disks() {
        let machine = machine_disks();
        let Some(dev) = device_of(Path::new("/tmp")) else {
            return;
        };
        for leaf in underlying(&dev) {
            if Path::new("/sys/block").join(&leaf).join("device").exists() {
                assert!(machine.contains(&leaf), "{leaf} not in {machine:?}");
            }
        }
        assert!(
            machine
                .iter()
                .all(|d| !d.starts_with("loop") && !d.starts_with("zram"))
        );
    }

    #[test]
    fn a_btrfs_files_anonymous_device_is_found_through_its_mount() {
        let info = "22 1 253:1 / / rw - ext4 /dev/vda1 rw\n\
                    61 22 0:42 / /mnt/b rw,relatime - btrfs /dev/loop0 rw,compress=zstd:3\n";
        let here = Path::new("/");
        assert_eq!(
            mount_source(info, 0, 42, here).as_deref(),
            Some("/dev/loop0")
        );
        // A device no mount shows under a btrfs mount: that mount's device.
        let sub = "22 1 0:40 / / rw - btrfs /dev/sda2 rw\n";
        assert_eq!(mount_source(sub, 0, 99, here).as_deref(), Some("/dev/sda2"));
        // tmpfs, or a device no mount shows under ext4: none.
        let tmp =
            "22 1 253:1 / / rw - ext4 /dev/vda1 rw\n70 22 0:50 / /tmp/m rw - tmpfs tmpfs rw\n";
        assert_eq!(mount_source(tmp, 0, 50, here), None);
        assert_eq!(mount_source(tmp, 0, 99, here), None);
    }

    #[test]
    fn finds_a_device_for_tmp() {
        // Skips quietly on machines where /tmp is not on a block device (e.g. tmpfs).
        if let Some(dev) = device_of(Path::new("/tmp/does-not-exist-yet")) {
            assert!(
                DiskSample::read(&dev).is_some(),
                "{dev} not in /proc/diskstats"
            );
        } else {
            eprintln!("skipped: /tmp is not on a block device here");
        }
    }
}
