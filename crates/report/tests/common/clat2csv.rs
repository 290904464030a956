//! Runs Debian's `fio_jsonplus_clat2csv` on our json+ and checks the CSV it writes.

use std::collections::BTreeMap;
use std::process::Command;

use storbench_model::result::{LatStats, RunResult};
use storbench_report::fio::{FioOpts, json, view};

/// Whether the script and the Python module it imports (`six`, Debian package python3-six,
/// which fio does not depend on) are installed; prints why not.
pub fn available() -> bool {
    if !std::path::Path::new("/usr/bin/fio_jsonplus_clat2csv").exists() {
        eprintln!(
            "skipped fio_jsonplus_clat2csv check: /usr/bin/fio_jsonplus_clat2csv missing (package fio)"
        );
        return false;
    }
    let six = Command::new("/usr/bin/python3")
        .args(["-c", "import six"])
        .output();
    if !six.is_ok_and(|o| o.status.success()) {
        eprintln!(
            "skipped fio_jsonplus_clat2csv check: python3 module six missing (package python3-six)"
        );
        return false;
    }
    true
}

/// Converts `run`'s json+ to CSV with the Debian script and checks every series: the
/// histogram counts, running totals and fractions equal our histograms'.
pub fn check(name: &str, run: &RunResult) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("ours.json");
    let mut text = Vec::new();
    json::render(run, &FioOpts::default(), true, &mut text).unwrap();
    std::fs::write(&src, &text).unwrap();
    let dest = dir.path().join("ours.csv");
    for extra in [None, Some("--validate")] {
        let out = Command::new("/usr/bin/python3")
            .arg("/usr/bin/fio_jsonplus_clat2csv")
            .arg(&src)
            .arg(&dest)
            .args(extra)
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{name}: fio_jsonplus_clat2csv {extra:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let entries: Vec<view::Entry> = view::groups(run)
        .into_iter()
        .flat_map(|g| g.entries)
        .collect();
    for (i, e) in entries.iter().enumerate() {
        let csv = std::fs::read_to_string(dir.path().join(format!("ours_job{i}.csv"))).unwrap();
        let series = parse(&csv);
        let s = &e.job.settings;
        for (d, dname) in ["read", "write", "trim"].iter().enumerate() {
            let dir = &e.job.dirs[d];
            for (lname, stats, on) in [
                ("slat_ns", &dir.slat, s.slat_percentiles),
                ("clat_ns", &dir.clat, s.clat_percentiles),
                ("lat_ns", &dir.lat, s.lat_percentiles),
            ] {
                let got = series
                    .get(&format!("{dname}_{lname}"))
                    .cloned()
                    .unwrap_or_default();
                let want = expected(stats, on);
                assert_eq!(got, want, "{name}: job {i} {dname} {lname}");
            }
        }
    }
}

/// (count, cumulative, fraction) per bucket value of one series.
type Series = BTreeMap<u64, (u64, u64, f64)>;

fn expected(stats: &LatStats, on: bool) -> Series {
    let mut out = Series::new();
    if !on || stats.samples == 0 {
        return out;
    }
    let total = stats.hist.total();
    let mut run = 0;
    for (ns, c) in stats.hist.bins() {
        run += c;
        out.insert(ns, (c, run, run as f64 / total as f64));
    }
    out
}

fn parse(csv: &str) -> BTreeMap<String, Series> {
    let mut lines = csv.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let names: Vec<String> = header[1..]
        .chunks(3)
        .filter(|c| c.len() == 3)
        .map(|c| c[0].trim_end_matches("_count").to_string())
        .collect();
    let mut out: BTreeMap<String, Series> = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let ns: u64 = cells[0].parse().unwrap();
        for (k, name) in names.iter().enumerate() {
            let c = &cells[1 + 3 * k..4 + 3 * k];
            if c[0].is_empty() {
                continue;
            }
            let v = (
                c[0].parse().unwrap(),
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
            );
            out.entry(name.clone()).or_default().insert(ns, v);
        }
    }
    out
}
