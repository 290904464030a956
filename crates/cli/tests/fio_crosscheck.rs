//! `storbench fio` against the installed fio 3.33 on the same command lines: size-bound
//! jobs issue the same number of IOs and bytes, jobs and groups come out the same (numjobs,
//! group_reporting, stonewall, new_group, several job files, --section). Each case runs fio
//! and storbench in temp dirs of their own. Skipped with a reason when fio 3.33 is missing.

mod common;

use std::path::Path;

use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// What must agree between fio and storbench for a case.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Agree {
    /// total_ios and io_bytes per direction.
    Exact,
    /// Totals over directions (randrw splits by a random draw).
    Sums,
    /// Bytes over directions only (random block sizes: the IO count is a random draw).
    Bytes,
}

/// One JSON `jobs[]` entry reduced to what a size-bound job must reproduce.
#[derive(Debug, PartialEq)]
struct Totals {
    name: String,
    group: u64,
    ios: [u64; 3],
    bytes: [u64; 3],
    /// fsync/fdatasync calls.
    syncs: u64,
}

fn totals(doc: &Value) -> Vec<Totals> {
    doc["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(|j| Totals {
            name: j["jobname"].as_str().unwrap().to_string(),
            group: j["groupid"].as_u64().unwrap(),
            ios: ["read", "write", "trim"].map(|d| j[d]["total_ios"].as_u64().unwrap()),
            bytes: ["read", "write", "trim"].map(|d| j[d]["io_bytes"].as_u64().unwrap()),
            syncs: j["sync"]["total_ios"].as_u64().unwrap(),
        })
        .collect()
}

/// Runs `args` with fio and with storbench (JSON output) at the same time, each in a temp
/// dir of its own, and returns both documents.
fn both(args: &[&str]) -> (Value, Value) {
    both_after(args, |_| {})
}

/// Like [`both`], with `setup` run on each temp dir first (job files, existing files).
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

/// Runs the jobs `--name=j<i> <common> <extra_i>` together in one command line (one fio
/// start for many cases) and asserts storbench reproduces fio's IO counts job by job.
fn same_totals(common: &str, jobs: &[(&str, Agree)]) {
    let line: String = jobs
        .iter()
        .enumerate()
        .map(|(i, (extra, _))| format!(" --name=j{i} {common} {extra}"))
        .collect();
    let (f, s) = both(&words(&line));
    let (tf, ts) = (totals(&f), totals(&s));
    assert_eq!(tf.len(), ts.len(), "{line}: number of jobs");
    for (a, b) in tf.iter().zip(&ts) {
        assert_eq!((&a.name, a.group), (&b.name, b.group), "{line}: job order");
        let index: usize = a.name[1..].parse().unwrap();
        let (extra, agree) = jobs[index];
        let sum = |v: [u64; 3]| v.iter().sum::<u64>();
        match agree {
            Agree::Exact => assert_eq!(a, b, "{extra}"),
            Agree::Sums => assert_eq!(
                (sum(a.ios), sum(a.bytes)),
                (sum(b.ios), sum(b.bytes)),
                "{extra}: fio {a:?}, ours {b:?}"
            ),
            Agree::Bytes => {
                assert_eq!(sum(a.bytes), sum(b.bytes), "{extra}: fio {a:?}, ours {b:?}")
            }
        }
        assert!(sum(b.ios) > 0, "{extra}: no IO at all");
    }
}

const NULL: &str = "--ioengine=null --size=16m";

#[test]
fn sequential_jobs_issue_what_fio_issues() {
    if !fio_available() {
        return;
    }
    same_totals(
        NULL,
        &[
            ("--rw=read --bs=4k", Agree::Exact),
            ("--rw=write --bs=64k --iodepth=4", Agree::Exact),
            ("--rw=read --bs=4k --loops=3", Agree::Exact),
            ("--rw=read --bs=4k --number_ios=1000", Agree::Exact),
            ("--rw=write --bs=4k --nrfiles=4", Agree::Exact),
            ("--rw=read --bs=8k --numjobs=3", Agree::Exact),
            ("--rw=rw --bs=4k", Agree::Sums),
            ("--rw=rw --bs=4k,8k", Agree::Exact),
            ("--rw=read --bsrange=4k-16k", Agree::Bytes),
            // Holes: one pass (ends on the last block), or wrap and fill size= bytes.
            ("--rw=read:8k --bs=4k", Agree::Exact),
            ("--rw=write:4k --bs=8k --loops=2", Agree::Exact),
            ("--rw=read:12k --bs=4k --size=10m", Agree::Exact),
            ("--rw=read:8k --bs=4k --nrfiles=2", Agree::Exact),
        ],
    );
}

#[test]
fn random_jobs_visit_every_block_once_like_fio() {
    if !fio_available() {
        return;
    }
    same_totals(
        NULL,
        &[
            ("--rw=randread --bs=4k", Agree::Exact),
            ("--rw=randwrite --bs=4k --numjobs=3", Agree::Exact),
            ("--rw=randrw --bs=4k --nrfiles=4", Agree::Sums),
            ("--rw=randrw --bs=4k --rwmixread=70 --loops=2", Agree::Sums),
            ("--rw=randrw --bssplit=4k/50:64k/50", Agree::Exact),
        ],
    );
    same_totals(
        &format!("{NULL} --group_reporting"),
        &[("--rw=randwrite --bs=4k --numjobs=3", Agree::Exact)],
    );
}

/// A total size that does not split evenly over the files: fio gives each file
/// size/nrfiles bytes and never issues a block that does not fit whole.
#[test]
fn uneven_file_sizes_like_fio() {
    if !fio_available() {
        return;
    }
    same_totals(
        "--ioengine=psync --bs=4k",
        &[
            (
                "--size=4m --rw=randread --numjobs=2 --nrfiles=3",
                Agree::Exact,
            ),
            ("--size=1m --rw=write --nrfiles=3", Agree::Exact),
        ],
    );
}

/// fio issues a due fsync in place of the next IO, so none follows the last write.
#[test]
fn fsync_counts_like_fio() {
    if !fio_available() {
        return;
    }
    same_totals(
        "--ioengine=psync --bs=4k --size=256k",
        &[
            ("--rw=randwrite --fsync=4", Agree::Exact),
            // Not fdatasync: fio 3.33 prints those as `short=21,…` with a sync total of 0
            // (and JSON sync.total_ios 0); storbench counts them as syncs.
            ("--rw=write --fsync=3", Agree::Exact),
            ("--rw=randrw --fsync=5 --rwmixread=0", Agree::Exact),
        ],
    );
}

/// Percentages of an existing file's size (`offset=25%`, `size=50%`); a write that starts
/// at 1 MiB of a 4 MiB file and writes 4 MiB grows it, as in fio; without size= a clone
/// does IO from its offset to the end of the file.
#[test]
fn percentages_of_an_existing_file_like_fio() {
    if !fio_available() {
        return;
    }
    // Without size=, each clone reads from its offset to the end.
    let line = "--name=w --ioengine=psync --bs=4k --filename=old --size=4m --rw=write --offset=25% --name=r --ioengine=psync --bs=4k --filename=old2 --size=50% --rw=randread --name=t --ioengine=psync --bs=4k --filename=old3 --offset=50% --rw=randread --numjobs=2 --offset_increment=512k";
    let make = |dir: &Path| {
        std::fs::write(dir.join("old"), vec![1u8; 4 << 20]).unwrap();
        std::fs::write(dir.join("old2"), vec![2u8; 2 << 20]).unwrap();
        std::fs::write(dir.join("old3"), vec![3u8; 4 << 20]).unwrap();
    };
    let (f, s) = both_after(&words(line), make);
    assert_eq!(totals(&f), totals(&s), "{line}");
    let ios: Vec<u64> = totals(&s).iter().map(|t| t.ios.iter().sum()).collect();
    assert_eq!(ios, [1024, 256, 512, 384]);
}

/// A percentage in offset_increment (`numjobs=4 offset_increment=25%`), and the rounding
/// up fio applies to a start computed from any percentage: on a file of 1,000,000 bytes
/// (not a multiple of 4 KiB) each clone reads from its rounded start to the end.
#[test]
fn percentage_increments_and_their_rounding_like_fio() {
    if !fio_available() {
        return;
    }
    let line = "--name=q --ioengine=psync --bs=4k --filename=quarters --rw=read --numjobs=4 --offset_increment=25% --size=25% --name=u --ioengine=psync --bs=4k --filename=uneven --rw=read --numjobs=2 --offset=10% --offset_increment=30%";
    let make = |dir: &Path| {
        std::fs::write(dir.join("quarters"), vec![1u8; 1 << 20]).unwrap();
        std::fs::write(dir.join("uneven"), vec![2u8; 1_000_000]).unwrap();
    };
    let (f, s) = both_after(&words(line), make);
    assert_eq!(totals(&f), totals(&s), "{line}");
    // 64 reads per quarter; then from 100,000 and 400,000 rounded up to 4 KiB (fio: the
    // last, partial block of the file is not read).
    let ios: Vec<u64> = totals(&s).iter().map(|t| t.ios.iter().sum()).collect();
    assert_eq!(ios, [64, 64, 64, 64, 219, 146]);
}

/// io_size (alias io_limit): less than size= ends the job early, more wraps over the
/// region, on a sync and a queued engine.
#[test]
fn io_size_like_fio() {
    if !fio_available() {
        return;
    }
    same_totals(
        "--ioengine=psync --bs=4k",
        &[
            ("--size=1m --io_size=3m --rw=read", Agree::Exact),
            ("--size=4m --io_size=1m --rw=randread", Agree::Exact),
            ("--size=1m --io_size=3m --rw=randread", Agree::Exact),
            ("--size=1m --io_limit=2500k --rw=write", Agree::Exact),
        ],
    );
    same_totals(
        "--ioengine=libaio --iodepth=4 --bs=4k",
        &[("--size=1m --io_size=3m --rw=read", Agree::Exact)],
    );
}

#[test]
fn offsets_like_fio() {
    if !fio_available() {
        return;
    }
    same_totals(
        "--ioengine=psync --bs=4k",
        &[
            ("--size=4m --rw=write --offset=1m", Agree::Exact),
            ("--filesize=2m --rw=randwrite --nrfiles=2", Agree::Exact),
            ("--filename=f1:f2 --size=2m --rw=randwrite", Agree::Exact),
            // A new file: the percentage is of its size before the run (0).
            (
                "--filename=pct --size=1m --rw=write --offset=25%",
                Agree::Exact,
            ),
            // Clones share one file, each in its own slice of it.
            (
                "--filename=shared --size=2m --rw=write --numjobs=3 --offset_increment=2m",
                Agree::Exact,
            ),
        ],
    );
}

/// Random writes (direct where the file system allows it) and a buffered randrw with two
/// clones on temp files through `engines`.
fn engines_issue_what_fio_issues(engines: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let direct = common::system::direct_io_works(dir.path());
    common::par_each(engines, |engine| {
        let d = if direct && *engine != "mmap" {
            "--direct=1"
        } else {
            ""
        };
        let random_writes = format!("{d} --iodepth=8 --rw=randwrite --bs=4k");
        same_totals(
            &format!("--ioengine={engine} --size=1m"),
            &[
                (&random_writes, Agree::Exact),
                ("--rw=randrw --bs=8k --numjobs=2", Agree::Sums),
            ],
        );
    });
}

#[test]
fn sync_engines_issue_what_fio_issues() {
    if fio_available() {
        engines_issue_what_fio_issues(&["psync", "sync", "pvsync2", "mmap"]);
    }
}

#[test]
fn async_engines_issue_what_fio_issues() {
    if !fio_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut engines = vec!["posixaio", "libaio"];
    if common::system::io_uring_works(dir.path()) {
        engines.push("io_uring");
    }
    engines_issue_what_fio_issues(&engines);
}

/// (name, groupid) of every JSON `jobs[]` entry.
fn job_list(doc: &Value) -> Vec<(String, u64)> {
    totals(doc).into_iter().map(|t| (t.name, t.group)).collect()
}

#[test]
fn jobs_and_groups_like_fio() {
    if !fio_available() {
        return;
    }
    common::par_each(
        &[
            "--name=a --ioengine=null --size=1m --numjobs=3",
            "--name=a --ioengine=null --size=1m --numjobs=3 --group_reporting",
            "--name=a --ioengine=null --size=1m --name=b --ioengine=null --size=1m --rw=write",
            "--name=a --ioengine=null --size=1m --name=b --ioengine=null --size=1m --stonewall --numjobs=2",
            "--name=a --ioengine=null --size=1m --name=b --ioengine=null --size=1m --new_group --name=c --ioengine=null --size=1m",
            "--group_reporting --name=a --ioengine=null --size=1m --numjobs=2 --name=b --ioengine=null --size=1m --stonewall --numjobs=2",
        ],
        |line| {
            let (f, s) = both(&words(line));
            assert_eq!(job_list(&f), job_list(&s), "{line}");
        },
    );
}

fn write_job_files(dir: &Path) {
    std::fs::write(
        dir.join("one.fio"),
        "[global]\nioengine=null\nsize=2m\nbs=4k\n\n[seq]\nrw=read\n\n[rand]\nrw=randwrite\nstonewall\n\n[third]\nrw=randread\nnew_group\nnumjobs=2\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("two.fio"),
        "; a second file\n[other]\nioengine=null\nsize=1m\nrw=write\n",
    )
    .unwrap();
}

#[test]
fn job_files_and_sections_like_fio() {
    if !fio_available() {
        return;
    }
    common::par_each(
        &[
            vec!["one.fio"],
            vec!["one.fio", "two.fio"],
            vec!["--section=rand", "one.fio"],
            vec!["--section=third", "--section=seq", "one.fio"],
        ],
        |args| {
            let (f, s) = both_after(args, write_job_files);
            assert_eq!(totals(&f), totals(&s), "{args:?}");
        },
    );
}

/// A log file's lines as (time ms, value, direction), checking fio 3.33's five columns
/// (`time, value, ddir, bs, prio`; bs and prio 0 for averaged entries).
fn log_lines(path: &Path) -> Vec<(u64, u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| {
            let f: Vec<u64> = l.split(", ").map(|x| x.parse().unwrap()).collect();
            assert_eq!((f.len(), f[3], f[4]), (5, 0, 0), "{}: {l}", path.display());
            (f[0], f[1], f[2])
        })
        .collect()
}

fn log_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

/// One tool's log `name`, checked against its own JSON report: directions 0 and 1 only,
/// times on the 500 ms grid, and rate × window summing to roughly the job's total (fio
/// has no line for the windows at the start and end its helper thread misses).
fn check_rate_log(dir: &Path, name: &str, job: &Value, unit: f64, field: &str) -> [usize; 2] {
    let lines = log_lines(&dir.join(name));
    let mut counts = [0; 2];
    for d in 0..2u64 {
        let times: Vec<u64> = lines.iter().filter(|l| l.2 == d).map(|l| l.0).collect();
        assert!(!times.is_empty(), "{name}: no lines for direction {d}");
        assert!(times[0] <= 1100, "{name}: first line at {}", times[0]);
        for w in times.windows(2) {
            assert!((350..=650).contains(&(w[1] - w[0])), "{name}: {times:?}");
        }
        let sum: f64 = lines.iter().filter(|l| l.2 == d).map(|l| l.1 as f64).sum();
        let total = job[["read", "write"][d as usize]][field].as_u64().unwrap() as f64;
        let ratio = sum * 0.5 * unit / total;
        assert!((0.55..=1.15).contains(&ratio), "{name} dir {d}: {ratio}");
        counts[d as usize] = times.len();
    }
    assert!(lines.iter().all(|l| l.2 < 2), "{name}: a trim line");
    counts
}

/// Latency logs: the median window near the job's own mean, on the 500 ms grid (the last,
/// partial window ends with the job).
fn check_lat_log(dir: &Path, name: &str, job: &Value, key: &str) -> [usize; 2] {
    let lines = log_lines(&dir.join(name));
    let mut counts = [0; 2];
    for d in 0..2u64 {
        let vals: Vec<(u64, u64)> = lines
            .iter()
            .filter(|l| l.2 == d)
            .map(|l| (l.0, l.1))
            .collect();
        assert!(vals.len() >= 4, "{name}: {vals:?}");
        for w in vals[..vals.len() - 1].windows(2) {
            assert!((350..=650).contains(&(w[1].0 - w[0].0)), "{name}: {vals:?}");
        }
        // The median window: one stalled IO alone in a short last window may dominate it.
        let mut means: Vec<f64> = vals.iter().map(|v| v.1 as f64).collect();
        means.sort_by(f64::total_cmp);
        let median = means[means.len() / 2];
        let own = job[["read", "write"][d as usize]][key]["mean"]
            .as_f64()
            .unwrap();
        assert!(
            median > own / 3.0 && median < own * 3.0,
            "{name} {d}: {median} vs {own}"
        );
        counts[d as usize] = vals.len();
    }
    counts
}

/// `write_bw_log`, `write_iops_log`, `write_lat_log` with `log_avg_msec`: the same files
/// (numbered per clone), columns, directions and time grid as fio 3.33, and values that
/// add up to each tool's own totals. Timing differs between the tools, so line counts may
/// differ by one.
#[test]
fn averaged_logs_like_fio() {
    if !fio_available() {
        return;
    }
    let args = words(
        "--output-format=json --name=mix --ioengine=psync --bs=4k --size=64m --rw=randrw \
         --rwmixread=70 --runtime=3 --time_based --numjobs=2 --log_avg_msec=500 \
         --write_bw_log=bw --write_iops_log=iops --write_lat_log=lat",
    );
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (f, s) = std::thread::scope(|sc| {
        let theirs = sc.spawn(|| fio(fd.path(), &args));
        let ours = sb_fio(sd.path(), &args).json();
        (theirs.join().unwrap().fio_json(), ours)
    });
    let expected: Vec<String> = ["bw_bw", "iops_iops", "lat_clat", "lat_lat", "lat_slat"]
        .iter()
        .flat_map(|p| [format!("{p}.1.log"), format!("{p}.2.log")])
        .collect();
    assert_eq!(log_names(fd.path()), expected, "fio's files");
    assert_eq!(log_names(sd.path()), expected, "ours");
    for n in 1..=2 {
        let (fj, sj) = (&f["jobs"][n - 1], &s["jobs"][n - 1]);
        let slat = format!("lat_slat.{n}.log");
        for dir in [fd.path(), sd.path()] {
            assert!(log_lines(&dir.join(&slat)).is_empty(), "psync has no slat");
        }
        for (name, unit, field) in [
            ("bw_bw", 1024.0, "io_bytes"),
            ("iops_iops", 1.0, "total_ios"),
        ] {
            let name = format!("{name}.{n}.log");
            let a = check_rate_log(fd.path(), &name, fj, unit, field);
            let b = check_rate_log(sd.path(), &name, sj, unit, field);
            for d in 0..2 {
                assert!(a[d].abs_diff(b[d]) <= 1, "{name}: fio {a:?}, ours {b:?}");
            }
        }
        for (name, key) in [("lat_clat", "clat_ns"), ("lat_lat", "lat_ns")] {
            let name = format!("{name}.{n}.log");
            let a = check_lat_log(fd.path(), &name, fj, key);
            let b = check_lat_log(sd.path(), &name, sj, key);
            for d in 0..2 {
                assert!(a[d].abs_diff(b[d]) <= 1, "{name}: fio {a:?}, ours {b:?}");
            }
        }
    }
}

/// `log_offset=1` and `log_prio=1` on averaged logs: fio 3.33 adds an offset column and
/// prints the priority in hex, both empty for averaged entries (`t, v, d, 0, 0, 0x0000`);
/// storbench's lines have the same columns.
#[test]
fn averaged_logs_with_offset_and_priority_columns_like_fio() {
    if !fio_available() {
        return;
    }
    let args = words(
        "--name=lo --ioengine=psync --bs=4k --size=16m --rw=randread --runtime=1 \
         --time_based --log_avg_msec=200 --write_bw_log=lo --write_lat_log=lo \
         --log_offset=1 --log_prio=1 --output-format=terse",
    );
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::thread::scope(|sc| {
        let theirs = sc.spawn(|| assert!(fio(fd.path(), &args).success()));
        assert!(sb_fio(sd.path(), &args).success());
        theirs.join().unwrap();
    });
    for name in ["lo_bw.1.log", "lo_clat.1.log", "lo_lat.1.log"] {
        let tails = |dir: &Path| -> Vec<String> {
            let text = std::fs::read_to_string(dir.join(name)).unwrap();
            text.lines()
                .map(|l| l.splitn(4, ", ").nth(3).unwrap_or_default().to_string())
                .collect()
        };
        let (a, b) = (tails(fd.path()), tails(sd.path()));
        assert!(
            !a.is_empty() && !b.is_empty(),
            "{name}: fio {a:?}, ours {b:?}"
        );
        for t in a.iter().chain(&b) {
            assert_eq!(t, "0, 0, 0x0000", "{name}");
        }
    }
}
