//! A cgroup v1 group of one controller (`blkio`, `cpu`, `memory`) that a test makes, puts
//! processes in and sets limits on; on drop its processes go back to the controller's root
//! group and the group is removed.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = "/sys/fs/cgroup";

/// A group under `/sys/fs/cgroup/CONTROLLER`.
pub struct Cgroup {
    controller: PathBuf,
    dir: PathBuf,
}

impl Cgroup {
    /// A new group `storbench-NAME-PID` of `controller` whose file `needs` exists (the
    /// limit the test sets), or None, with the reason printed, where there is none.
    pub fn create(controller: &str, name: &str, needs: &str) -> Option<Cgroup> {
        let root = Path::new(ROOT).join(controller);
        if !root.join(needs).exists() {
            eprintln!("skipped: no cgroup v1 {needs} at {}", root.display());
            return None;
        }
        let dir = root.join(format!("storbench-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("make the cgroup");
        Some(Cgroup {
            controller: root,
            dir,
        })
    }

    /// Writes `value` to the group's `file`.
    pub fn set(&self, file: &str, value: &str) -> &Self {
        std::fs::write(self.dir.join(file), value)
            .unwrap_or_else(|e| panic!("{file} = {value}: {e}"));
        self
    }

    /// Moves process `pid` (all its threads) into the group; what it forks later stays in.
    pub fn hold(&self, pid: u32) -> &Self {
        self.set("cgroup.procs", &pid.to_string())
    }

    /// `base` started inside the group: a shell that joins it, then execs the program
    /// with `base`'s arguments and environment.
    pub fn command(&self, base: &Command) -> Command {
        let mut sh = Command::new("sh");
        sh.envs(base.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .env("PROCS", self.dir.join("cgroup.procs"))
            .args(["-c", r#"echo $$ > "$PROCS" && exec "$0" "$@""#])
            .arg(base.get_program())
            .args(base.get_args());
        sh
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write(self.controller.join("cgroup.procs"), pid);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
