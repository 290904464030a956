//! bonnie across MPI ranks (docs/multihost.md): three ranks of a real `mpirun` on this
//! machine run the suite in their own directories (names carry the rank), every test
//! starting on all ranks together; rank 0 prints one row per host and the aggregate row
//! (IOR's rule: all ranks' work over the earliest start to the latest end), one bonnie++
//! CSV line per host, and saves the merged run. A rank that dies or is stopped mid-suite
//! ends the run on every rank in well under the collective timeout, with the files removed.

#![cfg(feature = "mpi")]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::entries;
use common::mpi::{Launched, mpirun, mpirun_with, no_mpirun, run_mpi};
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::require;
use storbench_testkit::smbd::{self, SHARE, Smbd};

/// Small tests: per-char on 1 MiB, blocks on 16 MiB, 1024 files; the size checks off.
const SMALL: [&str; 8] = ["-s", "16:4k", "-r", "0", "-n", "1", "-f", "1"];

fn bonnie_args(db: &Path, dir: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["--db", db.to_str().unwrap(), "bonnie", "-d", dir]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// The merged run rank 0 saved, as JSON.
fn saved_run(db: &Path) -> serde_json::Value {
    let out = Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--db", db.to_str().unwrap(), "show", "1", "--format", "raw"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("the run's JSON")
}

/// Every test's aggregate is all ranks' work over the earliest start to the latest end,
/// and at most the sum of the ranks' own rates.
fn check_ior_rule(run: &serde_json::Value) {
    let tests = run["hosts"]["bonnie"]["tests"].as_array().expect("tests");
    assert!(tests.len() >= 10, "{tests:#?}");
    for t in tests {
        let per_rank = t["per_rank"].as_array().unwrap();
        assert_eq!(per_rank.len(), 3, "{t:#}");
        let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap();
        let work: f64 = per_rank.iter().map(|p| f(p, "work")).sum();
        let first = per_rank
            .iter()
            .map(|p| f(p, "start_ns"))
            .fold(f64::MAX, f64::min);
        let last = per_rank.iter().map(|p| f(p, "end_ns")).fold(0.0, f64::max);
        assert_eq!(first, 0.0, "spans count from the earliest start: {t:#}");
        assert!((f(t, "work") - work).abs() < 1e-6, "{t:#}");
        assert!((f(t, "last_done_ns") - last).abs() <= 1.0, "{t:#}");
        let ior = work * 1e9 / last;
        assert!((f(t, "rate") - ior).abs() <= ior * 1e-9, "{t:#}");
        let sum: f64 = per_rank.iter().map(|p| f(p, "rate")).sum();
        assert!(f(t, "rate") <= sum * (1.0 + 1e-9), "{t:#}");
    }
    // The run's own bonnie figures are the aggregate suite.
    let all = &run["bonnie"];
    assert_eq!(all["name"], "all 3");
    assert_eq!(run["hosts"]["bonnie"]["hosts"].as_array().unwrap().len(), 3);
}

/// bonnie++'s own converter reads the CSV lines: one row per host.
fn check_csv(stdout: &str) {
    let csv: Vec<&str> = stdout.lines().filter(|l| l.starts_with("1.98,")).collect();
    assert_eq!(csv.len(), 3, "{stdout}");
    let mut hosts = Vec::new();
    for l in &csv {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 50, "{l}");
        hosts.push(f[2].to_string());
    }
    hosts.dedup();
    assert_eq!(hosts.len(), 3, "three hosts: {hosts:?}");
    if !Path::new("/usr/bin/bon_csv2txt").exists() {
        eprintln!("bon_csv2txt not installed (Debian: bonnie++): converter check skipped");
        return;
    }
    let mut child = Command::new("bon_csv2txt")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all((csv.join("\n") + "\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for h in &hosts {
        assert_eq!(
            text.lines().filter(|l| l.starts_with(h.as_str())).count(),
            2,
            "bon_csv2txt's IO and file rows of {h}:\n{text}"
        );
    }
}

#[test]
fn three_ranks_report_each_host_and_the_aggregate_by_iors_rule() {
    require!(no_mpirun());
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("bench");
    std::fs::create_dir(&work).unwrap();
    let db = dir.path().join("results.db");
    let mut c = mpirun(3);
    c.env("STORBENCH_MPI_TIMEOUT", "60")
        .env_remove("STORBENCH_DB")
        .args(bonnie_args(&db, work.to_str().unwrap(), &SMALL));
    let run = run_mpi(&mut c);
    assert_eq!(run.code, Some(0), "{run:?}");
    // The table: a row per host and `all 3`, in the IO and the file table.
    let rows = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("all 3"))
        .count();
    assert_eq!(rows, 2, "{}", run.stdout);
    assert!(run.stdout.contains("[info.hosts.bonnie]"), "{}", run.stdout);
    check_csv(&run.stdout);
    // Only rank 0 speaks: one set of progress lines.
    assert_eq!(
        run.stderr.matches("Writing intelligently...").count(),
        1,
        "{}",
        run.stderr
    );
    check_ior_rule(&saved_run(&db));
    assert!(entries(&work).is_empty(), "left: {:?}", entries(&work));
}

#[test]
fn three_ranks_share_one_nfs_export_in_their_own_directories() {
    require!(no_mpirun());
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let g = Ganesha::start().expect("start ganesha");
    std::fs::create_dir(g.export_dir().join("bench")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let mut c = mpirun(3);
    c.env("STORBENCH_MPI_TIMEOUT", "60")
        .env_remove("STORBENCH_DB")
        .args(bonnie_args(
            &db,
            &g.url("bench"),
            &["-s", "16:64k", "-r", "0", "-n", "1"],
        ));
    let run = run_mpi(&mut c);
    assert_eq!(run.code, Some(0), "{run:?}");
    check_csv(&run.stdout);
    let saved = saved_run(&db);
    let hosts = saved["hosts"]["bonnie"]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    // Per-char is not run over NFS; blocks, seeks and the file tests are, on every rank.
    let tests = saved["hosts"]["bonnie"]["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 10, "{tests:#?}");
    assert_eq!(tests[0]["id"], "put_block");
    let left = entries(&g.export_dir().join("bench"));
    assert!(left.is_empty(), "left on the export: {left:?}");
}

/// The same over SMB: three ranks log in to one share of a real smbd as its user, with
/// the password from the environment mpirun passes on (`-x`), never in an argument.
#[test]
fn three_ranks_share_one_smb_share_in_their_own_directories() {
    require!(no_mpirun());
    if let Some(why) = smbd::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let s = Smbd::start().expect("start smbd");
    std::fs::create_dir(s.share_dir(SHARE).join("bench")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let url = format!("smb://{}@127.0.0.1:{}/{SHARE}/bench", s.user(), s.port);
    let pass_on = ["-x".to_string(), "STORBENCH_SMB_PASSWORD".to_string()];
    let mut c = mpirun_with(3, &pass_on);
    c.env("STORBENCH_MPI_TIMEOUT", "60")
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .env_remove("STORBENCH_DB")
        .args(bonnie_args(
            &db,
            &url,
            &["-s", "16:64k", "-r", "0", "-n", "1"],
        ));
    let run = run_mpi(&mut c);
    assert_eq!(run.code, Some(0), "{run:?}\n{}", s.log());
    check_csv(&run.stdout);
    let saved = saved_run(&db);
    assert_eq!(
        saved["hosts"]["bonnie"]["hosts"].as_array().unwrap().len(),
        3
    );
    // Per-char is not run over SMB; blocks, seeks and the file tests are, on every rank.
    let tests = saved["hosts"]["bonnie"]["tests"].as_array().unwrap();
    assert_eq!(tests.len(), 10, "{tests:#?}");
    assert_eq!(saved["bonnie"]["name"], "all 3");
    let text = format!("{}{}{saved}", run.stdout, run.stderr);
    assert!(!text.contains(s.password()), "the password never shows");
    let left = entries(&s.share_dir(SHARE).join("bench"));
    assert!(left.is_empty(), "left on the share: {left:?}");
}

/// Starts three ranks on a long per-char write (16 MiB a byte at a time) and returns
/// them with their directory once every rank's file exists.
fn long_suite(dir: &Path) -> Launched {
    let mut c = mpirun(3);
    c.env("STORBENCH_MPI_TIMEOUT", "10").args([
        "bonnie",
        "-d",
        dir.to_str().unwrap(),
        "-s",
        "16:4k",
        "-r",
        "0",
        "-n",
        "0",
        "-f",
        "16",
        "--no-save",
    ]);
    let launched = Launched::spawn(&mut c);
    let files = || {
        entries(dir)
            .iter()
            .filter(|e| e.starts_with("Bonnie."))
            .count()
    };
    let started = common::system::wait_for(Duration::from_secs(30), || files() == 3);
    assert!(started, "three ranks' files: {:?}", entries(dir));
    let names = entries(dir);
    for r in 0..3 {
        assert!(
            names.iter().any(|n| n.ends_with(&format!(".r{r}"))),
            "rank {r}'s file carries its rank: {names:?}"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    launched
}

/// mpirun sends the surviving ranks SIGTERM a second after the death and SIGKILL as soon
/// as one of them exits: each removes its files and marker first, before any wait, and
/// stays a while after, so none of it is left (docs/multihost.md, "When a rank fails").
#[test]
fn a_rank_killed_mid_suite_ends_it_everywhere_and_the_others_remove_their_files() {
    require!(no_mpirun());
    let dir = tempfile::tempdir().unwrap();
    let launched = long_suite(dir.path());
    let victim = launched.signal_a_rank(libc::SIGKILL);
    // mpirun stops the others about a second after the death; the timeout is 10 s.
    let run = launched.failed_within(Duration::from_secs(6));
    // Only what the killed rank could not remove: its file and its marker.
    let left = entries(dir.path());
    assert!(
        left.iter().all(|e| e.contains(&victim.to_string())),
        "{left:?} (victim {victim}): {run:?}"
    );
}

#[test]
fn a_rank_stopped_mid_suite_ends_it_everywhere_with_every_file_removed() {
    require!(no_mpirun());
    let dir = tempfile::tempdir().unwrap();
    let launched = long_suite(dir.path());
    launched.signal_a_rank(libc::SIGTERM);
    let run = launched.failed_within(Duration::from_secs(6));
    assert!(
        entries(dir.path()).is_empty(),
        "{:?}: {run:?}",
        entries(dir.path())
    );
}
