//! Runs the real fio and rebuilds a storbench `RunResult` from its json+ output, so the same
//! figures can be rendered by our reporters and compared with what fio printed.

use std::path::Path;
use std::process::Command;

use serde_json::{Map, Value};
use storbench_model::histogram::{Histogram, bucket_of};
use storbench_model::result::*;

/// Whether fio 3.33 can be run; prints the reason when not.
pub fn fio_available() -> bool {
    match Command::new("fio").arg("--version").output() {
        Ok(o) if String::from_utf8_lossy(&o.stdout).starts_with("fio-3.33") => true,
        Ok(o) => {
            eprintln!(
                "skipped: fio 3.33 needed, found {}",
                String::from_utf8_lossy(&o.stdout).trim()
            );
            false
        }
        Err(e) => {
            eprintln!("skipped: fio not runnable ({e})");
            false
        }
    }
}

/// One fio run's outputs (run with `--output-format=terse,json+,normal`).
pub struct FioRun {
    pub start: String,
    pub terse: Vec<String>,
    pub json_text: String,
    pub json: Value,
    pub normal: String,
}

/// Runs fio as a thread-mode job in `dir` and splits its combined output.
pub fn run_fio(dir: &Path, args: &[&str]) -> FioRun {
    let out = Command::new("fio")
        .current_dir(dir)
        .arg("--thread")
        .arg("--output-format=terse,json+,normal")
        .args(args)
        .output()
        .expect("fio runs");
    assert!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    split_output(&String::from_utf8(out.stdout).expect("utf-8"))
}

fn split_output(text: &str) -> FioRun {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let open = lines.iter().position(|l| *l == "{\n").expect("json start");
    let close = open
        + lines[open..]
            .iter()
            .position(|l| *l == "}\n")
            .expect("json end");
    let before = &lines[..open];
    let terse: Vec<String> = before
        .iter()
        .filter(|l| l.starts_with("3;"))
        .map(|l| l.to_string())
        .collect();
    let start: String = before
        .iter()
        .filter(|l| !l.starts_with("3;"))
        .copied()
        .collect();
    let json_text: String = lines[open..=close].concat();
    let json = serde_json::from_str(&json_text).expect("fio json parses");
    FioRun {
        start,
        terse,
        json_text,
        json,
        normal: lines[close + 1..].concat(),
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| v.as_f64().unwrap_or(0.0) as u64)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// Latency stats from `{min, max, mean, stddev, N, bins}`.
pub fn lat_from(v: &Value) -> LatStats {
    let n = u(&v["N"]);
    let mut s = LatStats::default();
    if n == 0 {
        return s;
    }
    let mean = f(&v["mean"]);
    let dev = f(&v["stddev"]);
    let sum = (mean * n as f64).round() as u128;
    let sq_dev = (dev * dev * (n as f64 - 1.0)).round() as u128;
    s.samples = n;
    s.min_ns = u(&v["min"]);
    s.max_ns = u(&v["max"]);
    s.sum_ns = sum;
    s.sum_sq_ns = sum * sum / n as u128 + sq_dev;
    if let Some(bins) = v["bins"].as_object() {
        s.hist = hist_from(bins);
    }
    s
}

/// A histogram from json+ `bins`; panics if a key is not a bucket value.
pub fn hist_from(bins: &Map<String, Value>) -> Histogram {
    let mut h = Histogram::default();
    for (k, c) in bins {
        let ns: u64 = k.parse().expect("bin key");
        let idx = bucket_of(ns);
        assert_eq!(
            storbench_model::histogram::bucket_value(idx),
            ns,
            "bin {ns}"
        );
        h.add_bucket(idx, u(c));
    }
    h
}

fn samples_from(v: &Value, prefix: &str, dev_key: &str, scale: f64) -> SampleStats {
    SampleStats {
        samples: u(&v[format!("{prefix}_samples")]),
        min: f(&v[format!("{prefix}_min")]) * scale,
        max: f(&v[format!("{prefix}_max")]) * scale,
        mean: f(&v[format!("{prefix}_mean")]) * scale,
        stddev: f(&v[dev_key]) * scale,
    }
}

fn dir_from(v: &Value) -> DirResult {
    DirResult {
        io_bytes: u(&v["io_bytes"]),
        total_ios: u(&v["total_ios"]),
        short_ios: u(&v["short_ios"]),
        drop_ios: u(&v["drop_ios"]),
        runtime_ms: u(&v["runtime"]),
        slat: lat_from(&v["slat_ns"]),
        clat: lat_from(&v["clat_ns"]),
        lat: lat_from(&v["lat_ns"]),
        bw_samples: samples_from(v, "bw", "bw_dev", 1024.0),
        iops_samples: samples_from(v, "iops", "iops_stddev", 1.0),
        prios: Vec::new(),
    }
}

/// Counts that give back fio's shares. A share equal to fio's display floor (0.1% or 0.01%)
/// may stand for any smaller count: it becomes one IO.
fn counts_from(v: &Value, keys: &[&str], total: u64, floor: f64) -> Vec<u64> {
    keys.iter()
        .map(|k| {
            let pct = f(&v[*k]);
            if pct == floor {
                return 1;
            }
            let c = (pct / 100.0 * total as f64).round() as u64;
            if pct > 0.0 { c.max(1) } else { c }
        })
        .collect()
}

/// A plausible count of calls behind shares whose total fio does not print: the one at which
/// each floored share stands for a single call.
fn total_behind(v: &Value, keys: &[&str], floor: f64) -> u64 {
    let pcts: Vec<f64> = keys.iter().map(|k| f(&v[*k])).collect();
    let floored = pcts.iter().filter(|p| **p == floor).count() as f64;
    let rest: f64 = pcts.iter().filter(|p| **p != floor).sum();
    if floored > 0.0 && rest < 100.0 {
        (floored / (1.0 - rest / 100.0)).round() as u64
    } else {
        1_000_000
    }
}

fn opt<'a>(doc: &'a Value, job: &'a Value, key: &str) -> Option<&'a str> {
    job["job options"][key]
        .as_str()
        .or_else(|| doc["global options"][key].as_str())
}

fn settings_from(doc: &Value, job: &Value) -> ReportSettings {
    let o = |k| opt(doc, job, k);
    let on = |k, default| o(k).map_or(default, |v| v == "1");
    let gtod = on("gtod_reduce", false);
    ReportSettings {
        slat_measured: !gtod,
        clat_measured: !gtod,
        lat_measured: !gtod,
        kb_base: o("kb_base").map_or(1024, |v| v.parse().unwrap()),
        unit_base: o("unit_base").map_or(8, |v| v.parse().unwrap()),
        clat_percentiles: on("clat_percentiles", true),
        lat_percentiles: on("lat_percentiles", false),
        slat_percentiles: on("slat_percentiles", false),
        percentile_list: o("percentile_list").map_or_else(
            || DEFAULT_PERCENTILES.to_vec(),
            |l| l.split(':').map(|p| p.parse().unwrap()).collect(),
        ),
        unified_rw: match o("unified_rw_reporting") {
            Some("mixed" | "1") => UnifiedRw::Mixed,
            Some("both" | "2") => UnifiedRw::Both,
            _ => UnifiedRw::None,
        },
        ..ReportSettings::default()
    }
}

fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// One `jobs[]` element as a job result; `members` is what fio printed as `jobs=`.
pub fn job_from(doc: &Value, v: &Value, members: u32) -> JobResult {
    let settings = settings_from(doc, v);
    let mut dirs: [DirResult; 3] = Default::default();
    if settings.unified_rw == UnifiedRw::Mixed {
        dirs[0] = dir_from(&v["mixed"]);
    } else {
        for (d, name) in ["read", "write", "trim"].iter().enumerate() {
            dirs[d] = dir_from(&v[*name]);
        }
    }
    let rw_total: u64 = dirs.iter().map(|d| d.total_ios).sum();
    let runtime_ms = u(&v["job_runtime"]);
    let cpu_ns = |k: &str| (f(&v[k]) / 100.0 * runtime_ms as f64 * 1e6).round() as u64;
    let lvl = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch = ["0", "4", "8", "16", "32", "64", ">=64"];
    let small = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let ms = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    let submits = total_behind(&v["iodepth_submit"], &batch, 0.1);
    let completes = total_behind(&v["iodepth_complete"], &batch, 0.1);
    let to7 = |c: Vec<u64>| -> [u64; 7] { c.try_into().unwrap() };
    let rw = opt(doc, v, "rw")
        .or(opt(doc, v, "readwrite"))
        .unwrap_or("read");
    let bs: u64 = match opt(doc, v, "bs") {
        Some(b) if b.ends_with('k') => b.trim_end_matches('k').parse::<u64>().unwrap() * 1024,
        _ => 4096,
    };
    JobResult {
        name: v["jobname"].as_str().unwrap().to_string(),
        groupid: u(&v["groupid"]) as u32,
        jobnum: 0,
        jobs: members,
        pid: 4242,
        error: u(&v["error"]) as i32,
        error_text: None,
        description: v["desc"].as_str().map(String::from),
        options: pairs(&v["job options"]),
        header: JobHeader {
            rw: rw.to_string(),
            bs: [(bs, bs); 3],
            ioengine: opt(doc, v, "ioengine").unwrap_or("psync").to_string(),
            requested_ioengine: None,
            iodepth: u(&v["latency_depth"]) as u32,
            numjobs: members,
            direct: opt(doc, v, "direct") == Some("1"),
        },
        settings,
        targets: vec![],
        elapsed_ms: u(&v["elapsed"]) * 1000,
        runtime_ms,
        end_unix_ms: 0,
        dirs,
        sync: SyncResult {
            total_ios: u(&v["sync"]["total_ios"]),
            lat: lat_from(&v["sync"]["lat_ns"]),
            closing: 0,
            datasyncs: 0,
        },
        cpu: CpuUsage {
            usr_ns: cpu_ns("usr_cpu"),
            sys_ns: cpu_ns("sys_cpu"),
            helper_ns: 0,
            ctx: u(&v["ctx"]),
            majf: u(&v["majf"]),
            minf: u(&v["minf"]),
            wait_ns: 0,
        },
        depth: DepthStats {
            level: to7(counts_from(&v["iodepth_level"], &lvl, rw_total, 0.1)),
            submit: to7(counts_from(&v["iodepth_submit"], &batch, submits, 0.1)),
            complete: to7(counts_from(&v["iodepth_complete"], &batch, completes, 0.1)),
        },
        lat_buckets: LatBuckets {
            ns: counts_from(&v["latency_ns"], &small, rw_total, 0.01)
                .try_into()
                .unwrap(),
            us: counts_from(&v["latency_us"], &small, rw_total, 0.01)
                .try_into()
                .unwrap(),
            ms: counts_from(&v["latency_ms"], &ms, rw_total, 0.01)
                .try_into()
                .unwrap(),
        },
        timeline: vec![],
        engine_details: vec![],
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    }
}

/// The whole document as a run. `members[i]` is the clone count behind `jobs[i]`; every
/// entry is kept as its own job (fio already merged group_reporting groups).
pub fn run_from(doc: &Value, members: &[u32]) -> RunResult {
    let mut groups: Vec<GroupResult> = Vec::new();
    for (i, v) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let job = job_from(doc, v, members.get(i).copied().unwrap_or(1));
        match groups.iter_mut().find(|g| g.id == job.groupid) {
            Some(g) => g.jobs.push(job),
            None => groups.push(GroupResult {
                id: job.groupid,
                group_reporting: false,
                jobs: vec![job],
            }),
        }
    }
    let disks = doc["disk_util"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| DiskUtil {
                    name: d["name"].as_str().unwrap().to_string(),
                    read_ios: u(&d["read_ios"]),
                    write_ios: u(&d["write_ios"]),
                    read_merges: u(&d["read_merges"]),
                    write_merges: u(&d["write_merges"]),
                    read_ticks: u(&d["read_ticks"]),
                    write_ticks: u(&d["write_ticks"]),
                    in_queue: u(&d["in_queue"]),
                    util: f(&d["util"]),
                    ..Default::default()
                })
                .collect()
        })
        .unwrap_or_default();
    let mut global_options = pairs(&doc["global options"]);
    if doc.get("global options").is_some() && global_options.is_empty() {
        // fio lists only flags (`--thread`) here, which print as an empty object: keep the
        // flag as storbench's CLI records it, with an empty value.
        global_options.push(("thread".into(), String::new()));
    }
    RunResult {
        global_options,
        groups,
        disks,
        ..RunResult::new(
            RunMode::Fio,
            doc["fio version"].as_str().unwrap().to_string(),
            u(&doc["timestamp_ms"]),
            u(&doc["timestamp_ms"]),
        )
    }
}
