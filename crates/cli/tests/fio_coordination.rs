//! fio's coordination options against the installed fio 3.33, each on a job file of its
//! own run by both tools: `flow` weighs two jobs' IOs 1:8, `wait_for` starts a job only
//! after the named one ended (its prerun command sees the waitee's postrun file),
//! `exec_prerun`/`exec_postrun` write their output where fio's do, `iodepth_low` lets
//! the queue drain before it is filled again (fio's depth distribution), and
//! `io_submit_mode=offload` keeps a rate-limited job's IOs and time. Skipped with a
//! reason when fio 3.33 is missing.

mod common;

use common::{fio_available, sb_fio};
use serde_json::Value;

/// Runs `job` (a job file's text) with fio and with storbench, each in a directory of
/// its own, and returns both JSON documents and the directories.
fn both(job: &str) -> [(Value, tempfile::TempDir); 2] {
    [one(job, false), one(job, true)]
}

/// Runs `job` with storbench (`ours`) or fio in a directory of its own.
fn one(job: &str, ours: bool) -> (Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.fio"), job).unwrap();
    let args = ["--output-format=json", "job.fio"];
    let doc = if ours {
        sb_fio(dir.path(), &args).json()
    } else {
        common::fio(dir.path(), &args).fio_json()
    };
    (doc, dir)
}

/// (name, group, error, reads, writes) of every job.
fn jobs(doc: &Value) -> Vec<(String, u64, u64, u64, u64)> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["groupid"].as_u64().unwrap(),
                j["error"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect()
}

const FLOW: &str = "[global]\nnorandommap\nthread\ntime_based\nruntime=2\nioengine=null\n\
                    size=100g\nbs=8k\nflow_sleep=1000\n\n\
                    [job2]\nrw=write\nflow=1\n\n[job1]\nrw=randread\nflow=8\n";

#[test]
fn flow_weighs_the_jobs_as_fio_does() {
    if !fio_available() {
        return;
    }
    for (doc, _dir) in both(FLOW) {
        let j = jobs(&doc);
        let (writes, reads) = (j[0].4, j[1].3);
        assert!(writes > 100, "{j:?}");
        let ratio = reads as f64 / writes as f64;
        assert!(
            (6.0..10.0).contains(&ratio),
            "reads:writes {ratio:.2} {j:?}"
        );
    }
}

const BUTTERFLY: &str = "[global]\nfilename=butterfly\nsize=4m\nbs=4k\nioengine=psync\n\n\
                         [forward]\nrw=read\nflow=2\n\n[backward]\nrw=read:-8k\nflow=2\n";

#[test]
fn butterfly_jobs_and_ios_like_fio() {
    if !fio_available() {
        return;
    }
    let [(fio, _a), (ours, _b)] = both(BUTTERFLY);
    assert_eq!(jobs(&ours), jobs(&fio));
}

const WAIT_FOR: &str = "[global]\nthread\nioengine=null\nsize=256m\nbs=4k\n\n\
                        [writers]\nrw=write\nnumjobs=2\nexec_postrun=touch writers.done\n\n\
                        [readers]\nnew_group\nwait_for=writers\nrw=randread\n\
                        exec_prerun=test -e writers.done && echo started\n";

#[test]
fn wait_for_starts_the_job_after_its_waitee_as_fio_does() {
    if !fio_available() {
        return;
    }
    let [(fio, fio_dir), (ours, our_dir)] = both(WAIT_FOR);
    assert_eq!(jobs(&ours), jobs(&fio));
    assert!(jobs(&ours).iter().all(|j| j.2 == 0), "{:?}", jobs(&ours));
    for dir in [fio_dir.path(), our_dir.path()] {
        let prerun = std::fs::read_to_string(dir.join("readers.prerun.txt")).unwrap();
        assert_eq!(prerun, "started\n", "{}", dir.display());
        assert!(dir.join("writers.postrun.txt").exists());
    }
}

#[test]
fn a_failing_prerun_ends_the_job_with_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let job = WAIT_FOR.replace("wait_for=writers\n", "");
    std::fs::write(
        dir.path().join("job.fio"),
        job.replace("writers.done", "never.there"),
    )
    .unwrap();
    let run = sb_fio(dir.path(), &["job.fio"]);
    assert!(!run.success());
    common::assert_no_panic(&run.stderr);
    assert!(
        run.stderr
            .contains("exec_prerun exited with status 1 (its output is in readers.prerun.txt)"),
        "{}",
        run.stderr
    );
    // The waitee must be an earlier job of a name of its own.
    let bad = "[a]\nioengine=null\nsize=1m\nwait_for=b\n[b]\nioengine=null\nsize=1m\n";
    std::fs::write(dir.path().join("bad.fio"), bad).unwrap();
    let line = sb_fio(dir.path(), &["bad.fio"]).one_error_line();
    assert!(
        line.contains("wait_for=b: no earlier job has that name"),
        "{line}"
    );
}

/// The share of IOs issued at each queue depth, from fio's `iodepth_level`.
fn depth_share(doc: &Value, level: &str) -> f64 {
    doc["jobs"][0]["iodepth_level"][level].as_f64().unwrap()
}

#[test]
fn iodepth_low_drains_the_queue_before_filling_it_as_fio_does() {
    if !fio_available() {
        return;
    }
    let job = "[low]\nioengine=libaio\nfilename=lowfile\nsize=8m\nbs=4k\nrw=randread\n\
               iodepth=16\niodepth_low=4\n";
    let [(fio, _a), (ours, _b)] = both(job);
    assert_eq!(jobs(&ours), jobs(&fio));
    for doc in [&fio, &ours] {
        // Refilled from 4: most IOs go out at depths 4 to 15, few at a full queue.
        let low = depth_share(doc, "4") + depth_share(doc, "8");
        assert!(low > 80.0, "{}", doc["jobs"][0]["iodepth_level"]);
        assert!(
            depth_share(doc, "16") < 20.0,
            "{}",
            doc["jobs"][0]["iodepth_level"]
        );
    }
}

#[test]
fn offloaded_submission_keeps_the_rate_and_the_ios_of_fio() {
    if !fio_available() {
        return;
    }
    // fio 3.33's own offload mode does not end on this job (its submission threads wait
    // forever after the last IO), so storbench's offloaded job is held against fio's
    // inline one: the same IOs at the same rate.
    let job = "[fixed-rate-submit]\nsize=4m\nrw=read\nioengine=libaio\niodepth=32\n\
               filename=ratefile\nio_submit_mode=inline\nrate_iops=2000\n";
    let (fio, _a) = one(job, false);
    let (ours, _b) = one(&job.replace("=inline", "=offload"), true);
    assert_eq!(jobs(&ours), jobs(&fio));
    for doc in [&fio, &ours] {
        // 1024 IOs at 2000 per second.
        let ms = doc["jobs"][0]["read"]["runtime"].as_u64().unwrap();
        assert!((450..900).contains(&ms), "runtime {ms} ms");
    }
}
