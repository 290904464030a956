//! NFSv4.1 faults against a real v4-only nfs-ganesha: a restart mid-session (a new session,
//! opens reclaimed, requests in flight sent again, UNSTABLE data written again or, when it
//! was not kept, named) and a stopped server (bounded by timeout and reconnect window, one
//! line).

use std::fs;
use std::time::{Duration, Instant};

use storbench_nfs::NfsUrl;
use storbench_nfs::v4::{Client4, Create, SHARE_ACCESS_BOTH, Stable4};
use storbench_testkit::ganesha::{self, Ganesha};

fn server() -> Option<Ganesha> {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Ganesha::start_v4_only().expect("start ganesha"))
}

fn connect(g: &Ganesha, query: &str, depth: u32) -> Client4 {
    let url = NfsUrl::parse(&format!("{}?{query}", g.url4(""))).unwrap();
    Client4::connect(&url, 1, depth).expect("session")
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed)
        .collect()
}

#[test]
fn v4_restart_reclaims_the_session_and_names_lost_unstable_data() {
    let Some(mut g) = server() else { return };
    // uncommitted=0: no copy is kept, so the UNSTABLE write below cannot be sent again.
    let mut c = connect(&g, "timeout=5&reconnect=30&uncommitted=0", 8);
    let f = c
        .open(
            "r.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    let committed = pattern(1 << 20, 1);
    for (i, part) in committed.chunks(256 << 10).enumerate() {
        c.write(f, (i * (256 << 10)) as u64, part, Stable4::Unstable)
            .unwrap();
    }
    c.commit(f).unwrap();
    let unstable = pattern(64 << 10, 2);
    c.write(f, 1 << 20, &unstable, Stable4::Unstable).unwrap();
    let old_session = c.session_id();

    g.stop();
    g.start_again().unwrap();

    // Reads in flight across the restart come back under a new session.
    let mut bufs = vec![vec![0u8; 64 << 10]; 8];
    for (i, b) in bufs.iter_mut().enumerate() {
        let off = (i * (64 << 10)) as u64;
        unsafe {
            c.submit_read(f, off, b.as_mut_ptr(), 64 << 10, i as u64)
                .unwrap()
        };
    }
    let mut n = 0;
    while n < 8 {
        n += c
            .reap(1, &mut |_, bytes| assert_eq!(bytes, 64 << 10))
            .unwrap();
    }
    assert!(
        bufs.concat() == committed[..8 * (64 << 10)],
        "data committed before the restart"
    );
    assert_ne!(c.session_id(), old_session);
    assert!(c.recoveries() >= 1);

    // The UNSTABLE write was never committed: COMMIT says how much was lost, in one line.
    let e = c.commit(f).unwrap_err().to_string();
    assert!(
        e.contains("65536 bytes written UNSTABLE") && e.contains("/export/r.bin"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    // The reclaimed open still writes.
    c.write(f, 0, b"after", Stable4::FileSync).unwrap();
    c.close(f).unwrap();
    assert_eq!(
        &fs::read(g.export_dir().join("r.bin")).unwrap()[..5],
        b"after"
    );
}

/// UNSTABLE data acknowledged before a restart and lost by it (the test zeroes it in the
/// export while the server is down, as a server that crashed before writing its cache back
/// would have) is written again from the client's copy when COMMIT's verifier differs.
#[test]
fn v4_unstable_data_lost_in_a_restart_is_written_again() {
    let Some(mut g) = server() else { return };
    let mut c = connect(&g, "timeout=5&reconnect=30", 8);
    let f = c
        .open(
            "k.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    let data = pattern(1 << 20, 3);
    for (i, part) in data.chunks(128 << 10).enumerate() {
        let w = c
            .write(f, (i * (128 << 10)) as u64, part, Stable4::Unstable)
            .unwrap();
        assert_eq!(
            w.committed,
            Stable4::Unstable as u32,
            "ganesha answers UNSTABLE"
        );
    }
    let old_session = c.session_id();

    g.stop();
    fs::write(g.export_dir().join("k.bin"), vec![0u8; 1 << 20]).unwrap();
    g.start_again().unwrap();

    c.commit(f)
        .expect("COMMIT after the restart writes the kept data again");
    assert_ne!(c.session_id(), old_session);
    let d = c.durability();
    assert_eq!(d.verifier_changes, 1, "{d:?}");
    assert_eq!(d.rewritten_bytes, 1 << 20, "{d:?}");
    assert_eq!(d.unprotected_bytes, 0, "{d:?}");
    c.close(f).unwrap();
    assert!(
        fs::read(g.export_dir().join("k.bin")).unwrap() == data,
        "the export holds the data written before the restart"
    );
}

#[test]
fn v4_stopped_server_fails_within_the_window_in_one_line() {
    let Some(g) = server() else { return };
    let mut c = connect(&g, "timeout=1&reconnect=2", 4);
    c.ping().unwrap();
    let pid = g.pid().unwrap() as i32;
    // SAFETY: signalling the ganesha this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    wait_stopped(pid);
    let t = Instant::now();
    let got = c.ping();
    let took = t.elapsed();
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let e = got.unwrap_err().to_string();
    assert!(took < Duration::from_secs(15), "gave up after {took:?}");
    assert!(e.contains("SEQUENCE") && !e.contains('\n'), "{e}");
    // Later calls fail at once rather than waiting out another window.
    let t = Instant::now();
    assert!(c.ping().is_err());
    assert!(t.elapsed() < Duration::from_secs(2));
}

/// Waits until every thread of `pid` is stopped (a signal reaches a busy thread late).
fn wait_stopped(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let dir = format!("/proc/{pid}/task");
    loop {
        let all = fs::read_dir(&dir).unwrap().flatten().all(|t| {
            let stat = fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            state.starts_with('T') || state.starts_with('t')
        });
        if all || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn v4_idle_renewal_keeps_the_session_and_an_expired_lease_is_recovered() {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let g = Ganesha::start_v4_only_lease(3).expect("start ganesha");
    let mut c = connect(&g, "timeout=5&reconnect=10", 2);
    assert_eq!(c.lease(), Duration::from_secs(3));
    let f = c
        .open(
            "l.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    c.write(f, 0, b"kept", Stable4::FileSync).unwrap();
    // Idle for three leases, renewing as an idle client must: the session stays.
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(9) {
        c.renew_if_idle().unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(c.recoveries(), 0, "the lease was kept");
    // Paused past the lease (and the server's reaping of it): the next call sets up a
    // new session, the open is had again, and the data is there.
    std::thread::sleep(Duration::from_secs(12));
    let mut buf = [0u8; 4];
    let (n, _) = c.read(f, 0, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"kept");
    assert!(c.recoveries() >= 1, "the expired lease was noticed");
    c.close(f).unwrap();
}

/// A server restarted with a grace period: a client it knew reclaims its open with
/// CLAIM_PREVIOUS and RECLAIM_COMPLETE at once (an open by handle would wait out the
/// period), while a new client's OPEN is answered NFS4ERR_GRACE until the period ends and
/// is retried until it succeeds.
#[test]
fn v4_opens_are_reclaimed_in_the_grace_period_and_new_ones_wait_for_its_end() {
    const GRACE: u64 = 8;
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut g = Ganesha::start_v4_only_grace(5, GRACE as u32).expect("start ganesha");
    let mut held = connect(&g, "timeout=5&reconnect=30", 2);
    let f = held
        .open(
            "held.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    held.write(f, 0, b"held", Stable4::FileSync).unwrap();
    let mut buf = [0u8; 4];

    g.crash();
    g.start_again().unwrap();
    let t = Instant::now();
    held.read(f, 0, &mut buf)
        .expect("read after reclaiming in the grace period");
    let took = t.elapsed();
    assert_eq!(&buf, b"held");
    assert_eq!(held.recoveries(), 1);
    assert!(
        took < Duration::from_secs(GRACE - 2),
        "the open was not reclaimed in the grace period: {took:?}"
    );

    g.crash();
    g.start_again().unwrap();
    let t = Instant::now();
    let mut c = connect(&g, "timeout=5&reconnect=30", 2);
    let n = c
        .open(
            "new.bin",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .expect("OPEN retried through the grace period");
    let waited = t.elapsed();
    assert!(
        waited >= Duration::from_secs(GRACE / 2),
        "no grace period seen: {waited:?}"
    );
    c.close(n).unwrap();
    // After the period the old client's open is had again by handle.
    held.read(f, 0, &mut buf).unwrap();
    assert_eq!(&buf, b"held");
    assert_eq!(held.recoveries(), 2);
    held.close(f).unwrap();
}

/// NFS4ERR_DELAY from a real ganesha: a directory of the export that is a mount point
/// (a bind mount) cannot be removed (rmdir(2) gives EBUSY, which ganesha answers as
/// NFS4ERR_DELAY). REMOVE is retried until `timeout` + `reconnect` have passed, then
/// fails in one line naming the status, the tries and the limit; a REMOVE retried while
/// the mount goes away succeeds.
#[test]
fn v4_delay_is_retried_for_timeout_plus_reconnect_then_named_in_one_line() {
    let Some(g) = server() else { return };
    let export = g.export_dir();
    let (src, busy) = (export.join("src"), export.join("busy"));
    fs::create_dir(&src).unwrap();
    fs::create_dir(&busy).unwrap();
    let mounted = storbench_testkit::mount::Mount::bind(&src, &busy);
    let mut c = connect(&g, "timeout=1&reconnect=2", 2);

    let t = Instant::now();
    let e = c.remove("busy").unwrap_err().to_string();
    let took = t.elapsed();
    assert!(
        e.contains("REMOVE /export/busy: NFS4ERR_DELAY")
            && e.contains("timeout=1 s + reconnect=2 s"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
    assert!(
        took >= Duration::from_secs(3),
        "gave up after {took:?}: {e}"
    );
    assert!(took < Duration::from_secs(6), "gave up after {took:?}: {e}");
    assert!(busy.is_dir(), "the mount point stays");

    // The session is fine after it; the mount goes away 1.5 s into the next REMOVE.
    let mut c = connect(&g, "timeout=5&reconnect=30", 2);
    let unmount = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        drop(mounted);
    });
    let t = Instant::now();
    c.remove("busy")
        .expect("REMOVE retried until the mount is gone");
    let took = t.elapsed();
    unmount.join().unwrap();
    assert!(took >= Duration::from_millis(1500), "{took:?}");
    assert!(!busy.exists(), "removed on the server");
}
