//! fio's data verification against the installed fio 3.33: blocks storbench writes with
//! each verify type verify in fio (`--verify_only`), blocks fio writes verify in
//! storbench, a corrupted block is reported at fio's offset with fio's message, and
//! verify options storbench cannot honour are refused in one line. Skipped with a reason
//! when fio 3.33 is missing.

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;

use common::{Run, fio, fio_available, par_each, sb_fio, words};

const TYPES: &[&str] = &[
    "md5",
    "crc64",
    "crc32",
    "crc32c",
    "crc32c-intel",
    "crc16",
    "crc7",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
];

/// A job line writing (or with `--verify_only`, checking) file `f` of 256 KiB.
fn job(extra: &str) -> String {
    format!("--name=v --filename=f --size=256k {extra}")
}

/// Asserts a verify-only run found every block good.
fn verified(tool: &str, run: &Run, what: &str) {
    assert!(
        run.success() && !run.stderr.contains("verify") && !run.stdout.contains("verify:"),
        "{tool} did not verify {what} ({:?}):\nstdout: {}\nstderr: {}",
        run.code,
        run.stdout,
        run.stderr
    );
}

fn flip(path: &Path, offset: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, offset).unwrap();
    f.write_all_at(&[b[0] ^ 0x5a], offset).unwrap();
}

/// Each case: the verify options and the write pattern.
fn cases() -> Vec<String> {
    let mut v: Vec<String> = TYPES
        .iter()
        .map(|t| format!("--rw=write --bs=4k --verify={t}"))
        .collect();
    v.push("--rw=randwrite --bs=8k --verify=crc32c --verify_interval=2k".into());
    v.push("--rw=write --bs=16k --verify=md5 --verify_offset=1k".into());
    v.push("--rw=write --bs=4k --verify=pattern --verify_pattern=0xdeadbeef".into());
    v.push("--rw=write --bs=4k --verify=meta --verify_pattern=\"ab\"%o".into());
    v.push("--rw=write --bs=4k --verify_pattern=0x1234".into());
    v
}

#[test]
fn blocks_storbench_writes_verify_in_fio() {
    if !fio_available() {
        return;
    }
    par_each(&cases(), |case| {
        let d = tempfile::tempdir().unwrap();
        let line = job(case);
        sb_fio(d.path(), &words(&format!("{line} --do_verify=0"))).ok();
        let run = fio(d.path(), &words(&format!("{line} --verify_only")));
        verified("fio", &run, case);
    });
}

#[test]
fn blocks_fio_writes_verify_in_storbench() {
    if !fio_available() {
        return;
    }
    par_each(&cases(), |case| {
        let d = tempfile::tempdir().unwrap();
        let line = job(case);
        let w = fio(d.path(), &words(&format!("{line} --do_verify=0")));
        assert!(w.success(), "fio {case}: {}", w.stderr);
        let run = sb_fio(d.path(), &words(&format!("{line} --verify_only")));
        verified("storbench", &run, case);
        // A read job with verify checks every read, as fio's does.
        let read = case
            .replace("--rw=randwrite", "--rw=randread")
            .replace("--rw=write", "--rw=read");
        let run = sb_fio(d.path(), &words(&job(&read)));
        verified("storbench (read job)", &run, &read);
    });
}

#[test]
fn write_and_verify_reads_everything_back_as_fio_counts_it() {
    if !fio_available() {
        return;
    }
    let line = job("--rw=randwrite --bs=4k --verify=sha256 --output-format=json");
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let theirs = fio(fd.path(), &words(&line)).fio_json();
    let ours = sb_fio(sd.path(), &words(&line)).json();
    for doc in [&theirs, &ours] {
        let j = &doc["jobs"][0];
        assert_eq!(j["error"], 0);
        for d in ["read", "write"] {
            assert_eq!(j[d]["io_bytes"], 256 * 1024, "{d}: {j}");
            assert_eq!(j[d]["total_ios"], 64, "{d}");
        }
    }
}

/// The first line of fio's report of a bad block (its stderr).
fn fio_failure(run: &Run) -> String {
    run.stderr
        .lines()
        .find(|l| l.contains("verify"))
        .unwrap_or_else(|| panic!("no verify failure from fio: {}", run.stderr))
        .to_string()
}

#[test]
fn corrupted_blocks_are_found_where_fio_finds_them() {
    if !fio_available() {
        return;
    }
    // (type, byte to flip, what fio says)
    let cases = [
        (
            "crc32c",
            3 * 4096 + 100,
            "crc32c: verify failed at file f offset 12288, length 4096",
        ),
        (
            "md5",
            7 * 4096 + 4000,
            "md5: verify failed at file f offset 28672, length 4096",
        ),
        (
            "sha256",
            2 * 4096 + 200,
            "sha256: verify failed at file f offset 8192, length 4096",
        ),
        ("crc32c", 5 * 4096, "verify: bad magic header"),
        ("xxhash", 9 * 4096 + 17, "verify: bad header offset"),
        ("meta", 4 * 4096 + 30, "verify: bad header crc"),
    ];
    par_each(&cases, |(t, at, says)| {
        let d = tempfile::tempdir().unwrap();
        let line = job(&format!("--rw=write --bs=4k --verify={t}"));
        sb_fio(d.path(), &words(&format!("{line} --do_verify=0"))).ok();
        flip(&d.path().join("f"), *at);
        let theirs = fio(d.path(), &words(&format!("{line} --verify_only")));
        let ours = sb_fio(d.path(), &words(&format!("{line} --verify_only")));
        assert_eq!(theirs.code, Some(1));
        assert_eq!(ours.code, Some(1), "{t} at {at}: {}", ours.stderr);
        let fio_says = fio_failure(&theirs);
        assert!(fio_says.contains(says), "fio: {fio_says}");
        // fio's line up to its internal io_u flags, which storbench has not.
        let head = fio_says.split(", flags=").next().unwrap();
        assert!(
            ours.stderr.contains(head),
            "{t} at {at}: fio said\n{fio_says}\nstorbench said\n{}",
            ours.stderr
        );
        let json = ours.stdout.contains("err=84");
        assert!(json, "EILSEQ as fio's err=84: {}", ours.stdout);
    });
}

#[test]
fn checksums_fio_reports_are_the_ones_storbench_reports() {
    if !fio_available() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let line = job("--rw=write --bs=4k --verify=crc32c");
    fio(d.path(), &words(&format!("{line} --do_verify=0")));
    flip(&d.path().join("f"), 4096 + 64);
    let theirs = fio(d.path(), &words(&format!("{line} --verify_only")));
    let ours = sb_fio(d.path(), &words(&format!("{line} --verify_only")));
    let crc = |s: &str, what: &str| {
        s.lines()
            .find_map(|l| {
                l.split(what).nth(1).map(|r| {
                    r.split([',', ' ', '\n'])
                        .find(|w| !w.is_empty())
                        .unwrap()
                        .to_string()
                })
            })
            .unwrap_or_else(|| panic!("no {what} in {s}"))
    };
    assert_eq!(
        crc(&theirs.stderr, "Expected CRC: "),
        crc(&ours.stderr, "expected CRC ")
    );
    assert_eq!(
        crc(&theirs.stderr, "Received CRC: "),
        crc(&ours.stderr, "received CRC ")
    );
}

#[test]
fn verify_off_runs_and_bad_verify_options_are_one_line_errors() {
    let d = tempfile::tempdir().unwrap();
    for off in [
        "--verify=0",
        "--do_verify=0",
        "--verify=null",
        "--verify=0 --verify_fatal=0",
        // Accepted as fio does, verified inline (a note says so).
        "--verify=crc32c --verify_async=2",
    ] {
        sb_fio(d.path(), &words(&job(&format!("--rw=write {off}")))).ok();
    }
    for (bad, says) in [
        ("--verify=md6", "unknown verify type 'md6'"),
        ("--verify_fatal=1", "verify_fatal needs verify="),
        ("--verify_only", "verify_only needs verify="),
        ("--verify=crc32c --loops=2", "not supported"),
        ("--verify=sha512 --bs=128", "too small"),
    ] {
        let run = sb_fio(d.path(), &words(&job(&format!("--rw=write {bad}"))));
        let line = run.one_error_line();
        assert!(line.contains(says), "{bad}: {line}");
    }
    assert!(
        !d.path().join("f").exists() || std::fs::metadata(d.path().join("f")).unwrap().len() > 0
    );
}

/// Over the user-space NFS client against a real nfs-ganesha: blocks written and read
/// back through the export verify, fio verifies the export's file locally, and a byte
/// flipped on the server is found at its block.
#[test]
fn verify_over_nfs_comes_back_through_the_client() {
    use storbench_testkit::ganesha::{self, Ganesha};
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let g = Ganesha::start().expect("start ganesha");
    let d = tempfile::tempdir().unwrap();
    let url = format!("--filename={}", g.url("v.dat"));
    let line =
        "--name=v --ioengine=nfs --rw=randwrite --bs=16k --iodepth=8 --size=2M --verify=crc32c";
    let mut args = words(line);
    args.extend([url.as_str(), "--output-format=json"]);
    let doc = sb_fio(d.path(), &args).json();
    assert_eq!(
        doc["jobs"][0]["read"]["io_bytes"],
        2 << 20,
        "read back: {doc}"
    );
    let file = g.export_dir().join("v.dat");
    if fio_available() {
        let local = format!("--filename={}", file.display());
        let run = fio(
            d.path(),
            &words(&format!(
                "--name=v --rw=randwrite --bs=16k --size=2M --verify=crc32c --verify_only {local}"
            )),
        );
        verified("fio", &run, "the export's file");
    }
    flip(&file, 5 * 16384 + 999);
    let mut args = words(line);
    args.extend([url.as_str(), "--verify_only"]);
    let run = sb_fio(d.path(), &args);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("crc32c: verify failed at file")
            && run.stderr.contains("offset 81920, length 16384"),
        "{}",
        run.stderr
    );
}

/// (read IOs, write IOs, error) of a fio-format JSON document's job.
fn io_counts(doc: &serde_json::Value) -> (u64, u64, i64) {
    let j = &doc["jobs"][0];
    (
        j["read"]["total_ios"].as_u64().unwrap(),
        j["write"]["total_ios"].as_u64().unwrap(),
        j["error"].as_i64().unwrap(),
    )
}

#[test]
fn verify_backlog_checks_blocks_during_the_writes_as_fio_does() {
    if !fio_available() {
        return;
    }
    let cases = [
        "--rw=write --bs=4k --verify=crc32c --verify_backlog=16",
        "--rw=randwrite --bs=4k --verify=md5 --verify_backlog=16 --verify_backlog_batch=8",
        "--rw=write --bs=4k --verify=crc32c --verify_backlog=10 --verify_backlog_batch=4",
        "--rw=write --bs=8k --verify=sha256 --verify_backlog=5 --verify_backlog_batch=7",
        "--rw=write --bs=4k --verify=crc32c --verify_backlog=16 --do_verify=0",
        "--rw=write --bs=4k --verify=crc32c --verify_backlog=8 --experimental_verify=1",
    ];
    par_each(&cases, |case| {
        let line = job(&format!("{case} --output-format=json"));
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let theirs = fio(fd.path(), &words(&line)).fio_json();
        let ours = sb_fio(sd.path(), &words(&line)).json();
        assert_eq!(io_counts(&ours), io_counts(&theirs), "{case}");
    });
}

/// A job named `st` (its state file: `local-st-0-verify.state`) on file `f` of 256 KiB.
fn st_job(extra: &str) -> String {
    format!("--name=st --filename=f --size=256k {extra}")
}

#[test]
fn verify_state_files_are_fios_in_both_directions() {
    if !fio_available() {
        return;
    }
    let line = st_job("--rw=write --bs=4k --verify=crc32c");
    let state = "local-st-0-verify.state";
    // fio writes: storbench loads fio's state and verifies.
    let fd = tempfile::tempdir().unwrap();
    fio(fd.path(), &words(&format!("{line} --do_verify=0"))).ok();
    let load = format!("{line} --verify_only --verify_state_load=1");
    verified(
        "storbench",
        &sb_fio(fd.path(), &words(&load)),
        "fio's state",
    );
    // storbench writes the same state file byte for byte, and fio loads it.
    let sd = tempfile::tempdir().unwrap();
    sb_fio(sd.path(), &words(&format!("{line} --do_verify=0"))).ok();
    let (ours, theirs) = (
        std::fs::read(sd.path().join(state)).unwrap(),
        std::fs::read(fd.path().join(state)).unwrap(),
    );
    assert_eq!(ours, theirs, "the state files differ");
    verified("fio", &fio(sd.path(), &words(&load)), "storbench's state");
}

#[test]
fn verify_state_load_stops_where_the_writes_stopped() {
    if !fio_available() {
        return;
    }
    // The writes stopped half way (io_size): their state says so.
    let line = st_job("--rw=write --bs=4k --verify=crc32c --output-format=json");
    let half = format!("{line} --io_size=128k --do_verify=0");
    let load = format!("{line} --verify_only --verify_state_load=1");
    for writer in ["fio", "storbench"] {
        let d = tempfile::tempdir().unwrap();
        if writer == "fio" {
            fio(d.path(), &words(&half)).ok();
        } else {
            sb_fio(d.path(), &words(&half)).ok();
        }
        // fio's verify_only run rewrites the state from its own dry run (all blocks):
        // each tool loads the writer's.
        let state = d.path().join("local-st-0-verify.state");
        let saved = std::fs::read(&state).unwrap();
        let theirs = fio(d.path(), &words(&load)).fio_json();
        std::fs::write(&state, &saved).unwrap();
        let ours = sb_fio(d.path(), &words(&load)).json();
        assert_eq!(std::fs::read(&state).unwrap(), saved, "storbench kept it");
        // Reads and error (a verify_only run's writes are its dry run's).
        let checked = |doc| {
            let (reads, _, error) = io_counts(doc);
            (reads, error)
        };
        assert_eq!(checked(&theirs), (32, 0), "fio after {writer}");
        assert_eq!(checked(&ours), (32, 0), "storbench after {writer}");
        // Without the state, the blocks never written are bad, in both tools.
        let all = format!("{line} --verify_only");
        assert_eq!(fio(d.path(), &words(&all)).code, Some(1));
        let run = sb_fio(d.path(), &words(&all));
        assert_eq!(run.code, Some(1));
        assert!(run.stderr.contains("offset 131072"), "{}", run.stderr);
    }
}

#[test]
fn a_missing_or_foreign_verify_state_is_a_one_line_error() {
    let d = tempfile::tempdir().unwrap();
    let line = st_job("--rw=write --bs=4k --verify=crc32c --verify_only --verify_state_load=1");
    let state = d.path().join("local-st-0-verify.state");
    for (content, says) in [
        (None, "No such file"),
        (
            Some(&b"[global]\nrw=read\nbs=4k\nsize=1m\nname=foreign\n"[..]),
            "version in verify state header",
        ),
        (Some(&b"short"[..]), "failed reading verify state header"),
    ] {
        if let Some(c) = content {
            std::fs::write(&state, c).unwrap();
        }
        let run = sb_fio(d.path(), &words(&line));
        assert_eq!(run.code, Some(1), "{says}");
        let errors: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(errors.len(), 1, "{}", run.stderr);
        assert!(errors[0].contains(says), "{}", run.stderr);
        assert!(
            errors[0].contains("local-st-0-verify.state"),
            "{}",
            run.stderr
        );
    }
    // A read job with it is refused before any IO.
    let run = sb_fio(
        d.path(),
        &words(&job("--rw=read --verify=crc32c --verify_state_load=1")),
    );
    assert!(run.one_error_line().contains("verify_state_load"));
}
