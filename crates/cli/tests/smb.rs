//! `storbench smb shares`, `storbench fio --ioengine=smb` and `storbench quick` on smb://
//! targets, against a real Samba smbd on 127.0.0.1 started by the test (skipped with a
//! printed reason when Samba is missing).

use std::time::Duration;

use assert_cmd::Command;
use storbench_testkit::smbd::{self, Smbd, SmbdOptions};

fn server(opts: SmbdOptions) -> Option<Smbd> {
    if let Some(why) = smbd::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Smbd::start_with(opts).expect("start smbd"))
}

fn storbench() -> Command {
    let mut c = Command::cargo_bin("storbench").unwrap();
    c.arg("--no-save").env_remove("STORBENCH_SMB_PASSWORD");
    c
}

#[test]
fn smb_shares_lists_as_guest_and_user_without_showing_the_password() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let out = storbench()
        .args(["smb", "shares", &format!("127.0.0.1:{}", s.port)])
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    for name in ["share ", "guest ", "private ", "IPC$ "] {
        assert!(text.contains(name), "{name} missing: {text}");
    }
    let out = storbench()
        .args(["smb", "shares", "--json"])
        .arg(format!("smb://{}@127.0.0.1:{}", s.user(), s.port))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(doc["shares"].as_array().unwrap().len(), 4, "{doc}");
    // A password in the URL works, draws a warning, and is never printed.
    let out = storbench()
        .args(["smb", "shares"])
        .arg(format!(
            "smb://{}:{}@127.0.0.1:{}",
            s.user(),
            s.password(),
            s.port
        ))
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .clone();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("warning: a password in an smb:// URL"),
        "{all}"
    );
    assert!(!all.contains(s.password()), "{all}");
}

#[test]
fn smb_shares_refusals_are_one_line() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let out = storbench()
        .args(["smb", "shares"])
        .arg(format!("smb://{}@127.0.0.1:{}", s.user(), s.port))
        .env("STORBENCH_SMB_PASSWORD", "wrong")
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("bad user name or password"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let port = storbench_testkit::ports::free_port().unwrap();
    let out = storbench()
        .args([
            "smb",
            "shares",
            &format!("smb://127.0.0.1:{port}/x?timeout=2"),
        ])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("cannot connect"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
