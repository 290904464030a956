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
    // A fresh snmpd answers CPU ticks it has not refreshed yet (net-snmp refreshes them
    // every 5 s); a NAS's agent has been up for long.
    std::thread::sleep(Duration::from_secs(6));
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
        m.contains(&format!("snmp://{}:1161", agent.addr)) && m.contains("% busy over the "),
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
    // Two seconds fall between two of net-snmp's 5 s refreshes of its CPU ticks: the
    // figure runs from the refresh before the run to the first after it, and says so.
    let cpu = stats["cpu_busy_percent"].as_f64();
    assert!(cpu.is_some_and(|c| (0.0..=100.0).contains(&c)), "{stats:#}");
    let span = stats["cpu_span_ms"].as_u64().unwrap_or(0);
    let run_ms = stats["duration_ms"].as_u64().unwrap();
    // The span is counted in ticks (10 ms each, per CPU): allow one tick per CPU.
    assert!(span + 20 >= run_ms && span <= run_ms + 12_000, "{stats:#}");
    let said: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == "server.cpu" || n["code"] == "limit.server-cpu")
        .filter_map(|n| n["message"].as_str())
        .collect();
    // (A busy machine may add the agent's one-minute load note of the same code.)
    assert!(
        said.iter()
            .any(|m| m.contains("its agent's tick counters cover around the")),
        "{doc:#}"
    );
    assert!(stats["ncpus"].as_u64().is_some_and(|n| n >= 1), "{stats:#}");
    assert!(!shown.stdout.contains(&agent.community));
}

/// SNMPv3 with authentication and privacy (SHA-256, AES) through the binary: the
/// passwords from the environment and a file, never in the output or the database; a
/// wrong password is the agent's Report as one line before any IO.
#[test]
fn an_snmpv3_user_reads_the_server_and_a_wrong_password_is_one_line() {
    let Some((_ns, agent)) = nas_agent() else {
        return;
    };
    let user = &snmpd::V3_USERS[1];
    let db = tempfile::tempdir().unwrap();
    let db_path = db.path().join("r.db");
    let priv_file = db.path().join("priv");
    std::fs::write(&priv_file, format!("{}\n", snmpd::PRIV_PASSWORD)).unwrap();
    let run = |auth: &str| {
        let mut c = storbench();
        c.args([
            "fio",
            "--name=n",
            "--ioengine=null",
            "--size=1G",
            "--time_based",
            "--runtime=1",
            "--label=v3",
            "--server-stats",
            &agent.v3_url(user),
        ])
        .arg("--db")
        .arg(&db_path)
        .env("STORBENCH_SNMP_AUTH", auth)
        .env("STORBENCH_SNMP_PRIV_FILE", &priv_file);
        Run::of(&mut c)
    };
    let bad = run("not-the-password");
    assert_ne!(bad.code, Some(0));
    let line = bad.stderr.trim();
    assert!(
        line.contains("usmStatsWrongDigests")
            && line.contains("nothing was run")
            && !line.contains('\n'),
        "{line}"
    );
    let good = run(snmpd::AUTH_PASSWORD);
    assert!(good.code == Some(0), "{}", good.stderr);
    let mut show = storbench();
    show.arg("--db")
        .arg(&db_path)
        .args(["show", "v3", "--format=raw"]);
    let shown = Run::of(&mut show);
    let stats = &shown.json()["server_stats"];
    assert_eq!(
        stats["source"],
        format!("snmpv3://{}@{}:1161", user.name, agent.addr)
    );
    assert!(
        stats["samples"].as_array().is_some_and(|s| !s.is_empty()),
        "{stats:#}"
    );
    assert!(stats["cpu_busy_percent"].as_f64().is_some(), "{stats:#}");
    let stored = std::fs::read(&db_path).unwrap();
    for secret in [snmpd::AUTH_PASSWORD, snmpd::PRIV_PASSWORD] {
        for text in [&good.stdout, &good.stderr, &bad.stderr, &shown.stdout] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(!stored.windows(secret.len()).any(|w| w == secret.as_bytes()));
    }
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
