//! Byte-level tests of the reply decoder: simple and structured replies, in every split,
//! and each malformed form a server could send.

use super::*;
use crate::fuzzing::Table;

fn simple(error: u32, cookie: u64, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&error.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(data);
    b
}

fn chunk(flags: u16, kind: u16, cookie: u64, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    b.extend_from_slice(payload);
    b
}

fn data_chunk(flags: u16, cookie: u64, at: u64, data: &[u8]) -> Vec<u8> {
    let mut p = at.to_be_bytes().to_vec();
    p.extend_from_slice(data);
    chunk(flags, REPLY_TYPE_OFFSET_DATA, cookie, &p)
}

fn table() -> Table {
    Table::new(&[
        (1, CMD_READ, 4096, 8),
        (2, CMD_WRITE, 0, 512),
        (3, CMD_FLUSH, 0, 0),
    ])
}

/// Feeds `stream` in pieces of every size from 1 up, each time into a fresh table.
fn each_split(structured: bool, stream: &[u8], check: impl Fn(&Table, Result<(), String>)) {
    for split in 1..=stream.len().max(1) {
        let mut t = table();
        let mut d = Decoder::new(structured);
        let r = stream
            .chunks(split)
            .try_for_each(|p| d.feed(p, &mut t).map(|n| assert_eq!(n, p.len())));
        check(&t, r);
        assert!(t.guards_intact());
    }
}

#[test]
fn simple_read_write_flush() {
    let mut s = simple(0, 1, b"abcdefgh");
    s.extend(simple(0, 2, &[]));
    s.extend(simple(0, 3, &[]));
    each_split(false, &s, |t, r| {
        r.unwrap();
        assert_eq!(&t.bufs[0][..8], b"abcdefgh");
        assert_eq!(t.finished, [1, 2, 3]);
    });
}

#[test]
fn simple_error_carries_no_data() {
    let mut s = simple(5, 1, &[]);
    s.extend(simple(0, 2, &[]));
    each_split(false, &s, |t, r| {
        r.unwrap();
        assert_eq!(t.errors[0], 5);
        assert_eq!(t.finished, [1, 2]);
        assert_eq!(t.bufs[0][0], 0xAA, "no data written for a failed READ");
    });
}

#[test]
fn structured_read_in_data_and_hole_chunks() {
    let mut s = data_chunk(0, 1, 4100, b"WXYZ");
    let mut hole = 4096u64.to_be_bytes().to_vec();
    hole.extend_from_slice(&4u32.to_be_bytes());
    s.extend(chunk(0, REPLY_TYPE_OFFSET_HOLE, 1, &hole));
    s.extend(chunk(REPLY_FLAG_DONE, REPLY_TYPE_NONE, 1, &[]));
    s.extend(simple(0, 2, &[]));
    each_split(true, &s, |t, r| {
        r.unwrap();
        assert_eq!(&t.bufs[0][..8], b"\0\0\0\0WXYZ");
        assert_eq!(t.finished, [1, 2]);
    });
}

#[test]
fn structured_error_chunk_fails_the_request() {
    let mut p = 5u32.to_be_bytes().to_vec();
    p.extend_from_slice(&3u16.to_be_bytes());
    p.extend_from_slice(b"bad");
    let s = chunk(REPLY_FLAG_DONE, REPLY_TYPE_ERROR, 2, &p);
    each_split(true, &s, |t, r| {
        r.unwrap();
        assert_eq!(t.errors[1], 5);
        assert_eq!(t.finished, [2]);
    });
}

fn malformed(structured: bool, stream: &[u8], says: &str) {
    each_split(structured, stream, |_, r| {
        let e = r.expect_err(says);
        assert!(e.contains(says), "{e}");
    });
}

#[test]
fn malformed_replies_are_errors() {
    malformed(false, &simple(0, 9, &[]), "not in flight");
    malformed(false, &[0xde, 0xad, 0xbe, 0xef], "reply magic 0xdeadbeef");
    malformed(false, &chunk(1, 0, 3, &[]), "not agreed");
    // A data chunk reaching past the READ, or before it.
    malformed(
        true,
        &data_chunk(1, 1, 4097, b"12345678"),
        "outside the READ",
    );
    malformed(true, &data_chunk(1, 1, 4000, b"1"), "outside the READ");
    malformed(
        true,
        &data_chunk(1, 1, u64::MAX - 2, b"1234"),
        "outside the READ",
    );
    // A READ said to be done before its data covered it.
    malformed(true, &data_chunk(1, 1, 4096, b"1234"), "short READ");
    malformed(
        true,
        &data_chunk(1, 2, 0, b"1234"),
        "data chunk in the reply to WRITE",
    );
    malformed(
        true,
        &chunk(0, REPLY_TYPE_NONE, 3, &[]),
        "without the DONE flag",
    );
    malformed(true, &chunk(1, REPLY_TYPE_NONE, 3, &[0]), "expected 0");
    malformed(true, &chunk(1, 5, 1, &[0; 8]), "not asked for");
    malformed(
        true,
        &chunk(1, REPLY_TYPE_OFFSET_HOLE, 1, &[0; 11]),
        "expected 12",
    );
    let mut zero_hole = 4096u64.to_be_bytes().to_vec();
    zero_hole.extend_from_slice(&0u32.to_be_bytes());
    malformed(
        true,
        &chunk(1, REPLY_TYPE_OFFSET_HOLE, 1, &zero_hole),
        "length 0",
    );
    let mut p = 0u32.to_be_bytes().to_vec();
    p.extend_from_slice(&0u16.to_be_bytes());
    malformed(true, &chunk(1, REPLY_TYPE_ERROR, 1, &p), "error number 0");
    let mut p = 5u32.to_be_bytes().to_vec();
    p.extend_from_slice(&10u16.to_be_bytes());
    malformed(true, &chunk(1, REPLY_TYPE_ERROR, 1, &p), "10-byte message");
    malformed(
        true,
        &chunk(1, REPLY_TYPE_ERROR, 1, &vec![1; 6000]),
        "error chunk of 6000",
    );
}

#[test]
fn a_request_completes_once() {
    let mut s = simple(0, 2, &[]);
    s.extend(simple(0, 2, &[]));
    malformed(false, &s, "not in flight");
}

#[test]
fn direct_reads_land_in_place() {
    let mut t = table();
    let mut d = Decoder::new(false);
    let s = simple(0, 1, &[]);
    d.feed(&s, &mut t).unwrap();
    let (dst, left) = d.direct().unwrap();
    assert_eq!(left, 8);
    // SAFETY: the decoder points into the table's 8-byte buffer.
    unsafe { std::ptr::copy_nonoverlapping(b"12345678".as_ptr(), dst, 8) };
    d.advance_direct(8, &mut t).unwrap();
    assert!(d.idle() && d.direct().is_none());
    assert_eq!(t.finished, [1]);
    assert_eq!(&t.bufs[0][..8], b"12345678");
}
