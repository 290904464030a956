use super::*;
use crate::xdr::Enc;
use proptest::prelude::*;

fn fattr_bytes(e: &mut Enc<'_>, ftype: u32, size: u64) {
    e.u32(ftype)
        .u32(0o644)
        .u32(1)
        .u32(0)
        .u32(0)
        .u64(size)
        .u64(size)
        .u32(0)
        .u32(0)
        .u64(1)
        .u64(77);
    for _ in 0..6 {
        e.u32(0);
    }
}

#[test]
fn fattr3_is_84_bytes() {
    let mut b = Vec::new();
    fattr_bytes(&mut Enc::new(&mut b), 1, 5);
    assert_eq!(b.len(), 84);
}

#[test]
fn read_reply_points_at_the_data() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0).bool(true);
    fattr_bytes(&mut e, 1, 4096);
    e.u32(3).bool(true).opaque(b"xyz");
    let (count, eof, at) = res_read(&b).unwrap().unwrap();
    assert_eq!((count, eof, &b[at..at + 3]), (3, true, &b"xyz"[..]));
}

#[test]
fn read_reply_with_lying_count_is_refused() {
    let mut b = Vec::new();
    Enc::new(&mut b)
        .u32(0)
        .bool(false)
        .u32(10)
        .bool(false)
        .opaque(b"xyz");
    assert!(res_read(&b).is_err());
}

#[test]
fn failure_statuses_come_through() {
    let mut b = Vec::new();
    Enc::new(&mut b).u32(70).bool(false);
    assert_eq!(res_read(&b).unwrap(), Err(NfsStat::STALE));
    let mut w = Vec::new();
    Enc::new(&mut w).u32(28).bool(false).bool(false);
    assert_eq!(res_write(&w).unwrap(), Err(NfsStat(28)));
    assert_eq!(
        NfsStat(28).to_string(),
        "NFS3ERR_NOSPC (no space left on the server)"
    );
    assert_eq!(NfsStat::STALE.errno(), 70);
    assert_eq!(NfsStat(10004).errno(), 95);
}

#[test]
fn write_reply_and_verifier() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0)
        .bool(true)
        .u64(0)
        .u64(0)
        .u64(0)
        .bool(false)
        .u32(4096)
        .u32(0)
        .fixed(&[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(
        res_write(&b).unwrap().unwrap(),
        (4096, 0, [1, 2, 3, 4, 5, 6, 7, 8])
    );
}

#[test]
fn write_args_layout() {
    let fh = Fh::new(&[0xaa; 8]).unwrap();
    let mut b = Vec::new();
    args_write(&mut b, &fh, 1 << 33, Stable::FileSync, b"hello");
    let mut d = Dec::new(&b);
    assert_eq!(d.opaque(64, "fh").unwrap(), &[0xaa; 8]);
    assert_eq!(
        (d.u64().unwrap(), d.u32().unwrap(), d.u32().unwrap()),
        (1 << 33, 5, 2)
    );
    assert_eq!(d.opaque(8, "data").unwrap(), b"hello");
    assert_eq!(d.remaining(), 0);
}

#[test]
fn readdirplus_page() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0).bool(false).fixed(&[9; 8]);
    for (i, name) in ["a", "bb"].iter().enumerate() {
        e.bool(true)
            .u64(i as u64)
            .string(name)
            .u64(100 + i as u64)
            .bool(false)
            .bool(true)
            .opaque(&[1, 2]);
    }
    e.bool(false).bool(true);
    let page = res_readdirplus(&b).unwrap().unwrap();
    assert_eq!(page.entries, vec![("a".into(), 100), ("bb".into(), 101)]);
    assert!(page.eof);
    assert_eq!(page.verf, [9; 8]);
}

/// Names come straight from the reply, and only once the whole page has decoded: a page
/// cut short hands out none.
#[test]
fn readdirplus_entries_in_place_only_from_a_whole_page() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0).bool(false).fixed(&[7; 8]);
    for (i, name) in [".", "x", "yy"].iter().enumerate() {
        e.bool(true)
            .u64(i as u64)
            .string(name)
            .u64(10 + i as u64)
            .bool(false)
            .bool(false);
    }
    e.bool(false).bool(false);
    let mut seen = Vec::new();
    let end = res_readdirplus_each(&b, &mut |n, c| seen.push((n.to_vec(), c)))
        .unwrap()
        .unwrap();
    assert_eq!(
        seen,
        [
            (b".".to_vec(), 10),
            (b"x".to_vec(), 11),
            (b"yy".to_vec(), 12)
        ]
    );
    assert_eq!((end.verf, end.eof, end.entries), ([7; 8], false, 3));
    let mut called = false;
    let cut = res_readdirplus_each(&b[..b.len() - 4], &mut |_, _| called = true);
    assert!(
        cut.is_err() && !called,
        "a truncated page hands out no names"
    );
}

#[test]
fn link_args_layout() {
    let (file, dir) = (Fh::new(&[0x11; 12]).unwrap(), Fh::new(&[0x22; 8]).unwrap());
    let mut b = Vec::new();
    args_link(&mut b, &file, &dir, "abcde");
    let mut d = Dec::new(&b);
    assert_eq!(d.opaque(64, "file").unwrap(), &[0x11; 12]);
    assert_eq!(d.opaque(64, "dir").unwrap(), &[0x22; 8]);
    assert_eq!(d.opaque(255, "name").unwrap(), b"abcde");
    assert_eq!(
        d.remaining(),
        0,
        "the name is padded to 4 bytes, nothing follows"
    );
    assert_eq!(b.len(), 4 + 12 + 4 + 8 + 4 + 8);
}

#[test]
fn symlink_args_layout() {
    let dir = Fh::new(&[0x33; 8]).unwrap();
    let mut b = Vec::new();
    args_symlink(&mut b, &dir, "ln", 0o777, "../target");
    let mut d = Dec::new(&b);
    assert_eq!(d.opaque(64, "dir").unwrap(), &[0x33; 8]);
    assert_eq!(d.opaque(255, "name").unwrap(), b"ln");
    // sattr3: mode set, uid, gid and size not, atime and mtime DONT_CHANGE.
    let sattr: Vec<u32> = (0..7).map(|_| d.u32().unwrap()).collect();
    assert_eq!(sattr, [1, 0o777, 0, 0, 0, 0, 0]);
    assert_eq!(d.opaque(4096, "path").unwrap(), b"../target");
    assert_eq!(d.remaining(), 0);
}

#[test]
fn link_reply_with_and_without_attributes() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0).bool(true);
    fattr_bytes(&mut e, 1, 0);
    e.bool(false).bool(false); // wcc_data: no before, no after
    // fattr_bytes says nlink 1; make it 2, as after a LINK.
    b[4 + 4 + 8..4 + 4 + 12].copy_from_slice(&2u32.to_be_bytes());
    let attr = res_link(&b).unwrap().unwrap().unwrap();
    assert_eq!((attr.ftype, attr.nlink, attr.fileid), (1, 2, 77));

    let mut none = Vec::new();
    Enc::new(&mut none)
        .u32(0)
        .bool(false)
        .bool(false)
        .bool(false);
    assert_eq!(res_link(&none).unwrap(), Ok(None));
}

#[test]
fn link_and_symlink_failures_give_the_status() {
    let mut b = Vec::new();
    Enc::new(&mut b).u32(17).bool(false).bool(false).bool(false);
    assert_eq!(res_link(&b).unwrap(), Err(NfsStat::EXIST));
    // A status alone is enough to report it.
    assert_eq!(res_link(&b[..4]).unwrap(), Err(NfsStat::EXIST));
    let mut s = Vec::new();
    Enc::new(&mut s).u32(10004).bool(false).bool(false);
    assert_eq!(res_create(&s).unwrap(), Err(NfsStat::NOTSUPP));
}

#[test]
fn symlink_reply_handle_and_type() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0).bool(true).opaque(&[5; 16]).bool(true);
    fattr_bytes(&mut e, 5, 9);
    e.bool(false).bool(false);
    let (fh, attr) = res_create(&b).unwrap().unwrap();
    assert_eq!(fh.unwrap().as_bytes(), &[5; 16]);
    assert!(attr.unwrap().is_symlink());
}

#[test]
fn short_link_and_symlink_replies_are_errors() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0).bool(true);
    fattr_bytes(&mut e, 1, 0);
    e.bool(true).u64(0).u64(0).u64(0).bool(false);
    assert!(res_link(&b).unwrap().is_ok());
    for cut in 0..b.len() {
        assert!(res_link(&b[..cut]).is_err(), "LINK reply cut at {cut}");
    }
    let mut s = Vec::new();
    let mut e = Enc::new(&mut s);
    e.u32(0)
        .bool(true)
        .opaque(&[5; 16])
        .bool(false)
        .bool(false)
        .bool(false);
    assert!(res_create(&s).unwrap().is_ok());
    for cut in 0..s.len() {
        assert!(res_create(&s[..cut]).is_err(), "SYMLINK reply cut at {cut}");
    }
    // A handle longer than NFSv3 allows is refused, not truncated.
    let mut long = Vec::new();
    Enc::new(&mut long).u32(0).bool(true).opaque(&[0; 65]);
    assert!(res_create(&long).is_err());
}

#[test]
fn readlink_reply_points_at_the_text() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.u32(0).bool(true);
    fattr_bytes(&mut e, 5, 8);
    e.string("../first");
    let (start, len) = res_readlink(&b).unwrap().unwrap();
    assert_eq!(&b[start..start + len], b"../first");
    let mut fail = Vec::new();
    Enc::new(&mut fail).u32(22).bool(false);
    assert_eq!(res_readlink(&fail).unwrap(), Err(NfsStat(22)));
    let mut short = Vec::new();
    Enc::new(&mut short).u32(0).bool(false).u32(9).fixed(b"abc");
    assert!(
        res_readlink(&short).is_err(),
        "text shorter than its length"
    );
    for cut in 0..b.len() {
        assert!(
            res_readlink(&b[..cut]).is_err(),
            "READLINK reply cut at {cut}"
        );
    }
}

#[test]
fn export_list() {
    let mut b = Vec::new();
    let mut e = Enc::new(&mut b);
    e.bool(true)
        .string("/export")
        .bool(true)
        .string("*")
        .bool(false);
    e.bool(true).string("/other").bool(false).bool(false);
    assert_eq!(
        res_export(&b).unwrap(),
        vec!["/export".to_string(), "/other".to_string()]
    );
}

#[test]
fn oversized_handle_is_refused() {
    let mut b = Vec::new();
    Enc::new(&mut b).u32(0).opaque(&[0; 65]);
    assert!(res_mnt(&b).is_err());
}

proptest! {
    /// No decoder panics on any input.
    #[test]
    fn decoders_never_panic(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = res_read(&data);
        let _ = res_write(&data);
        let _ = res_commit(&data);
        let _ = res_getattr(&data);
        let _ = res_lookup(&data);
        let _ = res_create(&data);
        let _ = res_wcc(&data);
        let _ = res_link(&data);
        let _ = res_readlink(&data);
        let _ = res_readdirplus(&data);
        let _ = res_fsinfo(&data);
        let _ = res_fsstat(&data);
        let _ = res_mnt(&data);
        let _ = res_export(&data);
        let _ = crate::rpc::parse_reply(&data);
    }

    /// Decoders survive every truncation of a valid reply.
    #[test]
    fn truncated_replies_are_errors(cut in 0usize..120) {
        let mut b = Vec::new();
        let mut e = Enc::new(&mut b);
        e.u32(0).bool(true);
        fattr_bytes(&mut e, 1, 4096);
        e.u32(3).bool(true).opaque(b"xyz");
        // Everything up to the last data byte is needed (trailing padding may be absent).
        let cut = cut.min(b.len() - 2);
        prop_assert!(res_read(&b[..cut]).is_err());
    }
}
