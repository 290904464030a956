//! Helpers shared by the `storbench bonnie` CLI tests: running storbench and the real
//! bonnie++ side by side, and reading their CSV lines.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// `storbench` from this build, never touching the user's results database.
pub fn storbench() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("storbench").expect("storbench binary");
    c.env_remove("STORBENCH_DB");
    c
}

/// Runs `storbench --no-save bonnie <args>` and insists on success.
pub fn bonnie_ok(args: &[&str]) -> Output {
    let out = storbench()
        .arg("--no-save")
        .arg("bonnie")
        .args(args)
        .output()
        .expect("run storbench");
    assert!(
        out.status.success(),
        "storbench bonnie {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// bonnie++ from Debian, if installed (the tests that need it say so and skip otherwise).
pub fn bonnie_pp() -> Option<&'static str> {
    ["/usr/sbin/bonnie++", "/usr/bin/bonnie++"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

/// Runs bonnie++ with `args` (adding `-u root` when we are root, which it requires).
pub fn bonnie_pp_ok(bin: &str, args: &[&str]) -> Output {
    let mut c = Command::new(bin);
    c.args(args);
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        c.args(["-u", "root"]);
    }
    let out = c.output().expect("run bonnie++");
    assert!(
        out.status.success(),
        "bonnie++ {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn skip(why: &str) {
    eprintln!("skipped: {why}");
}

/// The last non-empty line of a command's stdout.
pub fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

pub fn fields(line: &str) -> Vec<String> {
    line.split(',').map(str::to_string).collect()
}

/// What is left in a directory.
pub fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect()
}

pub fn path_str(dir: &tempfile::TempDir) -> String {
    dir.path().to_string_lossy().into_owned()
}

/// A rate/CPU pair is `+++++`/`+++` together, both empty, or both numbers.
pub fn check_pair(rate: &str, cpu: &str, what: &str) {
    match (rate, cpu) {
        ("+++++", "+++") | ("", "") => {}
        (r, c) => {
            assert!(r.parse::<f64>().is_ok(), "{what}: rate {r:?}");
            assert!(c.parse::<u32>().is_ok(), "{what}: cpu {c:?}");
        }
    }
}

/// A latency field: empty or a whole number with us, ms or s.
pub fn is_latency(s: &str) -> bool {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[digits.len()..];
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && ["us", "ms", "s"].contains(&unit)
}

/// Starts `storbench --no-save bonnie -d <dir> <args>` in the background, output discarded.
pub fn bonnie_spawn(dir: &str, args: &[&str]) -> std::process::Child {
    Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "bonnie", "-d", dir])
        .args(args)
        .env_remove("STORBENCH_DB")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start storbench")
}

/// What bonnie++ makes: files 0600, directories 0700, as (is a directory, mode).
pub const OWNER_ONLY: [(bool, u32); 2] = [(false, 0o600), (true, 0o700)];

/// The modes of everything seen under `dir` while `run` works there: (is a directory, mode).
pub fn modes_while_running(
    mut run: std::process::Child,
    dir: &std::path::Path,
) -> Vec<(bool, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut seen = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while run.try_wait().unwrap().is_none() {
        let Some(at) = stack.pop() else {
            // A breath between sweeps, so the run is not starved of CPU.
            std::thread::sleep(std::time::Duration::from_millis(2));
            stack.push(dir.to_path_buf());
            continue;
        };
        // Entries come and go under us: whatever vanishes is skipped.
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            let mode = meta.permissions().mode() & 0o777;
            if !seen.contains(&(meta.is_dir(), mode)) {
                seen.push((meta.is_dir(), mode));
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    assert!(run.wait().unwrap().success(), "the run failed");
    seen.sort();
    seen
}
