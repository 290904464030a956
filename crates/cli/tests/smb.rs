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
    for name in ["share ", "guest ", "private ", "readonly ", "IPC$ "] {
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
    assert_eq!(doc["shares"].as_array().unwrap().len(), 5, "{doc}");
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

fn share_url(s: &Smbd, rel: &str) -> String {
    format!(
        "smb://{}@127.0.0.1:{}/{}/{rel}",
        s.user(),
        s.port,
        smbd::SHARE
    )
}

/// Files and directories left in a share.
fn left_in(s: &Smbd, share: &str) -> Vec<String> {
    std::fs::read_dir(s.share_dir(share))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// `smbclient get` of a share's file into a local copy.
fn fetch(s: &Smbd, name: &str, dir: &std::path::Path) -> Vec<u8> {
    let local = dir.join(name);
    s.smbclient(
        smbd::SHARE,
        false,
        &format!("get {name} {}", local.display()),
    )
    .expect("smbclient get");
    std::fs::read(local).unwrap()
}

#[test]
fn smb_fio_writes_with_verify_and_smbclient_reads_the_same_bytes_and_back() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    // storbench writes (and checks by reading back) 8 MiB with verify headers, pipelined.
    let out = storbench()
        .args([
            "fio",
            "--name=w",
            "--ioengine=smb",
            "--rw=write",
            "--bs=1M",
            "--size=8M",
            "--iodepth=8",
            "--verify=crc32c",
            // fio writes its verify state to the working directory: not in the source tree.
            "--verify_state_save=0",
            "--output-format=json",
        ])
        .arg(format!("--filename={}", share_url(&s, "v.dat")))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .timeout(Duration::from_secs(120))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let job = &doc["jobs"][0];
    assert_eq!(job["error"], 0, "{job}");
    assert_eq!(job["write"]["io_bytes"], 8 << 20, "{job}");
    assert!(!String::from_utf8_lossy(&out).contains(s.password()));
    // The engine's facts are in the result.
    let text = String::from_utf8_lossy(&out);
    for fact in [
        "\"dialect\"",
        "\"3.1.1\"",
        "\"credits_granted\"",
        "\"max_read\"",
    ] {
        assert!(text.contains(fact), "{fact} missing: {text}");
    }
    // smbclient reads the very bytes the server holds.
    let got = fetch(&s, "v.dat", tmp.path());
    let on_disk = std::fs::read(s.share_dir(smbd::SHARE).join("v.dat")).unwrap();
    assert_eq!(got.len(), 8 << 20);
    assert!(
        got == on_disk,
        "smbclient's copy differs from the server's file"
    );
    // ... and the other way: a file smbclient put is read and verified by storbench.
    let local = tmp.path().join("v.dat");
    std::fs::write(&local, &got).unwrap();
    s.smbclient(
        smbd::SHARE,
        false,
        &format!("put {} put.dat", local.display()),
    )
    .expect("smbclient put");
    storbench()
        .args([
            "fio",
            "--name=r",
            "--ioengine=smb",
            "--rw=read",
            "--bs=1M",
            "--size=8M",
            "--iodepth=4",
            "--verify=crc32c",
            "--verify_only",
        ])
        .arg(format!("--filename={}", share_url(&s, "put.dat")))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    // A flipped byte in the put file is caught.
    let mut bad = got.clone();
    bad[3 << 20] ^= 0xff;
    std::fs::write(&local, &bad).unwrap();
    let _ = std::fs::remove_file(s.share_dir(smbd::SHARE).join("put.dat"));
    s.smbclient(
        smbd::SHARE,
        false,
        &format!("put {} put.dat", local.display()),
    )
    .unwrap();
    let out = storbench()
        .args([
            "fio",
            "--name=r",
            "--ioengine=smb",
            "--rw=read",
            "--bs=1M",
            "--size=8M",
            "--verify=crc32c",
            "--verify_only",
        ])
        .arg(format!("--filename={}", share_url(&s, "put.dat")))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .timeout(Duration::from_secs(120))
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(err.contains("verify"), "{err}");
}

#[test]
fn smb_quick_runs_on_a_share_signed_and_leaves_nothing() {
    let Some(s) = server(SmbdOptions {
        signing: Some("mandatory"),
        ..Default::default()
    }) else {
        return;
    };
    let out = storbench()
        .args([
            "quick",
            "--size",
            "8M",
            "--runtime",
            "300ms",
            "--eta",
            "never",
        ])
        .arg(share_url(&s, ""))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .timeout(Duration::from_secs(180))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("SEQ1M") && text.contains("RND4K"), "{text}");
    assert!(
        left_in(&s, smbd::SHARE).is_empty(),
        "left: {:?}",
        left_in(&s, smbd::SHARE)
    );
}

#[test]
fn smb_bad_password_and_missing_share_are_one_line_before_any_run() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    for (url, pw, want) in [
        (share_url(&s, ""), "wrong", "bad user name or password"),
        (
            format!("smb://{}@127.0.0.1:{}/nosuch", s.user(), s.port),
            s.password(),
            "share not found",
        ),
    ] {
        let out = storbench()
            .args([
                "quick",
                "--size",
                "8M",
                "--runtime",
                "300ms",
                "--eta",
                "never",
            ])
            .arg(&url)
            .env("STORBENCH_SMB_PASSWORD", pw)
            .timeout(Duration::from_secs(60))
            .assert()
            .failure()
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8_lossy(&out);
        assert!(err.contains(want), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

/// A `filename=` written as an absolute path in the share (as smbclient names it, from the
/// share's root) that lies inside `directory=` is a name below it; one outside it is one
/// line before any IO.
#[test]
fn smb_an_absolute_name_inside_the_directory_is_a_name_below_it() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    std::fs::create_dir(s.share_dir(smbd::SHARE).join("sub")).unwrap();
    let fio = |dir: &str, name: &str| {
        storbench()
            .args(["fio", "--name=a", "--ioengine=smb", "--rw=write", "--bs=4k"])
            .args(["--size=64k", "--output-format=json"])
            .arg(format!("--directory={}", share_url(&s, dir)))
            .arg(format!("--filename={name}"))
            .env("STORBENCH_SMB_PASSWORD", s.password())
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap()
    };
    for (dir, name, written) in [("", "/sub/f", "sub/f"), ("sub", "/sub/g", "sub/g")] {
        let out = fio(dir, name);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{dir} {name}: {err}");
        let on_disk = s.share_dir(smbd::SHARE).join(written);
        assert_eq!(std::fs::metadata(on_disk).unwrap().len(), 64 << 10);
    }
    let out = fio("sub", "/elsewhere");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "\"/elsewhere\" cannot name a file under its target: it is absolute and not inside /sub"
        ),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(!s.share_dir(smbd::SHARE).join("elsewhere").exists());
}

/// A user named in the URL, no password in the URL or `STORBENCH_SMB_PASSWORD`, and no
/// terminal to ask on: refused in one line naming where a password comes from, before any
/// connection (no login with an empty password, which could count toward a lockout).
#[test]
fn smb_a_user_without_a_password_or_a_terminal_is_refused_before_connecting() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let quick = [
        "quick",
        "--size",
        "8M",
        "--runtime",
        "300ms",
        "--eta",
        "never",
    ];
    let file = format!("--filename={}", share_url(&s, "f"));
    let fio = [
        "fio",
        "--name=nopw",
        "--ioengine=smb",
        "--rw=write",
        "--size=1M",
        &file,
    ];
    let url = share_url(&s, "");
    let runs: [Vec<&str>; 2] = [
        quick.iter().copied().chain([url.as_str()]).collect(),
        fio.to_vec(),
    ];
    for args in runs {
        let out = storbench()
            .args(&args)
            .write_stdin("")
            .timeout(Duration::from_secs(60))
            .assert()
            .failure()
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8_lossy(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.starts_with("storbench: "), "{err}");
        assert!(
            err.contains("STORBENCH_SMB_PASSWORD") && err.contains("terminal"),
            "{err}"
        );
        assert!(!err.contains("STATUS_"), "a login was tried: {err}");
    }
    assert!(left_in(&s, smbd::SHARE).is_empty());
}

/// `storbench fio` on a share that requires encryption (the server does not ask the
/// session for it): sealing is switched on at TREE_CONNECT and the run verifies.
#[test]
fn smb_fio_runs_on_a_share_that_requires_encryption() {
    let Some(s) = server(SmbdOptions {
        sealed_share: true,
        ..Default::default()
    }) else {
        return;
    };
    let url = format!(
        "smb://{}@127.0.0.1:{}/{}/",
        s.user(),
        s.port,
        smbd::SEALED_SHARE
    );
    let out = storbench()
        .args(["fio", "--name=sealed", "--ioengine=smb", "--rw=write"])
        .args(["--bs=64k", "--size=2M", "--verify=crc32c", "--unlink=1"])
        .arg("--verify_state_save=0")
        .arg(format!("--directory={url}"))
        .arg("--output-format=json")
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}\n{}", s.log());
    assert!(!all.contains("verify:"), "{all}");
    assert!(left_in(&s, smbd::SEALED_SHARE).is_empty());
}
