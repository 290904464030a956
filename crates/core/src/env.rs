//! Where a run happened: host facts and, per target, its file system, device or server.
//! Stored with every run so comparisons can say what changed.

use std::path::{Path, PathBuf};

use storbench_job::target::Target;

use storbench_model::result::{Environment, TargetInfo};

/// Collects the host and the given targets.
pub fn collect(targets: &[Target]) -> Environment {
    let cpuinfo = read("/proc/cpuinfo");
    Environment {
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        cpu_model: cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default(),
        ncpus: crate::cpu::ncpus(),
        mem_bytes: mem_total_bytes().unwrap_or(0),
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        storbench_version: env!("CARGO_PKG_VERSION").to_string(),
        targets: targets.iter().map(target_info).collect(),
    }
}

/// Total RAM in bytes, from /proc/meminfo.
pub fn mem_total_bytes() -> Option<u64> {
    read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| kib * 1024)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Facts about one target: a network target's server as its typed URL names it (host, and
/// port when it is not the protocol's default), never its user or secret; a local one's
/// file system and device. The target is shown masked, as everywhere.
pub fn target_info(target: &Target) -> TargetInfo {
    let mut info = TargetInfo {
        target: target.to_string(),
        ..Default::default()
    };
    if let Some(server) = target.server() {
        info.server = Some(server);
        return info;
    }
    let target = target.expose();
    let path = std::fs::canonicalize(target).unwrap_or_else(|_| PathBuf::from(target));
    if let Some((fs, opts)) = mount_of(&path) {
        info.fs_type = Some(fs);
        info.mount_options = Some(opts);
    }
    if let Some(dev) = crate::disk::device_of(&path) {
        let q = |f: &str| {
            std::fs::read_to_string(format!("/sys/block/{dev}/{f}"))
                .ok()
                .map(|s| s.trim().to_string())
        };
        info.device_model = q("device/model").filter(|s| !s.is_empty());
        info.rotational = q("queue/rotational").map(|r| r == "1");
        info.scheduler = q("queue/scheduler").map(|s| selected_scheduler(&s));
        info.size_bytes = q("size")
            .and_then(|s| s.parse::<u64>().ok())
            .map(|sectors| sectors * 512);
        if dev.starts_with("loop") {
            info.loop_backing_file = q("loop/backing_file");
            info.loop_direct_io = q("loop/dio").map(|d| d == "1");
        }
        info.device = Some(dev);
    }
    info
}

/// `[mq-deadline] none` → `mq-deadline`.
fn selected_scheduler(s: &str) -> String {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(s)
        .to_string()
}

/// File-system type and mount options of the mount holding `path` (longest prefix wins).
pub fn mount_of(path: &Path) -> Option<(String, String)> {
    let text = read("/proc/self/mountinfo");
    let mut best: Option<(usize, String, String)> = None;
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let f: Vec<&str> = left.split_whitespace().collect();
        let Some(point) = f.get(4).map(|p| unescape(p)) else {
            continue;
        };
        let opts = f.get(5).copied().unwrap_or("").to_string();
        let fs = right.split_whitespace().next().unwrap_or("").to_string();
        if path.starts_with(&point) && best.as_ref().is_none_or(|b| point.len() >= b.0) {
            best = Some((point.len(), fs, opts));
        }
    }
    best.map(|(_, fs, opts)| (fs, opts))
}

/// mountinfo escapes spaces and friends as octal `\040`.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let code: String = chars.by_ref().take(3).collect();
            if let Ok(v) = u8::from_str_radix(&code, 8) {
                out.push(v as char);
                continue;
            }
            out.push('\\');
            out.push_str(&code);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_facts_are_filled() {
        let env = collect(&[
            Target::parse("/tmp").unwrap(),
            Target::parse("nfs://10.0.0.7:2049/export?version=3").unwrap(),
        ]);
        assert!(env.ncpus >= 1);
        assert!(env.mem_bytes > 0);
        assert!(!env.kernel.is_empty());
        assert!(env.targets[0].fs_type.is_some(), "/tmp has a mount");
        assert_eq!(env.targets[1].server.as_deref(), Some("10.0.0.7:2049"));
    }

    /// The server is asked of the typed URL: its host (and a port other than the
    /// protocol's default), never the user or the secret the URL holds.
    #[test]
    fn a_servers_host_comes_from_its_typed_url_without_user_or_secret() {
        for (url, server) in [
            ("smb://dom;alice:hunter2@nas.lan/share/d", "nas.lan"),
            ("smb://alice:hunter2@[::1]:4455/share", "[::1]:4455"),
            ("iscsi://alice%hunter2@10.0.0.9/iqn.x:t/1", "10.0.0.9"),
            ("iscsi://10.0.0.9:3261/iqn.x:t/1", "10.0.0.9:3261"),
            ("nfs://h/export", "h"),
            ("nbd://h:10810/e", "h:10810"),
        ] {
            let info = target_info(&Target::parse(url).unwrap());
            assert_eq!(info.server.as_deref(), Some(server), "{url}");
            let shown = format!("{info:?}");
            assert!(!shown.contains("hunter2"), "{shown}");
        }
    }

    #[test]
    fn scheduler_and_escapes() {
        assert_eq!(selected_scheduler("[mq-deadline] none"), "mq-deadline");
        assert_eq!(selected_scheduler("none"), "none");
        assert_eq!(unescape("/mnt/my\\040disk"), "/mnt/my disk");
    }
}
