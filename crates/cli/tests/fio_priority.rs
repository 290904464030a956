//! fio's `nice`, `prio` and `prioclass` against the installed fio 3.33: the same job runs
//! its IO at the CPU and IO priority asked for in both tools (seen in /proc and with
//! ioprio_get while it runs) with the same IO count, and what an unprivileged user may
//! not take (a negative nice, the real-time IO class) is refused with the system's reason.
//! Skipped with a reason when fio 3.33 is missing.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::system::wait_for;
use common::{Run, fio_available, storbench, words};

const JOB: &str = "--name=n --ioengine=null --rw=read --bs=4k --size=64m --time_based \
                   --runtime=2 --nice=7 --output-format=json";

/// The nice values of every thread of every process named `comm`, read from /proc.
fn nice_of_threads(comm: &str) -> Vec<i64> {
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        let named = std::fs::read_to_string(p.path().join("comm"));
        if named.map_or(true, |n| n.trim_end() != comm) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: the nice value is field 19, the 17th after ")".
            let nice = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(16))
                .and_then(|n| n.parse::<i64>().ok());
            found.extend(nice);
        }
    }
    found
}

/// Runs `cmd` while watching for a thread of `comm` at nice 7; whether one was seen, and
/// the run.
fn run_watching(mut cmd: Command, comm: &str) -> (bool, Run) {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let seen = wait_for(Duration::from_secs(5), || {
        nice_of_threads(comm).contains(&7)
    });
    let out = child.wait_with_output().expect("ends");
    (seen, Run::from(out))
}

fn read_ios(run: &Run) -> u64 {
    let start = run.stdout.find("{\n").expect("JSON");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout[start..]).unwrap();
    doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap()
}

#[test]
fn nice_runs_the_io_at_the_value_asked_for_as_fio_does() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let size_bound = "--name=n --ioengine=null --rw=read --bs=4k --size=64m --nice=7 \
                      --output-format=json";
    let mut fio = Command::new("fio");
    fio.current_dir(dir.path()).args(words(JOB));
    let (fio_seen, fio_run) = run_watching(fio, "fio");
    assert!(fio_run.success(), "{}", fio_run.stderr);
    assert!(fio_seen, "fio never ran a thread at nice 7");
    let mut ours = storbench();
    ours.current_dir(dir.path())
        .arg("fio")
        .arg("--no-save")
        .args(words(JOB));
    let (seen, run) = run_watching(ours, "storbench");
    assert!(run.success(), "{}", run.stderr);
    assert!(seen, "storbench never ran a thread at nice 7");
    // The same size-bound job does the same IOs in both.
    let theirs = common::fio(dir.path(), &words(size_bound));
    let ours = common::sb_fio(dir.path(), &words(size_bound));
    assert_eq!(read_ios(&ours), read_ios(&theirs));
    assert_eq!(read_ios(&ours), 16384);
}

#[test]
fn a_negative_nice_without_the_privilege_is_refused_with_the_systems_reason() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        eprintln!("skipped: needs root and setpriv to run as an unprivileged user");
        return;
    }
    let dir = common::open_tempdir();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["fio", "--no-save"])
        .args(words(
            "--name=n --ioengine=null --rw=read --bs=4k --size=1m --nice=-5",
        ))
        .env("NO_COLOR", "1")
        .current_dir(dir.path());
    let run = Run::of(&mut c);
    assert!(!run.success());
    common::assert_no_panic(&run.stderr);
    assert!(
        run.stderr.lines().any(|l| l.starts_with("storbench: ")
            && l.contains("nice -5: Operation not permitted")
            && l.ends_with("a negative nice value needs root or CAP_SYS_NICE")),
        "{}",
        run.stderr
    );
    // A value out of fio's range is refused while reading the job.
    let bad = common::sb_fio(
        dir.path(),
        &words("--name=n --ioengine=null --size=1m --nice=20"),
    );
    let line = bad.one_error_line();
    assert!(line.contains("20 is out of range (-20 to 19)"), "{line}");
}

/// The IO priorities (ioprio_get) of every thread of every process named `comm`.
fn ioprio_of_threads(comm: &str) -> Vec<i64> {
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        let named = std::fs::read_to_string(p.path().join("comm"));
        if named.map_or(true, |n| n.trim_end() != comm) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            // SAFETY: ioprio_get takes two integers (IOPRIO_WHO_PROCESS, a thread id).
            let v = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, tid) };
            if v >= 0 {
                found.push(v);
            }
        }
    }
    found
}

#[test]
fn prio_and_prioclass_set_the_io_priority_as_fio_does() {
    if !fio_available() {
        return;
    }
    // Best-effort (2) at level 6: 2 << 13 | 6.
    const WANT: i64 = (2 << 13) | 6;
    let dir = tempfile::tempdir().unwrap();
    let job = "--name=p --ioengine=null --rw=read --bs=4k --size=64m --time_based --runtime=2 \
               --prioclass=2 --prio=6 --output-format=json";
    for (tool, comm) in [("fio", "fio"), ("storbench", "storbench")] {
        let mut c = if tool == "fio" {
            Command::new("fio")
        } else {
            let mut c = storbench();
            c.arg("fio").arg("--no-save");
            c
        };
        c.current_dir(dir.path()).args(words(job));
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let seen = wait_for(Duration::from_secs(5), || {
            ioprio_of_threads(comm).contains(&WANT)
        });
        let run = Run::from(child.wait_with_output().expect("ends"));
        assert!(run.success(), "{tool}: {}", run.stderr);
        assert!(seen, "{tool} never ran a thread at IO priority {WANT}");
    }
    let size_bound = "--name=p --ioengine=null --rw=read --bs=4k --size=16m --prio=3 \
                      --output-format=json";
    let theirs = common::fio(dir.path(), &words(size_bound));
    let ours = common::sb_fio(dir.path(), &words(size_bound));
    assert_eq!(read_ios(&ours), read_ios(&theirs));
}

#[test]
fn the_real_time_io_class_without_the_privilege_is_refused_with_the_reason() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        eprintln!("skipped: needs root and setpriv to run as an unprivileged user");
        return;
    }
    let dir = common::open_tempdir();
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["fio", "--no-save"])
        .args(words(
            "--name=n --ioengine=null --rw=read --bs=4k --size=1m --prioclass=1",
        ))
        .env("NO_COLOR", "1")
        .current_dir(dir.path());
    let run = Run::of(&mut c);
    assert!(!run.success());
    common::assert_no_panic(&run.stderr);
    assert!(
        run.stderr.lines().any(|l| l.starts_with("storbench: ")
            && l.ends_with("the real-time IO class needs CAP_SYS_ADMIN")),
        "{}",
        run.stderr
    );
    let bad = common::sb_fio(
        dir.path(),
        &words("--name=n --ioengine=null --size=1m --prio=8"),
    );
    let line = bad.one_error_line();
    assert!(line.contains("not a whole number from 0 to 7"), "{line}");
}
