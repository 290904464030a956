//! The initiator against tgtd inside a network namespace, over a real veth link shaped to
//! 1 Gbit/s: the path the 1 GbE bench uses. Probe-gated: skips without root or iproute2.

use std::time::Duration;

use storbench_iscsi::{Config, Dir, Session, Url};
use storbench_testkit::netns;
use storbench_testkit::tgtd::{self, Tgtd};

const IQN: &str = "iqn.2026-11.lab.storbench:remote";

#[test]
fn reads_and_writes_over_a_shaped_veth() {
    if let Some(why) = tgtd::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let Some(ns) = netns::shaped("1gbit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("remote.img");
    tgtd::sparse_file(&backing, 16 << 20).unwrap();
    let addr = ns.ns_addr.to_string();
    let mut tgtd = Tgtd::start_at(&addr, 3260, Some(&ns.name)).expect("tgtd in the namespace");
    tgtd.add_target(1, IQN).unwrap();
    tgtd.add_lun(1, 1, &backing).unwrap();

    let url = Url::parse(&format!("iscsi://{addr}/{IQN}/1")).unwrap();
    let mut s = Session::connect(Config::new(url)).expect("login over the veth");
    assert_eq!(
        s.local_addr().unwrap().ip(),
        std::net::IpAddr::V4(ns.host_addr)
    );
    let mut data = vec![0u8; 1 << 20];
    for (i, b) in data.iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    let cdb = s.rw_cdb(true, 0, (data.len() / 512) as u32).unwrap();
    s.command(cdb, Dir::Write, &mut data.clone())
        .expect("1 MiB write");
    let mut back = vec![0u8; data.len()];
    let cdb = s.rw_cdb(false, 0, (data.len() / 512) as u32).unwrap();
    assert_eq!(
        s.command(cdb, Dir::Read, &mut back).unwrap() as usize,
        data.len()
    );
    assert!(back == data, "data read over the veth differs");
    s.logout().unwrap();
    assert!(
        tgtd.wait_no_nexus(1, Duration::from_secs(5))
            .unwrap()
            .is_empty()
    );
}
