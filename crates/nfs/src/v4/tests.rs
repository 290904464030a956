//! Wire-level tests: requests against hand-checked bytes, and replies captured from
//! nfs-ganesha 4.3 (`fixtures/`, written by the ignored test `capture_v4_reply_fixtures`
//! in tests/ganesha_v4.rs from a fixed sequence of calls).

use super::decode::{Reply, V4Error, locate_read, walk};
use super::stat::Nfs4Stat;
use super::types::{Fh4, FileType4, SessionId, Stateid, Verifier};
use super::wire::{Claim, Compound, Create, FILE_ATTRS, Stable4, op};
use crate::rpc::{self, ReplyStatus};

macro_rules! fixture {
    ($name:literal) => {
        include_bytes!(concat!("fixtures/", $name, ".bin")).as_slice()
    };
}

const ALL: [&[u8]; 17] = [
    fixture!("00-exchange_id"),
    fixture!("01-create_session"),
    fixture!("02-reclaim_complete"),
    fixture!("03-lease_time"),
    fixture!("04-lookup_root"),
    fixture!("05-open_create"),
    fixture!("06-write_unstable"),
    fixture!("07-commit"),
    fixture!("08-read"),
    fixture!("09-mkdir"),
    fixture!("10-lookup_dir"),
    fixture!("11-readdir"),
    fixture!("12-remove_noent"),
    fixture!("13-free_space"),
    fixture!("14-close"),
    fixture!("15-destroy_session"),
    fixture!("16-destroy_clientid"),
];

/// The COMPOUND result body of a captured RPC reply.
fn body(record: &[u8]) -> &[u8] {
    let h = rpc::parse_reply(record).unwrap();
    assert_eq!(h.status, ReplyStatus::Success);
    &record[h.body..]
}

fn session() -> SessionId {
    let mut r = Reply::parse(body(ALL[1])).unwrap();
    r.create_session().unwrap().id
}

/// A reply to a COMPOUND headed by SEQUENCE (on the captured session) and PUTFH.
fn after_putfh(record: &[u8]) -> Reply<'_> {
    let mut r = Reply::parse(body(record)).unwrap();
    r.sequence(Some(&session())).unwrap();
    r.status_only(op::PUTFH, "PUTFH").unwrap();
    r
}

fn words(buf: &[u8]) -> Vec<u32> {
    buf.chunks(4)
        .map(|w| u32::from_be_bytes(w.try_into().unwrap()))
        .collect()
}

#[test]
fn sequence_putfh_read_encodes_as_rfc8881_says() {
    let mut buf = Vec::new();
    let mut c = Compound::new(&mut buf, 1);
    let sid = SessionId([0x11; 16]);
    c.sequence(&sid, 7, 3, 31);
    c.putfh(&Fh4::new(&[0xaa, 0xbb, 0xcc, 0xdd, 0xee]).unwrap());
    let st = Stateid {
        seqid: 1,
        other: [0x22; 12],
    };
    c.read(&st, 0x1_0000_0000, 4096);
    assert_eq!(c.ops(), 3);
    #[rustfmt::skip]
    let want = [
        0, 1, 3,                                    // empty tag, minor version 1, 3 ops
        53, 0x1111_1111, 0x1111_1111, 0x1111_1111, 0x1111_1111, 7, 3, 31, 0, // SEQUENCE
        22, 5, 0xaabb_ccdd, 0xee00_0000,            // PUTFH: 5 bytes, padded
        25, 1, 0x2222_2222, 0x2222_2222, 0x2222_2222, 1, 0, 4096, // READ
    ];
    assert_eq!(words(&buf), want);
}

#[test]
fn exchange_id_and_create_session_encode_as_rfc8881_says() {
    let mut buf = Vec::new();
    let mut c = Compound::new(&mut buf, 1);
    c.exchange_id(&Verifier(*b"verifier"), b"abc");
    c.create_session(0x0102_0304_0506_0708, 9, 32, 1 << 20);
    #[rustfmt::skip]
    let want = [
        0, 1, 2,
        // EXCHANGE_ID: verifier, owner "abc", USE_NON_PNFS, SP4_NONE, no impl id
        42, 0x7665_7269, 0x6669_6572, 3, 0x6162_6300, 0x0001_0000, 0, 0,
        // CREATE_SESSION: client id, sequence, flags
        43, 0x0102_0304, 0x0506_0708, 9, 0,
        // fore channel: pad, max request, max response, max cached, max ops, slots, no ird
        0, 1 << 20, 1 << 20, 4096, 16, 32, 0,
        // back channel
        0, 4096, 4096, 0, 2, 1, 0,
        // callback program, one AUTH_NONE security parameter
        0x4000_0000, 1, 0,
    ];
    assert_eq!(words(&buf), want);
}

#[test]
fn open_create_encodes_share_owner_how_and_claim() {
    let mut buf = Vec::new();
    let mut c = Compound::new(&mut buf, 2);
    c.open(
        3,
        5,
        b"own",
        Some(Create::Guarded { mode: 0o644 }),
        Claim::Name("f"),
    );
    c.open(1, 5, b"own", None, Claim::Fh);
    c.write(&Stateid::ANONYMOUS, 8, Stable4::FileSync, b"xy");
    #[rustfmt::skip]
    let want = [
        0, 2, 3,
        // OPEN: seqid 0, BOTH|WANT_NO_DELEG, deny none, owner (client 5, "own"),
        // CREATE GUARDED with mode 0644 (a two-word bitmap: mode is attribute 33),
        // CLAIM_NULL "f"
        18, 0, 0x0403, 0, 0, 5, 3, 0x6f77_6e00, 1, 1, 2, 0, 0x0000_0002, 4, 0o644, 0,
        1, 0x6600_0000,
        // OPEN: READ, no create, CLAIM_FH
        18, 0, 0x0401, 0, 0, 5, 3, 0x6f77_6e00, 0, 4,
        // WRITE: anonymous stateid, offset 8, FILE_SYNC, 2 bytes
        38, 0, 0, 0, 0, 0, 8, 2, 2, 0x7879_0000,
    ];
    assert_eq!(words(&buf), want);
}

#[test]
fn captured_session_setup_decodes() {
    let ex = Reply::parse(body(ALL[0])).unwrap().exchange_id().unwrap();
    assert_ne!(ex.clientid, 0);
    let mut r = Reply::parse(body(ALL[1])).unwrap();
    let s = r.create_session().unwrap();
    assert_eq!(s.fore.slots, 4, "the depth asked for");
    assert!(
        s.fore.max_request >= 4096 && s.fore.max_ops >= 8,
        "{:?}",
        s.fore
    );
    let mut r = Reply::parse(body(ALL[2])).unwrap();
    let seq = r.sequence(Some(&s.id)).unwrap();
    assert_eq!(seq.highest_slot, 3);
    r.status_only(op::RECLAIM_COMPLETE, "RECLAIM_COMPLETE")
        .unwrap();
    // A SEQUENCE for another session is refused.
    let other = SessionId([0; 16]);
    assert!(matches!(
        Reply::parse(body(ALL[2])).unwrap().sequence(Some(&other)),
        Err(V4Error::Decode(_))
    ));
}

#[test]
fn captured_lookups_and_attributes_decode() {
    let mut r = Reply::parse(body(ALL[3])).unwrap();
    r.sequence(Some(&session())).unwrap();
    r.status_only(op::PUTROOTFH, "PUTROOTFH").unwrap();
    assert!(r.getattr().unwrap().lease_time > 0);

    let mut r = Reply::parse(body(ALL[4])).unwrap();
    r.sequence(Some(&session())).unwrap();
    r.status_only(op::PUTROOTFH, "PUTROOTFH").unwrap();
    r.status_only(op::LOOKUP, "LOOKUP").unwrap();
    assert!(!r.getfh().unwrap().as_bytes().is_empty());
    let a = r.getattr().unwrap();
    assert_eq!(a.ftype, FileType4::Directory);
    assert_ne!(a.fileid, 0);

    let mut r = after_putfh(ALL[13]);
    let a = r.getattr().unwrap();
    assert!(a.space_total > 0 && a.space_avail <= a.space_free && a.space_free <= a.space_total);
}

#[test]
fn captured_open_write_commit_read_close_decode() {
    let mut r = after_putfh(ALL[5]);
    let o = r.open().unwrap();
    assert_ne!(o.stateid, Stateid::ANONYMOUS);
    assert_eq!(o.delegation, None, "no delegation was wanted");
    r.getfh().unwrap();

    let w = after_putfh(ALL[6]).write().unwrap();
    assert_eq!((w.count, w.committed), (5, Stable4::Unstable as u32));
    let verf = after_putfh(ALL[7]).commit().unwrap();
    assert_eq!(verf, w.verf, "no restart between WRITE and COMMIT");
    let (eof, data) = after_putfh(ALL[8]).read().unwrap();
    assert_eq!((eof, data), (false, &b"hell"[..]));
    // A 4.1 server answers CLOSE with a stateid that means nothing (RFC 8881 §18.2.4).
    after_putfh(ALL[14]).close().unwrap();
}

#[test]
fn captured_directory_operations_decode() {
    let mut r = after_putfh(ALL[9]);
    r.create("CREATE").unwrap();
    r.getfh().unwrap();

    let mut r = after_putfh(ALL[11]);
    let mut names = Vec::new();
    let (_verf, eof) = r
        .readdir(|_, name, a| names.push((String::from_utf8_lossy(name).into_owned(), a.ftype)))
        .unwrap();
    assert!(eof);
    names.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        names,
        [
            ("d".to_string(), FileType4::Directory),
            ("f".to_string(), FileType4::Regular)
        ]
    );

    let got = after_putfh(ALL[12]).remove();
    assert_eq!(
        got,
        Err(V4Error::Status {
            op: "REMOVE",
            status: Nfs4Stat::NOENT
        })
    );
    assert!(Nfs4Stat::NOENT.to_string().starts_with("NFS4ERR_NOENT"));
    assert!(
        Nfs4Stat::NOTSUPP
            .to_string()
            .contains("not supported by the server")
    );
}

#[test]
fn captured_teardown_decodes() {
    let mut r = Reply::parse(body(ALL[15])).unwrap();
    r.status_only(op::DESTROY_SESSION, "DESTROY_SESSION")
        .unwrap();
    let mut r = Reply::parse(body(ALL[16])).unwrap();
    r.status_only(op::DESTROY_CLIENTID, "DESTROY_CLIENTID")
        .unwrap();
}

#[test]
fn every_captured_reply_walks_and_every_truncation_fails_cleanly() {
    for (i, record) in ALL.iter().enumerate() {
        let b = body(record);
        let n = walk(b).unwrap_or_else(|e| match e {
            V4Error::Status { .. } => 0,
            V4Error::Decode(d) => panic!("fixture {i}: {d}"),
        });
        assert!(n > 0 || i == 12, "fixture {i}");
        for cut in 0..b.len() {
            assert!(
                walk(&b[..cut]).is_err() || cut >= b.len() - 4,
                "fixture {i} cut {cut}"
            );
        }
    }
}

#[test]
fn unasked_attributes_are_refused_not_skipped() {
    // GETATTR result with bit 0 (supported_attrs, not decoded) set.
    let mut buf = Vec::new();
    for w in [0u32, 0, 1, op::GETATTR, 0, 1, 1, 4, 0] {
        buf.extend_from_slice(&w.to_be_bytes());
    }
    let mut r = Reply::parse(&buf).unwrap();
    assert!(matches!(r.getattr(), Err(V4Error::Decode(_))));
    assert_eq!(FILE_ATTRS.0[1], 1 << 1 | 1 << 3, "mode and numlinks");
}

#[test]
fn read_data_is_located_for_placing_and_only_in_a_successful_read() {
    let b = body(ALL[8]);
    let (at, n) = locate_read(b).unwrap();
    assert_eq!(&b[at..at + n], b"hell");
    // What stays in the reply ends with READ's length word.
    let (eof, count) = after_putfh(&ALL[8][..ALL[8].len() - b.len() + at])
        .read_head()
        .unwrap();
    assert_eq!((eof, count), (false, 4));
    for other in [ALL[6], ALL[7], ALL[12]] {
        assert_eq!(locate_read(body(other)), None);
    }
    // A reply still arriving is located once its READ length word is there.
    for cut in 0..b.len() {
        let want = (cut >= at).then_some((at, 4));
        assert_eq!(locate_read(&b[..cut]), want, "cut at {cut}");
    }
}
