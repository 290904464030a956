//! The bodies of the cargo-fuzz targets in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through them on a stable toolchain (`tests/fuzz_corpus.rs`), and
//! the fuzz targets stay one line each. Not an API: each function panics when the property
//! it checks does not hold.

use crate::header::Header;
use crate::seal::Sealer;
use crate::{ntlm, proto, rpc};

/// Everything a server sends goes through these decoders: the SMB2 header, the chain of a
/// compounded reply, every reply body (with CREATE's lease and durable handle contexts, and
/// lease breaks), NTLMSSP's CHALLENGE, the TRANSFORM_HEADER and DCE/RPC. None may panic,
/// loop or allocate without bound; the first byte picks how the rest is cut, so the fuzzer
/// reaches decoders that read at offsets from the header's start.
pub fn replies(data: &[u8]) {
    let Some((&pick, msg)) = data.split_first() else {
        return;
    };
    let _ = Header::decode(msg);
    match pick % 15 {
        0 => drop(proto::parse_negotiate(msg)),
        1 => drop(proto::parse_session_setup(msg)),
        2 => drop(ntlm::parse_challenge(msg)),
        3 => drop(proto::parse_tree_connect(msg)),
        4 => {
            drop(proto::parse_create(msg));
            drop(proto::parse_fs_full_size(msg));
        }
        5 => drop(proto::parse_read_fixed(msg)),
        6 => drop(proto::parse_write(msg)),
        7 => {
            let mut out = Vec::new();
            if proto::parse_query_directory(msg, &mut out).is_ok() {
                assert!(out.len() <= msg.len() / 2 + 1, "more entries than bytes");
            }
        }
        8 => drop(rpc::parse_bind_ack(msg)),
        9 => {
            let mut stub = Vec::new();
            let _ = rpc::response_fragment(msg, &mut stub);
            assert!(stub.len() <= msg.len());
        }
        10 => drop(rpc::parse_share_enum(msg)),
        11 => {
            // A compounded reply: each part ends after it starts and within the message.
            let mut at = 0;
            while let Ok((_, end, last)) = crate::header::chain_part(msg, at) {
                assert!(
                    end > at && end <= msg.len(),
                    "part {at}..{end} of {}",
                    msg.len()
                );
                if last {
                    break;
                }
                at = end;
            }
        }
        13 => {
            // CREATE reply contexts (lease, durable handle): bounded walk, no panic.
            if let Ok(g) = crate::lease::parse_granted(msg) {
                assert!(g.lease.is_none_or(|(_, st)| st & !7 == 0));
            }
        }
        14 => drop(crate::lease::parse_break(msg)),
        _ => {
            let s =
                Sealer::new(proto::CIPHER_AES128_GCM, &[1; 16], &[2; 16]).expect("a 16-byte key");
            let mut m = msg.to_vec();
            if let Ok(r) = s.open(&mut m) {
                assert!(r.end <= m.len());
            }
        }
    }
}

/// `smb://` URLs: parsing never panics, and what parses displays without any password and
/// parses again to the same share.
pub fn url(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(u) = crate::SmbUrl::parse(s) {
        let shown = u.display();
        if u.password_in_url() {
            let pw = u.credentials(None).password;
            assert!(
                pw.is_empty() || !shown.contains(&format!(":{pw}@")),
                "{shown}"
            );
        }
        let a = crate::SmbUrl::parse(&shown).unwrap_or_else(|e| panic!("{shown}: {e}"));
        assert_eq!(
            (&a.host, &a.share, &a.path, &a.user),
            (&u.host, &u.share, &u.path, &u.user)
        );
    }
}
