//! `storbench fio --ioengine=nbd --uri=…` and `storbench quick nbd://…` against a real
//! nbdkit started by each test, cross-checked with fio 3.33's own nbd engine (libnbd) on the
//! same server: the same IO totals, and data written by either tool verified by the other.
//! Skipped with a printed reason when nbdkit or fio 3.33 is missing.

mod common;

use std::process::Command as StdCommand;

use common::{Run, fio_available, sb_fio, storbench, words};
use storbench_testkit::nbdkit::{self, Nbdkit};

fn nbdkit_or_skip() -> bool {
    match nbdkit::unavailable() {
        Some(why) => {
            eprintln!("SKIP: {why}");
            false
        }
        None => true,
    }
}

fn both_available() -> bool {
    nbdkit_or_skip() && fio_available()
}

fn fio(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    common::fio(dir.path(), args)
}

fn sb(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    sb_fio(dir.path(), args)
}

fn line(uri: &str, rest: &str) -> String {
    format!("--name=j --ioengine=nbd --uri={uri} --output-format=json {rest}")
}

/// (read bytes, read IOs, write bytes, write IOs) of a fio-format JSON document's job.
fn totals(doc: &serde_json::Value) -> [u64; 4] {
    let j = &doc["jobs"][0];
    let n = |d: &str, k: &str| j[d][k].as_u64().unwrap_or_else(|| panic!("{d}.{k}: {j}"));
    [
        n("read", "io_bytes"),
        n("read", "total_ios"),
        n("write", "io_bytes"),
        n("write", "total_ios"),
    ]
}

#[test]
fn io_totals_match_fio_nbd_engine() {
    if !both_available() {
        return;
    }
    for rest in [
        "--rw=randread --bs=4k --size=2M --iodepth=32",
        "--rw=write --bs=64k --size=4M --iodepth=8",
        "--rw=randrw --bs=8k --size=4M --iodepth=16 --randrepeat=1",
        "--rw=read --bs=1M --size=8M --iodepth=2 --offset=4M",
        "--rw=trim --bs=64k --size=1M --iodepth=4",
        "--rw=write --bs=16k --size=1M --iodepth=4 --fsync=8 --sync=1",
    ] {
        // One fresh export each, so storbench's device check sees zeros.
        let theirs_srv = Nbdkit::memory("16M").unwrap();
        let theirs = fio(&words(&line(&theirs_srv.uri(), rest))).fio_json();
        let ours_srv = Nbdkit::memory("16M").unwrap();
        let ours = sb(&words(&line(&ours_srv.uri(), rest))).json();
        let (o, t) = (totals(&ours), totals(&theirs));
        if rest.contains("randrw") {
            // The read/write split of a random mix follows each tool's own random
            // sequence; the totals are the same.
            assert_eq!(
                (o[0] + o[2], o[1] + o[3]),
                (t[0] + t[2], t[1] + t[3]),
                "{rest}"
            );
        } else {
            assert_eq!(o, t, "{rest}");
        }
        let trims = |d: &serde_json::Value| d["jobs"][0]["trim"]["total_ios"].as_u64();
        assert_eq!(trims(&ours), trims(&theirs), "{rest}");
    }
}

#[test]
fn storbench_writes_verify_in_fio_and_back() {
    if !both_available() {
        return;
    }
    let write = "--rw=randwrite --bs=4k --size=1M --iodepth=16 --verify=crc32c --do_verify=0";
    let check = "--rw=randwrite --bs=4k --size=1M --iodepth=16 --verify=crc32c --verify_only";
    // storbench writes, fio checks every block.
    let srv = Nbdkit::memory("8M").unwrap();
    sb(&words(&line(&srv.uri(), write))).ok();
    let run = fio(&words(&line(&srv.uri(), check)));
    let doc = run.fio_json();
    assert_eq!(doc["jobs"][0]["error"], 0, "fio: {}", run.stderr);
    assert!(!run.stderr.contains("verify"), "fio: {}", run.stderr);
    // fio writes, storbench checks every block.
    let srv = Nbdkit::memory("8M").unwrap();
    fio(&words(&line(&srv.uri(), write))).fio_json();
    let run = sb(&words(&line(&srv.uri(), check)));
    let doc = run.json();
    assert_eq!(doc["jobs"][0]["error"], 0, "storbench: {}", run.stderr);
    assert_eq!(
        doc["jobs"][0]["read"]["total_ios"], 256,
        "every block read back"
    );
    // A corrupted block is found: fio rewrites one 4 KiB block without a header.
    let dir = tempfile::tempdir().unwrap();
    common::fio(
        dir.path(),
        &words(&line(
            &srv.uri(),
            "--rw=write --bs=4k --size=4k --offset=8k --do_verify=0",
        )),
    )
    .fio_json();
    let run = sb(&words(&line(&srv.uri(), check)));
    assert!(!run.success(), "a bad block went unnoticed: {}", run.stdout);
    assert!(run.stderr.contains("verify"), "{}", run.stderr);
}

#[test]
fn an_export_holding_a_file_system_is_refused() {
    if !nbdkit_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("disk.img");
    std::fs::write(&backing, vec![0u8; 16 << 20]).unwrap();
    let mkfs = StdCommand::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&backing)
        .status();
    if !mkfs.is_ok_and(|s| s.success()) {
        eprintln!("SKIP: mkfs.ext4 (e2fsprogs) is not available");
        return;
    }
    let before = std::fs::read(&backing).unwrap();
    let srv = Nbdkit::file(&backing).unwrap();
    let run = sb(&words(&line(
        &srv.uri(),
        "--rw=randwrite --bs=4k --size=1M",
    )));
    let err = run.one_error_line();
    assert!(
        err.contains("ext2/3/4") && err.contains("--allow-destructive"),
        "{err}"
    );
    assert!(
        std::fs::read(&backing).unwrap() == before,
        "the export was modified"
    );
    // Reads are always allowed; the override writes.
    sb(&words(&line(&srv.uri(), "--rw=randread --bs=4k --size=1M"))).ok();
    let text = line(&srv.uri(), "--rw=write --bs=4k --size=64k");
    let mut args = words(&text);
    args.push("--allow-destructive");
    sb(&args).ok();
    assert!(std::fs::read(&backing).unwrap() != before);
}

#[test]
fn bad_uris_and_servers_are_one_line_errors() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hangup = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hangup_port = hangup.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in hangup.incoming() {
            drop(s);
        }
    });
    for (args, says) in [
        ("--ioengine=nbd --uri=nbd://h:0/x", "invalid port"),
        ("--ioengine=nbd --uri=http://h/x", "expected nbd://"),
        ("--ioengine=nbd", "needs uri="),
        ("--ioengine=nbd --uri=nbds://h/x", "TLS"),
        (
            "--ioengine=psync --uri=nbd://h/x",
            "uri is an option of the nbd engine",
        ),
    ] {
        let run = sb(&words(&format!("--name=j --rw=read --size=1M {args}")));
        let err = run.one_error_line();
        assert!(err.contains(says), "{args}: {err}");
    }
    for (port, says) in [
        (closed, "cannot connect to NBD server"),
        (hangup_port, "closed the connection during the handshake"),
    ] {
        let uri = format!("nbd://127.0.0.1:{port}/");
        let run = sb(&words(&line(&uri, "--rw=randwrite --size=1M")));
        let err = run.one_error_line();
        assert!(err.contains(says), "{err}");
    }
}

#[test]
fn a_filename_uri_picks_the_engine() {
    if !nbdkit_or_skip() {
        return;
    }
    let srv = Nbdkit::memory("8M").unwrap();
    let doc = sb(&words(&format!(
        "--name=j --filename={} --rw=randread --bs=4k --size=1M --iodepth=8 --output-format=json",
        srv.uri()
    )))
    .json();
    assert_eq!(doc["jobs"][0]["read"]["total_ios"], 256);
}

#[test]
fn quick_runs_on_an_export() {
    if !nbdkit_or_skip() {
        return;
    }
    let srv = Nbdkit::memory("64M").unwrap();
    let run = Run::of(
        storbench()
            .args([
                "--no-save",
                "quick",
                "--runtime=300ms",
                "--size=16M",
                "--json",
            ])
            .arg(srv.uri()),
    );
    let doc: serde_json::Value = serde_json::from_str(run.ok()).unwrap();
    assert_eq!(doc["targets"][0], srv.uri().as_str());
    let tests = doc["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 8, "{doc}");
    assert!(
        tests.iter().all(|t| t["io_bytes"].as_u64() > Some(0)),
        "{doc}"
    );
    assert_eq!(tests[0]["server_cpu"]["process"], "nbdkit", "{doc}");
}
