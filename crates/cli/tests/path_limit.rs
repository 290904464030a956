//! The path rule against a real server behind a slow port: tgtd in a network namespace
//! whose own egress is shaped (tbf), reached over a veth whose host end is unshaped
//! (10000 Mbit/s), as a NAS with a 1 Gbit/s port is reached from a client with a faster
//! NIC. A steady read at 1 Gbit/s Ethernet's payload ceiling is named as a 1 Gbit/s link on
//! the path; the same set-up shaped to a rate no standard link has is not.

mod common;

use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use storbench_testkit::netns::{self, NetNs};
use storbench_testkit::tgtd;

const IQN: &str = "iqn.2026-12.lab.storbench:path";

/// What one read over the link showed.
struct Seen {
    /// Notes with code `limit.path-link`.
    notes: Vec<String>,
    /// The environment's record of the target (interface, link speed).
    target: serde_json::Value,
    /// The job's rate in MB/s over each of its seconds.
    seconds: Vec<f64>,
    /// All notes, for failure messages.
    all: serde_json::Value,
}

/// tgtd serving a 256 MiB LUN from namespace `ns`; its URL.
fn serve(ns: &NetNs, dir: &Path) -> (tgtd::Tgtd, String) {
    let backing = dir.join("lun.img");
    tgtd::sparse_file(&backing, 256 << 20).unwrap();
    let addr = ns.ns_addr.to_string();
    let port = tgtd::free_port().unwrap();
    let mut tgtd = tgtd::Tgtd::start_at(&addr, port, Some(&ns.name)).expect("tgtd in the ns");
    tgtd.add_target(1, IQN).unwrap();
    tgtd.add_lun(1, 1, &backing).unwrap();
    (tgtd, format!("iscsi://{addr}:{port}/{IQN}/1"))
}

/// Reads 1 MiB blocks at QD8 for 4 s from `url`, saving into a database of its own in `dir`.
fn read_over(url: &str, dir: &Path) -> Seen {
    let db = dir.join(format!("results-{}.db", std::process::id()));
    let _ = std::fs::remove_file(&db);
    Command::cargo_bin("storbench")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args([
            "fio",
            "--name=seq",
            "--ioengine=libiscsi",
            "--rw=read",
            "--bs=1M",
            "--iodepth=8",
            "--size=256M",
            "--time_based",
            "--runtime=4",
            "--output-format=terse",
        ])
        .arg(format!("--filename={url}"))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    let raw = Command::cargo_bin("storbench")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["show", "1", "-f", "raw"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let raw: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    let notes = raw["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == "limit.path-link")
        .filter_map(|n| n["message"].as_str().map(String::from))
        .collect();
    let seconds = raw["groups"][0]["jobs"][0]["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bytes"][0].as_f64().unwrap() / 1e6)
        .collect();
    Seen {
        notes,
        target: raw["environment"]["targets"][0].clone(),
        seconds,
        all: raw["notes"].clone(),
    }
}

fn namespace_shaped(rate: &str) -> Option<NetNs> {
    if let Some(why) = netns::unavailable().or_else(tgtd::unavailable) {
        eprintln!("skipped: {why}");
        return None;
    }
    let ns = NetNs::create().expect("a network namespace");
    ns.shape_egress(rate).expect("tbf on the namespace's end");
    ns.verify_route().expect("peer reached over our veth only");
    Some(ns)
}

#[test]
fn a_server_behind_a_1_gbit_port_is_named_as_a_1_gbit_link_on_the_path() {
    let Some(ns) = namespace_shaped("984mbit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_tgtd, url) = serve(&ns, dir.path());
    // On a machine busy with other work the client may not keep the link full (its rate
    // then sits below the ceiling and must not be named): a few tries for one that does.
    let mut tries = Vec::new();
    for _ in 0..3 {
        let seen = read_over(&url, dir.path());
        // The client's end is an unshaped veth: faster than the link the data crossed.
        assert!(
            seen.target["link_speed_mbps"].as_u64() > Some(1000),
            "{}",
            seen.target
        );
        let full = &seen.seconds[1..seen.seconds.len() - 1];
        let at_ceiling = full.iter().all(|mb| (114.0..=118.5).contains(mb));
        if !at_ceiling {
            // Seconds off the ceiling may still average onto it within their scatter; a
            // note then names this link and no other.
            assert!(
                seen.notes.iter().all(|n| n.contains("1 Gbit/s Ethernet")),
                "{:?} {:?}",
                seen.seconds,
                seen.notes
            );
            tries.push(format!("{:?} {}", seen.seconds, seen.all));
            continue;
        }
        assert_eq!(seen.notes.len(), 1, "{:?} {}", seen.seconds, seen.all);
        let note = &seen.notes[0];
        assert!(
            note.starts_with("seq: 11")
                && note.contains("of 1 Gbit/s Ethernet's payload ceiling (117.7 MB/s at MTU 1500)")
                && note.contains("a 1 Gbit/s link on the path"),
            "{note}"
        );
        return;
    }
    panic!(
        "the client never kept the 1 Gbit/s link full:\n{}",
        tries.join("\n")
    );
}

#[test]
fn a_steady_rate_no_standard_link_has_is_not_named() {
    // 1600 Mbit/s of frames carry about 190 MB/s of payload: between 1 and 2.5 Gbit/s.
    let Some(ns) = namespace_shaped("1600mbit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_tgtd, url) = serve(&ns, dir.path());
    let seen = read_over(&url, dir.path());
    assert!(seen.notes.is_empty(), "{:?} {:?}", seen.seconds, seen.notes);
}
