//! Replies of Debian's net-snmp 5.9.3 snmpd, captured once and kept as fuzz seeds, decode
//! to what the agent said.

use storbench_snmp::message::decode_v2c;
use storbench_snmp::{Oid, Value};

fn seed(name: &str) -> Vec<u8> {
    let path = format!("{}/fuzz/corpus/replies/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_captured_reply_decodes() {
    let mut disk_names = Vec::new();
    let device = Oid::parse("1.3.6.1.4.1.2021.13.15.1.1.2").unwrap();
    let mut ids = Vec::new();
    for name in [
        "0405da0ba390b7a44b55bab64e9c1b8c13796270",
        "146fef5bc94f8839b7883d817c57a5cca3210f41",
        "2567f94eccf0b1dd76fccae03ca4cfa69b6cea53",
        "351f75be3ddb9e632c22f1f04efd3eb6a0162653",
        "849a02ffe44173b3a142e278b7e1d9089c2ced3a",
    ] {
        let r = decode_v2c(&seed(name)).unwrap();
        ids.push(r.request_id);
        for (oid, v) in &r.bindings {
            if oid.starts_with(&device) {
                disk_names.push(v.as_text().unwrap());
            }
            if r.request_id == 1 && oid == &Oid::parse("1.3.6.1.4.1.2021.11.99.0").unwrap() {
                assert_eq!(*v, Value::Missing);
            }
        }
    }
    ids.sort();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
    assert!(!disk_names.is_empty());
}

/// The v3 seeds, captured from snmpd by `discovery_then_an_encrypted_response_message_by_message`
/// (tests/agent_v3.rs): its discovery Report, in clear with its engine ID, boots and time,
/// and its authenticated, encrypted Response.
#[test]
fn captured_v3_replies_decode() {
    use storbench_snmp::v3msg::{self, FLAG_AUTH, FLAG_PRIV, Reply};
    let report = seed("1faea6c560f8de436ddbc06d390efee523080125");
    let m = v3msg::decode(&report).unwrap();
    assert_eq!((m.msg_id, m.flags), (1, 0));
    assert!(!m.sec.engine_id.is_empty() && m.sec.boots >= 1, "{m:?}");
    let Reply::Report(r) = v3msg::decode_scoped(m.data).unwrap() else {
        panic!("not a Report");
    };
    // usmStatsUnknownEngineIDs.0
    assert_eq!(
        r.bindings[0].0,
        Oid::parse("1.3.6.1.6.3.15.1.1.4.0").unwrap()
    );
    let reply = seed("e5e0347b00902dd1bd028123867c438b1465a628");
    let m = v3msg::decode(&reply).unwrap();
    assert_eq!((m.msg_id, m.flags), (2, FLAG_AUTH | FLAG_PRIV));
    assert_eq!(
        (m.sec.user, m.sec.auth.len(), m.sec.privacy.len()),
        (&b"sbsha"[..], 12, 8)
    );
    assert_eq!(&reply[m.auth_at..m.auth_at + 12], m.sec.auth);
}
