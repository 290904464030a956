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
    let mut args = vec!["--output-format=json"];
    args.extend(words(line));
    run_both(&args, None)
}

/// Runs the job file `text` with fio and storbench at once and returns both tools' counts.
fn both_job(text: &str) -> (Counts, Counts) {
    run_both(&["j.fio", "--output-format=json"], Some(text))
}

fn run_both(args: &[&str], job: Option<&str>) -> (Counts, Counts) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&fd, &sd] {
        if let Some(text) = job {
            std::fs::write(d.path().join("j.fio"), text).unwrap();
        }
    }
    std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), args));
        let ours = sb_fio(sd.path(), args);
        assert!(ours.success(), "{args:?} {job:?}: {}", ours.stderr);
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
    let job = "[rw]\nfilename=f\nfilesize=24105000\nsize=2410500\nrw=randwrite\nbs=4k\n\
               direct=1\nioengine=libaio\n";
    let (f, s) = both_job(job);
    assert_eq!(f, s, "{job}");
    assert_eq!(s[0].1, [0, 589, 0, 589 * 4096]);
    assert_eq!(s[0].2, 0, "no error");
    // The same on bytes alone (a sequential mix of two block sizes, size= a multiple of
    // neither direction's issues): the last write is a whole 8 KiB.
    let line = "--name=mix --ioengine=null --size=1m --rw=rw --bs=4k,8k \
                --name=tail --ioengine=null --filesize=10m --size=1000000 --rw=randread --bs=4k";
    let (f, s) = both(line);
    assert_eq!(f, s, "{line}");
}

/// PerfKitBenchmarker's default job file, scaled to a 24,105,000-byte file (its
/// `filesize=1000*$mb_memory`, random jobs with a tenth of it): every job runs to its end
/// with fio's IO counts and no error, the random ones in 589 whole blocks.
#[test]
fn perfkitbenchmarkers_job_runs_to_the_end_like_fio() {
    if !fio_available() {
        return;
    }
    let mut job = String::from(
        "[global]\nioengine=libaio\ninvalidate=1\ndirect=1\nruntime=10m\ntime_based=0\n\
         filename=f\nfilesize=24105000\ndo_verify=0\nverify_fatal=0\ngroup_reporting=1\n\
         randrepeat=0\n\
         [sequential_write]\noverwrite=0\nrw=write\nblocksize=512k\nsize=24105000\n\
         iodepth=64\n\
         [sequential_read]\nstonewall\ninvalidate=1\noverwrite=0\nrw=read\n\
         blocksize=512k\nsize=24105000\niodepth=64\n\
         [random_write_test]\nstonewall\noverwrite=1\nrw=randwrite\nblocksize=4k\n\
         iodepth=1\nsize=2410500\n",
    );
    for (name, depth) in [("random_read_test", 1), ("random_read_test_parallel", 64)] {
        job += &format!(
            "[{name}]\nstonewall\ninvalidate=1\nrw=randread\nblocksize=4k\n\
             iodepth={depth}\nsize=2410500\n"
        );
    }
    let (f, s) = both_job(&job);
    assert_eq!(f, s, "{job}");
    assert_eq!(s.len(), 5);
    assert!(s.iter().all(|j| j.2 == 0), "no error: {s:?}");
    assert_eq!(s[2].1, [0, 589, 0, 589 * 4096], "random writes");
    assert_eq!(s[4].1, [589, 0, 589 * 4096, 0], "parallel random reads");
}

/// Whole blocks and fio's block size draws at the end of a size= that is no multiple of
/// the block, one job file per case: sequential and random, reads, writes and mixes,
/// buffered and direct, bs, bsrange and bssplit, in a larger file and in a file of
/// exactly size= bytes. fio draws a varying size after the offset, from its own
/// generator, again until it fits before the region's end.
#[test]
fn the_end_of_a_region_takes_fios_blocks_for_every_kind_of_job() {
    if !fio_available() {
        return;
    }
    let mut jobs = Vec::new();
    for rw in ["read", "write", "randread", "randwrite", "rw", "randrw"] {
        for bs in ["bs=4k", "bsrange=4k-64k", "bssplit=4k/50:64k/50"] {
            for file in ["filesize=24105000\n", ""] {
                for direct in [0, 1] {
                    jobs.push(format!(
                        "[j]\nfilename=f\n{file}size=2410500\nrw={rw}\n{bs}\n\
                         direct={direct}\nioengine=psync\n"
                    ));
                }
            }
        }
    }
    for job in &jobs {
        let (f, s) = both_job(job);
        assert_eq!(f, s, "{job}");
        assert_eq!(s[0].2, 0, "{job}");
    }
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
