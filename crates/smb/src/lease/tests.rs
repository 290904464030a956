use super::*;
use crate::error::SmbError;

/// A CREATE reply (header, fixed body, `contexts`), as a server sends it.
fn create_reply(contexts: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8; HEADER_LEN];
    let mut b = vec![0u8; 88];
    b[0..2].copy_from_slice(&89u16.to_le_bytes());
    b[2] = OPLOCK_LEVEL_LEASE;
    if !contexts.is_empty() {
        let off = (HEADER_LEN + 88) as u32;
        b[80..84].copy_from_slice(&off.to_le_bytes());
        b[84..88].copy_from_slice(&(contexts.len() as u32).to_le_bytes());
    }
    m.extend_from_slice(&b);
    m.extend_from_slice(contexts);
    m
}

fn granted_chain(lease_len: usize, durable_len: usize) -> Vec<u8> {
    let mut lease = vec![0u8; lease_len];
    lease[..16].copy_from_slice(&[7; 16]);
    lease[16..20].copy_from_slice(&(READ | HANDLE).to_le_bytes());
    let mut c = Vec::new();
    put_context(&mut c, b"MxAc", &[0; 8], false);
    put_context(&mut c, b"RqLs", &lease, false);
    put_context(&mut c, b"DH2Q", &vec![0; durable_len], true);
    c
}

#[test]
fn a_granted_lease_and_durable_handle_are_read_and_unknown_contexts_skipped() {
    let g = parse_granted(&create_reply(&granted_chain(52, 8))).unwrap();
    assert_eq!(g.oplock_level, OPLOCK_LEVEL_LEASE);
    assert_eq!(g.lease, Some(([7; 16], READ | HANDLE)));
    assert!(g.durable);
    let none = parse_granted(&create_reply(&[])).unwrap();
    assert_eq!((none.lease, none.durable), (None, false));
}

#[test]
fn request_contexts_are_chained_8_aligned_with_the_names_servers_look_for() {
    for (v2, names, lease_len) in [
        (true, [b"RqLs", b"DH2Q"], 52),
        (false, [b"RqLs", b"DHnQ"], 32),
    ] {
        let c = request_contexts(&[1; 16], &[2; 16], v2);
        let next = u32::from_le_bytes(c[0..4].try_into().unwrap()) as usize;
        assert_eq!(next, (24 + lease_len as usize).next_multiple_of(8));
        assert_eq!(&c[16..20], names[0]);
        assert_eq!(&c[next + 16..next + 20], names[1]);
        assert_eq!(
            u32::from_le_bytes(c[next..next + 4].try_into().unwrap()),
            0,
            "last"
        );
        let d = Durable {
            file: FileId([3; 16]),
            lease_key: [1; 16],
            create_guid: [2; 16],
            v2,
        };
        let r = reclaim_contexts(&d);
        let want: &[u8; 4] = if v2 { b"DH2C" } else { b"DHnC" };
        assert_eq!(&r[next + 16..next + 20], want);
        assert_eq!(&r[next + 24..next + 40], &[3; 16], "the FileId comes first");
    }
}

/// Malformed lease and durable contexts: a decode error that reads as one line.
#[test]
fn malformed_lease_or_durable_contexts_are_one_line_errors() {
    let mut bad_next = granted_chain(52, 8);
    bad_next[0..4].copy_from_slice(&4096u32.to_le_bytes());
    let mut bad_name = granted_chain(52, 8);
    bad_name[4..6].copy_from_slice(&60000u16.to_le_bytes());
    let mut bad_state = granted_chain(52, 8);
    bad_state[32 + 24 + 16..32 + 24 + 20].copy_from_slice(&0x80u32.to_le_bytes());
    let cases = [
        (granted_chain(20, 8), "lease context length value 20"),
        (
            granted_chain(52, 3),
            "durable handle context length value 3",
        ),
        (bad_next, "create context Next value 4096"),
        (bad_name, "truncated"),
        (bad_state, "lease state value 128"),
    ];
    for (ctx, want) in cases {
        let e = parse_granted(&create_reply(&ctx)).unwrap_err();
        let line = SmbError::Garbage {
            server: "127.0.0.1:445".into(),
            op: "CREATE",
            detail: e,
        }
        .to_string();
        assert!(line.contains(want), "{line}");
        assert!(
            line.starts_with("127.0.0.1:445: malformed reply to CREATE: "),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }
    // Contexts that point outside the reply.
    let mut m = create_reply(&granted_chain(52, 8));
    m[HEADER_LEN + 84..HEADER_LEN + 88].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(parse_granted(&m).is_err());
}

#[test]
fn a_lease_break_is_read_and_acknowledged_with_the_state_offered() {
    let mut m = vec![0u8; HEADER_LEN];
    m.extend_from_slice(&44u16.to_le_bytes());
    m.extend_from_slice(&1u16.to_le_bytes()); // NewEpoch
    m.extend_from_slice(&1u32.to_le_bytes()); // ack required
    m.extend_from_slice(&[9; 16]);
    m.extend_from_slice(&(READ | HANDLE).to_le_bytes());
    m.extend_from_slice(&READ.to_le_bytes());
    m.extend_from_slice(&[0; 12]);
    let b = parse_break(&m).unwrap().unwrap();
    assert_eq!((b.key, b.new_state, b.ack_required), ([9; 16], READ, true));
    let ack = break_ack_body(&b.key, b.new_state);
    assert_eq!(ack.len(), 36);
    assert_eq!(&ack[8..24], &[9; 16]);
    assert_eq!(u32::from_le_bytes(ack[24..28].try_into().unwrap()), READ);
    // An oplock break (never asked for) is ignored; a short one is an error.
    let mut oplock = vec![0u8; HEADER_LEN];
    oplock.extend_from_slice(&24u16.to_le_bytes());
    assert_eq!(parse_break(&oplock).unwrap(), None);
    assert!(parse_break(&m[..HEADER_LEN + 10]).is_err());
}
