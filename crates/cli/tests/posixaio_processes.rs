//! posixaio clones run in processes of their own, as fio's do without `thread` (glibc keeps
//! one AIO pool per process): the processes are really there, their IO and CPU come back
//! into the result, a stop sent to storbench alone ends them, and `--thread` keeps them as
//! threads.

mod common;

use std::path::Path;
use std::time::Duration;

use common::system::{spawn, wait_for};
use common::{Run, entries};

/// The processes whose parent is `pid` (from every process's stat line).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // The parent is the second field after the command, which is in parentheses.
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<i32>().ok())
                == Some(pid)
        })
        .collect()
}

fn alive(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A time-based posixaio job of two clones, in `dir`.
fn two_clones(runtime: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "fio",
        "--name=p",
        "--ioengine=posixaio",
        "--rw=randrw",
        "--bs=4k",
        "--iodepth=8",
        "--size=4m",
        "--numjobs=2",
        "--time_based",
        "--unlink=1",
        "--output-format=json",
        "--no-save",
    ]
    .map(String::from)
    .to_vec();
    args.push(format!("--runtime={runtime}"));
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Runs `args` and returns the most child processes storbench had at once, and the run.
fn run_counting_children(dir: &Path, args: &[String]) -> (usize, Run) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = spawn(dir, &args);
    let mut most = 0;
    // Until both clones are seen, or storbench has ended (a zombie until it is waited for).
    while most < 2
        && std::fs::read_to_string(format!("/proc/{}/stat", child.pid()))
            .is_ok_and(|s| !s.contains(") Z "))
    {
        most = most.max(children_of(child.pid()).len());
        std::thread::sleep(Duration::from_millis(50));
    }
    (most, child.wait_output(Duration::from_secs(30)))
}

#[test]
fn posixaio_clones_run_in_processes_whose_io_and_cpu_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let (most, run) = run_counting_children(dir.path(), &two_clones("2", &[]));
    assert_eq!(most, 2, "one process per clone: {run:?}");
    let doc = run.json_any();
    let jobs = doc["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 2, "{doc}");
    for job in jobs {
        assert_eq!(job["error"], 0, "{job}");
        for d in ["read", "write"] {
            assert!(job[d]["total_ios"].as_u64() > Some(100), "{d}: {job}");
        }
        // The child's CPU came back: its own thread's, and its AIO helpers' in sys.
        let cpu = job["usr_cpu"].as_f64().unwrap() + job["sys_cpu"].as_f64().unwrap();
        assert!(cpu > 0.0, "{job}");
        assert!(job["ctx"].as_u64() > Some(0), "{job}");
    }
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[test]
fn thread_keeps_posixaio_clones_as_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (most, run) = run_counting_children(dir.path(), &two_clones("1", &["--thread"]));
    assert_eq!(most, 0, "{run:?}");
    assert_eq!(run.json_any()["jobs"].as_array().map(Vec::len), Some(2));
}

/// A size-bound job moves exactly its size in every clone, as fio's does: nothing is lost
/// or counted twice on the way back from the clone's process.
#[test]
fn size_bound_posixaio_clones_in_processes_move_their_size() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "fio",
        "--name=w",
        "--ioengine=posixaio",
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=16",
        "--size=8m",
        "--numjobs=2",
        "--unlink=1",
        "--output-format=json",
        "--no-save",
    ];
    let run = spawn(dir.path(), &args).wait_output(Duration::from_secs(60));
    let doc = run.json_any();
    let jobs = doc["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 2, "{doc}");
    for job in jobs {
        assert_eq!(job["write"]["io_bytes"].as_u64(), Some(8 << 20), "{job}");
        assert_eq!(job["write"]["total_ios"].as_u64(), Some(2048), "{job}");
    }
}

/// SIGTERM to storbench alone (as a scheduler or `kill PID` sends it) reaches the clones'
/// processes: the run ends with what was measured, its files removed, and no process left.
#[test]
fn a_stop_sent_to_storbench_alone_ends_the_clones_processes() {
    let dir = tempfile::tempdir().unwrap();
    let args = two_clones("60", &[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = spawn(dir.path(), &args);
    let pid = child.pid();
    let forked = wait_for(Duration::from_secs(20), || children_of(pid).len() == 2);
    assert!(forked, "two clone processes");
    let clones = children_of(pid);
    std::thread::sleep(Duration::from_millis(500));
    child.signal(libc::SIGTERM);
    let run = child.wait_output(Duration::from_secs(10));
    assert_eq!(run.code, Some(143), "128 + SIGTERM: {run:?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    assert_eq!(doc["storbench"]["interrupted"], true);
    for job in doc["jobs"].as_array().unwrap() {
        assert!(job["read"]["total_ios"].as_u64() > Some(0), "{job}");
    }
    for c in clones {
        assert!(!alive(c), "clone process {c} left running");
    }
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// fio's normal output names the clones as processes, each with its own `pid=`.
#[test]
fn normal_output_says_processes_with_each_clones_pid() {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = two_clones("1", &[])
        .into_iter()
        .filter(|a| a != "--output-format=json")
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = spawn(dir.path(), &args);
    let parent = child.pid();
    let run = child.wait_output(Duration::from_secs(30));
    let out = run.ok();
    assert!(out.contains("\nStarting 2 processes\n"), "{out}");
    let pids: Vec<i32> = out
        .lines()
        .filter_map(|l| l.split(" pid=").nth(1)?.split(':').next()?.parse().ok())
        .collect();
    assert_eq!(pids.len(), 2, "{out}");
    assert_ne!(pids[0], pids[1], "{out}");
    assert!(!pids.contains(&parent), "{out}");
}

/// A group with one posixaio job on threads (`thread`) keeps all its posixaio clones on
/// threads: a thread using glibc's pool beside a fork could leave the child a lock no
/// thread of its will ever release. Once the pool is in use, a later group stays on
/// threads too, and the `Starting` line says what ran.
#[test]
fn a_group_with_a_posixaio_thread_keeps_every_posixaio_clone_on_threads() {
    let dir = tempfile::tempdir().unwrap();
    let job = |name: &str| -> Vec<String> {
        [
            format!("--name={name}"),
            "--ioengine=posixaio".into(),
            "--rw=randread".into(),
            "--bs=4k".into(),
            "--size=2m".into(),
            "--time_based".into(),
            "--runtime=1".into(),
            "--unlink=1".into(),
        ]
        .to_vec()
    };
    let mut args: Vec<String> = vec!["fio".into(), "--no-save".into()];
    args.extend(job("t"));
    args.push("--thread".into());
    args.extend(job("p"));
    args.extend(job("later"));
    args.push("--stonewall".into());
    let (most, run) = run_counting_children(dir.path(), &args);
    assert_eq!(most, 0, "{run:?}");
    let out = run.ok();
    assert!(out.contains("\nStarting 3 threads\n"), "{out}");
    assert_eq!(out.matches("err= 0").count(), 3, "{out}");
}
