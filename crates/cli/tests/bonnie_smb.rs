//! `storbench bonnie -d smb://…` against a real Samba smbd on 127.0.0.1 started by the test
//! (skipped with a printed reason when Samba is missing): the block and file tests run over
//! the user-space client on a guest share, and nothing is left on the share.

mod bonnie_support;

use bonnie_support::*;
use storbench_testkit::smbd::{self, GUEST_SHARE, Smbd};

#[test]
fn suite_over_smb_runs_block_and_file_tests_and_cleans_the_share() {
    if let Some(why) = smbd::unavailable() {
        return skip(&why);
    }
    let s = Smbd::start().expect("start smbd");
    std::fs::create_dir(s.share_dir(GUEST_SHARE).join("bench")).unwrap();
    let url = format!("smb://127.0.0.1:{}/{GUEST_SHARE}/bench", s.port);
    let out = bonnie_ok(&[
        "-d",
        &url,
        "-q",
        "-s",
        "8:64k:256:3",
        "-r",
        "0",
        "-n",
        "1:4k:0:2",
        "-m",
        "smb",
    ]);
    let f = fields(&last_line(&out));
    assert_eq!(f.len(), 50);
    for i in [11, 13, 17, 19, 26, 28, 30, 32, 34, 36] {
        assert!(!f[i].is_empty(), "column {i} ran");
    }
    assert_eq!(
        (f[5].as_str(), f[6].as_str(), f[24].as_str()),
        ("8M", "64k", "2")
    );
    let left = entries(&s.share_dir(GUEST_SHARE).join("bench"));
    assert!(left.is_empty(), "left on the share: {left:?}");
}
