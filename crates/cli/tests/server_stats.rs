//! `--server-stats snmp://…`: the server's own counters, read from Debian's snmpd started
//! by the test in a network namespace (the "NAS"), name the server's CPU as the limit when
//! it was full; a bad URL or an agent that does not answer is one line, never a hang.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::system::{ChildGuard, have_tool};
use common::{Run, storbench};
use storbench_testkit::{ganesha, netns, snmpd};

/// snmpd inside a namespace of its own, reached over a veth like a NAS on the network.
fn nas_agent() -> Option<(netns::NetNs, snmpd::Snmpd)> {
    storbench_testkit::require!(snmpd::unavailable());
    storbench_testkit::require!(netns::unavailable());
    let ns = netns::NetNs::create().expect("namespace");
    let addr = ns.ns_addr.to_string();
    let agent = snmpd::Snmpd::start_at(&addr, 1161, Some(&ns.name)).expect("snmpd in the ns");
    Some((ns, agent))
}

/// ganesha pinned to CPU 1 with a busy loop on it, and every other CPU kept busy too: the
/// server cannot get more CPU, and its agent's tick counters must say so.
#[test]
fn a_cpu_bound_ganesha_is_named_through_its_snmp_agent() {
    storbench_testkit::require!(ganesha::unavailable());
    storbench_testkit::require!(have_tool("taskset"), "no taskset");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    storbench_testkit::require!(cpus >= 2, "one CPU: nothing to pin the server to");
    let Some((_ns, agent)) = nas_agent() else {
        return;
    };
    let g = ganesha::Ganesha::start().expect("ganesha");
    let pid = g.pid().expect("ganesha runs").to_string();
    let pinned = Command::new("taskset")
        .args(["-a", "-p", "-c", "1", &pid])
        .output()
        .unwrap();
    assert!(pinned.status.success(), "{pinned:?}");
    let _spinners: Vec<ChildGuard> = (0..cpus.min(16))
        .map(|cpu| {
            let child = Command::new("taskset")
                .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
                .spawn()
                .unwrap();
            ChildGuard(Some(child))
        })
        .collect();
    // net-snmp refreshes its CPU ticks every 5 s: let one refresh see the spinning CPUs
    // and run long enough for the next.
    std::thread::sleep(Duration::from_secs(5));
    let mut c = storbench();
    c.args([
        "fio",
        "--name=busy",
        "--ioengine=nfs",
        "--rw=write",
        "--bs=64k",
        "--size=16M",
        "--time_based",
        "--runtime=7",
        "--no-save",
        "--output-format=json",
        "--server-stats",
        &agent.url(),
    ])
    .arg(format!("--filename={}", g.url("busy.dat")));
    let run = Run::of(&mut c);
    let doc = run.json();
    let notes = &doc["storbench"]["notes"];
    let server: Vec<&str> = notes
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == "limit.server-cpu")
        .filter_map(|n| n["message"].as_str())
        .collect();
    assert_eq!(server.len(), 1, "{notes:#}");
    let m = server[0];
    assert!(
        m.contains(&format!("snmp://{}:1161", agent.addr)) && m.contains("% busy over the run"),
        "{m}"
    );
    // The community is a secret: never in the output.
    assert!(!run.stdout.contains(&agent.community), "{}", run.stdout);
}

/// The samples are stored with the run: `show` reads them back from the database, the
/// community masked in the stored command line.
#[test]
fn server_samples_are_stored_with_the_run() {
    let Some((_ns, agent)) = nas_agent() else {
        return;
    };
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("r.db");
    let mut c = storbench();
    c.args([
        "fio",
        "--name=n",
        "--ioengine=null",
        "--size=1G",
        "--time_based",
        "--runtime=2",
        "--label=server-stats",
        "--server-stats",
        &agent.url(),
    ])
    .arg("--db")
    .arg(&db_path);
    let run = Run::of(&mut c);
    assert!(run.code == Some(0), "{}", run.stderr);
    let mut show = storbench();
    show.arg("--db")
        .arg(&db_path)
        .args(["show", "server-stats", "--format=raw"]);
    let shown = Run::of(&mut show);
    let doc = shown.json();
    let stats = &doc["server_stats"];
    assert!(
        stats["samples"].as_array().is_some_and(|s| !s.is_empty()),
        "{stats:#}"
    );
    assert_eq!(stats["source"], format!("snmp://{}:1161", agent.addr));
    // Two seconds may fall between two of net-snmp's 5 s refreshes of its CPU ticks: then
    // the figure is missing with that reason, never a made-up 0%.
    let cpu_known = stats["cpu_busy_percent"].as_f64().is_some();
    let why = stats["error"].as_str().unwrap_or("");
    assert!(cpu_known || why.contains("did not move"), "{stats:#}");
    assert!(stats["ncpus"].as_u64().is_some_and(|n| n >= 1), "{stats:#}");
    assert!(!shown.stdout.contains(&agent.community));
}

#[test]
fn a_bad_url_or_a_silent_agent_is_one_line_before_any_io() {
    // A socket that reads and never answers: no reply, no ICMP error either.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("snmp://127.0.0.1:{}", silent.local_addr().unwrap().port());
    for (url, expect) in [
        ("snmp://nas:0", "bad SNMP URL"),
        ("http://nas", "bad SNMP URL"),
        // Nothing listens on this port of the loopback: port unreachable.
        (
            "snmp://127.0.0.1:9",
            "no answer from 127.0.0.1:9: nothing listens",
        ),
        (silent_url.as_str(), "ms (2 tries)"),
    ] {
        let started = Instant::now();
        let mut c = storbench();
        c.args([
            "fio",
            "--name=n",
            "--ioengine=null",
            "--size=1M",
            "--no-save",
            "--server-stats",
            url,
        ]);
        let run = Run::of(&mut c);
        assert_ne!(run.code, Some(0), "{url}");
        let line = run.stderr.trim();
        assert!(
            line.contains(expect) && !line.contains('\n'),
            "{url}: {line}"
        );
        assert!(!line.contains("storbench: storbench"), "{line}");
        assert!(started.elapsed() < Duration::from_secs(10), "{url}");
    }
}
