//! fio's verify with trims against the installed fio 3.33 on the same jobs: `trimwrite`,
//! `randtrimwrite` and `randtrim` with verify, and fio's trim backlog (`trim_percentage`,
//! `trim_backlog`, `trim_backlog_batch`, `trim_verify_zero`). On a loop device the test
//! sets up (and removes) both tools do the same reads, writes and trims, in the same order
//! for a sequential job (traced by strace); on a regular file storbench punches holes
//! where fio's trims fail, and still counts as fio does on the device. A trimmed block
//! that reads back non-zero (an nbdkit `sh` disk that ignores trims) is reported by both
//! with fio's message. Skipped with a printed reason when root, losetup, fio 3.33, strace
//! or nbdkit is missing.

mod common;

use std::path::Path;
use std::process::Command;

use common::system::{LoopDev, have_tool};
use common::{Run, fio_available, sb_fio, words};
use serde_json::Value;
use storbench_testkit::nbdkit::{self, Nbdkit};

/// (reads, writes, trims, error) of a fio-format JSON document's job.
fn counts(doc: &Value) -> (u64, u64, u64, i64) {
    let j = &doc["jobs"][0];
    let n = |v: &Value| v.as_u64().unwrap();
    (
        n(&j["read"]["total_ios"]),
        n(&j["write"]["total_ios"]),
        n(&j["trim"]["total_ios"]),
        j["error"].as_i64().unwrap(),
    )
}

/// The trim jobs, with what fio 3.33 does on a 64 KiB region: (reads, writes, trims).
const CASES: &[(&str, (u64, u64, u64))] = &[
    ("--rw=trimwrite --verify=crc32c", (16, 16, 16)),
    ("--rw=randtrimwrite --verify=md5", (16, 16, 16)),
    ("--rw=randtrim --verify=crc32c", (0, 0, 16)),
    (
        "--rw=trimwrite --verify=crc32c --trim_percentage=50 --trim_backlog=4",
        (16, 16, 21),
    ),
    (
        "--rw=trimwrite --verify=sha256 --trim_percentage=50 --trim_backlog=4 --trim_verify_zero=0",
        (11, 16, 21),
    ),
    (
        "--rw=randtrimwrite --verify=crc32c --trim_percentage=30 --trim_backlog=2 --trim_backlog_batch=3",
        (16, 16, 17),
    ),
    (
        "--rw=trimwrite --verify=crc32c --trim_percentage=100 --trim_backlog=3 --trim_backlog_batch=1",
        (16, 16, 32),
    ),
    (
        "--rw=trimwrite --verify=crc32c --trim_percentage=50 --trim_backlog=4 --verify_backlog=8",
        (16, 16, 20),
    ),
];

fn job(target: &str, case: &str) -> String {
    format!("--name=t --filename={target} --size=64k --bs=4k {case} --output-format=json")
}

/// The IO on `target` of a run traced by strace: `R`/`W`/`T` and the 4 KiB block of each
/// pread64, pwrite64 and BLKDISCARD, in order.
fn io_sequence(trace: &str, target: &str) -> Vec<String> {
    let tag = format!("<{target}>");
    trace
        .lines()
        .filter(|l| l.contains(&tag))
        .filter_map(|l| {
            if let Some(range) = l.split("BLKDISCARD, [").nth(1) {
                let offset: u64 = range.split(',').next()?.trim().parse().ok()?;
                return Some(format!("T{}", offset / 4096));
            }
            let dir = if l.contains("pread64(") { "R" } else { "W" };
            let args = l.rsplit_once(") =")?.0;
            let mut it = args.rsplit(", ");
            let offset: u64 = it.next()?.trim().parse().ok()?;
            let len: u64 = it.next()?.trim().parse().ok()?;
            (len >= 4096).then(|| format!("{dir}{}", offset / 4096))
        })
        .collect()
}

/// Runs `program args` in `dir` under strace; its result and IO sequence on `target`.
fn traced(dir: &Path, target: &str, program: &Path, args: &[&str]) -> (Run, Vec<String>) {
    let trace = dir.join("trace.txt");
    let mut c = Command::new("strace");
    c.current_dir(dir)
        .args([
            "-f",
            "-qq",
            "-y",
            "-e",
            "trace=pread64,pwrite64,ioctl",
            "-o",
        ])
        .arg(&trace)
        .arg(program)
        .args(args)
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db")
        .env("NO_COLOR", "1");
    let run = Run::of(&mut c);
    let seq = io_sequence(&std::fs::read_to_string(&trace).unwrap(), target);
    std::fs::remove_file(trace).unwrap();
    (run, seq)
}

fn loop_available() -> bool {
    if !fio_available() || !LoopDev::available() {
        return false;
    }
    let ok = have_tool("strace");
    if !ok {
        eprintln!("SKIP: strace missing");
    }
    ok
}

#[test]
fn trims_verify_as_fio_on_a_loop_device() {
    if !loop_available() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dev = LoopDev::new(d.path(), 1 << 20);
    let sb = assert_cmd::cargo::cargo_bin("storbench");
    // One device, one job at a time: each tool's job writes before it reads.
    for (case, want) in CASES {
        let line = job(&dev.dev, case);
        let (theirs, fio_seq) = traced(d.path(), &dev.dev, Path::new("fio"), &words(&line));
        let mut args = vec!["fio", "--no-save", "--allow-destructive"];
        args.extend(words(&line));
        let (ours, sb_seq) = traced(d.path(), &dev.dev, &sb, &args);
        let (t, o) = (counts(&theirs.json_any()), counts(&ours.json_any()));
        assert_eq!(
            t,
            (want.0, want.1, want.2, 0),
            "fio {case}: {}",
            theirs.stderr
        );
        assert_eq!(o, t, "{case}: {}", ours.stderr);
        if case.contains("--rw=trimwrite") {
            // Sequential: the same blocks in the same order, backlog trims and verify
            // reads among them.
            assert_eq!(sb_seq.join(" "), fio_seq.join(" "), "{case}");
        } else {
            let dirs = |s: &[String]| s.iter().map(|x| &x[..1]).collect::<String>();
            assert_eq!(dirs(&sb_seq), dirs(&fio_seq), "{case}");
        }
    }
}

#[test]
fn on_a_file_storbench_punches_holes_and_counts_as_fio_on_a_device() {
    if !fio_available() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("f"), vec![0u8; 64 * 1024]).unwrap();
    for (case, want) in CASES {
        let run = sb_fio(d.path(), &words(&job("f", case)));
        assert_eq!(
            counts(&run.json()),
            (want.0, want.1, want.2, 0),
            "{case}: {}",
            run.stderr
        );
    }
    // fio's sync engines trim with BLKDISCARD, which a regular file refuses.
    let run = common::fio(d.path(), &words(&job("f", CASES[0].0)));
    assert_eq!(counts(&run.json_any()).3, 25, "{}", run.stderr);
}

/// An nbdkit `sh` disk of 1 MiB in `dir` that accepts trims and ignores them.
fn trim_ignoring_disk(dir: &Path) -> Nbdkit {
    common::shdisk::start(
        dir,
        common::shdisk::Script {
            also_can: "|can_trim|trim",
            ..Default::default()
        },
    )
}

/// fio's line of a trimmed block that was not zero, from " offset " on (each tool names
/// the export its own way).
fn trim_failure(run: &Run) -> String {
    let text = format!("{}\n{}", run.stderr, run.stdout);
    let l = text
        .lines()
        .find(|l| l.contains("trim: verify failed"))
        .unwrap_or_else(|| panic!("no trimmed block reported ({:?}): {text}", run.code));
    l[l.find(" offset ").unwrap()..].to_string()
}

#[test]
fn a_trimmed_block_that_reads_back_is_reported_as_fio_reports_it() {
    if let Some(why) = nbdkit::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    if !fio_available() {
        return;
    }
    // Found by verify_backlog during the writes (fio's nbd engine queues its IO, and a
    // queued engine's budget in fio counts the backlog's trims too).
    let case =
        "--rw=trimwrite --verify=crc32c --trim_percentage=50 --trim_backlog=4 --verify_backlog=8";
    let line = |uri: &str| {
        format!(
            "--name=t --ioengine=nbd --uri={uri} --size=64k --bs=4k {case} --output-format=json"
        )
    };
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let theirs_srv = trim_ignoring_disk(fd.path());
    let theirs = common::fio(fd.path(), &words(&line(&theirs_srv.uri())));
    let ours_srv = trim_ignoring_disk(sd.path());
    let ours_line = line(&ours_srv.uri());
    let mut args = words(&ours_line);
    args.push("--allow-destructive");
    let ours = sb_fio(sd.path(), &args);
    assert_ne!(theirs.code, Some(0));
    assert_eq!(ours.code, Some(1), "{}", ours.stderr);
    let want = " offset 0, length 4096, block offset 0";
    assert_eq!(trim_failure(&theirs), want);
    assert_eq!(trim_failure(&ours), want);
    let (t, o) = (counts(&theirs.json_any()), counts(&ours.json_any()));
    assert_eq!(t, (1, 8, 12, 84), "fio");
    assert_eq!(o, t);
}

#[test]
fn trim_options_fio_cannot_run_are_one_line_errors() {
    let d = tempfile::tempdir().unwrap();
    for (bad, says) in [
        (
            "--rw=write --verify=crc32c --trim_percentage=10 --trim_backlog=4",
            "fio 3.33 aborts",
        ),
        ("--rw=trimwrite --trim_percentage=10", "needs verify="),
        (
            "--rw=trimwrite --verify=crc32c --trim_percentage=101",
            "above 100",
        ),
        (
            "--rw=randtrimwrite --verify=crc32c --experimental_verify=1",
            "fails on the first block",
        ),
    ] {
        let run = sb_fio(d.path(), &words(&job("f", bad)));
        let line = run.one_error_line();
        assert!(line.contains(says), "{bad}: {line}");
    }
    assert!(!d.path().join("f").exists(), "nothing written");
}
