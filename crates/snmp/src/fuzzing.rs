//! The body of the cargo-fuzz targets in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through them on a stable toolchain (`tests/fuzz_corpus.rs`).
//! Not an API: it panics when the property it checks does not hold.

use crate::ber;
use crate::message;
use crate::url::SnmpUrl;

/// Any bytes as an agent's reply: decoded or one error line, never a panic; a decoded
/// reply's names encode and decode back to themselves.
pub fn replies(data: &[u8]) {
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
