//! The `libiscsi` engine through the Engine trait, against a real tgtd on 127.0.0.1: data
//! round trips checked against the backing file, readable SCSI errors, a target restarted
//! mid-run, and no session left behind. Skips with a printed reason when tgt is missing.

mod common;

use std::time::Duration;

use common::{Driver, job, pattern, read_only, rw_open};
use storbench_core::{ErrorKind, IoKind};
use storbench_testkit::tgtd::{self, OneLun};

const IQN: &str = "iqn.2026-11.lab.storbench:engine";
const LUN_SIZE: u64 = 32 << 20;
const BS: u32 = 64 << 10;

/// fio's spelling, with escaped colons, must work as well as the plain one.
fn url(lab: &OneLun) -> String {
    format!(
        "iscsi://{}/{}/1",
        lab.tgtd.portal(),
        IQN.replace(':', "\\:")
    )
}

fn lab() -> Option<OneLun> {
    OneLun::start(IQN, LUN_SIZE)
}

fn driver(depth: u32) -> Driver {
    Driver::new(&job("libiscsi", depth, &[]), BS as usize).expect("create libiscsi engine")
}

fn blocks(kind: IoKind, n: usize) -> Vec<(IoKind, u64, u32)> {
    (0..n).map(|i| (kind, i as u64 * BS as u64, BS)).collect()
}

#[test]
fn registered_under_fio_names() {
    assert!(storbench_engines::find("libiscsi").is_some());
    assert_eq!(
        storbench_engines::find("iscsi").unwrap().info.name,
        "libiscsi"
    );
}

#[test]
fn writes_reach_the_lun_and_read_back() {
    let Some(lab) = lab() else { return };
    let mut d = driver(16);
    let f = d.open(&url(&lab), rw_open(true)).expect("open");
    assert_eq!(d.engine.size(f).unwrap(), LUN_SIZE);
    let n = 64;
    d.run(f, &blocks(IoKind::Write, n), pattern, |_, _, r| {
        assert_eq!(r, BS as i64)
    })
    .unwrap();
    assert_eq!(d.one(f, IoKind::Fsync, 0, 0).unwrap(), 0);
    d.run(
        f,
        &blocks(IoKind::Read, n),
        |_, b| b.fill(0),
        |i, b, r| {
            assert_eq!(r, BS as i64);
            let mut want = vec![0u8; b.len()];
            pattern(i, &mut want);
            assert!(b == &want[..], "block {i} read back differs");
        },
    )
    .unwrap();
    let info = d.engine.info();
    let get = |k: &str| {
        info.details
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("protocol").as_deref(), Some("iSCSI"));
    assert_eq!(get("target").as_deref(), Some(IQN));
    assert_eq!(get("lun_size"), Some(LUN_SIZE.to_string()));
    assert_eq!(get("block_size").as_deref(), Some("512"));
    assert_eq!(get("max_in_flight").as_deref(), Some("16"));
    assert_eq!(info.interface.as_deref(), Some("lo"));
    assert!(info.notes.is_empty(), "{:?}", info.notes);
    d.engine.close(f).unwrap();
    // The runner reads the facts after closing: they must survive the close.
    assert_eq!(d.engine.info(), info);
    lab.assert_no_session_left();

    // Cross-check with the backing file: the target really holds what we wrote.
    let file = std::fs::read(&lab.backing).unwrap();
    for i in 0..n {
        let mut want = vec![0u8; BS as usize];
        pattern(i, &mut want);
        let at = i * BS as usize;
        assert!(
            file[at..at + BS as usize] == want[..],
            "backing file block {i} differs"
        );
    }
}

#[test]
fn unaligned_io_is_refused_with_the_block_size() {
    let Some(lab) = lab() else { return };
    let mut d = driver(1);
    let f = d.open(&url(&lab), read_only()).unwrap();
    let e = d.one(f, IoKind::Read, 100, 4096).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("512-byte blocks"), "{}", e.message);
}

#[test]
fn reading_past_the_end_names_the_sense() {
    let Some(lab) = lab() else { return };
    let mut d = driver(4);
    let f = d.open(&url(&lab), read_only()).unwrap();
    let e = d.one(f, IoKind::Read, LUN_SIZE, 4096).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Protocol);
    assert!(e.message.contains("LBA out of range"), "{}", e.message);
    assert!(!e.message.contains('\n'));
    // The session survives a failed command.
    assert_eq!(d.one(f, IoKind::Read, 0, 4096).unwrap(), 4096);
}

#[test]
fn unreachable_portal_and_unknown_target_fail_fast_and_clearly() {
    let Some(lab) = lab() else { return };
    let port = tgtd::free_port().unwrap();
    let mut d = driver(1);
    let e = d
        .open(&format!("iscsi://127.0.0.1:{port}/{IQN}/1"), rw_open(false))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Disconnected);
    assert!(
        e.message.contains(&format!("127.0.0.1:{port}")) && e.message.contains("connect"),
        "{}",
        e.message
    );

    let url = format!("iscsi://{}/iqn.2026-11.lab:nope/1", lab.tgtd.portal());
    let e = d.open(&url, rw_open(false)).unwrap_err();
    assert!(e.message.contains("target not found"), "{}", e.message);
    assert!(
        e.message.contains("status class 0x02, detail 0x03"),
        "{}",
        e.message
    );
}

#[test]
fn target_restart_mid_run_is_survived_and_noted() {
    let Some(mut lab) = lab() else { return };
    let mut d = driver(8);
    let f = d.open(&url(&lab), rw_open(true)).expect("open");
    let n = 256;
    d.run(f, &blocks(IoKind::Write, n), pattern, |_, _, r| {
        assert_eq!(r, BS as i64)
    })
    .unwrap();
    assert_eq!(d.one(f, IoKind::Fsync, 0, 0).unwrap(), 0);
    let restart = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        lab.tgtd
            .restart(Duration::from_millis(500))
            .expect("restart tgtd");
        lab
    });
    // Reads keep going across the restart; every block must still come back right.
    let mut after = 0;
    while after < 2 {
        if restart.is_finished() {
            after += 1;
        }
        d.run(
            f,
            &blocks(IoKind::Read, n),
            |_, b| b.fill(0),
            |i, b, r| {
                assert_eq!(r, BS as i64);
                let mut want = vec![0u8; b.len()];
                pattern(i, &mut want);
                assert!(b == &want[..], "block {i} read back differs");
            },
        )
        .unwrap();
    }
    let lab = restart.join().unwrap();
    let info = d.engine.info();
    assert_eq!(info.notes.len(), 1, "{:?}", info.notes);
    assert!(
        info.notes[0].contains("logged in again after"),
        "{}",
        info.notes[0]
    );
    d.engine.close(f).unwrap();
    lab.assert_no_session_left();
}

/// Whether `[start, end)` of `file` holds no allocated data (SEEK_DATA finds none before
/// `end`): UNMAP reached the backing file as a punched hole.
fn is_hole(file: &std::path::Path, start: u64, end: u64) -> bool {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(file).unwrap();
    // SAFETY: lseek on a descriptor we own.
    let next = unsafe { libc::lseek(f.as_raw_fd(), start as i64, libc::SEEK_DATA) };
    next < 0 || next as u64 >= end
}

#[test]
fn trim_unmaps_a_thin_lun_and_is_refused_on_a_thick_one() {
    let Some(mut lab) = lab() else { return };
    let mut d = driver(8);
    let f = d.open(&url(&lab), rw_open(true)).expect("open");
    let e = d.one(f, IoKind::Trim, 0, BS).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("not thin-provisioned"), "{}", e.message);
    d.engine.close(f).unwrap();

    lab.tgtd.thin_provisioning(1, 1).unwrap();
    let mut d = driver(8);
    let f = d.open(&url(&lab), rw_open(true)).expect("open");
    let n = 64;
    d.run(f, &blocks(IoKind::Write, n), pattern, |_, _, r| {
        assert_eq!(r, BS as i64)
    })
    .unwrap();
    assert_eq!(d.one(f, IoKind::Fsync, 0, 0).unwrap(), 0);
    let (first, last) = (16, 32);
    assert!(!is_hole(
        &lab.backing,
        first as u64 * BS as u64,
        last as u64 * BS as u64
    ));
    let trims: Vec<_> = (first..last)
        .map(|i| (IoKind::Trim, i as u64 * BS as u64, BS))
        .collect();
    // A trim completes with the bytes it covers (as fio counts them), not UNMAP's 24-byte
    // parameter list.
    d.run(f, &trims, |_, _| {}, |_, _, r| assert_eq!(r, BS as i64))
        .unwrap();
    d.run(
        f,
        &blocks(IoKind::Read, n),
        |_, b| b.fill(0xff),
        |i, b, r| {
            assert_eq!(r, BS as i64);
            if (first..last).contains(&i) {
                assert!(b.iter().all(|&x| x == 0), "trimmed block {i} is not zero");
            } else {
                let mut want = vec![0u8; b.len()];
                pattern(i, &mut want);
                assert!(b == &want[..], "block {i} next to the trim changed");
            }
        },
    )
    .unwrap();
    d.engine.close(f).unwrap();
    assert!(
        is_hole(
            &lab.backing,
            first as u64 * BS as u64,
            last as u64 * BS as u64
        ),
        "tgtd did not punch the unmapped range out of its backing file"
    );
    assert!(!is_hole(&lab.backing, 0, first as u64 * BS as u64));
}
