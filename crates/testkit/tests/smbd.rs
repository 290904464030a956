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
