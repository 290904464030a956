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
