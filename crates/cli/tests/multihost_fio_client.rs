//! The cross-check with fio's own multi-host mode (docs/multihost.md): three real
//! `fio --server` processes on ports of this test's own, driven by one `fio --client`, and
//! storbench's three ranks under `mpirun` running the same job file on the same machine.
//! The job is rate-limited, so both must deliver the same aggregate whatever the
//! machine's load, and storbench's client-mode JSON must have fio's layout.

#![cfg(feature = "mpi")]

mod common;

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::json::shape_diff;
use common::mpi::{mpirun, no_mpirun, run_mpi};
use common::{Run, storbench};
use storbench_testkit::require;

const JOB: &str = "[w]\nioengine=null\nrw=write\nbs=64k\nsize=1g\nrate=2m\ntime_based\nruntime=3\n";

/// fio servers killed by PID when dropped.
struct Servers(Vec<(Child, u16)>);

impl Servers {
    fn start(n: usize) -> Servers {
        let mut s = Servers(Vec::new());
        for _ in 0..n {
            let port = storbench_testkit::ports::free_port().expect("a free port");
            let child = Command::new("fio")
                .arg(format!("--server=ip:127.0.0.1,{port}"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("fio --server starts");
            s.0.push((child, port));
        }
        for (_, port) in &s.0 {
            let deadline = Instant::now() + Duration::from_secs(10);
            while TcpStream::connect(("127.0.0.1", *port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "fio --server on {port} never answered"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        s
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for (c, _) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// fio's client-mode output: the servers' text lines, then the JSON document.
fn json_part(stdout: &str) -> serde_json::Value {
    let start = stdout.find("\n{").map_or(0, |i| i + 1);
    serde_json::from_str(&stdout[start..]).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn all_clients_write_kib(doc: &serde_json::Value) -> f64 {
    let cs = doc["client_stats"].as_array().expect("client_stats");
    let all = cs
        .iter()
        .find(|c| c["jobname"] == "All clients")
        .expect("an All clients entry");
    all["write"]["bw"].as_f64().unwrap()
}

#[test]
fn fio_client_mode_and_our_ranks_agree_on_the_aggregate_and_the_layout() {
    require!(no_mpirun());
    if !common::fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.fio");
    std::fs::write(&job, JOB).unwrap();
    let job = job.to_str().unwrap();
    let servers = Servers::start(3);
    let mut fio = Command::new("fio");
    fio.current_dir(dir.path()).arg("--output-format=json");
    for (_, port) in &servers.0 {
        fio.arg(format!("--client=ip:127.0.0.1,{port}")).arg(job);
    }
    let out = fio.output().expect("fio --client runs");
    assert!(out.status.success(), "{out:?}");
    let theirs = json_part(&String::from_utf8_lossy(&out.stdout));
    drop(servers);
    let fio_output = dir.path().join("fio-client.json");
    std::fs::write(&fio_output, &out.stdout).unwrap();

    let db = dir.path().join("results.db");
    let run = run_mpi(
        mpirun(3)
            .current_dir(dir.path())
            .env("STORBENCH_DB", &db)
            .args(["fio", job, "--label=ours", "--output-format=json"]),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let ours: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");

    // Three clients at 2 MB/s (fio's rate is in KiB: 2048 KiB/s each) over 3 s.
    let (fio_bw, our_bw) = (all_clients_write_kib(&theirs), all_clients_write_kib(&ours));
    eprintln!(
        "All clients write: fio --client {fio_bw} KiB/s, storbench under mpirun {our_bw} KiB/s"
    );
    assert!(
        (our_bw - fio_bw).abs() / fio_bw < 0.10,
        "fio {fio_bw} KiB/s against ours {our_bw} KiB/s"
    );
    assert!(
        (fio_bw - 6144.0).abs() / 6144.0 < 0.10,
        "fio itself: {fio_bw}"
    );

    let (tc, oc) = (
        theirs["client_stats"].as_array().unwrap(),
        ours["client_stats"].as_array().unwrap(),
    );
    assert_eq!(tc.len(), oc.len(), "{oc:#?}");
    let names = |v: &[serde_json::Value]| -> Vec<String> {
        v.iter()
            .map(|c| c["jobname"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(names(tc), names(oc));
    // One client's entry and the All clients entry have fio's keys, nesting and types.
    for i in [0, tc.len() - 1] {
        let diff = shape_diff(&tc[i], &oc[i]);
        assert!(diff.is_empty(), "client_stats[{i}]: {diff:#?}");
    }

    imported_fio_client_output_is_one_multi_host_run(&db, &fio_output, &theirs);
}

/// `storbench import` of real fio's client-mode output: one run whose ranks are fio's
/// three servers, each with its own rows, and whose All clients figures are fio's; it
/// compares with storbench's own multi-host run of the same job (saved as `ours`).
fn imported_fio_client_output_is_one_multi_host_run(
    db: &Path,
    fio_output: &Path,
    theirs: &serde_json::Value,
) {
    let sb = |args: &[&str]| {
        let run = Run::of(storbench().env("STORBENCH_DB", db).args(args));
        assert_eq!(run.code, Some(0), "storbench {args:?}: {run:?}");
        run.stdout
    };
    sb(&["import", fio_output.to_str().unwrap(), "--label=fio-client"]);
    let shown: serde_json::Value =
        serde_json::from_str(&sb(&["show", "fio-client", "--format=json"])).expect("JSON");
    let ranks = shown["storbench"]["hosts"]["ranks"]
        .as_array()
        .expect("the import is a multi-host run");
    let fio_clients: Vec<&serde_json::Value> = theirs["client_stats"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["jobname"] != "All clients")
        .collect();
    assert_eq!(ranks.len(), fio_clients.len(), "{ranks:#?}");
    // Per host: each fio server's bytes are one rank's row, in fio's order.
    let rows = shown["client_stats"].as_array().unwrap();
    for (i, c) in fio_clients.iter().enumerate() {
        assert_eq!(
            rows[i]["write"]["io_bytes"], c["write"]["io_bytes"],
            "client {i}: {:#}",
            rows[i]
        );
        assert_eq!(rows[i]["port"], c["port"], "client {i}");
        assert_eq!(rows[i]["hostname"], c["hostname"], "client {i}");
    }
    // The aggregate: fio's All clients figures, to fio's rounding (whole KiB/s).
    let (imported, fio) = (all_clients_write_kib(&shown), all_clients_write_kib(theirs));
    eprintln!("All clients write: fio --client {fio} KiB/s, imported {imported} KiB/s");
    assert!(
        (imported - fio).abs() <= 1.0,
        "imported {imported} KiB/s against fio's {fio} KiB/s"
    );
    let all_bytes = |d: &serde_json::Value| {
        d["client_stats"].as_array().unwrap().last().unwrap()["write"]["io_bytes"].clone()
    };
    assert_eq!(all_bytes(&shown), all_bytes(theirs));

    // Against storbench's own three ranks: the All clients test is in both runs.
    let cmp: serde_json::Value =
        serde_json::from_str(&sb(&["compare", "fio-client", "ours", "--format=json"]))
            .expect("compare's JSON");
    let text = cmp.to_string();
    assert!(text.contains("All clients write"), "{cmp:#}");
}
