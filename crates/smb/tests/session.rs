//! A `Session` across lost connections, against a real Samba smbd on 127.0.0.1 reached
//! through a relay the test cuts (the server keeps running, as on a network outage): the
//! IOs after a cut complete on a new connection with the file reclaimed by its durable
//! handle and the data intact; with `reconnect=0` the first loss gives up, and every later
//! call fails at once with the same reason. Skips with a reason when Samba is not installed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use storbench_smb::session::{Io, OpenMode};
use storbench_smb::{ClientConfig, Completion, Session, SmbError, SmbUrl, Submit};
use storbench_testkit::smbd::{self, SHARE, Smbd};
use storbench_testkit::tcpcut::CutProxy;

const BS: usize = 64 << 10;
const DEPTH: usize = 8;

fn server() -> Option<(Smbd, CutProxy)> {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start().expect("start smbd");
    let proxy = CutProxy::start(SocketAddr::from(([127, 0, 0, 1], s.port))).expect("relay");
    Some((s, proxy))
}

fn login(s: &Smbd, p: &CutProxy, query: &str) -> Session {
    let url = format!("smb://{}@127.0.0.1:{}/{SHARE}{query}", s.user(), p.port);
    let u = SmbUrl::parse(&url).unwrap();
    let cfg = ClientConfig::from_url(&u, Some(s.password().to_string())).unwrap();
    Session::login(cfg, u.reconnect).unwrap_or_else(|e| panic!("login: {e}\n{}", s.log()))
}

const NEW_FILE: OpenMode = OpenMode {
    write_through: false,
    write: true,
    create: true,
    exclusive: true,
};

/// Creates `name` with a durable handle and returns its number in the session.
fn create(session: &mut Session, name: &str) -> u32 {
    let (id, _) = session
        .call(|c| NEW_FILE.open(c, name, true))
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
    session.add_file(id, name.to_string(), NEW_FILE)
}

/// One IO per buffer, all in flight together, each reaped with `BS` bytes moved.
fn round(session: &mut Session, file: u32, bufs: &mut [Vec<u8>], write: bool) {
    for (i, b) in bufs.iter_mut().enumerate() {
        let io = Io {
            file,
            write,
            offset: (i * BS) as u64,
            buf: b.as_mut_ptr(),
            len: BS as u32,
        };
        // SAFETY: each buffer serves one IO and outlives the reap below.
        let s = unsafe { session.submit(&io, i as u32) }.expect("submit");
        assert_eq!(s, Submit::Queued);
    }
    session.commit().expect("commit");
    let mut out: Vec<Completion> = Vec::new();
    while out.len() < bufs.len() {
        session.reap(1, &mut out).expect("reap");
    }
    let mut tags: Vec<u64> = out.iter().map(|c| c.user).collect();
    tags.sort();
    assert_eq!(tags, (0..bufs.len() as u64).collect::<Vec<_>>());
    assert!(out.iter().all(|c| c.result == Ok(BS as u64)), "{out:?}");
}

fn filled(seed: u8) -> Vec<Vec<u8>> {
    (0..DEPTH)
        .map(|i| vec![seed.wrapping_add(i as u8); BS])
        .collect()
}

#[test]
fn a_session_completes_the_ios_after_a_cut_on_a_new_connection_with_its_file_reclaimed() {
    let Some((s, p)) = server() else {
        return;
    };
    let mut session = login(&s, &p, "?timeout=5&reconnect=20");
    session.set_slots(DEPTH);
    let file = create(&mut session, "cut.dat");
    round(&mut session, file, &mut filled(1), true);
    assert_eq!(p.cut(), 1);
    round(&mut session, file, &mut filled(101), true);
    let mut back: Vec<Vec<u8>> = (0..DEPTH).map(|_| vec![0u8; BS]).collect();
    round(&mut session, file, &mut back, false);
    assert!(back == filled(101), "the data read back differs");
    let outages = session.outages();
    assert_eq!(outages.len(), 1, "{outages:?}");
    assert!(!outages[0].first);
    assert_eq!(outages[0].files.reclaimed, 1, "{outages:?}\n{}", s.log());
    assert_eq!(outages[0].files.reopened, 0, "{outages:?}");
    assert_eq!(p.connections(), 2, "one login, one after the cut");
    session.close(file).expect("close");
    session.call(|c| c.unlink("cut.dat")).expect("unlink");
}

#[test]
fn with_reconnect_zero_the_first_loss_gives_up_and_later_calls_fail_at_once() {
    let Some((s, p)) = server() else {
        return;
    };
    let mut session = login(&s, &p, "?timeout=5&reconnect=0");
    let file = create(&mut session, "once.dat");
    assert_eq!(p.cut(), 1);
    let e = session.call(|c| c.stat("once.dat")).unwrap_err();
    assert!(matches!(e, SmbError::GaveUp(_)), "{e:?}");
    let why = e.to_string();
    assert!(why.ends_with("; not reconnecting (reconnect=0)"), "{why}");
    assert!(session.has_given_up());
    let t = Instant::now();
    let again = session.call(|c| c.stat("once.dat")).unwrap_err();
    assert_eq!(again.to_string(), why);
    let mut out = Vec::new();
    let reaped = session.reap(1, &mut out).unwrap_err();
    assert_eq!(reaped.to_string(), why);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // Nothing is left to close on a server given up on: the file is only forgotten.
    session.close(file).expect("close after giving up");
    assert!(session.file(file).is_none());
    assert_eq!(p.connections(), 1, "no second login");
}
