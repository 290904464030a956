//! Multi-host runs started by Slurm's `srun` (docs/multihost.md): a one-node Slurm cluster
//! of the test's own (its own munge key, configuration, state and ports, stopped by PID),
//! and `srun --mpi=pmix -n 2 storbench fio …`, which Open MPI joins through PMIx as it does
//! under `mpirun`.

#![cfg(feature = "mpi")]

mod common;

use std::time::Duration;

use common::entries;
use common::mpi::Launched;
use storbench_testkit::require;
use storbench_testkit::slurm::{self, Slurm};

/// `srun -n 2 storbench` in `dir`, saving nothing, with a bound on every wait for a rank.
fn storbench_on_two_ranks(cluster: &Slurm, dir: &std::path::Path) -> std::process::Command {
    let mut c = cluster.srun(2);
    c.current_dir(dir)
        .env("NO_COLOR", "1")
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db")
        .env("STORBENCH_MPI_TIMEOUT", "30")
        .arg(assert_cmd::cargo::cargo_bin("storbench"));
    c
}

#[test]
fn srun_starts_two_ranks_that_report_one_run() {
    require!(slurm::unavailable());
    let cluster = Slurm::start(2).expect("a one-node Slurm cluster");
    let dir = tempfile::tempdir().unwrap();
    let mut c = storbench_on_two_ranks(&cluster, dir.path());
    c.args([
        "fio",
        "--name=w",
        "--ioengine=psync",
        "--rw=write",
        "--bs=64k",
        "--size=8m",
        "--unlink=1",
        "--no-save",
        "--output-format=json",
    ])
    .arg(format!("--directory={}", dir.path().display()));
    let (run, _) = Launched::spawn(&mut c).wait(Duration::from_secs(90));
    assert_eq!(run.code, Some(0), "{run:?}\n{}", cluster.logs());
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    let clients = doc["client_stats"].as_array().expect("client_stats");
    assert_eq!(clients.len(), 3, "two ranks and All clients: {clients:#?}");
    assert_eq!(clients[2]["jobname"], "All clients");
    let each: Vec<u64> = clients[..2]
        .iter()
        .map(|c| c["write"]["io_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        each,
        [8 << 20, 8 << 20],
        "each rank wrote its own 8 MiB file"
    );
    let hosts = &doc["storbench"]["hosts"];
    assert_eq!(hosts["ranks"].as_array().unwrap().len(), 2, "{hosts:#}");
    assert_eq!(hosts["groups"][0]["bytes"][1].as_u64(), Some(16 << 20));
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// bonnie across the ranks `srun` starts works as under `mpirun`: rank 0 prints a row per
/// host and the `all 2` aggregate (in the IO and the file table), one CSV line per host,
/// and every rank removes its files and its marker.
#[test]
fn srun_runs_bonnie_on_two_ranks_with_a_row_per_host_and_the_aggregate() {
    require!(slurm::unavailable());
    let cluster = Slurm::start(2).expect("a one-node Slurm cluster");
    let dir = tempfile::tempdir().unwrap();
    let mut c = storbench_on_two_ranks(&cluster, dir.path());
    c.args(["bonnie", "-s", "16:4k", "-r", "0", "-n", "1", "-f", "1"])
        .args(["--no-save", "-d"])
        .arg(dir.path());
    let (run, _) = Launched::spawn(&mut c).wait(Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{run:?}\n{}", cluster.logs());
    let all = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("all 2"))
        .count();
    assert_eq!(
        all, 2,
        "the IO and the file table's aggregate: {}",
        run.stdout
    );
    let csv: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("1.98,"))
        .collect();
    assert_eq!(csv.len(), 2, "one CSV line per host: {}", run.stdout);
    // The two ranks' rows (each named by its host and rank) are in both tables.
    let rows = run
        .stdout
        .lines()
        .filter(|l| !l.starts_with("all 2") && !l.starts_with("1.98,"))
        .filter(|l| {
            csv.iter()
                .any(|c| l.starts_with(c.split(',').nth(2).unwrap()))
        })
        .count();
    assert_eq!(rows, 4, "{}", run.stdout);
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}
