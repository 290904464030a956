//! fio's block arithmetic at the end of a region, cross-checked against fio 3.33: whole
//! blocks where fio issues whole blocks (a size= that is not a multiple of the block size,
//! PerfKitBenchmarker's default job), and fio's random map shortening a block of a varying
//! size (bssplit, bsrange) that would run into blocks already done. Both tools run the same
//! command line in temp dirs of their own and must issue the same IOs and bytes, job by job.
//! Skipped with a reason when fio 3.33 is missing.

mod common;

use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// Per job: name, then [read, write] total_ios and io_bytes, and the job's error.
type Counts = Vec<(String, [u64; 4], i64)>;

fn counts(doc: &Value) -> Counts {
    doc["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(|j| {
            let n = |d: &str, k: &str| j[d][k].as_u64().unwrap();
            (
                j["jobname"].as_str().unwrap().to_string(),
                [
                    n("read", "total_ios"),
                    n("write", "total_ios"),
                    n("read", "io_bytes"),
                    n("write", "io_bytes"),
                ],
                j["error"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Runs `line` with fio and storbench at once and returns both tools' counts.
fn both(line: &str) -> (Counts, Counts) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = vec!["--output-format=json"];
    args.extend(words(line));
    std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), &args));
        let ours = sb_fio(sd.path(), &args);
        assert!(ours.success(), "{line}: {}", ours.stderr);
        (
            counts(&theirs.join().unwrap().fio_json()),
            counts(&ours.json()),
        )
    })
}

/// PerfKitBenchmarker's default random job: size= is 24,105 × 100 bytes, not a multiple of
/// 4 KiB. fio issues 589 whole blocks (2,412,544 bytes); the last one is not cut to the
/// 2,052 bytes left, which O_DIRECT would refuse.
#[test]
fn a_size_that_is_no_multiple_of_the_block_takes_whole_blocks_like_fio() {
    if !fio_available() {
        return;
    }
    let line = "--name=rw --filename=f --filesize=24105000 --size=2410500 --rw=randwrite \
                --bs=4k --direct=1 --ioengine=libaio";
    let (f, s) = both(line);
    assert_eq!(f, s, "{line}");
    assert_eq!(s[0].1, [0, 589, 0, 589 * 4096]);
    assert_eq!(s[0].2, 0, "no error");
    // The same on bytes alone (a sequential mix of two block sizes, size= a multiple of
    // neither direction's issues): the last write is a whole 8 KiB.
    let line = "--name=mix --ioengine=null --size=1m --rw=rw --bs=4k,8k \
                --name=tail --ioengine=null --filesize=10m --size=1000000 --rw=randread --bs=4k";
    let (f, s) = both(line);
    assert_eq!(f, s, "{line}");
}

/// `bssplit=4k/50:64k/50` over 16 MiB: fio shortens each 64 KiB block that would run into
/// blocks already read, so every byte is read once in 876 IOs for fio's first thread and
/// 750 for its second (whole blocks would take about 480).
#[test]
fn a_random_map_shortens_blocks_of_a_split_like_fio() {
    if !fio_available() {
        return;
    }
    let line = "--name=split --ioengine=null --size=16m --rw=randread \
                --bssplit=4k/50:64k/50 --numjobs=2";
    let (f, s) = both(line);
    assert_eq!(f, s, "{line}");
    let ios: Vec<u64> = s.iter().map(|j| j.1[0]).collect();
    assert_eq!(ios, [876, 750]);
    assert!(
        s.iter().all(|j| j.1[2] == 16 << 20),
        "each byte once: {s:?}"
    );
}

/// Cases of our own: a range, a mix with a split, a split written, loops (each pass of a
/// repeatable run draws what the first drew), a file larger than size=, and io_size over
/// more than one pass, all as fio counts them.
#[test]
fn ranges_splits_and_passes_like_fio() {
    if !fio_available() {
        return;
    }
    for line in [
        "--name=range --ioengine=null --size=16m --rw=randread --bsrange=4k-64k",
        "--name=mixed --ioengine=null --size=16m --rw=randrw --bssplit=4k/30:16k/40:64k/30",
        "--name=written --ioengine=null --size=16m --rw=randwrite --bssplit=8k/20:32k/80",
        "--name=loops --ioengine=null --size=16m --rw=randread --bssplit=4k/50:64k/50 \
         --loops=3",
        "--name=bigger --ioengine=null --filesize=64m --size=16m --rw=randread \
         --bssplit=4k/50:64k/50",
        "--name=iosize --ioengine=null --size=16m --io_size=40m --rw=randread \
         --bssplit=4k/50:64k/50",
    ] {
        let (f, s) = both(line);
        assert_eq!(f, s, "{line}");
    }
}
