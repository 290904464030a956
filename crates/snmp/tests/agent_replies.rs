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
