//! The smbd guard serves its shares to `smbclient` and leaves nothing running after drop.

use std::fs;
use std::path::Path;

use storbench_testkit::smbd::{self, GUEST_SHARE, PRIVATE_SHARE, SHARE, Smbd, SmbdOptions};

#[test]
fn smbd_serves_user_guest_and_denies_private_and_stops() {
    if let Some(why) = smbd::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let s = Smbd::start_with(SmbdOptions {
        signing: Some("mandatory"),
        ..Default::default()
    })
    .expect("start smbd");
    let pid = s.pid().expect("pid");
    fs::write(s.share_dir(SHARE).join("a.txt"), b"hello").unwrap();
    let out = s.smbclient(SHARE, false, "ls").expect("user ls");
    assert!(out.contains("a.txt"), "{out}");
    s.smbclient(GUEST_SHARE, true, "mkdir made-by-guest")
        .expect("guest mkdir");
    assert!(s.share_dir(GUEST_SHARE).join("made-by-guest").is_dir());
    let denied = s.smbclient(PRIVATE_SHARE, false, "ls").unwrap_err();
    assert!(denied.contains("NT_STATUS_ACCESS_DENIED"), "{denied}");
    let bad = s.smbclient(SHARE, true, "ls").unwrap_err();
    assert!(bad.contains("NT_STATUS_"), "{bad}");
    drop(s);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "smbd {pid} still runs"
    );
}

/// PIDs in /proc (alive or zombie) whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the ")" that ends the command name: state, ppid, pgrp.
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|s| s.parse::<u32>().ok());
        if pgrp == Some(pgid) {
            out.push((pid, stat));
        }
    }
    out
}

/// smbd forks helpers (smbd-notifyd, smbd-cleanupd) and one process per connection into
/// its process group; stopping it must leave none of them running or as a zombie.
#[test]
fn smbd_stop_leaves_no_process_of_its_group() {
    if let Some(why) = smbd::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut s = Smbd::start().expect("start smbd");
    let pid = s.pid().expect("pid");
    // A connection, so a per-client child exists too.
    s.smbclient(SHARE, false, "ls").expect("user ls");
    let before = group_members(pid);
    assert!(before.len() > 1, "smbd started no helpers: {before:?}");
    s.stop();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut left = group_members(pid);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = group_members(pid);
    }
    assert!(left.is_empty(), "left after stop: {left:?}");
    // And once more after a restart on the same port.
    s.start_again().expect("start again");
    let pid = s.pid().expect("pid");
    s.smbclient(SHARE, false, "ls")
        .expect("user ls after restart");
    drop(s);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = group_members(pid);
    assert!(left.is_empty(), "left after drop: {left:?}");
}
