//! fio's verify in mixed read/write jobs (`rw=rw`, `randrw`), against the installed fio
//! 3.33 on the same jobs: the same read and write counts; for a sequential mix the same IO
//! sequence, offsets and directions, the verify reads among them (both traced by strace);
//! for a random mix the same sequence of directions. A write lost by an nbdkit disk is
//! found by both tools after the same IO, with fio's message. Skipped with a printed
//! reason when fio 3.33, strace or nbdkit is missing.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Run, fio_available, par_each, sb_fio, system::have_tool, words};
use serde_json::Value;
use storbench_testkit::nbdkit::{self, Nbdkit};

/// A mixed job on file `f` of 256 KiB (made by the test, so neither tool lays it out).
fn job(extra: &str) -> String {
    format!("--name=m --filename=f --size=256k --bs=4k {extra}")
}

fn zeroed_file(dir: &Path) {
    std::fs::write(dir.join("f"), vec![0u8; 256 * 1024]).unwrap();
}

/// (reads, writes, read bytes, write bytes, error) of a fio-format JSON document's job.
fn counts(doc: &Value) -> (u64, u64, u64, u64, i64) {
    let j = &doc["jobs"][0];
    let n = |v: &Value| v.as_u64().unwrap();
    (
        n(&j["read"]["total_ios"]),
        n(&j["write"]["total_ios"]),
        n(&j["read"]["io_bytes"]),
        n(&j["write"]["io_bytes"]),
        j["error"].as_i64().unwrap(),
    )
}

/// The mixes: sequential and random, with and without verify_backlog, several mixes and
/// checksums.
const CASES: &[&str] = &[
    "--rw=rw --verify=crc32c",
    "--rw=rw --rwmixread=70 --verify=md5",
    "--rw=rw --verify=crc32c --verify_backlog=8",
    "--rw=rw --rwmixread=30 --verify=sha256 --verify_backlog=8 --verify_backlog_batch=3",
    "--rw=rw --verify=xxhash --verify_backlog=5 --verify_backlog_batch=7",
    "--rw=randrw --verify=crc32c",
    "--rw=randrw --rwmixread=70 --verify=sha256",
    "--rw=randrw --verify=md5 --verify_backlog=8",
    "--rw=randrw --rwmixread=25 --verify=crc32c --verify_backlog=16 --verify_backlog_batch=4",
];

#[test]
fn mixed_jobs_verify_with_fios_counts() {
    if !fio_available() {
        return;
    }
    par_each(CASES, |case| {
        let line = job(&format!("{case} --output-format=json"));
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        zeroed_file(fd.path());
        zeroed_file(sd.path());
        let theirs = common::fio(fd.path(), &words(&line)).fio_json();
        let ours = sb_fio(sd.path(), &words(&line)).json();
        assert_eq!(counts(&ours), counts(&theirs), "{case}");
        // Each write is read back once, besides the mix's own reads.
        let (reads, writes, ..) = counts(&ours);
        assert!(reads > writes && writes > 0, "{case}: {reads} {writes}");
    });
}

/// The IO on file `f` of a run traced by strace: `R`/`W` and the 4 KiB block of each
/// pread64/pwrite64, in order.
fn io_sequence(trace: &str) -> Vec<String> {
    trace
        .lines()
        .filter(|l| l.contains("</f>") || l.contains("/f>,"))
        .filter_map(|l| {
            let dir = if l.contains("pread64(") {
                "R"
            } else if l.contains("pwrite64(") {
                "W"
            } else {
                return None;
            };
            // "..., LEN, OFFSET) = N"
            let args = l.rsplit_once(") =")?.0;
            let mut it = args.rsplit(", ");
            let offset: u64 = it.next()?.trim().parse().ok()?;
            let len: u64 = it.next()?.trim().parse().ok()?;
            (len >= 4096).then(|| format!("{dir}{}", offset / 4096))
        })
        .collect()
}

/// Runs `program args` in `dir` under strace; the IO sequence on `f`.
fn traced(dir: &Path, program: &Path, args: &[&str]) -> (Run, Vec<String>) {
    let trace = dir.join("trace.txt");
    let mut c = Command::new("strace");
    c.current_dir(dir)
        .args(["-f", "-qq", "-y", "-e", "trace=pread64,pwrite64", "-o"])
        .arg(&trace)
        .arg(program)
        .args(args)
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db")
        .env("NO_COLOR", "1");
    let run = Run::of(&mut c);
    let seq = io_sequence(&std::fs::read_to_string(&trace).unwrap());
    std::fs::remove_file(trace).unwrap();
    (run, seq)
}

/// Both tools' IO sequences on the same job.
fn both_traced(line: &str) -> (Vec<String>, Vec<String>) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    zeroed_file(fd.path());
    zeroed_file(sd.path());
    let (run, theirs) = traced(fd.path(), Path::new("fio"), &words(line));
    assert!(run.success(), "fio {line}: {}", run.stderr);
    let sb = assert_cmd::cargo::cargo_bin("storbench");
    let mut args = vec!["fio", "--no-save"];
    args.extend(words(line));
    let (run, ours) = traced(sd.path(), &sb, &args);
    assert!(run.success(), "storbench {line}: {}", run.stderr);
    (theirs, ours)
}

fn strace_available() -> bool {
    let ok = have_tool("strace");
    if !ok {
        eprintln!("SKIP: strace missing");
    }
    ok && fio_available()
}

#[test]
fn a_sequential_mix_does_fios_io_in_fios_order() {
    if !strace_available() {
        return;
    }
    let cases: Vec<&&str> = CASES.iter().filter(|c| c.contains("--rw=rw ")).collect();
    par_each(&cases, |case| {
        let (theirs, ours) = both_traced(&job(&format!("{case} --size=64k")));
        assert!(theirs.len() > 16, "{case}: {theirs:?}");
        assert_eq!(ours.join(" "), theirs.join(" "), "{case}");
    });
}

#[test]
fn a_random_mix_takes_fios_directions_and_verify_reads_in_order() {
    if !strace_available() {
        return;
    }
    let cases: Vec<&&str> = CASES.iter().filter(|c| c.contains("randrw")).collect();
    par_each(&cases, |case| {
        let (theirs, ours) = both_traced(&job(&format!("{case} --size=64k")));
        // Offsets are each tool's random draws; the directions are fio's rwmix draws and
        // the verify reads its backlog and final pass.
        let dirs = |s: &[String]| s.iter().map(|x| &x[..1]).collect::<String>();
        assert_eq!(dirs(&ours), dirs(&theirs), "{case}");
        // The final pass reads the blocks back in write order (fio's list of a random
        // job with its random map), or in offset order without the map.
        let writes: Vec<&String> = ours.iter().filter(|x| x.starts_with('W')).collect();
        let tail: Vec<String> = ours[ours.len() - 4..].to_vec();
        assert!(tail.iter().all(|x| x.starts_with('R')), "{case}: {ours:?}");
        if !case.contains("backlog") {
            let order: Vec<String> = writes.iter().map(|w| w.replace('W', "R")).collect();
            let mut sorted = order.clone();
            sorted.sort_by_key(|x| x[1..].parse::<u64>().unwrap());
            sorted.dedup();
            let want = if case.contains("norandommap") {
                sorted
            } else {
                order
            };
            assert!(ours.ends_with(&want), "{case}: {ours:?}");
        }
    });
}

/// fio checks each block's seed in a mixed job without verify_backlog, replaying its
/// generator in the order it checks the blocks: without a random map that order is the
/// offsets', not the writes', and fio 3.33 reports a bad block that is not. storbench does
/// what fio does; with the random map (the default) both verify cleanly.
#[test]
fn a_random_mix_without_its_random_map_fails_as_fio_does() {
    if !fio_available() {
        return;
    }
    let line = job("--rw=randrw --norandommap --verify=crc32c --output-format=json");
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    zeroed_file(fd.path());
    zeroed_file(sd.path());
    let theirs = common::fio(fd.path(), &words(&line));
    let ours = sb_fio(sd.path(), &words(&line));
    for (tool, run) in [("fio", &theirs), ("storbench", &ours)] {
        assert!(
            run.stderr.contains("verify: bad header rand_seed "),
            "{tool}: {}",
            run.stderr
        );
        assert_eq!(run.json_any()["jobs"][0]["error"], 84, "{tool}");
    }
    // With verify_backlog fio takes the backlog in offset order and drops blocks written
    // again, which storbench does not do yet: refused in one line.
    let run = sb_fio(
        sd.path(),
        &words(&job(
            "--rw=randrw --norandommap --verify=crc32c --verify_backlog=8",
        )),
    );
    assert!(run.one_error_line().contains("random map"));
}

/// An nbdkit `sh` disk of 1 MiB in `dir` whose writes to the block at 64 KiB are lost.
fn lossy_disk(dir: &Path) -> Nbdkit {
    common::shdisk::start(
        dir,
        common::shdisk::Script {
            before_write: "if [ $4 -lt 69632 ] && [ $(($4 + $3)) -gt 65536 ]; then\n\
                 cat >/dev/null; exit 0; fi",
            ..Default::default()
        },
    )
}

/// fio's report of the bad block from "bad magic header" on, without the file's name.
fn failure(run: &Run) -> String {
    let text = format!("{}\n{}", run.stderr, run.stdout);
    let l = text
        .lines()
        .find(|l| l.contains("bad magic header"))
        .unwrap_or_else(|| panic!("no bad block reported ({:?}): {text}", run.code));
    let from = l.find("bad magic header").unwrap();
    let at = l.find(" at file ").unwrap_or(l.len());
    let offset = l.find(" offset ").unwrap_or(l.len());
    let end = l.find(", flags=").unwrap_or(l.len());
    format!("{}{}", &l[from..at], &l[offset..end])
}

#[test]
fn a_write_lost_in_a_mix_is_found_where_fio_finds_it() {
    if let Some(why) = nbdkit::unavailable() {
        eprintln!("SKIP: {why}");
        return;
    }
    if !fio_available() {
        return;
    }
    let cases = [
        "--rw=rw --verify=crc32c",
        "--rw=rw --verify=crc32c --verify_backlog=8",
        "--rw=rw --rwmixread=30 --verify=md5 --verify_backlog=4 --verify_backlog_batch=2",
    ];
    par_each(&cases, |case| {
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let line = |uri: &str| {
            format!(
                "--name=m --ioengine=nbd --uri={uri} --size=256k --bs=4k {case} --output-format=json"
            )
        };
        let theirs_srv = lossy_disk(fd.path());
        let theirs = common::fio(fd.path(), &words(&line(&theirs_srv.uri())));
        let ours_srv = lossy_disk(sd.path());
        let ours_line = line(&ours_srv.uri());
        let mut args = words(&ours_line);
        args.push("--allow-destructive");
        let ours = sb_fio(sd.path(), &args);
        assert_ne!(theirs.code, Some(0), "{case}");
        assert_eq!(ours.code, Some(1), "{case}: {}", ours.stderr);
        let want = "bad magic header 0, wanted acca offset 65536, length 4096 (requested block: offset=65536, length=4096)";
        assert_eq!(failure(&theirs), want, "{case}");
        assert_eq!(failure(&ours), want, "{case}");
        let (t, o) = (theirs.json_any(), ours.json_any());
        assert_eq!(o["jobs"][0]["error"], 84, "{case}");
        assert_eq!(t["jobs"][0]["error"], 84, "{case}");
        for d in ["read", "write"] {
            assert_eq!(
                o["jobs"][0][d]["total_ios"], t["jobs"][0][d]["total_ios"],
                "{case}: {d}s before the check that found it"
            );
        }
    });
}

/// A sequential mix's blocks carry fio's seeds (fio checks them in a mix): what one tool
/// wrote verifies in the other with `verify_only`, both directions.
#[test]
fn a_sequential_mix_written_by_either_tool_verifies_in_the_other() {
    if !fio_available() {
        return;
    }
    par_each(&["--rwmixread=50", "--rwmixread=30"], |mix| {
        let line = job(&format!("--rw=rw {mix} --verify=crc32c --size=64k"));
        let write = format!("{line} --do_verify=0");
        let check = format!("{line} --verify_only --output-format=json");
        for writer in ["fio", "storbench"] {
            let d = tempfile::tempdir().unwrap();
            zeroed_file(d.path());
            if writer == "fio" {
                assert!(common::fio(d.path(), &words(&write)).success());
                let run = sb_fio(d.path(), &words(&check));
                assert_eq!(
                    counts(&run.json()).4,
                    0,
                    "storbench after fio: {}",
                    run.stderr
                );
            } else {
                sb_fio(d.path(), &words(&write)).ok();
                let run = common::fio(d.path(), &words(&check));
                assert_eq!(counts(&run.fio_json()).4, 0, "fio after storbench");
            }
        }
    });
}
