//! Leases and durable handles against a real Samba smbd on 127.0.0.1, reached through a
//! relay the test cuts (Samba keeps a durable open across a lost connection, not across a
//! restart of smbd). Skips with a reason when Samba is not installed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use storbench_smb::{Client, ClientConfig, Durable, FileId, SmbUrl};
use storbench_testkit::smbd::{self, SHARE, Smbd, SmbdOptions};
use storbench_testkit::tcpcut::CutProxy;

fn server(durable: bool) -> Option<(Smbd, CutProxy)> {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start_with(SmbdOptions {
        no_durable_handles: !durable,
        ..Default::default()
    })
    .expect("start smbd");
    let proxy = CutProxy::start(SocketAddr::from(([127, 0, 0, 1], s.port))).expect("relay");
    Some((s, proxy))
}

fn config(s: &Smbd, p: &CutProxy, query: &str) -> ClientConfig {
    let url = format!("smb://{}@127.0.0.1:{}/{SHARE}{query}", s.user(), p.port);
    let u = SmbUrl::parse(&url).unwrap();
    ClientConfig::from_url(&u, Some(s.password().to_string())).unwrap()
}

fn login(cfg: &ClientConfig, s: &Smbd) -> Client {
    Client::connect(cfg).unwrap_or_else(|e| panic!("login: {e}\n{}", s.log()))
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// Reclaims `d` on new connections until the server has let go of the old one (its
/// process notices the cut connection a moment after the client does), for 5 s at most.
fn reclaim(cfg: &ClientConfig, s: &Smbd, name: &str, d: &Durable) -> (Client, FileId) {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = login(cfg, s);
        match c.reclaim(name, d) {
            Ok(id) => return (c, id),
            Err(e) if Instant::now() < until => {
                eprintln!("reclaim not yet: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("reclaim: {e}\n{}", s.log()),
        }
    }
}

#[test]
fn a_durable_handle_is_reclaimed_after_a_cut_connection_for_each_dialect() {
    let Some((s, proxy)) = server(true) else {
        return;
    };
    for vers in ["2.1", "3.0", "3.1.1"] {
        let cfg = config(&s, &proxy, &format!("?vers={vers}&timeout=5"));
        let name = format!("durable-{vers}.dat");
        let data = pattern(256 << 10);
        let mut c = login(&cfg, &s);
        let (id, _) = c.open(&name, true, true).expect("create");
        let d = c
            .durable(id)
            .unwrap_or_else(|| panic!("{vers}: no durable handle granted\n{}", s.log()));
        assert_eq!(d.v2, vers != "2.1", "{vers}");
        assert_eq!(c.write_at(id, 0, &data).unwrap(), data.len() as u64);
        assert!(proxy.cut() >= 1, "nothing to cut");
        let e = c.write_at(id, 0, &data).unwrap_err();
        assert!(e.is_disconnect(), "{vers}: {e}");
        drop(c);
        let (mut c, back_id) = reclaim(&cfg, &s, &name, &d);
        assert!(c.durable(back_id).is_some(), "{vers}: still durable");
        // The same open again: its persistent half is the one the server gave first
        // (a new open by name gets a new one), and it was one CREATE, no other.
        assert_eq!(back_id.0[..8], d.file.0[..8], "{vers}: not the same open");
        assert_eq!(c.conn().creates_sent(), 1, "{vers}");
        let mut back = vec![0u8; data.len()];
        assert_eq!(c.read_at(back_id, 0, &mut back).unwrap(), data.len() as u64);
        assert!(back == data, "{vers}: data differs after the reclaim");
        c.close(back_id).unwrap();
        c.unlink(&name).unwrap();
    }
    let left: Vec<_> = std::fs::read_dir(s.share_dir(SHARE)).unwrap().collect();
    assert!(left.is_empty(), "left: {left:?}");
}

/// A server configured to grant no durable handle (`durable handles = no`): the client
/// knows it has none, and a reclaim of an open the server never kept is a one-line refusal, after
/// which the caller opens the file by name.
#[test]
fn without_durability_none_is_claimed_and_a_reclaim_is_refused_in_one_line() {
    let Some((s, proxy)) = server(false) else {
        return;
    };
    let cfg = config(&s, &proxy, "?timeout=5");
    let mut c = login(&cfg, &s);
    let (id, _) = c.open("plain.dat", true, true).expect("create");
    assert_eq!(c.durable(id), None, "{}", s.log());
    let fake = Durable {
        file: id,
        lease_key: [5; 16],
        create_guid: [6; 16],
        v2: true,
    };
    proxy.cut();
    drop(c);
    let mut c = login(&cfg, &s);
    let e = c.reclaim("plain.dat", &fake).unwrap_err();
    assert!(e.status().is_some(), "{e}");
    assert_eq!(e.to_string().lines().count(), 1, "{e}");
    let (id, _) = c.open("plain.dat", false, false).expect("reopen by name");
    c.close(id).unwrap();
    c.unlink("plain.dat").unwrap();
}

/// Another client's conflicting open of the file breaks the lease's handle caching; the
/// client acknowledges at once (the other open does not wait out the server's break
/// timeout of 35 s), and
/// the open is no longer counted as durable.
#[test]
fn a_lease_break_is_acknowledged_and_ends_durability() {
    let Some((s, proxy)) = server(true) else {
        return;
    };
    let cfg = config(&s, &proxy, "?timeout=5");
    let mut c = login(&cfg, &s);
    let (id, _) = c.open("leased.dat", true, true).expect("create");
    c.write_at(id, 0, &pattern(4096)).unwrap();
    assert!(c.durable(id).is_some(), "{}", s.log());
    let local = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(local.path(), b"overwritten").unwrap();
    let put = format!("put {} leased.dat", local.path().display());
    let started = Instant::now();
    let writer = std::thread::scope(|scope| {
        let t = scope.spawn(|| s.smbclient(SHARE, false, &put));
        let mut buf = [0u8; 512];
        while !t.is_finished() && started.elapsed() < Duration::from_secs(60) {
            c.read_at(id, 0, &mut buf).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        t.join().unwrap()
    });
    let took = started.elapsed();
    // Our open shares reading and writing but smbclient's does not, so after the break
    // its open may still be refused: what matters is that it was not kept waiting.
    if let Err(e) = writer {
        assert!(e.contains("NT_STATUS_SHARING_VIOLATION"), "{e}");
    }
    let (breaks, acks) = c.conn().lease_breaks();
    assert!(
        breaks >= 1 && acks >= 1,
        "breaks {breaks}, acks {acks}\n{}",
        s.log()
    );
    assert!(
        took < Duration::from_secs(20),
        "the overwrite waited {took:?}"
    );
    assert_eq!(c.durable(id), None, "handle caching was broken");
    c.close(id).unwrap();
    c.unlink("leased.dat").unwrap();
}
