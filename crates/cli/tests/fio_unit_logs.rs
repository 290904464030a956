//! fio's per-IO logs (`write_*_log` with `log_avg_msec=0`, fio's default) and its latency
//! histogram log (`write_hist_log`), each job run by fio 3.33 and by storbench in temp dirs
//! of their own: the same files, the same columns, a line per IO (so as many lines as each
//! tool's own JSON counts IOs), sane values, and histogram lines that fio's own
//! `fiologparser_hist.py` reads. Skipped with a reason when fio 3.33 is missing.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;
use storbench_testkit::require;

/// Runs `args` with both tools at once; their JSON documents (fio's, ours).
fn both(args: &[&str], fd: &Path, sd: &Path) -> (Value, Value) {
    std::thread::scope(|sc| {
        let theirs = sc.spawn(|| fio(fd, args));
        let ours = sb_fio(sd, args).json();
        (theirs.join().unwrap().fio_json(), ours)
    })
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

/// A log's lines as their comma-separated columns (the last kept as text: `0x0000`).
fn columns(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split(", ").map(str::to_string).collect())
        .collect()
}

fn num(s: &str) -> u64 {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

/// One tool's per-IO log against its own JSON entry `job`: a line per IO and direction,
/// the block size and the priority column as asked, offsets inside the file on the block
/// grid, and each value right for its log.
fn check_per_io_log(dir: &Path, name: &str, job: &Value, kind: &str, tail: &str) {
    let lines = columns(&dir.join(name));
    let runtime = job["read"]["runtime"]
        .as_u64()
        .unwrap()
        .max(job["write"]["runtime"].as_u64().unwrap());
    let mut per_dir = [0u64; 2];
    let mut offsets = [BTreeSet::new(), BTreeSet::new()];
    let mut sum = [0u128; 2];
    for l in &lines {
        assert_eq!(l.len(), 6, "{}/{name}: {l:?}", dir.display());
        let (t, v, d, bs, off) = (num(&l[0]), num(&l[1]), num(&l[2]), num(&l[3]), num(&l[4]));
        assert_eq!((bs, l[5].as_str()), (4096, tail), "{name}: {l:?}");
        assert!(d < 2 && off % 4096 == 0 && off < 8 << 20, "{name}: {l:?}");
        assert!(t <= runtime + 50, "{name}: {t} ms past {runtime} ms");
        per_dir[d as usize] += 1;
        offsets[d as usize].insert(off);
        sum[d as usize] += u128::from(v);
        match kind {
            "iops" => assert_eq!(v, 1, "{name}"),
            // bytes * 1000000 / clat ns: between 1 KB/s and 100 GB/s.
            "bw" => assert!((1..100_000_000).contains(&v), "{name}: {l:?}"),
            _ => assert!(v > 0 && v < 10_000_000_000, "{name}: {l:?}"),
        }
    }
    for (d, key) in ["read", "write"].iter().enumerate() {
        let ios = job[key]["total_ios"].as_u64().unwrap();
        assert_eq!(
            per_dir[d],
            ios,
            "{}/{name} {key}: a line per IO",
            dir.display()
        );
        // A size-bound random job with fio's random map touches a block once per direction.
        assert_eq!(
            offsets[d].len() as u64,
            ios,
            "{name} {key}: each block once"
        );
        let field = match kind {
            "clat" => "clat_ns",
            "lat" => "lat_ns",
            "slat" => "slat_ns",
            _ => continue,
        };
        let mean = job[key][field]["mean"].as_f64().unwrap();
        let logged = sum[d] as f64 / ios.max(1) as f64;
        assert!(
            ios == 0 || (logged - mean).abs() <= mean * 0.01 + 1.0,
            "{}/{name} {key}: logged mean {logged} vs reported {mean}",
            dir.display()
        );
    }
}

/// Per-IO bandwidth, IOPS and latency logs of a size-bound random mix at depth 4 with
/// libaio (so the slat log has lines too), two clones, `log_offset=1` and `log_prio=1`:
/// the same ten files as fio, each with a line per IO in fio 3.33's six columns.
#[test]
fn per_io_logs_like_fio() {
    if !fio_available() {
        return;
    }
    let args = words(
        "--output-format=json --name=u --ioengine=libaio --iodepth=4 --bs=4k --size=8m \
         --rw=randrw --rwmixread=60 --numjobs=2 --write_bw_log=u --write_iops_log=u \
         --write_lat_log=u --log_offset=1 --log_prio=1",
    );
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (f, s) = both(&args, fd.path(), sd.path());
    let kinds = ["bw", "clat", "iops", "lat", "slat"];
    let expected: Vec<String> = kinds
        .iter()
        .flat_map(|k| [format!("u_{k}.1.log"), format!("u_{k}.2.log")])
        .collect();
    assert_eq!(log_names(fd.path()), expected, "fio's files");
    assert_eq!(log_names(sd.path()), expected, "ours");
    for n in 1..=2 {
        for k in kinds {
            let name = format!("u_{k}.{n}.log");
            check_per_io_log(fd.path(), &name, &f["jobs"][n - 1], k, "0x0000");
            check_per_io_log(sd.path(), &name, &s["jobs"][n - 1], k, "0x0000");
        }
    }
}

/// Without log_offset and log_prio a per-IO line has fio's five columns, `t, v, d, bs, 0`;
/// a synchronous engine's slat log is empty in both tools.
#[test]
fn per_io_lines_without_offsets_like_fio() {
    if !fio_available() {
        return;
    }
    let args = words(
        "--output-format=json --name=p --ioengine=psync --bs=4k --size=2m --rw=write \
         --write_lat_log=p --write_bw_log=p",
    );
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (f, s) = both(&args, fd.path(), sd.path());
    for (dir, doc) in [(fd.path(), &f), (sd.path(), &s)] {
        let names = log_names(dir);
        assert_eq!(
            names,
            ["p_bw.1.log", "p_clat.1.log", "p_lat.1.log", "p_slat.1.log"],
            "{}",
            dir.display()
        );
        let ios = doc["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
        assert_eq!(ios, 512);
        for name in ["p_bw.1.log", "p_clat.1.log", "p_lat.1.log"] {
            let lines = columns(&dir.join(name));
            assert_eq!(lines.len() as u64, ios, "{}/{name}", dir.display());
            for l in &lines {
                assert_eq!(
                    (l.len(), l[2].as_str(), l[3].as_str(), l[4].as_str()),
                    (5, "1", "4096", "0"),
                    "{name}: {l:?}"
                );
            }
        }
        assert!(columns(&dir.join("p_slat.1.log")).is_empty());
    }
}

/// fio's fiologparser_hist.py, from Debian's fio package, where it and its pandas are.
fn hist_parser() -> Option<String> {
    let gz = Path::new("/usr/share/doc/fio/fiologparser_hist.py.gz");
    if !gz.exists() {
        return None;
    }
    let ok = std::process::Command::new("/usr/bin/python3")
        .args(["-c", "import pandas, numpy"])
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| {
        let out = std::process::Command::new("zcat").arg(gz).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    })
}

/// What fio's parser prints for `log`: its data rows (after the header).
fn parse_hist(script: &Path, log: &Path) -> Vec<String> {
    let out = std::process::Command::new("/usr/bin/python3")
        .arg(script)
        .arg(log)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {}",
        log.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("end-time, samples, min, avg, median, 90%, 95%, 99%, max")
    );
    lines.map(str::to_string).collect()
}

/// The histogram log of a time-based random read, at two coarsenesses: fio's file name,
/// `time, ddir, bs` and 1856 >> coarseness bins a line, lines on the log_hist_msec grid
/// whose counts add up to the job's IOs less the last, unlogged window; and fio's
/// fiologparser_hist.py reads both tools' files alike.
#[test]
fn histogram_log_like_fio() {
    if !fio_available() {
        return;
    }
    let script = hist_parser();
    for coarseness in [0u32, 2] {
        let args = format!(
            "--output-format=json --name=h --ioengine=psync --bs=4k --size=16m --rw=randread \
             --runtime=2 --time_based --write_hist_log=h --log_hist_msec=250 \
             --log_hist_coarseness={coarseness}"
        );
        let args = words(&args);
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (f, s) = both(&args, fd.path(), sd.path());
        let bins = 1856 >> coarseness;
        let mut rows = Vec::new();
        for (dir, doc) in [(fd.path(), &f), (sd.path(), &s)] {
            assert_eq!(log_names(dir), ["h_clat_hist.1.log"], "{}", dir.display());
            let log = dir.join("h_clat_hist.1.log");
            let lines = columns(&log);
            assert!(
                (5..=9).contains(&lines.len()),
                "{}: {} lines in 2 s of 250 ms",
                dir.display(),
                lines.len()
            );
            let mut total = 0;
            let mut last_t = 0;
            for l in &lines {
                assert_eq!(l.len(), 3 + bins, "{}", dir.display());
                assert_eq!((l[1].as_str(), l[2].as_str()), ("0", "4096"));
                let t = num(&l[0]);
                assert!(t >= last_t + 200, "{}: {t} after {last_t}", dir.display());
                last_t = t;
                total += l[3..].iter().map(|v| num(v)).sum::<u64>();
            }
            let ios = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
            assert!(
                total <= ios && total * 10 >= ios * 6,
                "{}: {total} binned of {ios}",
                dir.display()
            );
            if let Some(text) = &script {
                let path = dir.join("parser.py");
                std::fs::write(&path, text).unwrap();
                rows.push(parse_hist(&path, &log).len());
            }
        }
        if script.is_some() {
            assert!(rows.iter().all(|&r| r >= 1), "parser rows: {rows:?}");
        }
    }
    require!(
        script.is_some(),
        "fio's fiologparser_hist.py or pandas missing"
    );
}

/// A log asked for below a missing directory is refused in one line before the run, naming
/// the option and the directory (fio 3.33 runs the job, prints `fopen log` per file and
/// exits 0); nothing is created.
#[test]
fn a_log_below_a_missing_directory_is_refused_before_the_run() {
    let sd = tempfile::tempdir().unwrap();
    let missing = sd.path().join("missing");
    let m = missing.display();
    for option in [
        "write_bw_log",
        "write_iops_log",
        "write_lat_log",
        "write_hist_log",
    ] {
        let line =
            format!("--name=a --ioengine=null --size=1m --{option}={m}/x --output-format=terse");
        let ours = sb_fio(sd.path(), &words(&line));
        assert_eq!(ours.code, Some(1), "{option}: {}", ours.stderr);
        let err = ours.one_error_line();
        assert!(
            err.contains(&format!("{option}={m}/x: the directory {m} does not exist")),
            "{err}"
        );
        assert!(ours.stdout.is_empty(), "{option}: ran: {}", ours.stdout);
        assert!(!missing.exists());
    }
}

/// Log files that cannot be created in a directory that exists (here each name is taken by
/// a directory), per IO and averaged: each is named on stderr, one line apiece, the others
/// are written, and the exit status is fio 3.33's.
#[test]
fn every_log_file_that_cannot_be_created_is_named_with_fios_exit_status() {
    require!(fio_available(), "fio 3.33 is needed for its exit status");
    let names = [
        "b_bw.1.log",
        "i_iops.1.log",
        "l_lat.1.log",
        "l_slat.1.log",
        "l_clat.1.log",
        "h_clat_hist.1.log",
    ];
    for avg in ["0", "100"] {
        let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for dir in [fd.path(), sd.path()] {
            for name in names {
                std::fs::create_dir(dir.join(name)).unwrap();
            }
        }
        let line = format!(
            "--name=a --ioengine=null --size=1m --log_avg_msec={avg} --write_bw_log=b \
             --write_iops_log=i --write_lat_log=l --write_hist_log=h --output-format=terse"
        );
        let args = words(&line);
        let theirs = fio(fd.path(), &args);
        let ours = sb_fio(sd.path(), &args);
        assert_eq!(ours.code, theirs.code, "{}\n{}", ours.stderr, theirs.stderr);
        for name in names {
            let want = format!("storbench: warning: log file {name}: ");
            assert!(
                ours.stderr.contains(&want),
                "avg {avg}: {name}\n{}",
                ours.stderr
            );
            assert!(sd.path().join(name).is_dir());
        }
    }
}
