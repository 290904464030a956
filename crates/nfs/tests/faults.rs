//! Server faults that a real server will not produce on demand (a reply for an unknown XID,
//! garbage, silence, a closed connection), from a scripted TCP peer on 127.0.0.1: each must
//! give a one-line error naming the server and the operation, never a hang or a panic.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::thread;
use std::time::{Duration, Instant};

use storbench_nfs::rpc::{Auth, PROG_NFS};
use storbench_nfs::{NfsError, Transport, TransportConfig};

/// Accepts one connection, reads one call, and answers with `reply(xid)`; then keeps the
/// connection open for a while (so silence is silence, not a close).
fn peer(reply: fn(u32) -> Option<Vec<u8>>) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut head = [0u8; 8];
        s.read_exact(&mut head).unwrap();
        let len = (u32::from_be_bytes(head[..4].try_into().unwrap()) & 0x7fff_ffff) as usize;
        let xid = u32::from_be_bytes(head[4..8].try_into().unwrap());
        let mut rest = vec![0u8; len - 4];
        s.read_exact(&mut rest).unwrap();
        match reply(xid) {
            Some(bytes) => {
                s.write_all(&bytes).unwrap();
                thread::sleep(Duration::from_secs(5));
            }
            None => drop(s),
        }
    });
    addr
}

fn record(words: &[u32]) -> Vec<u8> {
    let mut out = (0x8000_0000u32 | (words.len() * 4) as u32)
        .to_be_bytes()
        .to_vec();
    for w in words {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out
}

fn call_null(addr: SocketAddr) -> (Result<Vec<u8>, NfsError>, Duration) {
    let cfg = TransportConfig {
        server: addr.to_string(),
        addrs: vec![addr],
        connections: 1,
        timeout: Duration::from_secs(1),
        reconnect_window: Duration::ZERO,
        recv_capacity: 4096,
    };
    let mut t = Transport::connect(cfg, Auth::sys("test", 0, 0), "NFS").unwrap();
    let start = Instant::now();
    (t.call("NULL", PROG_NFS, 3, 0, &[]), start.elapsed())
}

fn error_of(reply: fn(u32) -> Option<Vec<u8>>) -> (NfsError, String, SocketAddr) {
    let addr = peer(reply);
    let (r, took) = call_null(addr);
    assert!(took < Duration::from_secs(4), "took {took:?}");
    let e = r.expect_err("the call must fail");
    let msg = e.to_string();
    assert!(msg.starts_with(&addr.to_string()), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    (e, msg, addr)
}

#[test]
fn the_scripted_peer_can_answer_properly() {
    let addr = peer(|xid| Some(record(&[xid, 1, 0, 0, 0, 0])));
    let (r, _) = call_null(addr);
    assert_eq!(r.unwrap(), Vec::<u8>::new());
}

#[test]
fn reply_for_an_unknown_xid() {
    let (e, msg, _) = error_of(|xid| Some(record(&[xid ^ 0x5555_0000, 1, 0, 0, 0, 0])));
    assert!(matches!(e, NfsError::UnknownXid { .. }), "{msg}");
    assert!(msg.contains("unknown XID"), "{msg}");
}

#[test]
fn garbage_reply() {
    let (e, msg, _) = error_of(|xid| Some(record(&[xid, 7, 7])));
    assert!(matches!(e, NfsError::Garbage { op: "NULL", .. }), "{msg}");
    assert!(msg.contains("malformed reply to NULL"), "{msg}");
}

#[test]
fn oversized_record_mark() {
    let (e, msg, _) = error_of(|_| Some(0xffff_ffffu32.to_be_bytes().to_vec()));
    assert!(matches!(e, NfsError::Garbage { .. }), "{msg}");
    assert!(msg.contains("too large"), "{msg}");
}

#[test]
fn rpc_level_rejection() {
    let (e, msg, _) = error_of(|xid| Some(record(&[xid, 1, 0, 0, 0, 2, 2, 2])));
    assert!(matches!(e, NfsError::Rpc { op: "NULL", .. }), "{msg}");
    assert!(msg.contains("PROG_MISMATCH"), "{msg}");
}

#[test]
fn silent_server_times_out() {
    let (e, msg, _) = error_of(|_| Some(Vec::new()));
    assert!(
        matches!(
            e,
            NfsError::Timeout {
                op: "NULL",
                secs: 1,
                ..
            }
        ),
        "{msg}"
    );
}

#[test]
fn closed_connection() {
    let (e, msg, _) = error_of(|_| None);
    assert!(matches!(e, NfsError::Io { op: "NULL", .. }), "{msg}");
    assert!(msg.contains("closed"), "{msg}");
}

#[test]
fn refused_connection() {
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let cfg = TransportConfig {
        server: addr.to_string(),
        addrs: vec![addr],
        connections: 1,
        timeout: Duration::from_secs(1),
        reconnect_window: Duration::ZERO,
        recv_capacity: 4096,
    };
    let msg = Transport::connect(cfg, Auth::sys("t", 0, 0), "MOUNT")
        .err()
        .unwrap()
        .to_string();
    assert!(
        msg.starts_with(&format!("cannot connect to {addr} for MOUNT")),
        "{msg}"
    );
}

/// A peer that answers every NULL call properly after `delay`.
fn echo_peer(delay: Duration) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let mut head = [0u8; 8];
        while s.read_exact(&mut head).is_ok() {
            let len = (u32::from_be_bytes(head[..4].try_into().unwrap()) & 0x7fff_ffff) as usize;
            let xid = u32::from_be_bytes(head[4..8].try_into().unwrap());
            let mut rest = vec![0u8; len - 4];
            if s.read_exact(&mut rest).is_err() {
                return;
            }
            thread::sleep(delay);
            if s.write_all(&record(&[xid, 1, 0, 0, 0, 0])).is_err() {
                return;
            }
        }
    });
    addr
}

#[test]
fn an_idle_spell_does_not_count_as_silence() {
    let addr = echo_peer(Duration::from_millis(100));
    let cfg = TransportConfig {
        server: addr.to_string(),
        addrs: vec![addr],
        connections: 1,
        timeout: Duration::from_millis(500),
        reconnect_window: Duration::from_secs(5),
        recv_capacity: 4096,
    };
    let mut t = Transport::connect(cfg, Auth::sys("test", 0, 0), "NFS").unwrap();
    t.call("NULL", PROG_NFS, 3, 0, &[]).unwrap();
    thread::sleep(Duration::from_millis(800));
    t.call("NULL", PROG_NFS, 3, 0, &[]).unwrap();
    assert!(t.outages().is_empty(), "{:?}", t.outages());
}

#[test]
fn ipv6_literals_connect() {
    let Ok(l) = TcpListener::bind("[::1]:0") else {
        eprintln!("skipped: no IPv6 loopback here");
        return;
    };
    let port = l.local_addr().unwrap().port();
    drop(l);
    let url = storbench_nfs::NfsUrl::parse(&format!("nfs://[::1]:{port}/export")).unwrap();
    assert_eq!(url.host_port(port), format!("[::1]:{port}"));
    let addrs: Vec<SocketAddr> =
        std::net::ToSocketAddrs::to_socket_addrs(&(url.host.as_str(), port))
            .unwrap()
            .collect();
    let l = TcpListener::bind(addrs[0]).unwrap();
    let cfg = TransportConfig {
        server: url.host_port(port),
        addrs,
        connections: 1,
        timeout: Duration::from_secs(1),
        reconnect_window: Duration::ZERO,
        recv_capacity: 4096,
    };
    let t = Transport::connect(cfg, Auth::sys("t", 0, 0), "NFS").unwrap();
    assert!(t.local_addr().unwrap().is_ipv6());
    drop(l);
}

// ---------- a hung server ends the wait ----------
//
// The reconnect window bounds the time without progress (a complete reply other than
// JUKEBOX), not each reconnect: a server that accepts connections and then never answers,
// answers a byte at a time, or answers JUKEBOX forever is given up on after at most
// `timeout + reconnect_window`. Each case runs in a thread so that a hang fails the test
// instead of hanging it.

/// Reads one whole call from `s`; its XID, or `None` when the client closed.
fn read_call(s: &mut std::net::TcpStream) -> Option<u32> {
    let mut head = [0u8; 8];
    s.read_exact(&mut head).ok()?;
    let len = (u32::from_be_bytes(head[..4].try_into().unwrap()) & 0x7fff_ffff) as usize;
    let mut rest = vec![0u8; len - 4];
    s.read_exact(&mut rest).ok()?;
    Some(u32::from_be_bytes(head[4..8].try_into().unwrap()))
}

/// A peer that accepts every connection and serves each with `serve` on its own thread.
/// Returns its address and how many connections it accepted so far.
fn hung_peer(
    serve: fn(std::net::TcpStream),
) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicU32>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let count = accepted.clone();
    thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            thread::spawn(move || serve(s));
        }
    });
    (addr, accepted)
}

fn patient(addr: SocketAddr, timeout: u64, window: u64) -> Transport {
    let cfg = TransportConfig {
        server: addr.to_string(),
        addrs: vec![addr],
        connections: 1,
        timeout: Duration::from_secs(timeout),
        reconnect_window: Duration::from_secs(window),
        recv_capacity: 4096,
    };
    Transport::connect(cfg, Auth::sys("test", 0, 0), "NFS").unwrap()
}

/// Runs `f` on a thread; fails the test if it has not returned within `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| {
        panic!("still waiting after {limit:?}: the hung server was never given up on")
    })
}

/// The error of a NULL call to `addr` with `timeout` and `window`, and how long it took.
fn null_against(
    addr: SocketAddr,
    timeout: u64,
    window: u64,
    limit: Duration,
) -> (String, Duration) {
    within(limit, move || {
        let mut t = patient(addr, timeout, window);
        let start = Instant::now();
        let e = t.call("NULL", PROG_NFS, 3, 0, &[]).expect_err("must fail");
        let took = start.elapsed();
        // Given up for good: the next call fails at once instead of another window.
        let again = Instant::now();
        let e2 = t
            .call("NULL", PROG_NFS, 3, 0, &[])
            .expect_err("must fail again");
        assert!(again.elapsed() < Duration::from_millis(500), "{e2}");
        assert_eq!(e2.to_string(), e.to_string());
        (e.to_string(), took)
    })
}

#[test]
fn a_server_that_accepts_and_never_answers_is_given_up_after_timeout_plus_window() {
    let (addr, accepted) = hung_peer(|mut s| while read_call(&mut s).is_some() {});
    // timeout=1, reconnect=3: lost at 1 s, reconnected (it accepts) every second, given
    // up at 4 s; 2 s of margin.
    let (msg, took) = null_against(addr, 1, 3, Duration::from_secs(10));
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(6),
        "{took:?}: {msg}"
    );
    assert!(
        accepted.load(std::sync::atomic::Ordering::Relaxed) >= 3,
        "{msg}"
    );
    assert!(
        msg.starts_with(&addr.to_string()) && !msg.contains('\n'),
        "{msg}"
    );
    assert!(
        msg.contains("no reply completed NULL") && msg.contains("reconnect(s) made"),
        "{msg}"
    );
    assert!(msg.contains("timeout=1 s and reconnect=3 s"), "{msg}");
}

#[test]
fn a_slow_loris_server_is_given_up_after_timeout_plus_window() {
    // A reply record announced as 1 MiB, sent one byte per second: bytes keep coming (the
    // connection is never silent for the timeout) but no reply ever completes.
    let (addr, _) = hung_peer(|mut s| {
        let Some(xid) = read_call(&mut s) else { return };
        let mut bytes = (0x8000_0000u32 | (1 << 20)).to_be_bytes().to_vec();
        bytes.extend_from_slice(&xid.to_be_bytes());
        bytes.resize(1 << 20, 0);
        for b in bytes {
            if s.write_all(&[b]).is_err() {
                return;
            }
            thread::sleep(Duration::from_secs(1));
        }
    });
    let (msg, took) = null_against(addr, 2, 2, Duration::from_secs(12));
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(7),
        "{took:?}: {msg}"
    );
    assert!(msg.contains("too slowly to complete"), "{msg}");
}

#[test]
fn endless_jukebox_is_given_up_after_timeout_plus_window() {
    // Every READ (and every retry of it) answered NFS3ERR_JUKEBOX: "busy, try later".
    let (addr, _) = hung_peer(|mut s| {
        while let Some(xid) = read_call(&mut s) {
            if s.write_all(&record(&[xid, 1, 0, 0, 0, 0, 10008, 0]))
                .is_err()
            {
                return;
            }
        }
    });
    let (msg, took) = within(Duration::from_secs(10), move || {
        let mut t = patient(addr, 1, 2);
        let fh = storbench_nfs::Fh::new(&[1, 2, 3, 4]).unwrap();
        let mut buf = vec![0u8; 4096];
        let start = Instant::now();
        // SAFETY: `buf` outlives the transport's use of it (the wait below returns first).
        unsafe { t.read(&fh, 0, 0, buf.as_mut_ptr(), 4096, 4096, 7) }.unwrap();
        let e = t.wait(1, &mut |_, _| {}).expect_err("must fail");
        (e.to_string(), start.elapsed())
    });
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(5),
        "{took:?}: {msg}"
    );
    assert!(
        msg.contains("NFS3ERR_JUKEBOX") && msg.contains("READ"),
        "{msg}"
    );
}

#[test]
fn a_server_refusing_connections_is_given_up_one_window_after_the_loss() {
    // Answers the first call, closes, and is gone: reconnects are refused.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let xid = read_call(&mut s).unwrap();
        s.write_all(&record(&[xid, 1, 0, 0, 0, 0])).unwrap();
        read_call(&mut s);
        // No listener left to reconnect to when the client sees the close.
        drop(l);
        drop(s);
    });
    let (msg, took) = within(Duration::from_secs(10), move || {
        let mut t = patient(addr, 30, 2);
        t.call("NULL", PROG_NFS, 3, 0, &[]).unwrap();
        let start = Instant::now();
        let e = t.call("NULL", PROG_NFS, 3, 0, &[]).expect_err("must fail");
        let took = start.elapsed();
        let again = Instant::now();
        t.call("NULL", PROG_NFS, 3, 0, &[])
            .expect_err("must fail again");
        assert!(again.elapsed() < Duration::from_millis(500));
        (e.to_string(), took)
    });
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(3),
        "{took:?}: {msg}"
    );
    assert!(msg.contains("no reconnect within 2 s"), "{msg}");
}

#[test]
fn progress_ends_a_loss_so_a_slow_but_answering_server_is_kept() {
    // Each reply takes 0.7 s with timeout=1 and reconnect=1: calls keep completing, so the
    // many seconds spent in total never count as one loss.
    let addr = echo_peer(Duration::from_millis(700));
    let mut t = patient(addr, 1, 1);
    for _ in 0..5 {
        t.call("NULL", PROG_NFS, 3, 0, &[]).unwrap();
    }
    assert!(t.outages().is_empty(), "{:?}", t.outages());
}
