//! fio's error options against real failing IO: nbdkit serves a disk (its `sh` plugin,
//! started by each test and stopped by PID) whose blocks in [`BAD`] fail every read and
//! write with EIO, or whose writes there are lost. fio 3.33's own nbd engine and storbench
//! run the same job on it: `continue_on_error`, `ignore_error`, `error_dump` and
//! `verify_backlog` give the same counts, errors and exit status. Skipped with a printed
//! reason when nbdkit or fio 3.33 is missing.

mod common;

use std::path::Path;

use common::{Run, fio_available, sb_fio, words};
use serde_json::Value;
use storbench_testkit::nbdkit::{self, Nbdkit};

/// The failing range: two 4 KiB blocks at 64 KiB.
const BAD: (u64, u64) = (65536, 73728);

fn both_available() -> bool {
    if let Some(why) = nbdkit::unavailable() {
        eprintln!("SKIP: {why}");
        return false;
    }
    fio_available()
}

/// What the disk does with IO that touches [`BAD`].
#[derive(Clone, Copy)]
enum Fault {
    /// Reads and writes fail with EIO.
    Eio,
    /// Writes succeed and are dropped (a lost write); reads work.
    LostWrite,
}

/// An nbdkit `sh` plugin serving a 1 MiB image in `dir` with `fault` in [`BAD`].
fn faulty_disk(dir: &Path, fault: Fault) -> Nbdkit {
    let hits = format!("[ $4 -lt {} ] && [ $(($4 + $3)) -gt {} ]", BAD.1, BAD.0);
    let (read_fault, write_fault) = match fault {
        Fault::Eio => (
            format!("if {hits}; then echo 'EIO bad block' >&2; exit 1; fi"),
            format!("if {hits}; then echo 'EIO bad block' >&2; exit 1; fi"),
        ),
        Fault::LostWrite => (
            String::new(),
            format!("if {hits}; then cat >/dev/null; exit 0; fi"),
        ),
    };
    common::shdisk::start(
        dir,
        common::shdisk::Script {
            before_read: &read_fault,
            before_write: &write_fault,
            ..Default::default()
        },
    )
}

fn line(uri: &str, rest: &str) -> String {
    format!("--name=e --ioengine=nbd --uri={uri} --size=256k --bs=4k {rest}")
}

/// Each tool on a fresh faulty disk of its own.
fn both(fault: Fault, rest: &str) -> (Run, Run) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let theirs_srv = faulty_disk(fd.path(), fault);
    let theirs = common::fio(fd.path(), &words(&line(&theirs_srv.uri(), rest)));
    let ours_srv = faulty_disk(sd.path(), fault);
    let ours_line = line(&ours_srv.uri(), rest);
    let mut args = words(&ours_line);
    args.push("--allow-destructive");
    let ours = sb_fio(sd.path(), &args);
    (theirs, ours)
}

/// The figures fio's JSON shows of a job's errors and IO.
fn error_figures(doc: &Value) -> Vec<(String, Value)> {
    let j = &doc["jobs"][0];
    let mut v: Vec<(String, Value)> = ["error", "total_err", "first_error"]
        .iter()
        .map(|k| (k.to_string(), j[*k].clone()))
        .collect();
    for d in ["read", "write"] {
        for k in ["total_ios", "io_bytes"] {
            v.push((format!("{d}.{k}"), j[d][k].clone()));
        }
    }
    v
}

#[test]
fn errors_gone_past_are_counted_as_fio_counts_them() {
    if !both_available() {
        return;
    }
    for rest in [
        "--rw=read --continue_on_error=read",
        "--rw=read --continue_on_error=all",
        "--rw=read --continue_on_error=1",
        "--rw=write --continue_on_error=io",
        "--rw=write --ignore_error=,EIO",
        "--rw=randread --iodepth=4 --continue_on_error=io",
    ] {
        let rest = format!("{rest} --output-format=json");
        let (theirs, ours) = both(Fault::Eio, &rest);
        assert_eq!(ours.code, Some(0), "{rest}: {}", ours.stderr);
        assert_eq!(theirs.code, Some(0), "{rest}: {}", theirs.stderr);
        let (t, o) = (theirs.json_any(), ours.json_any());
        assert_eq!(error_figures(&o), error_figures(&t), "{rest}");
        assert_eq!(o["jobs"][0]["total_err"], 2, "{rest}");
        assert_eq!(o["jobs"][0]["first_error"], 5, "{rest}");
    }
}

#[test]
fn errors_not_gone_past_stop_the_job_as_in_fio() {
    if !both_available() {
        return;
    }
    for rest in [
        "--rw=read",
        "--rw=read --continue_on_error=none",
        "--rw=read --continue_on_error=0",
        "--rw=read --continue_on_error=write",
        "--rw=write --continue_on_error=read",
        // The write list replaces fio's default (EIO, EILSEQ): EIO now stops writes.
        "--rw=write --continue_on_error=write --ignore_error=,ENOSPC",
        "--rw=read --ignore_error=28:-61",
    ] {
        let rest = format!("{rest} --output-format=json");
        let (theirs, ours) = both(Fault::Eio, &rest);
        assert_ne!(theirs.code, Some(0), "fio: {rest}");
        assert_eq!(ours.code, Some(1), "{rest}: {}", ours.stderr);
        let (t, o) = (theirs.json_any(), ours.json_any());
        assert_eq!(o["jobs"][0]["error"], 5, "{rest}: {o}");
        assert_eq!(t["jobs"][0]["error"], 5, "{rest}");
        // fio shows the counts whenever the job may go past some error.
        for k in ["total_err", "first_error"] {
            assert_eq!(
                o["jobs"][0].get(k).is_some(),
                t["jobs"][0].get(k).is_some(),
                "{k}: {rest}"
            );
        }
        assert!(
            ours.stderr.contains("EIO") || ours.stderr.contains("Input/output error"),
            "{}",
            ours.stderr
        );
        // The IO before the bad block was done and is reported.
        assert_eq!(
            o["jobs"][0]["read"]["io_bytes"].as_u64().unwrap()
                + o["jobs"][0]["write"]["io_bytes"].as_u64().unwrap(),
            BAD.0,
            "{rest}"
        );
    }
}

/// fio's "fio: io_u error on file F: TEXT: DIR offset=N, buflen=N" lines, without the
/// file's name (each tool names the export its own way).
fn dump_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("fio: io_u error on file "))
        .map(|l| l.split_once(": ").map_or(l, |(_, rest)| rest).to_string())
        .map(|l| l.split_once(": ").map_or(l.clone(), |(_, r)| r.to_string()))
        .collect()
}

#[test]
fn error_dump_logs_each_error_as_fio_does() {
    if !both_available() {
        return;
    }
    let (theirs, ours) = both(
        Fault::Eio,
        "--rw=read --continue_on_error=read --error_dump=1",
    );
    let expected = vec![
        "Input/output error: read offset=65536, buflen=4096".to_string(),
        "Input/output error: read offset=69632, buflen=4096".to_string(),
    ];
    assert_eq!(dump_lines(&theirs.stderr), expected, "{}", theirs.stderr);
    assert_eq!(dump_lines(&ours.stderr), expected, "{}", ours.stderr);
    assert!(
        ours.stdout
            .contains("errors    : total=2, first_error=5/<Input/output error>"),
        "{}",
        ours.stdout
    );
    assert!(
        theirs
            .stdout
            .contains("errors    : total=2, first_error=5/<Input/output error>")
    );
    // Without error_dump, errors gone past are not logged; err= shows the first.
    let (_, quiet) = both(Fault::Eio, "--rw=read --continue_on_error=read");
    assert!(dump_lines(&quiet.stderr).is_empty(), "{}", quiet.stderr);
    assert!(quiet.stdout.contains("err= 5 ()"), "{}", quiet.stdout);
}

#[test]
fn bad_error_options_are_one_line_errors() {
    let d = tempfile::tempdir().unwrap();
    for (opt, says) in [
        ("--continue_on_error=sometimes", "continue_on_error"),
        ("--ignore_error=EILSEQ", "unknown error EILSEQ"),
        ("--ignore_error=abc", "unknown error abc"),
        ("--ignore_error=5,5,5,5", "at most three"),
        ("--exit_what=nothing", "exit_what"),
    ] {
        let run = sb_fio(d.path(), &["--name=x", "--ioengine=null", "--size=1m", opt]);
        assert_eq!(run.code, Some(1), "{opt}");
        assert_eq!(
            run.stderr.trim().lines().count(),
            1,
            "{opt}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(says), "{opt}: {}", run.stderr);
    }
}

/// fio's message of a bad block: the line with "verify", from "bad magic" on (each tool
/// names the export its own way).
fn verify_failure(run: &Run) -> String {
    let text = format!("{}\n{}", run.stderr, run.stdout);
    let l = text
        .lines()
        .find(|l| l.contains("bad magic header"))
        .unwrap_or_else(|| panic!("no bad block reported ({:?}): {text}", run.code));
    let from = l.find("bad magic header").unwrap_or(0);
    let at = l.find(" at file ").unwrap_or(l.len());
    let offset = l.find(" offset ").unwrap_or(l.len());
    format!("{}{}", &l[from..at], &l[offset..])
}

#[test]
fn a_lost_write_is_found_by_verify_backlog_where_fio_finds_it() {
    if !both_available() {
        return;
    }
    let rest = "--rw=write --verify=crc32c --verify_backlog=8 --output-format=json";
    let (theirs, ours) = both(Fault::LostWrite, rest);
    assert_ne!(theirs.code, Some(0));
    assert_eq!(ours.code, Some(1), "{}", ours.stderr);
    let want = "bad magic header 0, wanted acca offset 65536, length 4096 (requested block: offset=65536, length=4096)";
    assert_eq!(verify_failure(&theirs), want);
    assert_eq!(verify_failure(&ours), want);
    // Found during the writes: the blocks after the lost ones were not all written.
    let (t, o) = (theirs.json_any(), ours.json_any());
    assert_eq!(o["jobs"][0]["error"], 84);
    assert_eq!(t["jobs"][0]["error"], 84);
    assert_eq!(
        o["jobs"][0]["write"]["total_ios"], t["jobs"][0]["write"]["total_ios"],
        "writes before the check that found it"
    );
    assert!(o["jobs"][0]["write"]["io_bytes"].as_u64() < Some(256 * 1024));
}

#[test]
fn verify_errors_gone_past_are_counted_and_logged() {
    if !both_available() {
        return;
    }
    let rest = "--rw=write --verify=crc32c --verify_backlog=8 --continue_on_error=verify --output-format=json";
    let (theirs, ours) = both(Fault::LostWrite, rest);
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    assert_eq!(theirs.code, Some(0), "{}", theirs.stderr);
    let (t, o) = (theirs.json_any(), ours.json_any());
    assert_eq!(error_figures(&o), error_figures(&t));
    assert_eq!(o["jobs"][0]["total_err"], 2);
    assert_eq!(o["jobs"][0]["first_error"], 84);
    assert_eq!(verify_failure(&ours), verify_failure(&theirs));
}

/// (job runtime ms, bytes read) of each job of a fio-format JSON document, by name; a
/// job that never ran may be left out.
fn runtimes(doc: &Value) -> std::collections::BTreeMap<String, (u64, u64)> {
    doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let n = |v: &Value| v.as_u64().unwrap_or(0);
            (
                j["jobname"].as_str().unwrap().to_string(),
                (n(&j["job_runtime"]), n(&j["read"]["io_bytes"])),
            )
        })
        .collect()
}

#[test]
fn exit_what_ends_the_jobs_fio_ends() {
    if !fio_available() {
        return;
    }
    // a ends at once with exitall; b (another group of the same batch) would run 3 s;
    // c runs after a stonewall.
    for what in ["group", "stonewall", "all"] {
        let line = format!(
            "--output-format=json --ioengine=null --name=a --size=64m --exitall \
             --exit_what={what} --name=b --new_group --time_based --runtime=3 --size=1m \
             --name=c --stonewall --size=16m"
        );
        let d = tempfile::tempdir().unwrap();
        for (tool, doc) in [
            ("fio", common::fio(d.path(), &words(&line)).fio_json()),
            ("storbench", sb_fio(d.path(), &words(&line)).json()),
        ] {
            let jobs = runtimes(&doc);
            let b_ran_out = jobs["b"].0 >= 2500;
            assert_eq!(b_ran_out, what == "group", "{tool} {what}: {jobs:?}");
            let c_bytes = jobs.get("c").map_or(0, |c| c.1);
            let c_ran = c_bytes == 16 << 20;
            assert_eq!(c_ran, what != "all", "{tool} {what}: {jobs:?}");
        }
    }
}
