//! Many clients, one NAS, on real links (docs/multihost.md): each rank runs in a network
//! namespace of its own behind a shaped veth to a "switch" namespace, whose one shaped
//! uplink leads to ganesha on the host (the NAS). Open MPI launches one daemon per
//! namespace through an rsh agent that is `ip netns exec`, so each rank is a host with its
//! own address and link. The aggregate must follow the narrower of the uplink and the sum
//! of the clients' links, and the verdict must name which one, with the figures.

#![cfg(feature = "mpi")]

mod common;

use std::path::Path;
use std::time::Duration;

use common::mpi::{Launched, mpirun_with, no_mpirun};
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::netns::{self, NetNs};
use storbench_testkit::require;

const RANKS: usize = 3;
/// Each client's link, Mbit/s: low enough that three of them and the NAS stay far from
/// the CPU limits of a small shared test machine.
const CLIENT_MBIT: u64 = 40;

/// The switch (with its uplink to the host) and the clients behind it; dropping it removes
/// every namespace, link and the host's routes through the uplink.
struct Lan {
    clients: Vec<NetNs>,
    switch: NetNs,
}

fn lan(uplink_mbit: u64) -> Option<Lan> {
    if let Some(why) = netns::unavailable().or_else(ganesha::unavailable) {
        eprintln!("skipped: {why}");
        return None;
    }
    let switch = NetNs::create().expect("switch namespace");
    switch
        .shape(&format!("{uplink_mbit}mbit"))
        .expect("uplink tbf");
    switch
        .exec_ok(&["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        .expect("the switch forwards");
    let mut clients = Vec::new();
    for _ in 0..RANKS {
        let c = NetNs::create_behind(&switch).expect("client namespace");
        c.shape(&format!("{CLIENT_MBIT}mbit")).expect("client tbf");
        let via = c.host_addr.to_string();
        c.exec_ok(&["ip", "route", "add", "default", "via", &via])
            .expect("client route to the switch");
        // The host's way back to the client: through the uplink only (removed with it).
        let dest = format!("{}/32", c.ns_addr);
        let sw = switch.ns_addr.to_string();
        ip(&["route", "add", &dest, "via", &sw, "dev", &switch.host_if]);
        clients.push(c);
    }
    Some(Lan { clients, switch })
}

fn ip(args: &[&str]) {
    let out = std::process::Command::new("ip")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "ip {args:?}: {out:?}");
}

/// An rsh agent for Open MPI that starts the daemon for "host" ADDR inside the namespace
/// holding ADDR, with a temporary directory of that host's own.
///
/// The "hosts" share this machine's /tmp, where real ones each have their own. Every daemon
/// makes its session directory below `/tmp/ompi.HOSTNAME.UID/jf.JOB` (the hostname is the
/// same for all of them here), and Open MPI 4.1 fails a daemon whose `mkdir` of that shared
/// parent loses the race to another's ("File exists", exit 213): the run ended in under a
/// second, about one time in ten. `orte_tmpdir_base` per host takes the sharing away.
fn agent(dir: &Path, lan: &Lan) -> String {
    let cases: String = lan
        .clients
        .iter()
        .map(|c| {
            let tmp = dir.join(format!("tmp-{}", c.name));
            std::fs::create_dir_all(&tmp).unwrap();
            format!("  {}) ns={}; tmp={} ;;\n", c.ns_addr, c.name, tmp.display())
        })
        .collect();
    let script = format!(
        "#!/bin/sh\n# called as: agent [options] HOST COMMAND...\n\
         while [ \"${{1#-}}\" != \"$1\" ]; do shift; done\nh=$1; shift\n\
         case $h in\n{cases}  *) echo \"no namespace for $h\" >&2; exit 1 ;;\nesac\n\
         exec ip netns exec \"$ns\" env OMPI_MCA_orte_tmpdir_base=\"$tmp\" sh -c \"$*\"\n"
    );
    let path = dir.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .unwrap();
    path.display().to_string()
}

/// Runs storbench with `args` on three ranks, one per client namespace, each its own
/// host; `dir` holds the launch agent.
fn launch(lan: &Lan, dir: &Path, args: &[String]) -> common::Run {
    let hosts: Vec<String> = lan.clients.iter().map(|c| c.ns_addr.to_string()).collect();
    let rank_ifs: Vec<&str> = lan.clients.iter().map(|c| c.ns_if.as_str()).collect();
    // The daemons reach mpirun over the uplink; the ranks each other through the switch
    // (each namespace has one address in testkit's 10.251.0.0/16, a list of interface
    // names would name interfaces the others do not have).
    let oob = format!("{},{}", lan.switch.host_if, rank_ifs.join(","));
    let launch: Vec<String> = [
        "--host",
        &hosts.join(","),
        "--mca",
        "plm_rsh_agent",
        &agent(dir, lan),
        "--mca",
        "oob_tcp_if_include",
        &oob,
        "--mca",
        "btl_tcp_if_include",
        "10.251.0.0/16",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut c = mpirun_with(RANKS as u32, &launch);
    c.env("STORBENCH_MPI_TIMEOUT", "60").args(args);
    Launched::spawn(&mut c).wait(Duration::from_secs(120)).0
}

/// Runs three ranks writing to the NAS for a few seconds; returns fio JSON's storbench part.
fn run_on(lan: &Lan, nas: &Ganesha) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = [
        "fio",
        "--name=w",
        "--rw=write",
        "--bs=256k",
        "--iodepth=4",
        "--size=256m",
        "--time_based",
        "--runtime=6",
        &format!("--directory={}", nas.url("")),
        "--unlink=1",
        "--no-save",
        "--output-format=json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = launch(lan, dir.path(), &args);
    assert_eq!(run.code, Some(0), "{run:?}");
    let left = common::entries(&nas.export_dir());
    assert!(left.is_empty(), "ranks left files on the NAS: {left:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    doc["storbench"].clone()
}

fn aggregate_mbit(sb: &serde_json::Value) -> f64 {
    sb["hosts"]["groups"][0]["aggregate_bw"][1]
        .as_f64()
        .unwrap()
        * 8.0
        / 1e6
}

fn notes(sb: &serde_json::Value, code: &str) -> Vec<String> {
    sb["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == code)
        .map(|n| n["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_narrow_nas_uplink_caps_the_aggregate_and_is_named_past_the_clients() {
    require!(no_mpirun());
    let uplink = 60;
    let Some(lan) = lan(uplink) else {
        return;
    };
    let nas = Ganesha::start_at(lan.switch.host_addr).expect("ganesha on the uplink");
    let sb = run_on(&lan, &nas);
    let agg = aggregate_mbit(&sb);
    eprintln!("aggregate {agg:.1} Mbit/s over a {uplink} Mbit/s uplink");
    // Payload over a shaped link: TCP/IP and RPC headers take a few percent, tbf's queue
    // a few more; never more than the uplink.
    assert!(agg <= uplink as f64 * 1.02, "{agg} Mbit/s: {sb:#}");
    assert!(agg >= uplink as f64 * 0.75, "{agg} Mbit/s: {sb:#}");
    let past = notes(&sb, "limit.hosts.server_side");
    assert_eq!(past.len(), 1, "{:#}", sb["notes"]);
    let sum = CLIENT_MBIT * RANKS as u64;
    assert!(
        past[0].contains(&format!("of their links' {sum} Mbit/s"))
            && past[0].contains(&format!("({agg:.0} Mbit/s) together"))
            && past[0].contains("the server's link"),
        "{}",
        past[0]
    );
    assert!(notes(&sb, "limit.hosts.client_links").is_empty());
    // Every rank saw its own shaped link.
    for p in sb["hosts"]["groups"][0]["per_rank"].as_array().unwrap() {
        assert_eq!(p["link_mbps"], CLIENT_MBIT, "{p:#}");
    }
}

#[test]
fn a_wide_nas_uplink_lets_the_aggregate_reach_the_clients_links_and_names_them() {
    require!(no_mpirun());
    let Some(lan) = lan(1000) else {
        return;
    };
    let nas = Ganesha::start_at(lan.switch.host_addr).expect("ganesha on the uplink");
    let sb = run_on(&lan, &nas);
    let agg = aggregate_mbit(&sb);
    let sum = (CLIENT_MBIT * RANKS as u64) as f64;
    eprintln!("aggregate {agg:.1} Mbit/s over clients' links of {sum} Mbit/s");
    assert!(agg <= sum * 1.02, "{agg} Mbit/s: {sb:#}");
    assert!(agg >= sum * 0.85, "{agg} Mbit/s: {sb:#}");
    let full = notes(&sb, "limit.hosts.client_links");
    assert_eq!(full.len(), 1, "{:#}", sb["notes"]);
    assert!(
        full[0].contains(&format!("of their links' {sum} Mbit/s")),
        "{}",
        full[0]
    );
    assert!(notes(&sb, "limit.hosts.server_side").is_empty());
}

/// bonnie over the NAS from three hosts, each on its own shaped link: every rank runs the
/// suite in its own files of the one export, rank 0 reports a row per host and the
/// aggregate by IOR's rule, and the export is empty afterwards.
#[test]
fn bonnie_runs_on_every_host_against_the_nas_and_rank_0_reports_them() {
    require!(no_mpirun());
    let Some(lan) = lan(1000) else {
        return;
    };
    let nas = Ganesha::start_at(lan.switch.host_addr).expect("ganesha on the uplink");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let args: Vec<String> = [
        "--db",
        db.to_str().unwrap(),
        "bonnie",
        "-d",
        &nas.url(""),
        // 256 seeks: each reads a 64 KiB chunk over a 40 Mbit/s link (bonnie's 8192
        // would take minutes).
        "-s",
        "8:64k:256",
        "-r",
        "0",
        "-n",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = launch(&lan, dir.path(), &args);
    assert_eq!(run.code, Some(0), "{run:?}");
    let csv = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("1.98,"))
        .count();
    assert_eq!(csv, RANKS, "a CSV line per host: {}", run.stdout);
    let all = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("all 3"))
        .count();
    assert_eq!(all, 2, "the aggregate row of both tables: {}", run.stdout);
    let left = common::entries(&nas.export_dir());
    assert!(left.is_empty(), "ranks left files on the NAS: {left:?}");
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--db", db.to_str().unwrap(), "show", "1", "--format", "raw"])
        .output()
        .unwrap();
    let saved: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the run");
    let tests = saved["hosts"]["bonnie"]["tests"].as_array().unwrap();
    assert_eq!(
        tests.len(),
        10,
        "every test but per-char over NFS: {tests:#?}"
    );
    for t in tests {
        let per_rank = t["per_rank"].as_array().unwrap();
        assert_eq!(per_rank.len(), RANKS, "{t:#}");
        let work: f64 = per_rank.iter().map(|p| p["work"].as_f64().unwrap()).sum();
        let last = t["last_done_ns"].as_f64().unwrap();
        let rate = t["rate"].as_f64().unwrap();
        assert!((rate - work * 1e9 / last).abs() <= rate * 1e-6, "{t:#}");
    }
}

/// Three hosts on a v4-only NAS over NFSv4.1 (`version=4.1`): each rank writes its own
/// file with a pattern, then reads it back; rank 0 reports each run as one whose aggregate
/// is the ranks' bytes, the run names NFSv4.1, and every file on the export holds what
/// its rank wrote.
#[test]
fn three_hosts_write_and_read_back_their_files_over_nfsv41_on_a_v4_only_nas() {
    require!(no_mpirun());
    let Some(lan) = lan(1000) else {
        return;
    };
    let nas = Ganesha::start_v4_only_at(lan.switch.host_addr).expect("ganesha on the uplink");
    let dir = tempfile::tempdir().unwrap();
    let size: u64 = 2 << 20;
    let run = |rw: &str| {
        let args: Vec<String> = [
            "fio",
            "--name=w",
            &format!("--rw={rw}"),
            "--bs=256k",
            "--iodepth=4",
            &format!("--size={size}"),
            "--buffer_pattern=0xdeadbeef",
            &format!("--directory={}?version=4.1", nas.url4("")),
            "--no-save",
            "--output-format=json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let run = launch(&lan, dir.path(), &args);
        assert_eq!(run.code, Some(0), "{run:?}");
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
        assert!(doc.to_string().contains("NFSv4.1"), "{doc:#}");
        doc["storbench"]["hosts"].clone()
    };
    let ddir = |hosts: &serde_json::Value, d: usize| {
        assert_eq!(hosts["ranks"].as_array().unwrap().len(), RANKS, "{hosts:#}");
        let g = &hosts["groups"][0];
        assert_eq!(g["per_rank"].as_array().unwrap().len(), RANKS, "{g:#}");
        assert_eq!(g["bytes"][d].as_u64(), Some(size * RANKS as u64), "{g:#}");
        assert!(g["aggregate_bw"][d].as_f64().unwrap() > 0.0, "{g:#}");
    };
    ddir(&run("write"), 1);
    let files = common::entries(&nas.export_dir());
    assert_eq!(files.len(), RANKS, "a file per rank: {files:?}");
    for f in &files {
        let data = std::fs::read(nas.export_dir().join(f)).unwrap();
        assert_eq!(data.len() as u64, size, "{f}");
        assert!(
            data.chunks(4).all(|c| c == [0xde, 0xad, 0xbe, 0xef]),
            "{f} holds other bytes"
        );
    }
    ddir(&run("read"), 0);
}
