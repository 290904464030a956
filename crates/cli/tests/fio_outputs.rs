//! fio's output formats from real `storbench fio` runs, next to fio 3.33 on the same
//! command lines: the JSON/json+ key set, nesting and value types; the normal text's line
//! structure; terse v3 field counts; percentiles that follow from json+ `bins` by fio's rule;
//! Debian's fio_jsonplus_clat2csv on our json+. Skipped with a reason without fio 3.33.

mod common;

use std::process::Command;

use common::json::{percentile_from_bins, shape_diff};
use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// Runs `line` with both tools at the same time, in temp dirs of their own.
fn both(line: &str) -> (common::Run, common::Run) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = words(line);
    std::thread::scope(|s| {
        let theirs = s.spawn(|| fio(fd.path(), &args));
        let ours = sb_fio(sd.path(), &args);
        (theirs.join().unwrap(), ours)
    })
}

/// Our JSON without the `storbench` key, which must be there (and be the last key).
fn fio_part(mut ours: Value) -> Value {
    let obj = ours.as_object_mut().expect("a JSON object");
    assert_eq!(
        obj.keys().next_back().map(String::as_str),
        Some("storbench"),
        "storbench's extras belong under one last top-level key"
    );
    obj.remove("storbench");
    ours
}

fn assert_same_shape(line: &str) {
    let (f, s) = both(line);
    let diff = shape_diff(&f.fio_json(), &fio_part(s.json()));
    assert!(diff.is_empty(), "{line}:\n{}", diff.join("\n"));
}

#[test]
fn json_plus_has_fios_keys_nesting_and_types() {
    if !fio_available() {
        return;
    }
    common::par_each(
        &[
            "--output-format=json+ --name=j --ioengine=null --size=16m --rw=randrw --bs=4k",
            "--output-format=json+ --name=j --ioengine=psync --size=1m --rw=randrw --bs=4k --fsync=8",
            "--output-format=json+ --name=j --ioengine=null --size=4m --rw=read --numjobs=2 --group_reporting --lat_percentiles=1",
            "--output-format=json+ --name=j --ioengine=null --size=4m --rw=randrw --unified_rw_reporting=both",
        ],
        |line| {
            assert_same_shape(line);
        },
    );
}

#[test]
fn json_has_fios_keys_nesting_and_types() {
    if !fio_available() {
        return;
    }
    common::par_each(
        &[
            "--output-format=json --name=j --ioengine=libaio --iodepth=4 --size=1m --rw=randread --numjobs=2",
            "--output-format=json --name=j --ioengine=null --size=4m --rw=write --gtod_reduce=1",
            "--output-format=json --name=j --ioengine=null --size=4m --rw=randrw --unified_rw_reporting=mixed",
            "--output-format=json --kb_base=1000 --name=a --ioengine=null --size=4m --name=b --ioengine=null --size=4m --rw=write --stonewall",
        ],
        |line| {
            assert_same_shape(line);
        },
    );
}

/// Every percentile we print is the bucket fio's rule picks from our own json+ `bins`.
#[test]
fn percentiles_follow_from_our_bins() {
    let dir = tempfile::tempdir().unwrap();
    let doc = sb_fio(
        dir.path(),
        &words("--output-format=json+ --name=p --ioengine=psync --size=2m --rw=randrw --bs=4k --lat_percentiles=1 --slat_percentiles=1 --percentile_list=1:50:90:99:99.5:99.9:99.95"),
    )
    .json();
    let mut checked = 0;
    for job in doc["jobs"].as_array().unwrap() {
        for dir in ["read", "write"] {
            for lat in ["clat_ns", "lat_ns"] {
                let v = &job[dir][lat];
                let pct = v["percentile"].as_object().expect("percentiles");
                let bins = v["bins"].as_object().expect("bins");
                for (key, value) in pct {
                    let p = (key.parse::<f64>().unwrap() * 100.0).round() as u64;
                    let (lo, hi) = percentile_from_bins(bins, p);
                    let got = value.as_u64().unwrap();
                    assert!(
                        got == lo || got == hi,
                        "{dir} {lat} {key}: printed {got}, bins give {lo}"
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 28, "only {checked} percentiles checked");
}

/// Debian's fio_jsonplus_clat2csv turns our json+ into one CSV per job whose counts are
/// our `bins`.
#[test]
fn fio_jsonplus_clat2csv_reads_our_json_plus() {
    if !clat2csv_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ours.json");
    let run = sb_fio(
        dir.path(),
        &[
            "--output-format=json+",
            &format!("--output={}", json.display()),
            "--name=c",
            "--ioengine=psync",
            "--size=1m",
            "--rw=randrw",
            "--numjobs=2",
        ],
    );
    assert_eq!(run.ok(), "", "stdout stays empty with --output");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let out = Command::new("/usr/bin/python3")
        .arg("/usr/bin/fio_jsonplus_clat2csv")
        .arg(&json)
        .arg(dir.path().join("ours.csv"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fio_jsonplus_clat2csv: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (i, job) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let csv = std::fs::read_to_string(dir.path().join(format!("ours_job{i}.csv")))
            .expect("one CSV per job");
        for d in ["read", "write"] {
            let want: Vec<(u64, u64)> = sorted_bins(&job[d]["clat_ns"]["bins"]);
            assert!(!want.is_empty(), "job {i} {d}: no bins");
            assert_eq!(csv_counts(&csv, d), want, "job {i} {d}");
        }
    }
}

fn clat2csv_available() -> bool {
    let script = std::path::Path::new("/usr/bin/fio_jsonplus_clat2csv").exists();
    let six = Command::new("/usr/bin/python3")
        .args(["-c", "import six"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !script || !six {
        eprintln!("SKIP: fio_jsonplus_clat2csv needs packages fio and python3-six");
    }
    script && six
}

fn sorted_bins(bins: &Value) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = bins
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, c)| (k.parse().unwrap(), c.as_u64().unwrap()))
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// (bucket ns, count) rows of direction `dir` in a fio_jsonplus_clat2csv file, whose header
/// is `nsec, read_slat_ns_count, …, read_clat_ns_count, read_clat_ns_cumulative, …`.
fn csv_counts(csv: &str, dir: &str) -> Vec<(u64, u64)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    let col = header
        .iter()
        .position(|h| *h == format!("{dir}_clat_ns_count"))
        .unwrap_or_else(|| panic!("no {dir}_clat_ns_count column in {header:?}"));
    lines
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(',').map(str::trim).collect();
            let count = cells.get(col).filter(|c| !c.is_empty())?.parse().ok()?;
            Some((cells[0].parse().unwrap(), count))
        })
        .filter(|&(_, c): &(u64, u64)| c > 0)
        .collect()
}

#[test]
fn terse_v3_has_fios_field_counts() {
    if !fio_available() {
        return;
    }
    // No disk under the null engine: 121 fields; one disk (a file in a temp dir): 130.
    for (line, fields) in [
        (
            "--output-format=terse --name=t --ioengine=null --size=1m --numjobs=2",
            121,
        ),
        (
            "--output-format=terse --name=t --ioengine=psync --size=1m --rw=randwrite",
            130,
        ),
    ] {
        let (f, s) = both(line);
        let count = |text: &str| -> Vec<usize> {
            text.lines()
                .filter(|l| l.starts_with("3;"))
                .map(|l| l.split(';').count())
                .collect()
        };
        let ours = count(s.ok());
        assert_eq!(count(&f.stdout), ours, "{line}: fio and ours");
        assert!(ours.iter().all(|&n| n == fields), "{line}: {ours:?}");
        assert_eq!(
            s.stdout.lines().count(),
            ours.len(),
            "{line}: only terse lines"
        );
    }
}

/// The normal output reduced to its structure: which lines, in which order, with numbers,
/// units and pids masked; the data-dependent latency distribution rows, percentile rows and
/// bandwidth-sample rows are folded or dropped, and storbench's notes block is cut.
fn skeleton(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("storbench notes:") {
            break;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("lat (") && trimmed.contains("  : ") {
            continue; // `lat (usec)   : 250=…` distribution rows
        }
        if trimmed.starts_with("bw (") || trimmed.starts_with("iops        :") {
            continue; // bandwidth samples exist only for runs longer than bwavgtime
        }
        if trimmed.starts_with('|') {
            // Percentile rows: 3 or 4 per row depending on the width of the values.
            if out.last().is_none_or(|l| l != "|") {
                out.push("|".to_string());
            }
            continue;
        }
        out.push(mask_line(line));
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

fn mask_line(line: &str) -> String {
    let mut s = line.to_string();
    if let Some(i) = s.find(": pid=") {
        s.truncate(i);
    }
    for unit in ["(nsec)", "(usec)", "(msec)"] {
        s = s.replace(unit, "(U)");
    }
    if s.starts_with("fio-3.33 (storbench ") {
        s = "PROGRAM".into();
    }
    s = s.replace("fio-3.33", "PROGRAM");
    if s.starts_with("storbench-") {
        s = "PROGRAM".into();
    }
    let mut out = String::new();
    let mut in_num = false;
    for ch in s.chars() {
        let num = ch.is_ascii_digit() || (in_num && (ch == '.' || ch.is_ascii_alphabetic()));
        if num && !in_num {
            out.push('N');
        }
        // Padding after `=`, `[` or another space depends on the width of the numbers.
        let padding = ch == ' ' && out.ends_with([' ', '=', '[']);
        if !num && !padding {
            out.push(ch);
        }
        in_num = num;
    }
    out
}

#[test]
fn normal_output_has_fios_line_structure() {
    if !fio_available() {
        return;
    }
    common::par_each(
        &[
            "--thread --name=n --ioengine=null --size=16m --rw=randrw",
            "--thread --name=n --ioengine=null --size=16m --rw=read --numjobs=2",
            "--thread --name=n --ioengine=null --size=16m --rw=write --numjobs=2 --group_reporting",
            "--thread --name=n --ioengine=null --size=16m --rw=read --gtod_reduce=1 --name=m --ioengine=null --size=8m --rw=write --stonewall",
            "--thread --name=n --ioengine=null --size=16m --rw=randrw --unified_rw_reporting=mixed --kb_base=1000",
            "--thread --name=n --ioengine=psync --size=1m --rw=randwrite --fsync=4",
            "--thread --name=n --ioengine=libaio --iodepth=4 --size=1m --rw=randread --lat_percentiles=1",
        ],
        |line| {
            let (f, s) = both(line);
            assert!(f.success(), "fio {line}: {}", f.stderr);
            let (a, b) = (skeleton(&f.stdout), skeleton(s.ok()));
            assert_eq!(
                a, b,
                "{line}\n--- fio\n{}\n--- ours\n{}",
                f.stdout, s.stdout
            );
        },
    );
}

/// The shape comparison itself sees what it must: a missing key, a changed value type, a
/// different array length; and ignores values and the keys of `bins`.
#[test]
fn shape_diff_reports_real_differences_only() {
    let fio: Value = serde_json::json!({"a": 1, "b": {"c": 1.5, "bins": {"10": 1}}, "l": [1, 2]});
    let same: Value = serde_json::json!({"a": 7, "b": {"c": 0.25, "bins": {"99": 3}}, "l": [5, 6]});
    assert!(shape_diff(&fio, &same).is_empty());
    let changed: Value = serde_json::json!({"a": "7", "b": {"c": 1}, "l": [5]});
    let diff = shape_diff(&fio, &changed);
    assert_eq!(diff.len(), 4, "{diff:#?}");
    let extra: Value =
        serde_json::json!({"a": 1, "x": 0, "b": {"c": 1.5, "bins": {}}, "l": [1, 2]});
    assert_eq!(shape_diff(&fio, &extra).len(), 1);
}

/// fio prints `"global options" : {}` when the only options before the first --name take no
/// value (`--thread`, `--group_reporting`); we leave the key out.
#[test]
fn global_options_key_appears_for_valueless_global_flags() {
    if !fio_available() {
        return;
    }
    assert_same_shape("--output-format=json --thread --name=g --ioengine=null --size=1m");
}

/// The figures of one JSON direction agree with each other by fio's formulas (KiB = 1024
/// bytes, rates per second of `runtime` ms), so the units are fio's.
fn check_units(who: &str, d: &Value) {
    let f = |k: &str| d[k].as_f64().unwrap_or_else(|| panic!("{who}: {k}"));
    let runtime_s = f("runtime") / 1000.0;
    let near = |a: f64, b: f64| (a - b).abs() <= 1.0 + b.abs() * 2e-3;
    assert_eq!(
        d["io_kbytes"].as_u64(),
        Some(d["io_bytes"].as_u64().unwrap() / 1024),
        "{who}"
    );
    assert!(
        near(f("bw_bytes"), f("io_bytes") / runtime_s),
        "{who}: bw_bytes"
    );
    assert!(near(f("bw"), f("bw_bytes") / 1024.0), "{who}: bw is KiB/s");
    assert!(near(f("iops"), f("total_ios") / runtime_s), "{who}: iops");
    assert!(
        f("bw_min") <= f("bw_mean") && f("bw_mean") <= f("bw_max"),
        "{who}"
    );
    for lat in ["clat_ns", "lat_ns"] {
        let l = &d[lat];
        let (min, mean, max) = (l["min"].as_f64(), l["mean"].as_f64(), l["max"].as_f64());
        assert!(min <= mean && mean <= max, "{who}: {lat} {l}");
    }
}

/// The same null job by both tools: every rate and latency is in the same unit (a unit
/// slip would be a factor of 1000 or 1024; the two tools differ by far less).
#[test]
fn json_units_are_fios() {
    if !fio_available() {
        return;
    }
    let (f, s) = both(
        "--output-format=json --name=u --ioengine=null --size=64m --rw=read --runtime=1 --time_based",
    );
    let (theirs, ours) = (f.fio_json(), s.json());
    let (a, b) = (&theirs["jobs"][0]["read"], &ours["jobs"][0]["read"]);
    check_units("fio", a);
    check_units("storbench", b);
    for path in [
        "/bw",
        "/iops",
        "/bw_mean",
        "/iops_mean",
        "/clat_ns/mean",
        "/lat_ns/mean",
        "/runtime",
    ] {
        let (x, y) = (a.pointer(path).unwrap(), b.pointer(path).unwrap());
        let ratio = y.as_f64().unwrap() / x.as_f64().unwrap();
        assert!((0.1..10.0).contains(&ratio), "{path}: fio {x}, ours {y}");
    }
}
