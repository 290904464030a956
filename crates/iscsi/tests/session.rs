//! The initiator against a real tgtd on 127.0.0.1: login, identification, pipelined writes and
//! reads checked byte for byte against the backing file, and a clean logout.

mod common;

use std::time::Duration;

use storbench_iscsi::{Config, Dir, Outcome, Session, Url};

fn session(url: &str, depth: usize) -> Session {
    let mut cfg = Config::new(Url::parse(url).expect("url"));
    cfg.max_tasks = depth;
    Session::connect(cfg).expect("login")
}

#[test]
fn identifies_the_lun() {
    let Some(lab) = common::lab() else { return };
    let mut s = session(&lab.url(), 4);
    s.test_unit_ready().ok(); // may report the power-on UNIT ATTENTION once; retried inside
    let inq = s.inquiry().expect("inquiry");
    assert_eq!(inq.device_type, 0);
    assert_eq!(inq.vendor, "IET");
    let cap = s.read_capacity().expect("capacity");
    assert_eq!(cap.bytes(), common::LUN_SIZE);
    assert_eq!(cap.block_size, 512);
    assert_eq!(s.report_luns().expect("report luns"), vec![0, 1]);
    assert_eq!(
        lab.tgtd.nexus(1).unwrap().len(),
        1,
        "one session while logged in"
    );
    s.logout().expect("logout");
    let left = lab.tgtd.wait_no_nexus(1, Duration::from_secs(5)).unwrap();
    assert!(left.is_empty(), "session left behind: {left:?}");
}

/// Writes `len`-byte blocks at every offset of `area` with `depth` in flight, then reads them
/// back through a second session and compares with the backing file too.
fn write_then_verify(
    url: &str,
    lab: &common::Lab,
    block: usize,
    depth: usize,
    area: u64,
    seed: u8,
) {
    let mut w = session(url, depth);
    let bs = w.read_capacity().unwrap().block_size as u64;
    let mut bufs: Vec<Vec<u8>> = (0..depth).map(|_| vec![0u8; block]).collect();
    let offsets: Vec<u64> = (0..area / block as u64).map(|i| i * block as u64).collect();
    let mut next = 0;
    let mut free: Vec<usize> = (0..depth).collect();
    let mut done = 0;
    while done < offsets.len() {
        while next < offsets.len() {
            let Some(slot) = free.pop() else { break };
            let off = offsets[next];
            common::pattern(off, &mut bufs[slot], seed);
            let cdb = w
                .rw_cdb(true, off / bs, (block as u64 / bs) as u32)
                .unwrap();
            let buf = bufs[slot].as_mut_ptr();
            // SAFETY: the buffer stays untouched until its tag comes back.
            assert!(unsafe { w.submit(slot as u64, cdb, Dir::Write, buf, block as u32) }.unwrap());
            next += 1;
        }
        w.flush().unwrap();
        w.wait_finished(1).unwrap();
        for f in w.drain_finished() {
            assert_eq!(f.outcome, Outcome::Done(block as u32));
            free.push(f.tag as usize);
            done += 1;
        }
    }
    w.synchronize_cache().unwrap();
    w.logout().unwrap();

    let file = std::fs::read(&lab.backing).unwrap();
    let mut want = vec![0u8; area as usize];
    common::pattern(0, &mut want, seed);
    assert!(
        file[..area as usize] == want[..],
        "backing file differs from what was written"
    );

    let mut r = session(url, depth);
    let mut back = vec![0u8; area as usize];
    let chunks = back.chunks_mut(block).enumerate();
    for (i, chunk) in chunks {
        let cdb = r
            .rw_cdb(false, (i * block) as u64 / bs, (block as u64 / bs) as u32)
            .unwrap();
        // SAFETY: `back` outlives the session's use of it (we wait for all below).
        assert!(
            unsafe { r.submit(i as u64, cdb, Dir::Read, chunk.as_mut_ptr(), block as u32) }
                .unwrap()
        );
        if r.in_flight() == depth {
            r.flush().unwrap();
            r.wait_finished(1).unwrap();
            for f in r.drain_finished() {
                assert_eq!(f.outcome, Outcome::Done(block as u32));
            }
        }
    }
    r.flush().unwrap();
    while r.in_flight() > 0 {
        r.wait_finished(1).unwrap();
        for f in r.drain_finished() {
            assert_eq!(f.outcome, Outcome::Done(block as u32));
        }
    }
    r.logout().unwrap();
    assert!(back == want, "read back differs from what was written");
}

#[test]
fn pipelined_4k_writes_and_reads_round_trip() {
    let Some(lab) = common::lab() else { return };
    write_then_verify(&lab.url(), &lab, 4096, 32, 4 << 20, 1);
    assert!(
        lab.tgtd
            .wait_no_nexus(1, Duration::from_secs(5))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn large_writes_use_r2t_and_reads_span_many_data_in() {
    let Some(lab) = common::lab() else { return };
    write_then_verify(&lab.url(), &lab, 1 << 20, 4, 16 << 20, 7);
}

#[test]
fn digests_crc32c_round_trip() {
    let Some(mut lab) = common::lab() else { return };
    // tgtd answers None unless the target is told to prefer CRC32C.
    for key in ["HeaderDigest", "DataDigest"] {
        lab.tgtd
            .tgtadm(&[
                "--mode",
                "target",
                "--op",
                "update",
                "--tid",
                "1",
                "--name",
                key,
                "--value",
                "CRC32C,None",
            ])
            .expect("set digest");
    }
    let url = format!("{}?header_digest=crc32c&data_digest=crc32c", lab.url());
    let s = session(&url, 1);
    assert_eq!(
        s.negotiated().header_digest,
        storbench_iscsi::Digest::Crc32c
    );
    drop(s);
    write_then_verify(&url, &lab, 256 << 10, 8, 8 << 20, 3);
}
