//! The smb engine after a lost connection, against a real Samba smbd on 127.0.0.1 reached
//! through a relay the test cuts (the server keeps running, as on a network outage): a
//! file with a durable handle is reclaimed, not opened again by name; without durable
//! handles it is reopened and the note says why; a directory listing cut half-way goes on
//! without repeating or losing a name. Skips with a reason when Samba is not installed.

mod common;

use std::net::SocketAddr;

use common::{Driver, job, rw_open};
use storbench_core::{DirCursor, IoKind, MetaPath, NameList};
use storbench_testkit::smbd::{self, SHARE, Smbd, SmbdOptions};
use storbench_testkit::tcpcut::CutProxy;

fn server(opts: SmbdOptions) -> Option<(Smbd, CutProxy)> {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start_with(opts).expect("start smbd");
    let proxy = CutProxy::start(SocketAddr::from(([127, 0, 0, 1], s.port))).expect("relay");
    Some((s, proxy))
}

/// The password in the URL (accepted with a warning) keeps the test free of environment
/// changes, which other tests of this binary would see.
fn url(s: &Smbd, p: &CutProxy, rel: &str) -> String {
    format!(
        "smb://{}:{}@127.0.0.1:{}/{SHARE}/{rel}?timeout=5&reconnect=20",
        s.user(),
        s.password(),
        p.port
    )
}

/// Writes 16 × 64 KiB, cuts the connection, writes and reads them again; returns the
/// engine's outage note and its `files_reclaimed`/`files_reopened` figures.
fn write_cut_write(s: &Smbd, p: &CutProxy, name: &str) -> (String, String, String) {
    let mut d = Driver::new(&job("smb", 4, &[]), 65536).unwrap();
    let id = d.open(&url(s, p, name), rw_open(false)).unwrap();
    let writes: Vec<_> = (0..16u64)
        .map(|i| (IoKind::Write, i << 16, 65536))
        .collect();
    let fill = |i: usize, b: &mut [u8]| b.fill(i as u8 + 1);
    d.run(id, &writes, fill, |_, _, r| assert_eq!(r, 65536))
        .unwrap();
    assert_eq!(p.cut(), 1);
    d.run(id, &writes, fill, |_, _, r| assert_eq!(r, 65536))
        .unwrap_or_else(|e| panic!("after the cut: {e}\n{}", s.log()));
    let reads: Vec<_> = (0..16u64).map(|i| (IoKind::Read, i << 16, 65536)).collect();
    d.run(
        id,
        &reads,
        |_, _| {},
        |i, b, r| {
            assert_eq!(r, 65536);
            assert!(b.iter().all(|&x| x == i as u8 + 1), "block {i} differs");
        },
    )
    .unwrap();
    d.engine.close(id).unwrap();
    let info = d.engine.info();
    let detail = |k: &str| {
        info.details
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let note = info
        .notes
        .iter()
        .find(|n| n.starts_with("SMB connection to"))
        .cloned()
        .unwrap_or_else(|| panic!("no outage note in {:?}", info.notes));
    d.engine
        .meta()
        .unwrap()
        .unlink(MetaPath::whole(&common::at(url(s, p, name))))
        .unwrap();
    (note, detail("files_reclaimed"), detail("files_reopened"))
}

#[test]
fn smb_engine_reclaims_a_durable_handle_after_a_cut_connection() {
    let Some((s, p)) = server(SmbdOptions::default()) else {
        return;
    };
    let (note, reclaimed, reopened) = write_cut_write(&s, &p, "durable.dat");
    assert!(
        note.contains("1 file(s) reclaimed by durable handle"),
        "{note}"
    );
    assert!(!note.contains("reopened"), "{note}");
    assert_eq!((reclaimed.as_str(), reopened.as_str()), ("1", "0"));
    assert_eq!(p.connections(), 2, "one login, one after the cut");
    assert!(
        std::fs::read_dir(s.share_dir(SHARE))
            .unwrap()
            .next()
            .is_none()
    );
}

#[test]
fn smb_engine_reopens_where_no_durable_handle_was_granted_and_says_so() {
    let Some((s, p)) = server(SmbdOptions {
        no_durable_handles: true,
        ..Default::default()
    }) else {
        return;
    };
    let (note, reclaimed, reopened) = write_cut_write(&s, &p, "plain.dat");
    assert!(
        note.contains("1 file(s) reopened (no durable handle granted)"),
        "{note}"
    );
    assert_eq!((reclaimed.as_str(), reopened.as_str()), ("0", "1"));
}

#[test]
fn smb_listing_cut_half_way_resumes_without_repeating_or_losing_a_name() {
    let Some((s, p)) = server(SmbdOptions::default()) else {
        return;
    };
    let dir = s.share_dir(SHARE).join("big");
    std::fs::create_dir(&dir).unwrap();
    let mut want: Vec<String> = (0..3000)
        .map(|i| format!("a-file-with-a-fairly-long-name-{i:06}"))
        .collect();
    for n in &want {
        std::fs::write(dir.join(n), b"").unwrap();
    }
    let spec = job("smb", 1, &[]);
    let mut engine = storbench_engines::create(&spec).unwrap();
    let dir_url = url(&s, &p, "big");
    let mut cursor = DirCursor::default();
    let mut names = NameList::with_capacity(4096, 1 << 17);
    let meta = engine.meta().unwrap();
    meta.read_dir(
        MetaPath::whole(&common::at(&dir_url)),
        &mut cursor,
        &mut names,
    )
    .unwrap();
    let first = names.len();
    assert!(first > 0 && first < want.len() / 2, "first batch: {first}");
    assert_eq!(p.cut(), 1);
    while !cursor.done {
        meta.read_dir(
            MetaPath::whole(&common::at(&dir_url)),
            &mut cursor,
            &mut names,
        )
        .unwrap_or_else(|e| panic!("after the cut: {e}\n{}", s.log()));
    }
    let mut got: Vec<String> = names.iter().map(str::to_string).collect();
    got.sort();
    want.sort();
    assert_eq!(got.len(), want.len(), "names returned");
    assert!(got == want, "the listing differs from the directory");
    let notes = engine.info().notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the directory listing restarted")),
        "{notes:?}"
    );
    assert_eq!(p.connections(), 2);
}
