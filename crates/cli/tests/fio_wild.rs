//! Options and engines of fio job files from the wild, each run
//! with storbench and fio 3.33 on the same command line: thinktime, rate_iops_min,
//! blockalign, the pvsync and vsync engines. Skipped with a reason when fio 3.33 is missing.

mod common;

use std::path::Path;

use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// Runs `line` (JSON output) with fio and storbench at the same time, each in a temp dir
/// of its own; returns each tool's first job, and the dirs (to look at written files).
fn both(line: &str) -> ((Value, Value), (tempfile::TempDir, tempfile::TempDir)) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = vec!["--output-format=json"];
    args.extend(words(line));
    let docs = std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), &args));
        let ours = sb_fio(sd.path(), &args);
        let theirs = theirs.join().unwrap();
        let doc = |text: &str| -> Value {
            let start = text
                .find("{\n")
                .unwrap_or_else(|| panic!("no JSON in {text}"));
            serde_json::from_str(&text[start..]).unwrap()
        };
        let (f, s) = (doc(&theirs.stdout), doc(&ours.stdout));
        (f["jobs"][0].clone(), s["jobs"][0].clone())
    });
    (docs, (fd, sd))
}

fn ios(job: &Value) -> [u64; 2] {
    ["read", "write"].map(|d| job[d]["total_ios"].as_u64().unwrap())
}

fn runtime_ms(job: &Value) -> u64 {
    job["job_runtime"].as_u64().unwrap()
}

/// thinktime pauses after every thinktime_blocks IOs: 16 IOs in blocks of 4 make 4 pauses
/// of 25 ms, with fio's IO count, and a runtime near fio's.
#[test]
fn thinktime_pauses_like_fio() {
    if !fio_available() {
        return;
    }
    let ((f, s), _) = both(
        "--name=t --ioengine=null --size=64k --bs=4k --rw=randread --thinktime=25ms \
         --thinktime_blocks=4 --thinktime_spin=5ms",
    );
    assert_eq!(ios(&f), ios(&s));
    assert_eq!(ios(&s), [16, 0]);
    let (rf, rs) = (runtime_ms(&f), runtime_ms(&s));
    assert!((100..200).contains(&rf), "fio {rf} ms");
    assert!((100..200).contains(&rs), "storbench {rs} ms, fio {rf} ms");
    // thinktime_blocks_type=issue with a queue: the same pauses, counted at issue.
    let ((f, s), _) = both(
        "--name=t --ioengine=libaio --size=64k --bs=4k --rw=randread --thinktime=25ms \
         --thinktime_blocks=8 --thinktime_blocks_type=issue --iodepth=4 --filename=f",
    );
    assert_eq!(ios(&f), ios(&s));
    let (rf, rs) = (runtime_ms(&f), runtime_ms(&s));
    assert!((50..150).contains(&rf), "fio {rf} ms");
    assert!((50..150).contains(&rs), "storbench {rs} ms, fio {rf} ms");
}

/// A job slower than rate_iops_min (thinktime keeps it near 90 IOPS) ends with fio's error
/// 5 after the two seconds of settling and one cycle.
#[test]
fn rate_iops_min_ends_a_slow_job_like_fio() {
    if !fio_available() {
        return;
    }
    let ((f, s), _) = both(
        "--name=m --ioengine=null --thinktime=10ms --rate_iops_min=500 --runtime=6 \
         --time_based --size=1m",
    );
    assert_eq!(f["error"], 5);
    assert_eq!(s["error"], 5, "{s}");
    let (rf, rs) = (runtime_ms(&f), runtime_ms(&s));
    assert!((2900..4000).contains(&rf), "fio {rf} ms");
    assert!((2900..4000).contains(&rs), "storbench {rs} ms, fio {rf} ms");
}

/// The 4 KiB blocks of `path` that hold data.
fn written_blocks(path: &Path) -> Vec<u64> {
    let data = std::fs::read(path).unwrap();
    data.chunks(4096)
        .enumerate()
        .filter(|(_, c)| c.iter().any(|&b| b != 0))
        .map(|(i, _)| i as u64 * 4096)
        .collect()
}

/// blockalign: random writes of 4 KiB land only on 64 KiB boundaries, in both tools.
#[test]
fn blockalign_aligns_random_offsets_like_fio() {
    if !fio_available() {
        return;
    }
    let ((f, s), (fd, sd)) = both(
        "--name=a --ioengine=psync --filename=a.img --size=1m --bs=4k --blockalign=64k \
         --rw=randwrite --number_ios=8",
    );
    assert_eq!(ios(&f), ios(&s));
    for dir in [fd.path(), sd.path()] {
        let blocks = written_blocks(&dir.join("a.img"));
        assert!(!blocks.is_empty());
        assert!(blocks.iter().all(|b| b % 65536 == 0), "{blocks:?}");
    }
}

/// pvsync and vsync move fio's bytes.
#[test]
fn pvsync_and_vsync_engines_move_fios_bytes() {
    if !fio_available() {
        return;
    }
    for engine in ["pvsync", "vsync"] {
        for rw in ["write", "randread"] {
            let line = format!(
                "--name=e --ioengine={engine} --filename=e.img --size=256k --bs=4k --rw={rw}"
            );
            let ((f, s), _) = both(&line);
            assert_eq!(ios(&f), ios(&s), "{line}");
            assert_eq!(s["error"], 0, "{line}");
            assert_eq!(ios(&s).iter().sum::<u64>(), 64, "{line}");
        }
    }
}

/// Backward sequential writes (`rw=write:-8k`) land on fio's blocks: the first at the
/// start, then down from 8 KiB before the end.
#[test]
fn backward_sequential_io_visits_fios_blocks() {
    if !fio_available() {
        return;
    }
    let ((f, s), (fd, sd)) = both(
        "--name=b --ioengine=psync --filename=b.img --size=64k --bs=4k --rw=write:-8k \
         --number_ios=5",
    );
    assert_eq!(ios(&f), ios(&s));
    let theirs = written_blocks(&fd.path().join("b.img"));
    assert_eq!(theirs, [0, 45056, 49152, 53248, 57344]);
    assert_eq!(written_blocks(&sd.path().join("b.img")), theirs);
}
