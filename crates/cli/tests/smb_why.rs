//! "The why" on smb:// targets, against a real Samba smbd: a server granting fewer credits
//! than the queue depth is named with its figures, and the time spent signing or sealing
//! is measured against the client's CPU (and named when it is the limit).

use std::time::Duration;

use assert_cmd::Command;
use storbench_testkit::smbd::{self, Smbd, SmbdOptions};

fn server(opts: SmbdOptions) -> Option<Smbd> {
    storbench_testkit::require!(smbd::unavailable());
    Some(Smbd::start_with(opts).expect("start smbd"))
}

/// `storbench fio` on the share's file `name` with `args`; stdout and stderr together.
fn fio(s: &Smbd, name: &str, query: &str, args: &[&str]) -> String {
    let out = Command::cargo_bin("storbench")
        .unwrap()
        .args(["--no-save", "fio", "--name=why", "--ioengine=smb"])
        .args(args)
        .arg(format!(
            "--filename=smb://{}@127.0.0.1:{}/{}/{name}{query}",
            s.user(),
            s.port,
            smbd::SHARE
        ))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .timeout(Duration::from_secs(120))
        .assert()
        .success()
        .get_output()
        .clone();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The number after `key` in `text` (`key` ends just before the digits).
fn number_after(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[test]
fn a_server_granting_fewer_credits_than_iodepth_is_named_with_the_figures() {
    let Some(s) = server(SmbdOptions {
        max_credits: Some(16),
        ..Default::default()
    }) else {
        return;
    };
    let args = [
        "--rw=randread",
        "--bs=4k",
        "--size=4M",
        "--iodepth=64",
        "--runtime=1",
        "--time_based",
    ];
    let text = fio(&s, "starved.dat", "", &args);
    let note = text
        .lines()
        .find(|l| l.contains("credit starvation:"))
        .unwrap_or_else(|| panic!("no starvation note:\n{text}"));
    let mean = number_after(note, "credits kept ").expect("IOs in flight in the note");
    assert!(mean > 0 && mean < 58, "{note}");
    assert!(note.contains("fewer than iodepth=64"), "{note}");
    assert!(
        number_after(note, "waited for credits ").is_some_and(|n| n > 0),
        "{note}"
    );
    // The same job on a server with Samba's default credits: nothing to name.
    drop(s);
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let text = fio(&s, "fed.dat", "", &args);
    assert!(!text.contains("credit starvation"), "{text}");
}

#[test]
fn signing_and_sealing_time_is_measured_against_the_client_cpu() {
    let Some(s) = server(SmbdOptions::default()) else {
        return;
    };
    let args = [
        "--rw=write",
        "--bs=1M",
        "--size=64M",
        "--iodepth=8",
        "--output-format=json",
    ];
    for (query, what) in [("?seal=1", "encryption ("), ("?sign=1", "signing (")] {
        let text = fio(&s, "c.dat", query, &args);
        let crypto = number_after(&text, "\"crypto_ms\" : \"")
            .unwrap_or_else(|| panic!("{query}: no crypto_ms in:\n{text}"));
        let busy = number_after(&text, "\"client_busy_ms\" : \"").expect("client_busy_ms");
        // Both are wall time of the same thread: crypto is a part of its busy time (a
        // millisecond of rounding either way).
        assert!(
            crypto > 0 && crypto <= busy + 1,
            "{query}: {crypto} ms of {busy} ms"
        );
        // Named only when it took most of the busy time (the figures are in the note).
        if let Some(note) = text.lines().find(|l| l.contains("is the client's limit")) {
            assert!(note.contains(what), "{query}: {note}");
            assert!(
                2 * crypto + 2 >= busy,
                "{query}: named at {crypto} of {busy} ms: {note}"
            );
        }
        eprintln!("{query}: {crypto} ms of {busy} ms client busy time in crypto");
        let _ = std::fs::remove_file(s.share_dir(smbd::SHARE).join("c.dat"));
    }
    // Neither signed nor sealed: no figure at all.
    let text = fio(&s, "plain.dat", "", &args);
    assert!(!text.contains("crypto_ms"), "{text}");
}
