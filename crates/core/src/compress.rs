//! Does the target compress or dedupe what is written? Compressible data written to such a
//! target is stored as almost nothing, so its write rate (and later read rate) is not the
//! device's. Known for local btrfs (its `compress`/`compress-force` mount option) and ZFS
//! (`zfs get compression,dedup`, when the zfs tools exist); unknown for network targets,
//! whose server's file system cannot be seen from here.

use std::path::{Path, PathBuf};

use storbench_job::spec::BufferSpec;
use storbench_job::target::Target;

/// The target's compression: `Ok("off")`, `Ok(algorithm)`, or `Err(why it is unknown)`.
/// A networked target is asked as such (its capabilities), not recognised by its spelling.
pub fn of_target(target: &Target) -> Result<String, String> {
    if target.caps().network {
        return Err("a network target: its server's compression cannot be seen from here".into());
    }
    let target = target.expose();
    let path = std::fs::canonicalize(target).unwrap_or_else(|_| PathBuf::from(target));
    let path = existing(&path);
    if path.starts_with("/dev") {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        return match name {
            Some(n) if n.starts_with("zd") => Err(format!(
                "{n} is a ZFS volume: its dataset's compression is not looked up"
            )),
            _ => Ok("off".into()),
        };
    }
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let Some(m) = mount_of(&text, &path) else {
        return Err(format!("no mount found for {}", path.display()));
    };
    match m.fs.as_str() {
        "btrfs" => Ok(btrfs_compression(&m.options)),
        "zfs" => zfs_compression(&m.source),
        _ => Ok("off".into()),
    }
}

/// Why the data a job writes compresses or dedupes, if it does (fio's buffer options).
pub fn compressible(b: &BufferSpec) -> Option<String> {
    if b.zero_buffers {
        return Some("zero_buffers=1".into());
    }
    if !b.pattern.is_empty() {
        return Some("buffer_pattern".into());
    }
    if b.compress_percentage > 0 {
        return Some(format!(
            "buffer_compress_percentage={}",
            b.compress_percentage
        ));
    }
    if b.dedupe_percentage > 0 {
        return Some(format!("dedupe_percentage={}", b.dedupe_percentage));
    }
    if !b.scramble_buffers && !b.refill_buffers {
        return Some("scramble_buffers=0: every write carries the same buffer".into());
    }
    None
}

fn existing(path: &Path) -> PathBuf {
    path.ancestors()
        .find(|p| p.exists())
        .unwrap_or(path)
        .to_path_buf()
}

/// One mountinfo line's facts.
#[derive(Debug, PartialEq)]
pub struct Mount {
    pub point: String,
    pub fs: String,
    pub source: String,
    /// The mount's and the super block's options, joined.
    pub options: String,
}

/// The mount holding `path` (the longest mount point that contains it, the last mounted
/// on a tie), from mountinfo's text.
pub fn mount_of(text: &str, path: &Path) -> Option<Mount> {
    let mut best: Option<Mount> = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split_whitespace().collect();
        let r: Vec<&str> = right.split_whitespace().collect();
        let (Some(point), Some(fs)) = (f.get(4), r.first()) else {
            continue;
        };
        let point = point.replace("\\040", " ");
        if !path.starts_with(&point) || best.as_ref().is_some_and(|b| b.point.len() > point.len()) {
            continue;
        }
        best = Some(Mount {
            point,
            fs: fs.to_string(),
            source: r.get(1).unwrap_or(&"").to_string(),
            options: format!("{},{}", f.get(5).unwrap_or(&""), r.get(2).unwrap_or(&"")),
        });
    }
    best
}

/// btrfs's `compress=zstd:3` or `compress-force=lzo` (a bare `compress` means zlib).
pub fn btrfs_compression(options: &str) -> String {
    for o in options.split(',') {
        let value = o
            .strip_prefix("compress-force")
            .or_else(|| o.strip_prefix("compress"));
        match value {
            Some("") => return "zlib".into(),
            Some(v) if v.starts_with('=') => {
                let algo = v[1..].split(':').next().unwrap_or("");
                if algo != "no" && !algo.is_empty() {
                    return algo.to_string();
                }
            }
            _ => {}
        }
    }
    "off".into()
}

/// `zfs get` of the dataset's compression and dedup.
fn zfs_compression(dataset: &str) -> Result<String, String> {
    let out = std::process::Command::new("zfs")
        .args(["get", "-H", "-o", "value", "compression,dedup", dataset])
        .output()
        .map_err(|e| format!("ZFS dataset {dataset}: cannot run zfs get: {e}"))?;
    if !out.status.success() {
        return Err(format!("ZFS dataset {dataset}: zfs get failed"));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = text.lines().map(str::trim);
    let (comp, dedup) = (v.next().unwrap_or("off"), v.next().unwrap_or("off"));
    Ok(match (comp, dedup) {
        ("off", "off") => "off".into(),
        (c, "off") => c.into(),
        ("off", _) => "dedup".into(),
        (c, _) => format!("{c}+dedup"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 7:3 / /mnt/b rw,relatime shared:9 - btrfs /dev/loop3 rw,compress=zstd:3,space_cache=v2,subvolid=5,subvol=/
41 22 7:4 / /mnt/c\\040d rw shared:10 - btrfs /dev/loop4 rw,space_cache=v2
42 22 0:50 / /tank rw shared:11 - zfs tank/data rw,xattr";

    #[test]
    fn finds_the_innermost_mount() {
        let m = mount_of(INFO, Path::new("/mnt/b/x/file")).unwrap();
        assert_eq!((m.fs.as_str(), m.source.as_str()), ("btrfs", "/dev/loop3"));
        assert_eq!(btrfs_compression(&m.options), "zstd");
        let m = mount_of(INFO, Path::new("/mnt/c d/f")).unwrap();
        assert_eq!(btrfs_compression(&m.options), "off");
        let m = mount_of(INFO, Path::new("/var/tmp")).unwrap();
        assert_eq!(m.fs, "ext4");
        assert_eq!(
            mount_of(INFO, Path::new("/tank/a")).unwrap().source,
            "tank/data"
        );
    }

    #[test]
    fn btrfs_options() {
        assert_eq!(btrfs_compression("rw,compress-force=lzo"), "lzo");
        assert_eq!(btrfs_compression("rw,compress"), "zlib");
        assert_eq!(btrfs_compression("rw,compress=no"), "off");
        assert_eq!(btrfs_compression("rw,nodatacow"), "off");
    }

    #[test]
    fn buffer_settings_that_compress() {
        let mut b = BufferSpec::default();
        assert_eq!(compressible(&b), None);
        b.refill_buffers = true;
        b.scramble_buffers = false;
        assert_eq!(compressible(&b), None);
        b.compress_percentage = 50;
        assert_eq!(compressible(&b).unwrap(), "buffer_compress_percentage=50");
        b.zero_buffers = true;
        assert_eq!(compressible(&b).unwrap(), "zero_buffers=1");
        let b = BufferSpec {
            scramble_buffers: false,
            ..Default::default()
        };
        assert!(compressible(&b).unwrap().starts_with("scramble_buffers=0"));
    }

    #[test]
    fn network_targets_are_unknown() {
        assert!(of_target(&Target::classify("nfs://h/export")).is_err());
        assert!(of_target(&Target::classify("smb://h/share/d")).is_err());
        assert_eq!(of_target(&Target::classify("/proc")).unwrap(), "off");
    }
}
