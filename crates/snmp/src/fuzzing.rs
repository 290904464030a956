//! The body of the cargo-fuzz targets in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through them on a stable toolchain (`tests/fuzz_corpus.rs`).
//! Not an API: it panics when the property it checks does not hold.

use crate::ber;
use crate::message;
use crate::url::SnmpUrl;
use crate::usm::{Auth, Privacy};
use crate::v3::{Credentials, Session};
use crate::v3msg;

/// Any bytes as an agent's reply: decoded or one error line, never a panic; a decoded
/// reply's names encode and decode back to themselves. The same bytes are also read as an
/// SNMPv3 reply, in clear and by a session with authentication and privacy keys (checked,
/// decrypted, reported): one error line or a reply, and a v3 header's code is found where
/// the bytes hold it.
pub fn replies(data: &[u8]) {
    v3_reply(data);
    match message::decode_v2c(data) {
        Ok(r) => {
            for (oid, _) in &r.bindings {
                let mut out = Vec::new();
                ber::put_oid(&mut out, oid);
                let mut rd = ber::Reader::new(&out);
                let body = rd.expect(ber::OID, "oid").expect("own encoding reads back");
                assert_eq!(&ber::oid(body).expect("own encoding decodes"), oid);
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}

/// Any text as an `snmp://` URL: parses to a value whose display parses back to the same
/// host and port, or is one error line.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match SnmpUrl::parse(text) {
        Ok(u) => {
            let again = SnmpUrl::parse(&u.to_string()).expect("display parses back");
            assert_eq!((again.host, again.port), (u.host, u.port));
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}

fn v3_reply(data: &[u8]) {
    let one_line = |e: crate::Error| assert!(!e.to_string().contains('\n'), "{e}");
    match v3msg::decode(data) {
        Ok(m) => {
            assert_eq!(&data[m.auth_at..m.auth_at + m.sec.auth.len()], m.sec.auth);
            if let Err(e) = v3msg::decode_scoped(m.data) {
                one_line(e);
            }
        }
        Err(e) => one_line(e),
    }
    for (auth, privacy) in [(Auth::Sha1, true), (Auth::Md5, false)] {
        let cred = Credentials {
            user: b"fuzz".to_vec(),
            auth: Some((auth, b"fuzz-password".to_vec())),
            privacy: privacy.then(|| (Privacy::Aes128, b"fuzz-password".to_vec())),
        };
        let keys = (vec![7u8; 20], vec![9u8; 20]);
        let mut s = Session::keyed(cred, b"fuzz-engine", keys);
        // msgID 1 is the one the corpus' captured replies answer.
        if let Err(e) = s.decode(1, data) {
            one_line(e);
        }
    }
}
