//! NFSv4.1 faults against a real v4-only nfs-ganesha: a restart mid-session (a new session,
//! opens reclaimed, requests in flight sent again, lost UNSTABLE data named) and a stopped
//! server (bounded by timeout and reconnect window, one line).

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
    let mut c = connect(&g, "timeout=5&reconnect=30", 8);
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
