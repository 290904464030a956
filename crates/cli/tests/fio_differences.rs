//! Command lines and job files from the wild whose IO is easy to get wrong, each run with
//! storbench and fio 3.33: the totals must be fio's. Skipped with a reason when fio 3.33 is
//! missing.

mod common;

use std::path::Path;

use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// Runs `args` with fio and with storbench (JSON output) at the same time, each in a temp
/// dir of its own after `setup`, and returns both documents.
fn both_after(args: &[&str], setup: impl Fn(&Path)) -> (Value, Value) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    setup(fd.path());
    setup(sd.path());
    let mut with_json = vec!["--output-format=json"];
    with_json.extend(args);
    std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), &with_json));
        let ours = sb_fio(sd.path(), &with_json).json();
        (theirs.join().unwrap().fio_json(), ours)
    })
}

fn both(line: &str) -> (Value, Value) {
    both_after(&words(line), |_| {})
}

/// Per job: (name, [read, write, trim] total_ios, the same io_bytes).
type Totals = Vec<(String, [u64; 3], [u64; 3])>;

fn totals(doc: &Value) -> Totals {
    doc["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(|j| {
            let dirs = ["read", "write", "trim"];
            (
                j["jobname"].as_str().unwrap().to_string(),
                dirs.map(|d| j[d]["total_ios"].as_u64().unwrap()),
                dirs.map(|d| j[d]["io_bytes"].as_u64().unwrap()),
            )
        })
        .collect()
}

/// Both tools issue the same IOs per job and direction; returns storbench's.
fn same_totals(line: &str) -> Totals {
    let (f, s) = both(line);
    let (tf, ts) = (totals(&f), totals(&s));
    assert_eq!(tf, ts, "{line}");
    assert!(ts.iter().all(|t| t.1.iter().sum::<u64>() > 0), "{line}");
    ts
}

/// `size` is the job's budget over files of `filesize` bytes: 8 IOs of 1 MiB, not 64.
#[test]
fn size_bounds_the_io_when_filesize_is_given() {
    if !fio_available() {
        return;
    }
    let t = same_totals("--name=w --ioengine=psync --filesize=64m --size=8m --rw=write --bs=1m");
    assert_eq!(t[0].1, [0, 8, 0]);
    same_totals("--name=r --ioengine=null --filesize=64m --size=8m --rw=randread --bs=4k");
}

/// A job file's `filesize=1000*$mb_memory` is computed as `size=` is (fio expands the
/// keywords in job files only).
#[test]
fn filesize_takes_arithmetic_like_size() {
    if !fio_available() {
        return;
    }
    let job = "[m]\nioengine=psync\nrw=write\nbs=4k\nfilesize=40*$mb_memory\n";
    let (f, s) = both_after(&["m.fio"], |d| {
        std::fs::write(d.join("m.fio"), job).unwrap();
    });
    assert_eq!(totals(&f), totals(&s));
    assert!(totals(&s)[0].1[1] > 0);
}

/// The directions of a mixed job are fio's own sequence (fio's rwmix generator, seeded
/// by thread number, and its rule for how long a drawn direction stays): the single
/// 64 MiB IO of fio's `Bufread` example is a read, and random mixes split exactly as fio
/// splits them, clone by clone.
#[test]
fn mixed_directions_are_fios() {
    if !fio_available() {
        return;
    }
    let t = same_totals("--name=Bufread --ioengine=null --bs=64M --size=64M --rw=readwrite");
    assert_eq!(t[0].1, [1, 0, 0]);
    same_totals(
        "--ioengine=null --size=16m --bs=4k --name=a --rw=randrw --name=b --rw=randrw \
         --rwmixread=70 --numjobs=2 --name=c --rw=rw --rwmixwrite=10",
    );
}

/// fio 3.33 counts fdatasyncs as short reads, not in the sync total; their latency is
/// the sync latency. fsync is counted as a sync IO.
#[test]
fn fdatasync_counts_like_fio() {
    if !fio_available() {
        return;
    }
    for opt in ["--fdatasync=4", "--fdatasync=1", "--fsync=4"] {
        let line = format!("--name=d --ioengine=psync --bs=4k --size=256k --rw=write {opt}");
        let (f, s) = both(&line);
        let counts = |doc: &Value| {
            let j = &doc["jobs"][0];
            (
                j["sync"]["total_ios"].as_u64().unwrap(),
                j["read"]["short_ios"].as_u64().unwrap(),
                j["sync"]["lat_ns"]["N"].as_u64().unwrap(),
            )
        };
        assert_eq!(counts(&f), counts(&s), "{line}");
        assert!(counts(&s).2 > 0, "{line}");
    }
    // The normal output's `issued rwts` line says the same.
    let dir = tempfile::tempdir().unwrap();
    let out = sb_fio(
        dir.path(),
        &words("--name=d --ioengine=psync --bs=4k --size=256k --rw=write --fdatasync=4"),
    );
    assert!(
        out.ok()
            .contains("issued rwts: total=0,64,0,0 short=15,0,0,0"),
        "{}",
        out.stdout
    );
}

/// A size-bound job that ends inside its ramp reports all it did, as fio's does.
#[test]
fn a_job_done_inside_its_ramp_reports_everything() {
    if !fio_available() {
        return;
    }
    let t = same_totals("--name=r --ioengine=psync --size=16M --rw=randread --bs=4k --ramp_time=5");
    assert_eq!(t[0].1, [4096, 0, 0]);
}

/// Without a random map fio stops on bytes alone and issues the last whole block while
/// the budget is not used up: `bs=4KiB` is 4000 bytes under kb_base=1024, and 8 MiB take
/// 2098 of them per clone.
#[test]
fn norandommap_issues_the_last_partial_budget_io() {
    if !fio_available() {
        return;
    }
    let t = same_totals(
        "--name=n --ioengine=null --kb_base=1024 --bs=4KiB --size=8m --rw=randwrite \
         --norandommap --numjobs=2",
    );
    assert_eq!(t[0].1, [0, 2098, 0]);
}

/// A random mix whose directions have different block sizes follows fio's random map,
/// where each direction draws and marks blocks in its own block size: over 16 MiB with
/// 4 KiB reads and 16 KiB writes, a write moved past its range ends the file, and fio
/// moves about 12.7 MB rather than 16 MiB. Both tools must issue the same IOs, clone by
/// clone (each seeded by its thread number), on libaio with O_DIRECT as in the corpus.
#[test]
fn per_direction_block_sizes_follow_fios_random_map() {
    if !fio_available() {
        return;
    }
    let probe = tempfile::tempdir().unwrap();
    let direct = if common::system::direct_io_works(probe.path()) {
        "--direct=1"
    } else {
        eprintln!("O_DIRECT does not work in the temp dir: buffered instead");
        "--direct=0"
    };
    let line = format!(
        "--name=mix --rw=randrw --bs=4k,16k --size=16m --ioengine=libaio --iodepth=8 {direct}"
    );
    let t = same_totals(&line);
    let bytes: u64 = t[0].2.iter().sum();
    assert!(
        bytes < 16 << 20,
        "fio's map ends the file early: {bytes} bytes"
    );
    same_totals(
        "--name=n --rw=randrw --bs=16k,4k --rwmixread=30 --size=8m --ioengine=null --numjobs=3",
    );
}

/// `rate=` of a mixed job limits each direction on its own, as fio's `rate_ddir` does:
/// with 75% reads, writes still get their whole rate instead of a third of it.
#[test]
fn each_direction_of_a_mix_gets_its_own_rate() {
    if !fio_available() {
        return;
    }
    let line = "--name=m --ioengine=null --size=64m --bs=4k --rw=randrw --rwmixread=75 \
                --rate=400k --runtime=2 --time_based";
    let (f, s) = both(line);
    for (tool, doc) in [("fio", &f), ("storbench", &s)] {
        let j = &doc["jobs"][0];
        for d in ["read", "write"] {
            let bw = j[d]["bw_bytes"].as_f64().unwrap();
            let want = 400.0 * 1024.0;
            assert!(
                (0.85 * want..1.1 * want).contains(&bw),
                "{tool} {d}: {bw} B/s against {want}"
            );
        }
    }
}

/// `exitall`: when the short job ends, the time-based one running with it ends too;
/// `exitall_on_error`: the same when a job fails (here on max_latency). `threads=1` is
/// accepted as fio accepts it.
#[test]
fn exitall_ends_the_jobs_running_with_it() {
    if !fio_available() {
        return;
    }
    for first in [
        "--name=a --ioengine=null --size=1m --exitall --threads=1",
        "--name=a --ioengine=psync --size=4m --rw=randread --max_latency=1 --exitall_on_error",
    ] {
        let line = format!(
            "{first} --name=b --ioengine=null --size=1g --time_based --runtime=20 --thread"
        );
        let (f, s) = both_even_failing(&line);
        for (tool, doc) in [("fio", &f), ("storbench", &s)] {
            let b = &doc["jobs"][1];
            assert_eq!(b["jobname"], "b", "{tool}");
            let runtime = b["job_runtime"].as_u64().unwrap();
            assert!(runtime < 5000, "{tool}: {first}: b ran {runtime} ms");
            assert_eq!(b["error"], 0, "{tool}: {first}");
        }
    }
}

/// Like [`both`] for runs where a job fails (both tools then exit 1 after the report).
fn both_even_failing(line: &str) -> (Value, Value) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut args = vec!["--output-format=json"];
    args.extend(words(line));
    let doc = |text: &str| -> Value {
        let start = text
            .find("{\n")
            .unwrap_or_else(|| panic!("no JSON in {text}"));
        serde_json::from_str(&text[start..]).unwrap()
    };
    std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), &args));
        let ours = sb_fio(sd.path(), &args);
        (doc(&theirs.join().unwrap().stdout), doc(&ours.stdout))
    })
}
