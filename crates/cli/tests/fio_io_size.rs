//! `io_size` with `loops` above 1, cross-checked against fio 3.33 on the same job file run
//! by both tools in temp dirs of their own: per job (clone), the IOs and bytes of each
//! direction and the error. fio makes `loops` passes, each up to the end of its files or
//! to `io_size` times `loops` bytes, then more while the bytes moved (verify reads
//! included) are below `io_size`. Skipped with a reason when fio 3.33 is missing.

mod common;

use std::path::Path;

use common::system::direct_io_works;
use common::{fio, fio_available, par_each, sb_fio};
use serde_json::Value;

/// Per job: name, read IOs and bytes, write IOs and bytes, error.
type JobCounts = (String, u64, u64, u64, u64, i64);

fn counts(doc: &Value) -> Vec<JobCounts> {
    doc["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(|j| {
            let dir = |d: &str| {
                (
                    j[d]["total_ios"].as_u64().unwrap(),
                    j[d]["io_bytes"].as_u64().unwrap(),
                )
            };
            let ((ri, rb), (wi, wb)) = (dir("read"), dir("write"));
            let name = j["jobname"].as_str().unwrap().to_string();
            (name, ri, rb, wi, wb, j["error"].as_i64().unwrap())
        })
        .collect()
}

/// Runs `text` with both tools, each in a temp dir holding `setup`'s files.
fn both(text: &str, setup: impl Fn(&Path)) -> (Vec<JobCounts>, Vec<JobCounts>) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&fd, &sd] {
        std::fs::write(d.path().join("j.fio"), text).unwrap();
        setup(d.path());
    }
    let args = ["j.fio", "--output-format=json"];
    let theirs = fio(fd.path(), &args).fio_json();
    let ours = sb_fio(sd.path(), &args);
    assert!(ours.success(), "{text}: {}", ours.stderr);
    (counts(&theirs), counts(&ours.json()))
}

/// fio's examples/cross-stripe-verify.fio, scaled from 30 clones over a 3.7 TB NVMe drive
/// to 3 over a 6 MiB file (offset_increment 124g → 1984k, io_size 120g → 1920k), without
/// group_reporting so each clone is compared: 16 KiB written every 128 KiB, each read back
/// at once (verify_backlog=1), two loops. Each clone's passes end at the end of the file,
/// long before io_size times loops; the third clone's skip wraps by fio's arithmetic.
#[test]
fn cross_stripe_verify_runs_as_fio_runs_it() {
    if !fio_available() {
        return;
    }
    let probe = tempfile::tempdir().unwrap();
    if !direct_io_works(probe.path()) {
        eprintln!("SKIP: O_DIRECT does not work in the temp dir");
        return;
    }
    let job = "[global]\nbs=16k\ndirect=1\nrw=write:112k\nverify=crc32c\n\
               filename=dev.img\nverify_backlog=1\noffset_increment=1984k\nio_size=1920k\n\
               offset=120k\nverify_dump=1\nloops=2\n\
               [write-verify]\nnumjobs=3\n";
    let (f, s) = both(job, |d| {
        std::fs::File::create(d.join("dev.img"))
            .unwrap()
            .set_len(6 << 20)
            .unwrap();
    });
    assert_eq!(f, s, "{job}");
    let writes: Vec<u64> = s.iter().map(|j| j.3).collect();
    assert_eq!(writes, [94, 64, 64], "{s:?}");
    assert!(s.iter().all(|j| j.1 == j.3 && j.5 == 0), "{s:?}");
}

/// Regions smaller and larger than io_size, several loops, a verifying job whose reads
/// count, a random map, a queued engine, a skip, several files.
#[test]
fn io_size_with_loops_moves_what_fio_moves() {
    if !fio_available() {
        return;
    }
    let jobs: &[(&str, u64)] = &[
        // 1 MiB region, io_size 4 MiB: 2 loops, then passes to 4 MiB.
        ("rw=write\nsize=1m\nio_size=4m\nloops=2\n", 1024),
        // More loops than io_size needs: io_size ends the job after 4 passes, not 3.
        ("rw=read\nsize=1m\nio_size=4m\nloops=3\n", 1024),
        // 2.5 MiB: a third pass, as 0.5 MiB is left after two.
        ("rw=write\nsize=1m\nio_size=2560k\nloops=2\n", 768),
        // io_size times loops within the region: one pass of 3 MiB.
        ("rw=write\nsize=4m\nio_size=1m\nloops=3\n", 768),
        ("rw=randwrite\nsize=1m\nio_size=4m\nloops=2\n", 1024),
        (
            "rw=write\nioengine=libaio\niodepth=4\nsize=1m\nio_size=2560k\nloops=2\n",
            768,
        ),
        // Reads back each write: 2 MiB written and 2 MiB read is past io_size.
        (
            "rw=write\nsize=1m\nio_size=2560k\nloops=2\nverify=crc32c\nverify_backlog=4\n",
            512,
        ),
        ("rw=write:4k\nsize=2m\nio_size=3m\nloops=2\n", 1536),
        ("rw=write\nnrfiles=2\nsize=2m\nio_size=3m\nloops=2\n", 1024),
        (
            "rw=read\nnrfiles=2\nsize=2m\nio_size=5m\nloops=2\nioengine=libaio\niodepth=8\n",
            1536,
        ),
    ];
    par_each(jobs, |&(body, ios)| {
        let job = format!("[global]\nbs=4k\n[j]\n{body}");
        let (f, s) = both(&job, |_| {});
        assert_eq!(f, s, "{job}");
        assert_eq!(
            s[0].1 + s[0].3,
            ios + u64::from(body.contains("verify")) * ios
        );
    });
}
