//! The client against a real nbdkit started by each test (skipped with a reason where
//! nbdkit is not installed), and against in-test listeners that misbehave in the handshake.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use storbench_nbd::{Client, Cmd, Config, NbdError, NbdUrl};
use storbench_testkit::nbdkit::{self, Listen, Nbdkit};

macro_rules! need_nbdkit {
    () => {
        if let Some(why) = nbdkit::unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn connect(uri: &str, window: usize) -> Result<Client, NbdError> {
    let cfg = Config {
        timeout: Duration::from_secs(2),
        window,
    };
    Client::connect(&NbdUrl::parse(uri).unwrap(), cfg)
}

fn pattern(off: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((off + i as u64) as u8) ^ ((off >> 12) as u8))
        .collect()
}

/// Writes then reads back 256 blocks of 4 KiB with 32 requests in flight, in an order
/// that makes replies overlap, and checks every byte.
fn pipelined_round_trip(uri: &str, structured: bool) {
    let mut c = connect(uri, 32).unwrap();
    assert_eq!(c.export().size, 16 << 20);
    assert_eq!(c.export().structured, structured);
    let blocks: Vec<u64> = (0..256u64).map(|i| (i * 37 % 256) * 8192).collect();
    let data: Vec<Vec<u8>> = blocks.iter().map(|&o| pattern(o, 4096)).collect();
    let mut next = 0;
    let mut done = 0;
    while done < blocks.len() {
        while next < blocks.len() {
            let buf = data[next].as_ptr() as *mut u8;
            // SAFETY: `data` outlives every wait of this loop.
            let ok = unsafe { c.submit(next as u64, Cmd::Write, blocks[next], 4096, buf, false) };
            if !ok.unwrap() {
                break;
            }
            next += 1;
        }
        assert!(c.in_flight() <= 32);
        done += c
            .wait(1, &mut |_, r| assert_eq!(r, 4096, "WRITE result"))
            .unwrap();
    }
    assert_eq!(c.peak_in_flight(), 32);
    let mut back = vec![vec![0u8; 4096]; blocks.len()];
    let (mut next, mut done) = (0, 0);
    while done < blocks.len() {
        while next < blocks.len() {
            let buf = back[next].as_mut_ptr();
            // SAFETY: `back` outlives every wait of this loop.
            if !unsafe { c.submit(next as u64, Cmd::Read, blocks[next], 4096, buf, false) }.unwrap()
            {
                break;
            }
            next += 1;
        }
        done += c.wait(1, &mut |_, r| assert_eq!(r, 4096)).unwrap();
    }
    for (i, b) in back.iter().enumerate() {
        assert!(b == &data[i], "block at {} differs", blocks[i]);
    }
    c.disconnect().unwrap();
}

#[test]
fn pipelined_writes_and_reads_structured() {
    need_nbdkit!();
    let s = Nbdkit::memory("16M").unwrap();
    pipelined_round_trip(&s.uri(), true);
}

#[test]
fn pipelined_writes_and_reads_simple_replies() {
    need_nbdkit!();
    let s = Nbdkit::start(Listen::Tcp, &["--no-sr"], &["memory", "16M"]).unwrap();
    pipelined_round_trip(&s.uri(), false);
}

#[test]
fn over_a_unix_socket() {
    need_nbdkit!();
    let s = Nbdkit::start(Listen::Unix, &[], &["memory", "16M"]).unwrap();
    pipelined_round_trip(&s.uri(), true);
}

#[test]
fn large_reads_land_directly() {
    need_nbdkit!();
    let s = Nbdkit::memory("16M").unwrap();
    let mut c = connect(&s.uri(), 4).unwrap();
    let mut data = pattern(1 << 20, 4 << 20);
    assert_eq!(
        c.call(Cmd::Write, 1 << 20, &mut data, false).unwrap(),
        4 << 20
    );
    let mut back = vec![0u8; 4 << 20];
    assert_eq!(
        c.call(Cmd::Read, 1 << 20, &mut back, false).unwrap(),
        4 << 20
    );
    assert!(back == data);
}

#[test]
fn flush_trim_zeroes_and_fua() {
    need_nbdkit!();
    let s = Nbdkit::memory("16M").unwrap();
    let mut c = connect(&s.uri(), 8).unwrap();
    let mut ones = vec![1u8; 8192];
    assert_eq!(c.call(Cmd::Write, 0, &mut ones, true).unwrap(), 8192);
    assert_eq!(c.call(Cmd::Flush, 0, &mut [], false).unwrap(), 0);
    assert_eq!(
        c.call(Cmd::Trim, 0, &mut ones[..4096], false).unwrap(),
        4096
    );
    assert_eq!(
        c.call(Cmd::WriteZeroes, 4096, &mut ones[..4096], true)
            .unwrap(),
        4096
    );
    let mut back = vec![9u8; 8192];
    c.call(Cmd::Read, 0, &mut back, false).unwrap();
    assert!(
        back.iter().all(|&b| b == 0),
        "trimmed and zeroed blocks read as zeros"
    );
}

#[test]
fn server_errors_fail_the_request_not_the_connection() {
    need_nbdkit!();
    let s = Nbdkit::start(
        Listen::Tcp,
        &["--filter=error"],
        &["memory", "16M", "error=EIO", "error-pread-rate=1"],
    )
    .unwrap();
    let mut c = connect(&s.uri(), 2).unwrap();
    let mut b = vec![0u8; 4096];
    assert_eq!(c.call(Cmd::Read, 0, &mut b, false).unwrap(), -5);
    assert_eq!(c.first_error(), Some(("READ", 0, 5)));
    assert_eq!(c.call(Cmd::Write, 0, &mut b, false).unwrap(), 4096);
}

#[test]
fn refused_requests_are_not_sent() {
    need_nbdkit!();
    let s = Nbdkit::start(Listen::Tcp, &["-r"], &["memory", "1M"]).unwrap();
    let mut c = connect(&s.uri(), 2).unwrap();
    let mut b = vec![0u8; 4096];
    let e = c
        .call(Cmd::Write, 0, &mut b, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("WRITE on a read-only export"), "{e}");
    let e = c
        .call(Cmd::Read, (1 << 20) - 512, &mut b, false)
        .unwrap_err();
    assert!(
        e.to_string().contains("beyond the export's 1048576 bytes"),
        "{e}"
    );
    assert_eq!(c.call(Cmd::Read, 0, &mut b, false).unwrap(), 4096);
}

#[test]
fn an_unknown_export_is_one_line() {
    need_nbdkit!();
    let s = Nbdkit::start(
        Listen::Tcp,
        &["--filter=exportname"],
        &["memory", "1M", "exportname=disk", "exportname-strict=true"],
    )
    .unwrap();
    let uri = format!("nbd://127.0.0.1:{}/disk", s.port());
    assert_eq!(connect(&uri, 1).unwrap().export().name, "disk");
    let uri = format!("nbd://127.0.0.1:{}/nope", s.port());
    let e = connect(&uri, 1).err().unwrap().to_string();
    assert!(e.contains("export \"nope\" refused"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_stalled_server_times_out() {
    need_nbdkit!();
    let s = Nbdkit::start(
        Listen::Tcp,
        &["--filter=delay"],
        &["memory", "1M", "rdelay=5"],
    )
    .unwrap();
    let mut c = connect(&s.uri(), 1).unwrap();
    let t = Instant::now();
    let e = c.call(Cmd::Read, 0, &mut [0u8; 512], false).unwrap_err();
    assert!(matches!(e, NbdError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    let again = c.call(Cmd::Read, 0, &mut [0u8; 512], false).unwrap_err();
    assert!(again.to_string().contains("unusable"), "{again}");
}

/// A listener that does `serve` to the first connection, on a thread.
fn fake_server(serve: fn(std::net::TcpStream)) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            serve(s);
        }
    });
    format!("nbd://127.0.0.1:{port}/x")
}

fn handshake_error(serve: fn(std::net::TcpStream)) -> String {
    let e = connect(&fake_server(serve), 1).err().unwrap().to_string();
    assert!(!e.contains('\n'), "{e}");
    e
}

#[test]
fn a_server_that_closes_the_handshake() {
    let e = handshake_error(drop);
    assert!(
        e.contains("closed the connection during the handshake"),
        "{e}"
    );
    let e = handshake_error(|mut s| {
        let _ = s.write_all(b"NBDMAGICIHAVEOPT\x00\x03");
        let _ = s.read(&mut [0u8; 4]);
    });
    assert!(
        e.contains("closed the connection during the handshake"),
        "{e}"
    );
}

#[test]
fn a_server_that_is_not_nbd_or_too_old() {
    let e = handshake_error(|mut s| {
        let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
    });
    assert!(e.contains("not an NBD server"), "{e}");
    let e = handshake_error(|mut s| {
        let mut b = b"NBDMAGIC".to_vec();
        b.extend_from_slice(&0x0000_4202_8186_1253u64.to_be_bytes());
        let _ = s.write_all(&b);
    });
    assert!(e.contains("oldstyle"), "{e}");
    let e = handshake_error(|mut s| {
        let _ = s.write_all(b"NBDMAGICIHAVEOPT\x00\x00");
    });
    assert!(e.contains("fixed newstyle"), "{e}");
}

#[test]
fn a_silent_server_times_out_in_the_handshake() {
    let t = Instant::now();
    let e = handshake_error(|s| {
        std::thread::sleep(Duration::from_secs(4));
        drop(s)
    });
    assert!(
        e.contains("no answer within 2 s during the handshake"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(4));
}

#[test]
fn nothing_listening_is_a_connect_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = connect(&format!("nbd://127.0.0.1:{port}/"), 1)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("cannot connect to NBD server 127.0.0.1:"),
        "{e}"
    );
}

/// Reads one option (IHAVEOPT, number, length, data) and returns its number.
fn read_option(s: &mut std::net::TcpStream) -> u32 {
    let mut h = [0u8; 16];
    s.read_exact(&mut h).unwrap();
    let len = u32::from_be_bytes(h[12..16].try_into().unwrap());
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data).unwrap();
    u32::from_be_bytes(h[8..12].try_into().unwrap())
}

fn opt_reply(option: u32, kind: u32) -> Vec<u8> {
    let mut b = 0x0003_e889_0455_65a9u64.to_be_bytes().to_vec();
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&0u32.to_be_bytes());
    b
}

#[test]
fn a_server_without_opt_go_gets_export_name() {
    let uri = fake_server(|mut s| {
        s.write_all(b"NBDMAGICIHAVEOPT\x00\x03").unwrap();
        s.read_exact(&mut [0u8; 4]).unwrap();
        // Neither structured replies nor NBD_OPT_GO: NBD_REP_ERR_UNSUP to both.
        for _ in 0..2 {
            let o = read_option(&mut s);
            s.write_all(&opt_reply(o, (1 << 31) | 1)).unwrap();
        }
        assert_eq!(read_option(&mut s), 1, "NBD_OPT_EXPORT_NAME");
        let mut b = (1u64 << 20).to_be_bytes().to_vec();
        b.extend_from_slice(&0x0003u16.to_be_bytes()); // HAS_FLAGS | READ_ONLY
        s.write_all(&b).unwrap(); // no zeroes: both sides agreed NO_ZEROES
        // One READ, answered with a simple reply.
        let mut req = [0u8; 28];
        s.read_exact(&mut req).unwrap();
        let mut r = 0x6744_6698u32.to_be_bytes().to_vec();
        r.extend_from_slice(&0u32.to_be_bytes());
        r.extend_from_slice(&req[8..16]);
        r.extend_from_slice(&[7u8; 512]);
        s.write_all(&r).unwrap();
        let _ = s.read(&mut [0u8; 28]);
    });
    let mut c = connect(&uri, 1).unwrap();
    assert_eq!(c.export().size, 1 << 20);
    assert!(c.export().read_only() && !c.export().structured);
    let mut b = [0u8; 512];
    assert_eq!(c.call(Cmd::Read, 0, &mut b, false).unwrap(), 512);
    assert_eq!(b, [7u8; 512]);
}
