//! A tmux server of a test's own, to see output as a terminal of a given width shows it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmux server of our own (its socket in a temporary directory), killed on drop.
pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    pub fn start(dir: &Path, columns: u16, command: &str) -> Tmux {
        let t = Tmux {
            socket: dir.join("tmux.sock"),
        };
        let ok = t
            .cmd()
            .args([
                "new-session",
                "-d",
                "-s",
                "t",
                "-x",
                &columns.to_string(),
                // Tall enough for the table and all its notes (verdicts add a note per
                // reason), so the final screen still holds the table.
                "-y",
                "200",
            ])
            .arg(command)
            .status()
            .expect("tmux runs")
            .success();
        assert!(ok, "tmux new-session failed");
        t
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket).arg("-f").arg("/dev/null");
        c
    }

    /// The pane's text; `join` puts wrapped lines back together (`-J`), `escapes` keeps
    /// colours (`-e`).
    pub fn capture(&self, join: bool, escapes: bool) -> String {
        let mut c = self.cmd();
        c.args(["capture-pane", "-p", "-t", "t"]);
        if join {
            c.arg("-J");
        }
        if escapes {
            c.arg("-e");
        }
        let out = c.output().expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}
