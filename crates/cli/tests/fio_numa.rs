//! fio's `numa_cpu_nodes` and `numa_mem_policy` against the installed fio 3.33, on a job
//! file of fio's numa example's shape: on the host's node 0 both tools run the jobs with
//! the same IOs, and a node the host does not have ends the job with that reason in one
//! line. Skipped with a reason when fio 3.33 is missing.

mod common;

use common::{fio_available, sb_fio};
use serde_json::Value;

const NUMA: &str = "[global]\nioengine=null\nrw=randread\nbs=512K\nsize=64m\n\n\
                    [job1]\nnuma_cpu_nodes=0\nnuma_mem_policy=bind:0\n\n\
                    [job2]\nnuma_cpu_nodes=all\nnuma_mem_policy=interleave:all\n\n\
                    [job3]\nnuma_mem_policy=prefer:0\n\n[job4]\nnuma_mem_policy=local\n";

fn ios(doc: &Value) -> Vec<(String, u64, u64)> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["error"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn numa_placement_on_the_hosts_node_runs_the_ios_fio_runs() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("numa.fio"), NUMA).unwrap();
    let args = ["--output-format=json", "numa.fio"];
    let fio = common::fio(dir.path(), &args).fio_json();
    let ours = sb_fio(dir.path(), &args).json();
    assert_eq!(ios(&ours), ios(&fio));
    assert!(ios(&ours).iter().all(|j| j.1 == 0 && j.2 == 128));
}

#[test]
fn a_node_the_host_lacks_is_refused_with_that_reason() {
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .count()
        })
        .unwrap_or(1);
    let missing = nodes + 63;
    let dir = tempfile::tempdir().unwrap();
    for (opt, first) in [
        (format!("--numa_cpu_nodes=0-{missing}"), nodes),
        (format!("--numa_mem_policy=bind:{missing}"), missing),
    ] {
        let run = sb_fio(
            dir.path(),
            &["--name=n", "--ioengine=null", "--size=1m", &opt],
        );
        let line = run.one_error_line();
        assert!(
            line.contains(&format!(
                "NUMA node {first} does not exist (this host has node 0"
            )),
            "{line}"
        );
    }
    // A policy fio does not know is refused while reading the job.
    let line = sb_fio(
        dir.path(),
        &[
            "--name=n",
            "--ioengine=null",
            "--size=1m",
            "--numa_mem_policy=near:0",
        ],
    )
    .one_error_line();
    assert!(line.contains("'near' is not a memory policy"), "{line}");
}
