//! Multi-host runs under a real `mpirun` (docs/multihost.md): three ranks on this machine
//! run together and rank 0 reports them as one run. A build without the `mpi` feature
//! refusing a start under a launcher is tested with such a build, the self-contained
//! binary (static_binary.rs).

#![cfg(feature = "mpi")]

mod common;

use std::time::Duration;

use common::entries;
use common::mpi::{Launched, mpirun, mpirun_with, no_mpirun, run_mpi};
use storbench_testkit::require;

mod with_mpi {
    use super::*;
    use std::path::Path;

    fn fio_args(dir: &Path, runtime: &str) -> Vec<String> {
        [
            "fio",
            "--name=w",
            "--ioengine=psync",
            "--rw=write",
            "--bs=64k",
            "--size=4m",
            "--time_based",
            &format!("--runtime={runtime}"),
            &format!("--directory={}", dir.display()),
            "--unlink=1",
            "--no-save",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn three_ranks_report_one_run_with_the_aggregate_of_their_sum() {
        require!(no_mpirun());
        let dir = tempfile::tempdir().unwrap();
        let mut c = mpirun(3);
        c.args(fio_args(dir.path(), "1"))
            .arg("--output-format=json");
        let run = run_mpi(&mut c);
        assert_eq!(run.code, Some(0), "{run:?}");
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
        let clients = doc["client_stats"].as_array().expect("client_stats");
        assert_eq!(
            clients.len(),
            4,
            "three clients and All clients: {clients:#?}"
        );
        assert_eq!(clients[3]["jobname"], "All clients");
        for c in &clients[..3] {
            assert_eq!(c["jobname"], "w");
            assert!(c["hostname"].as_str().is_some_and(|h| !h.is_empty()));
        }
        let hosts = &doc["storbench"]["hosts"];
        assert_eq!(hosts["ranks"].as_array().unwrap().len(), 3);
        let g = &hosts["groups"][0];
        let agg = g["aggregate_bw"][1].as_f64().unwrap();
        let sum: f64 = g["per_rank"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["bw"][1].as_f64().unwrap())
            .sum();
        assert!(agg > 0.0);
        // The ranks start together at the barrier: the aggregate over the earliest start
        // to the latest end is their sum, less the few ms they are apart.
        assert!(
            (agg - sum).abs() / sum < 0.05,
            "aggregate {agg} against the ranks' sum {sum}: {g:#}"
        );
        let total: u64 = clients[..3]
            .iter()
            .map(|c| c["write"]["io_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(g["bytes"][1].as_u64().unwrap(), total);
        assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
    }

    #[test]
    fn normal_output_has_a_section_per_client_and_all_clients() {
        require!(no_mpirun());
        let dir = tempfile::tempdir().unwrap();
        let mut c = mpirun(3);
        c.args(fio_args(dir.path(), "1"));
        let run = run_mpi(&mut c);
        assert_eq!(run.code, Some(0), "{run:?}");
        for r in 0..3 {
            assert!(
                run.stdout.contains(&format!("#{r}:w: (groupid=0")),
                "rank {r}'s job: {}",
                run.stdout
            );
            assert!(
                run.stdout.contains(&format!("  rank {r}: ")),
                "{}",
                run.stdout
            );
        }
        assert!(
            run.stdout.contains("All clients: 3 ranks"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout.contains("    All clients: write: bw="),
            "{}",
            run.stdout
        );
        // Only rank 0 prints: one fio header.
        assert_eq!(
            run.stdout.matches("Run status group 0").count(),
            1,
            "{}",
            run.stdout
        );
    }

    #[test]
    fn a_rank_killed_mid_run_ends_the_run_everywhere_with_cleanup() {
        require!(no_mpirun());
        let dir = tempfile::tempdir().unwrap();
        let mut c = mpirun(3);
        c.env("STORBENCH_MPI_TIMEOUT", "10")
            .args(fio_args(dir.path(), "60"));
        let launched = Launched::spawn(&mut c);
        let started =
            common::system::wait_for(Duration::from_secs(20), || entries(dir.path()).len() == 3);
        assert!(started, "three ranks' files: {:?}", entries(dir.path()));
        std::thread::sleep(Duration::from_millis(500));
        let rank_pids = common::mpi::ranks_of(launched.pid());
        let rank = common::mpi::rank_of(*rank_pids.last().expect("a rank process"))
            .expect("the victim's rank");
        launched.signal_a_rank(libc::SIGKILL);
        // mpirun sends the others SIGTERM about a second after the death, SIGKILL at most a
        // second later (at once when one of them exits); far below the collective timeout
        // (10 s here).
        let run = launched.failed_within(Duration::from_secs(6));
        // The killed rank could not remove its file (`w.RANK.0.0`); the others removed
        // theirs before any wait, and stayed until the slowest of them could.
        let left = entries(dir.path());
        assert!(
            left.iter().all(|f| f == &format!("w.{rank}.0.0")),
            "{left:?} (victim rank {rank}): {run:?}"
        );
    }

    /// quick's files carry each rank's PID (`storbench-quick.PID.tmp`): after one rank is
    /// killed mid-run, every file left is the killed rank's.
    #[test]
    fn a_rank_killed_mid_quick_ends_it_everywhere_and_the_others_remove_their_files() {
        require!(no_mpirun());
        let dir = tempfile::tempdir().unwrap();
        let mut c = mpirun(3);
        c.env("STORBENCH_MPI_TIMEOUT", "10")
            .args(["quick", dir.path().to_str().unwrap()])
            .args([
                "--size",
                "8m",
                "--runtime",
                "20s",
                "--buffered",
                "--no-save",
            ]);
        let launched = Launched::spawn(&mut c);
        let quick_files = || {
            entries(dir.path())
                .iter()
                .filter(|e| e.starts_with("storbench-quick."))
                .count()
        };
        let started = common::system::wait_for(Duration::from_secs(20), || quick_files() == 3);
        assert!(started, "three ranks' files: {:?}", entries(dir.path()));
        std::thread::sleep(Duration::from_millis(500));
        let victim = launched.signal_a_rank(libc::SIGKILL);
        let run = launched.failed_within(Duration::from_secs(6));
        let left = entries(dir.path());
        assert!(
            left.iter().all(|f| f.contains(&victim.to_string())),
            "{left:?} (victim {victim}): {run:?}"
        );
    }

    /// Runs the job file `text` (written in `dir`) on three ranks, which must fail, and
    /// within 15 s: long before the 30 s collective timeout, so not by waiting it out.
    fn three_ranks_fail_fast(dir: &Path, text: &str) -> common::Run {
        let job = dir.join("job.fio");
        std::fs::write(&job, text).unwrap();
        let mut c = mpirun(3);
        c.env("STORBENCH_MPI_TIMEOUT", "30")
            .args(["fio", job.to_str().unwrap(), "--no-save"]);
        let (run, took) = Launched::spawn(&mut c).wait(Duration::from_secs(60));
        assert_ne!(run.code, Some(0), "{run:?}");
        assert!(took < Duration::from_secs(15), "waited {took:?}: {run:?}");
        run
    }

    #[test]
    fn a_rank_that_fails_its_checks_ends_the_run_everywhere_before_any_lay_out() {
        require!(no_mpirun());
        let base = tempfile::tempdir().unwrap();
        // Each rank's own directory (fio expands ${VAR} in job files); rank 2's is missing.
        for r in 0..2 {
            std::fs::create_dir(base.path().join(r.to_string())).unwrap();
        }
        let run = three_ranks_fail_fast(
            base.path(),
            &format!(
                "[w]\nioengine=psync\nrw=write\nbs=64k\nsize=4m\nunlink=1\ndirectory={}/${{OMPI_COMM_WORLD_RANK}}\n",
                base.path().display()
            ),
        );
        assert!(
            run.stderr
                .contains("rank 2 could not go on at the checks before lay-out"),
            "{}",
            run.stderr
        );
        for r in 0..2 {
            let dir = base.path().join(r.to_string());
            assert!(
                entries(&dir).is_empty(),
                "rank {r} laid out: {:?}",
                entries(&dir)
            );
        }
    }

    /// A rank whose job cannot be prepared (its file is missing and the job gives no size)
    /// fails after the checks, in the lay-out: it still takes part in the group's start,
    /// as not ready, so the others end there at once. Before, it went on to hand on its
    /// result while they waited at the group start; MPI matched the two collectives,
    /// found the message truncated, and the run hung until killed.
    #[test]
    fn a_rank_that_cannot_lay_out_ends_the_run_everywhere_at_the_group_start() {
        require!(no_mpirun());
        let base = tempfile::tempdir().unwrap();
        for r in 0..2 {
            std::fs::write(base.path().join(format!("f.{r}")), vec![7u8; 1 << 20]).unwrap();
        }
        let run = three_ranks_fail_fast(
            base.path(),
            &format!(
                "[r]\nioengine=psync\nrw=read\nbs=64k\nfilename={}/f.${{OMPI_COMM_WORLD_RANK}}\n",
                base.path().display()
            ),
        );
        assert!(
            run.stderr.contains("f.2 does not exist"),
            "rank 2 says why: {}",
            run.stderr
        );
        assert!(
            run.stderr
                .contains("rank 2 could not go on at the start of a stonewall group"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("MPI Error"), "{}", run.stderr);
    }

    #[test]
    fn a_shared_file_is_divided_into_per_rank_regions_by_offset_increment() {
        require!(no_mpirun());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("shared");
        let mut c = mpirun(3);
        c.args([
            "fio",
            "--name=s",
            &format!("--filename={}", file.display()),
            "--ioengine=psync",
            "--rw=write",
            "--bs=64k",
            "--size=1m",
            "--offset_increment=1m",
            "--no-save",
            "--output-format=json",
        ]);
        let run = run_mpi(&mut c);
        assert_eq!(run.code, Some(0), "{run:?}");
        // Rank r wrote [r MiB, r+1 MiB): each region holds written (random) data, not the
        // zeros of a region nobody wrote.
        let data = std::fs::read(&file).unwrap();
        assert_eq!(data.len(), 3 << 20);
        for (r, region) in data.chunks(1 << 20).enumerate() {
            let zeros = region.iter().filter(|&&b| b == 0).count();
            assert!(
                zeros < region.len() / 4,
                "region {r} has {zeros} zero bytes"
            );
        }
    }

    /// MPI carries only coordination, so storbench asks Open MPI for its plain ob1 layer
    /// instead of opening every fabric's (which costs each rank 150–250 ms at start), and a
    /// PML the user chose is kept. Open MPI's own verbose log says which components it
    /// loaded.
    #[test]
    fn ranks_use_the_plain_transport_unless_the_user_chose_one() {
        require!(no_mpirun());
        let loaded = |launch: &[&str]| {
            let dir = tempfile::tempdir().unwrap();
            let mut launch: Vec<String> = launch.iter().map(|s| s.to_string()).collect();
            launch.extend(["--mca", "pml_base_verbose", "100"].map(String::from));
            let mut c = mpirun_with(2, &launch);
            c.args(fio_args(dir.path(), "1"));
            let run = run_mpi(&mut c);
            assert_eq!(run.code, Some(0), "{run:?}");
            let found = |name: &str| {
                run.stderr
                    .contains(&format!("components_open: found loaded component {name}"))
            };
            (found("ob1"), found("cm"))
        };
        assert_eq!(loaded(&[]), (true, false), "by default only ob1 is opened");
        assert_eq!(
            loaded(&["--mca", "pml", "^monitoring"]),
            (true, true),
            "the user's own PML choice is kept"
        );
    }
}
