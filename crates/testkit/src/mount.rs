//! Mounts a test makes (as root), unmounted on drop: a file system on a directory, or a
//! bind mount of one directory over another.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A mount made by a test, unmounted on drop (lazily if it is still busy).
pub struct Mount {
    pub point: PathBuf,
}

impl Mount {
    /// Mounts `source` of `fstype` on `point` (created if missing) with `options`.
    pub fn new(fstype: &str, source: &str, point: &Path, options: &str) -> Mount {
        std::fs::create_dir_all(point).unwrap();
        let mut args = vec!["-t", fstype];
        if !options.is_empty() {
            args.extend(["-o", options]);
        }
        args.extend([source, point.to_str().unwrap()]);
        mount(&args);
        Mount {
            point: point.to_path_buf(),
        }
    }

    /// `from` mounted over `to` (a bind mount; both exist).
    pub fn bind(from: &Path, to: &Path) -> Mount {
        mount(&["--bind", from.to_str().unwrap(), to.to_str().unwrap()]);
        Mount {
            point: to.to_path_buf(),
        }
    }
}

fn mount(args: &[&str]) {
    let out = Command::new("mount")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("mount: {e}"));
    assert!(
        out.status.success(),
        "mount {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Drop for Mount {
    fn drop(&mut self) {
        let p = self.point.to_str().unwrap().to_string();
        let ok = Command::new("umount")
            .arg(&p)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").args(["-l", &p]).status();
        }
    }
}
