//! What quick and bonnie runs killed with SIGKILL leave on an NFS export or SMB share is
//! named by a mark carrying host, PID and start time (docs/faults.md): the next run warns,
//! `storbench clean URL` removes exactly those files and trees through the protocol
//! (links inside not followed), and keeps a live run's files and those of another host
//! unless `--other-hosts` is given. Against a real nfs-ganesha and a real Samba smbd.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Run, storbench};
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::smbd::{self, Smbd};

/// The first `n` hex digits of a file's text, dashes left out.
fn hex(path: &str, n: usize) -> String {
    let t = std::fs::read_to_string(path).unwrap();
    t.chars().filter(|c| *c != '-').take(n).collect()
}

/// The mark a run of `kind` with `pid` and `start` on this host has.
fn mark_here(kind: &str, pid: u32, start: u64) -> String {
    let host: String = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .chars()
        .take(63)
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                true => c,
                false => '-',
            },
        )
        .collect();
    format!(
        ".storbench-{kind}.{pid}.{start}.{}.{}.{host}",
        hex("/etc/machine-id", 12),
        hex("/proc/sys/kernel/random/boot_id", 8)
    )
}

/// This test process's start time (field 22 of /proc/self/stat).
fn my_start() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after.split_whitespace().nth(19).unwrap().parse().unwrap()
}

fn with_password(c: &mut std::process::Command, password: Option<&str>) {
    c.env_remove("STORBENCH_SMB_PASSWORD");
    if let Some(pw) = password {
        c.env("STORBENCH_SMB_PASSWORD", pw);
    }
}

/// Starts a long quick run on `url`, waits until its test file and mark are on the server
/// (`dir`), and kills it with SIGKILL; returns their names.
fn kill_a_quick_run(dir: &Path, url: &str, password: Option<&str>) -> (String, String) {
    let mut c = storbench();
    c.args(["quick", url, "--size=64m", "--runtime=10s", "--no-save"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    with_password(&mut c, password);
    let mut child = c.spawn().unwrap();
    let file = format!("storbench-quick.{}.tmp", child.id());
    let mark_start = format!(".storbench-quick.{}.", child.id());
    let end = Instant::now() + Duration::from_secs(30);
    let mark = loop {
        let names = common::entries(dir);
        let mark = names.iter().find(|n| n.starts_with(&mark_start)).cloned();
        if let Some(m) = mark.filter(|_| names.contains(&file)) {
            break m;
        }
        assert!(Instant::now() < end, "no test file and mark: {names:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    (file, mark)
}

fn clean(url: &str, extra: &[&str], password: Option<&str>) -> Run {
    let mut c = storbench();
    c.args(["clean", url, "--yes"])
        .args(extra)
        .stdin(Stdio::null());
    with_password(&mut c, password);
    Run::of(&mut c)
}

/// The whole story on one server directory `dir`, reached as `url`.
fn killed_runs_are_named_and_cleaned(dir: &Path, url: &str, password: Option<&str>) {
    let (killed, killed_mark) = kill_a_quick_run(dir, url, password);
    let me = std::process::id();
    // A live run of this host: this test process.
    let live_mark = mark_here("quick", me, my_start());
    let live = format!("storbench-quick.{me}.tmp");
    // Another host's run, which this host cannot see.
    let other_mark = ".storbench-quick.4000000.77.aaaaaaaaaaaa.bbbbbbbb.elsewhere.lab";
    let other = "storbench-quick.4000000.tmp";
    // A killed bonnie of this host (the PID now runs another process): its tree.
    let bonnie_mark = mark_here("bonnie", me, my_start() + 1);
    let tree = dir.join(format!("Bonnie.{me}"));
    std::fs::create_dir_all(tree.join("00001")).unwrap();
    std::fs::write(tree.join("00001/000000002aabc"), b"x").unwrap();
    std::fs::write(tree.join("0000000003top"), b"y").unwrap();
    for name in [
        &live_mark,
        &live,
        other_mark,
        other,
        &bonnie_mark,
        "keep.txt",
    ] {
        std::fs::write(dir.join(name), b"").unwrap();
    }

    let mut c = storbench();
    c.args(["quick", url, "--size=1m", "--runtime=100ms", "--no-save"])
        .stdin(Stdio::null());
    with_password(&mut c, password);
    let next = Run::of(&mut c);
    next.ok();
    assert!(
        next.stderr
            .contains("left by storbench runs that were killed"),
        "{}",
        next.stderr
    );

    let r = clean(url, &[], password);
    r.ok();
    assert!(
        r.stderr.contains("made on host elsewhere.lab")
            && r.stderr.contains("cannot tell whether that run is alive"),
        "{}",
        r.stderr
    );
    let names = common::entries(dir);
    for gone in [&killed, &killed_mark, &bonnie_mark, &format!("Bonnie.{me}")] {
        assert!(!names.contains(gone), "{gone} left: {names:?}");
    }
    for kept in [&live_mark, &live, other_mark, other, "keep.txt"] {
        assert!(names.iter().any(|n| n == kept), "{kept} removed: {names:?}");
    }

    clean(url, &["--other-hosts"], password).ok();
    let names = common::entries(dir);
    assert!(!names.iter().any(|n| n == other || n == other_mark));
    for kept in [&live_mark, &live, "keep.txt"] {
        assert!(names.iter().any(|n| n == kept), "{kept} removed: {names:?}");
    }
}

#[test]
fn nfs_killed_runs_are_named_and_cleaned() {
    storbench_testkit::require!(ganesha::unavailable());
    let g = Ganesha::start().expect("start ganesha");
    killed_runs_are_named_and_cleaned(&g.export_dir(), &g.url(""), None);
}

#[test]
fn smb_killed_runs_are_named_and_cleaned() {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start().expect("start smbd");
    let url = format!("smb://{}@127.0.0.1:{}/{}/", s.user(), s.port, smbd::SHARE);
    killed_runs_are_named_and_cleaned(&s.share_dir(smbd::SHARE), &url, Some(s.password()));
}

/// A link inside a killed bonnie's tree is removed as a link: what it points to stays.
#[test]
fn nfs_clean_removes_a_tree_without_following_links() {
    storbench_testkit::require!(ganesha::unavailable());
    let g = Ganesha::start().expect("start ganesha");
    let dir = g.export_dir();
    let me = std::process::id();
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("precious"), b"keep").unwrap();
    let tree = dir.join(format!("Bonnie.{me}"));
    std::fs::create_dir_all(tree.join("00000")).unwrap();
    std::fs::write(tree.join("00000/00000000a1xyz"), b"bonnie's").unwrap();
    std::os::unix::fs::symlink(victim.path(), tree.join("00000/link")).unwrap();
    std::os::unix::fs::symlink(victim.path().join("precious"), tree.join("file")).unwrap();
    std::fs::write(dir.join(mark_here("bonnie", me, my_start() + 1)), b"").unwrap();
    clean(&g.url(""), &[], None).ok();
    assert_eq!(common::entries(&dir), Vec::<String>::new());
    assert_eq!(
        std::fs::read(victim.path().join("precious")).unwrap(),
        b"keep"
    );
}

/// Samba follows links and shows a directory link as the directory it leads to: a link
/// planted in a killed bonnie's tree under a name bonnie uses leads `clean` to no file
/// bonnie does not name, and the tree is left with one line saying why.
#[test]
fn smb_clean_removes_only_bonnies_names_behind_a_hidden_link() {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start().expect("start smbd");
    let url = format!("smb://{}@127.0.0.1:{}/{}/", s.user(), s.port, smbd::SHARE);
    let dir = s.share_dir(smbd::SHARE);
    let me = std::process::id();
    let other = dir.join("photos");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("precious.jpg"), b"keep").unwrap();
    let tree = dir.join(format!("Bonnie.{me}"));
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("0000000001"), b"bonnie's").unwrap();
    std::os::unix::fs::symlink(&other, tree.join("00000")).unwrap();
    std::fs::write(dir.join(mark_here("bonnie", me, my_start() + 1)), b"").unwrap();
    let r = clean(&url, &[], Some(s.password()));
    assert_ne!(r.code, Some(0), "{r:?}");
    assert!(r.stderr.contains("bonnie does not make"), "{}", r.stderr);
    assert_eq!(std::fs::read(other.join("precious.jpg")).unwrap(), b"keep");
    assert!(
        !tree.join("0000000001").exists(),
        "bonnie's own file is removed"
    );
}

/// A bonnie run killed with SIGKILL mid file test in `dir` (reached as `url`): the next
/// bonnie run warns, and `clean URL` removes its `Bonnie.PID` tree and its mark, leaving
/// the directory as it was.
fn a_killed_bonnie_run_is_named_and_cleaned(dir: &Path, url: &str, password: Option<&str>) {
    std::fs::write(dir.join("keep.txt"), b"x").unwrap();
    let mut c = storbench();
    c.args([
        "--no-save",
        "bonnie",
        "-d",
        url,
        "-s",
        "0",
        "-n",
        "64:1k:0:8",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    with_password(&mut c, password);
    let mut child = c.spawn().unwrap();
    let tree = format!("Bonnie.{}", child.id());
    let mark = format!(".storbench-bonnie.{}.", child.id());
    let end = Instant::now() + Duration::from_secs(30);
    while !dir.join(&tree).join("00000").exists() {
        assert!(Instant::now() < end, "no tree: {:?}", common::entries(dir));
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let names = common::entries(dir);
    assert!(names.iter().any(|n| n.starts_with(&mark)), "{names:?}");

    let mut c = storbench();
    c.args(["--no-save", "bonnie", "-d", url, "-s", "0", "-n", "1"])
        .stdin(Stdio::null());
    with_password(&mut c, password);
    let next = Run::of(&mut c);
    next.ok();
    assert!(
        next.stderr
            .contains("left by storbench runs that were killed"),
        "{}",
        next.stderr
    );
    clean(url, &[], password).ok();
    assert_eq!(common::entries(dir), ["keep.txt"]);
}

#[test]
fn nfs_a_killed_bonnie_run_is_named_and_cleaned() {
    storbench_testkit::require!(ganesha::unavailable());
    let g = Ganesha::start().expect("start ganesha");
    a_killed_bonnie_run_is_named_and_cleaned(&g.export_dir(), &g.url(""), None);
}

#[test]
fn smb_a_killed_bonnie_run_is_named_and_cleaned() {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start().expect("start smbd");
    let url = format!("smb://{}@127.0.0.1:{}/{}/", s.user(), s.port, smbd::SHARE);
    let dir = s.share_dir(smbd::SHARE);
    a_killed_bonnie_run_is_named_and_cleaned(&dir, &url, Some(s.password()));
}
