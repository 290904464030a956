//! fio's JSON and json+ outputs (`show_thread_status_json`, `add_ddir_status_json`): the same
//! keys, order, units and nesting as fio 3.33, so tools that read fio's JSON read ours.
//!
//! Latencies are ns, `bw`/`bw_min`/`bw_max`/`bw_mean`/`bw_dev` are KiB/s, `bw_bytes` bytes/s,
//! `runtime` ms, shares percent. json+ adds `bins` (`"<bucket ns>": count`) to every latency
//! that has percentiles. storbench's own facts go under one extra top-level key,
//! `storbench`, after fio's keys. Nothing but the document is written.

use std::io::{self, Write};
use storbench_model::merge::saturating_sum;

use serde_json::{Map, Value, json};
use storbench_model::merge::GroupRunStats;
use storbench_model::result::{DirResult, DiskUtil, JobResult, LatStats, RunResult, UnifiedRw};

use super::view::{self, Entry};
use super::{FioOpts, jsonfmt, units};

/// Writes the JSON (or json+ when `plus`) document and a final newline.
pub fn render(run: &RunResult, opts: &FioOpts, plus: bool, out: &mut dyn Write) -> io::Result<()> {
    jsonfmt::write(&document(run, opts, plus), out)
}

/// The whole document as a value (keys in fio's order).
pub fn document(run: &RunResult, opts: &FioOpts, plus: bool) -> Value {
    let mut root = Map::new();
    root.insert("fio version".into(), json!(super::program_name(run)));
    root.insert("timestamp".into(), json!(run.finished_unix_ms / 1000));
    root.insert("timestamp_ms".into(), json!(run.finished_unix_ms));
    let time = units::ctime(run.finished_unix_ms, opts.utc_offset_secs);
    root.insert("time".into(), json!(time));
    if !run.global_options.is_empty() {
        root.insert("global options".into(), options(&run.global_options));
    }
    let mut jobs = Vec::new();
    for g in view::groups(run) {
        for e in &g.entries {
            jobs.push(job(e, &g.rs, plus));
        }
        let first = jobs.len() - g.entries.len();
        if run.hosts.is_some()
            && let Some(all) = clients_of_group(&g, &mut jobs[first..], plus)
        {
            jobs.push(all);
        }
    }
    // A multi-host run is laid out as `fio --client` writes it (docs/multihost.md).
    let key = if run.hosts.is_some() {
        "client_stats"
    } else {
        "jobs"
    };
    root.insert(key.into(), Value::Array(jobs));
    if !run.disks.is_empty() {
        root.insert("disk_util".into(), run.disks.iter().map(disk).collect());
    }
    root.insert("storbench".into(), storbench_extras(run));
    Value::Object(root)
}

/// In a multi-host run: each of the group's `HOST:job` entries becomes fio's client entry
/// (`jobname` the job's, `hostname` the host's and `port` at the end as fio puts them; no
/// `eta` or `elapsed`, which fio's client entries lack), and the group's "All clients"
/// entry (every host's entries merged, with the last host's name, as fio does, and only
/// the keys fio gives it) is returned. `port` is fio's connection to its server; ranks
/// have none, so it is 0, while a run imported from `fio --client` output keeps fio's
/// host name and port (the job's `client` and `client port` details).
fn clients_of_group(g: &view::GroupView, entries: &mut [Value], plus: bool) -> Option<Value> {
    let mut last = (String::new(), 0);
    for (v, e) in entries.iter_mut().zip(&g.entries) {
        let Some(o) = v.as_object_mut() else { continue };
        let full = o
            .get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (host, name) = storbench_model::hosts::split_name(&full);
        o.insert("jobname".into(), json!(name));
        let detail = |k: &str| {
            e.job
                .engine_details
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        let host = detail("client").unwrap_or(host).to_string();
        let port = detail("client port").and_then(|p| p.parse::<u16>().ok());
        last = (host, port.unwrap_or(0));
        client_tail(o, &last.0, last.1);
    }
    let jobs: Vec<JobResult> = g.entries.iter().map(|e| e.job.clone()).collect();
    let mut merged = storbench_model::merge::merge_jobs(&jobs)?;
    merged.name = "All clients".into();
    merged.options.clear();
    let entry = view::Entry {
        job: merged,
        mixed: None,
    };
    let mut all = job(&entry, &g.rs, plus);
    if let Some(o) = all.as_object_mut() {
        o.retain(|k, _| !ALL_CLIENTS_LACKS.contains(&k.as_str()));
        // fio sums its clients' latency statistics but not their percentiles.
        for dir in ["read", "write", "trim"] {
            for lat in ["slat_ns", "clat_ns", "lat_ns"] {
                let stats = o.get_mut(dir).and_then(|d| d.get_mut(lat));
                if let Some(l) = stats.and_then(Value::as_object_mut) {
                    l.shift_remove("percentile");
                    l.shift_remove("bins");
                }
            }
        }
        client_tail(o, &last.0, last.1);
    }
    Some(all)
}

/// Keys of a job entry that fio's "All clients" entry does not have.
const ALL_CLIENTS_LACKS: [&str; 5] = [
    "job options",
    "latency_depth",
    "latency_target",
    "latency_percentile",
    "latency_window",
];

/// A client entry's end as `fio --client` writes it.
fn client_tail(o: &mut Map<String, Value>, host: &str, port: u16) {
    o.shift_remove("eta");
    o.shift_remove("elapsed");
    o.insert("hostname".into(), json!(host));
    o.insert("port".into(), json!(port));
}

/// A float as fio prints it; non-finite values become 0 so the document stays valid.
fn fl(v: f64) -> Value {
    json!(if v.is_finite() { v } else { 0.0 })
}

/// An options map; flags (empty values) are left out, as fio leaves them out.
fn options(opts: &[(String, String)]) -> Value {
    let map: Map<String, Value> = opts
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    Value::Object(map)
}

fn job(e: &Entry, rs: &GroupRunStats, plus: bool) -> Value {
    let j = &e.job;
    let mut o = Map::new();
    o.insert("jobname".into(), json!(j.name));
    o.insert("groupid".into(), json!(j.groupid));
    o.insert("error".into(), json!(j.error));
    o.insert("eta".into(), json!(0));
    o.insert("elapsed".into(), json!(j.elapsed_ms.div_ceil(1000)));
    if !j.options.is_empty() {
        o.insert("job options".into(), options(&j.options));
    }
    if e.unified() == UnifiedRw::Mixed {
        o.insert("mixed".into(), dir(j, &j.dirs[0], rs.agg_bw[0], plus, 0));
    } else {
        for (d, name) in ["read", "write", "trim"].iter().enumerate() {
            // fio 3.33 counts fdatasyncs as short reads.
            let extra_short = if d == 0 { j.sync.datasyncs } else { 0 };
            o.insert(
                (*name).into(),
                dir(j, &j.dirs[d], rs.agg_bw[d], plus, extra_short),
            );
        }
        o.insert("sync".into(), sync(j, plus));
    }
    if let Some(mixed) = &e.mixed {
        o.insert("mixed".into(), dir(j, mixed, rs.agg_bw[0], plus, 0));
    }
    let (usr, sys) = view::cpu_percent(j);
    o.insert("job_runtime".into(), json!(j.runtime_ms));
    o.insert("usr_cpu".into(), fl(usr));
    o.insert("sys_cpu".into(), fl(sys));
    o.insert("ctx".into(), json!(j.cpu.ctx));
    o.insert("majf".into(), json!(j.cpu.majf));
    o.insert("minf".into(), json!(j.cpu.minf));
    add_distributions(&mut o, e);
    if let Some(errors) = &j.measured.errors {
        o.insert("total_err".into(), json!(errors.total));
        o.insert("first_error".into(), json!(errors.first));
    }
    let lt = j
        .latency_target
        .unwrap_or(storbench_model::result::LatencyTargetResult {
            depth: j.header.iodepth,
            percentile: 100.0,
            ..Default::default()
        });
    o.insert("latency_depth".into(), json!(lt.depth));
    o.insert("latency_target".into(), json!(lt.target_ns));
    o.insert("latency_percentile".into(), fl(lt.percentile));
    o.insert("latency_window".into(), json!(lt.window_us));
    if let Some(ss) = &j.steadystate {
        o.insert("steadystate".into(), steadystate(ss));
    }
    if let Some(desc) = j.description.as_deref().filter(|d| !d.is_empty()) {
        o.insert("desc".into(), json!(desc));
    }
    Value::Object(o)
}

/// fio's `steadystate` object: the criterion, whether it was met, and the window.
fn steadystate(ss: &storbench_model::result::SteadyResult) -> Value {
    let pct = if ss.percent { "%" } else { "" };
    json!({
        "ss": ss.ss,
        "duration": ss.duration_s,
        "attained": u32::from(ss.attained),
        "criterion": format!("{:.6}{pct}", ss.criterion as f32),
        "max_deviation": fl(ss.max_deviation),
        "slope": fl(ss.slope),
        "data": {
            "bw_mean": ss.bw_mean(),
            "iops_mean": ss.iops_mean(),
            "iops": ss.iops_data,
            "bw": ss.bw_data,
        },
    })
}

/// `iodepth_level/submit/complete` and `latency_ns/us/ms`: shares in percent.
fn add_distributions(o: &mut Map<String, Value>, e: &Entry) {
    let j = &e.job;
    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    o.insert(
        "iodepth_level".into(),
        dist(&level_keys, &j.depth.level, e.rw_ios(), 0.1),
    );
    let submits = saturating_sum(j.depth.submit.iter().copied());
    o.insert(
        "iodepth_submit".into(),
        dist(&batch_keys, &j.depth.submit, submits, 0.1),
    );
    let completes = saturating_sum(j.depth.complete.iter().copied());
    o.insert(
        "iodepth_complete".into(),
        dist(&batch_keys, &j.depth.complete, completes, 0.1),
    );
    let small = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let ms_keys = [&small[..], &["2000", ">=2000"]].concat();
    let b = &j.lat_buckets;
    o.insert("latency_ns".into(), dist(&small, &b.ns, e.rw_ios(), 0.01));
    o.insert("latency_us".into(), dist(&small, &b.us, e.rw_ios(), 0.01));
    o.insert("latency_ms".into(), dist(&ms_keys, &b.ms, e.rw_ios(), 0.01));
}

/// Shares in percent keyed by bucket name.
fn dist(keys: &[&str], counts: &[u64], total: u64, floor: f64) -> Value {
    let map: Map<String, Value> = keys
        .iter()
        .zip(counts)
        .map(|(k, c)| ((*k).to_string(), fl(units::share(*c, total, floor))))
        .collect();
    Value::Object(map)
}

fn dir(j: &JobResult, d: &DirResult, agg_bw: u64, plus: bool, extra_short: u64) -> Value {
    let s = &j.settings;
    let bw_bytes = view::mul_div(d.io_bytes, 1000, d.runtime_ms);
    let iops = if d.runtime_ms == 0 {
        0.0
    } else {
        d.total_ios as f64 * 1000.0 / d.runtime_ms as f64
    };
    let mut o = Map::new();
    o.insert("io_bytes".into(), json!(d.io_bytes));
    o.insert("io_kbytes".into(), json!(d.io_bytes >> 10));
    o.insert("bw_bytes".into(), json!(bw_bytes));
    o.insert("bw".into(), json!(bw_bytes / 1024));
    o.insert("iops".into(), fl(iops));
    o.insert("runtime".into(), json!(d.runtime_ms));
    o.insert("total_ios".into(), json!(d.total_ios));
    o.insert("short_ios".into(), json!(d.short_ios + extra_short));
    o.insert("drop_ios".into(), json!(d.drop_ios));
    let list = view::sorted_percentiles(s);
    let (slat_on, clat_on, lat_on) = view::percentile_flags(s);
    o.insert("slat_ns".into(), lat(&d.slat, slat_on, &list, plus));
    o.insert("clat_ns".into(), lat(&d.clat, clat_on, &list, plus));
    o.insert("lat_ns".into(), lat(&d.lat, lat_on, &list, plus));
    // As fio: only when at least two priorities have samples.
    if d.prios.iter().filter(|p| p.lat.samples > 0).count() >= 2 {
        let name = if lat_on { "lat_ns" } else { "clat_ns" };
        let prios: Vec<Value> = d
            .prios
            .iter()
            .filter(|p| p.lat.samples > 0)
            .map(|p| {
                let mut e = Map::new();
                e.insert("prioclass".into(), json!(p.ioprio >> 13));
                e.insert("prio".into(), json!(p.ioprio & 7));
                e.insert(name.into(), lat(&p.lat, clat_on || lat_on, &list, plus));
                Value::Object(e)
            })
            .collect();
        o.insert("prios".into(), Value::Array(prios));
    }
    let bw = &d.bw_samples;
    let has_bw = bw.samples > 0;
    let per = if has_bw {
        view::share_of_agg(bw.mean, agg_bw)
    } else {
        0.0
    };
    o.insert("bw_min".into(), json!((bw.min / 1024.0) as u64));
    o.insert("bw_max".into(), json!((bw.max / 1024.0) as u64));
    o.insert("bw_agg".into(), fl(per));
    o.insert("bw_mean".into(), fl(bw.mean / 1024.0));
    o.insert("bw_dev".into(), fl(bw.stddev / 1024.0));
    o.insert("bw_samples".into(), json!(bw.samples));
    let io = &d.iops_samples;
    o.insert("iops_min".into(), json!(io.min as u64));
    o.insert("iops_max".into(), json!(io.max as u64));
    o.insert("iops_mean".into(), fl(io.mean));
    o.insert("iops_stddev".into(), fl(io.stddev));
    o.insert("iops_samples".into(), json!(io.samples));
    Value::Object(o)
}

fn sync(j: &JobResult, plus: bool) -> Value {
    let s = &j.settings;
    let list = view::sorted_percentiles(s);
    let (_, clat_on, lat_on) = view::percentile_flags(s);
    let pct = lat_on || clat_on;
    json!({
        "total_ios": j.sync.total_ios,
        "lat_ns": lat(&j.sync.lat, pct, &list, plus),
    })
}

/// `{min, max, mean, stddev, N}` plus `percentile` and, for json+, `bins`.
fn lat(stats: &LatStats, percentiles: bool, list: &[f64], plus: bool) -> Value {
    let mut o = Map::new();
    let any = stats.samples > 0;
    o.insert("min".into(), json!(if any { stats.min_ns } else { 0 }));
    o.insert("max".into(), json!(if any { stats.max_ns } else { 0 }));
    o.insert("mean".into(), fl(stats.mean()));
    o.insert("stddev".into(), fl(stats.stddev()));
    o.insert("N".into(), json!(stats.samples));
    if percentiles && any && !list.is_empty() {
        let vals = view::percentile_values(stats, list);
        let map: Map<String, Value> = list
            .iter()
            .zip(vals)
            .map(|(p, v)| (format!("{p:.6}"), json!(v)))
            .collect();
        o.insert("percentile".into(), Value::Object(map));
        // Imported results may carry percentiles without a histogram: no empty `bins`
        // (fio_jsonplus_clat2csv fails on one).
        if plus && !stats.hist.is_empty() {
            let bins: Map<String, Value> = stats
                .hist
                .bins()
                .map(|(ns, c)| (ns.to_string(), json!(c)))
                .collect();
            o.insert("bins".into(), Value::Object(bins));
        }
    }
    Value::Object(o)
}

fn disk(d: &DiskUtil) -> Value {
    json!({
        "name": d.name,
        "read_ios": d.read_ios,
        "write_ios": d.write_ios,
        "read_merges": d.read_merges,
        "write_merges": d.write_merges,
        "read_ticks": d.read_ticks,
        "write_ticks": d.write_ticks,
        "in_queue": d.in_queue,
        "util": fl(d.util.clamp(0.0, 100.0)),
    })
}

/// storbench's additions: what fio's keys cannot say (notes, interruption, engine facts,
/// helper-thread CPU, NICs, whole-machine CPU). Tools reading fio's JSON ignore this key.
fn storbench_extras(run: &RunResult) -> Value {
    let notes: Vec<Value> = run
        .notes
        .iter()
        .map(|n| {
            json!({
                "level": crate::notes::level_name(n.level),
                "code": n.code,
                "message": n.message,
            })
        })
        .collect();
    let jobs: Vec<Value> = run
        .groups
        .iter()
        .flat_map(|g| &g.jobs)
        .map(job_extras)
        .collect();
    let mut o = Map::new();
    o.insert("version".into(), json!(run.tool_version));
    o.insert("interrupted".into(), json!(run.interrupted));
    o.insert("notes".into(), Value::Array(notes));
    if !run.verdicts.is_empty() {
        o.insert(
            "verdicts".into(),
            serde_json::to_value(&run.verdicts).unwrap_or_default(),
        );
    }
    o.insert("jobs".into(), Value::Array(jobs));
    if let Some(hosts) = &run.hosts {
        // The ranks and IOR's aggregate figures of a multi-host run.
        o.insert(
            "hosts".into(),
            serde_json::to_value(hosts).unwrap_or_default(),
        );
    }
    if !run.nics.is_empty() {
        o.insert(
            "nics".into(),
            serde_json::to_value(&run.nics).unwrap_or_default(),
        );
    }
    if let Some(cpu) = &run.system_cpu {
        o.insert(
            "system_cpu".into(),
            serde_json::to_value(cpu).unwrap_or_default(),
        );
    }
    if let Some(rep) = &run.repeats {
        o.insert("repeats".into(), repeats_extras(run, rep));
    }
    Value::Object(o)
}

/// A repeated run: fio's keys above are its last round; here each test's mean and 95%
/// interval over the complete rounds, with every round's value.
fn repeats_extras(run: &RunResult, rep: &storbench_model::repeats::Repeats) -> Value {
    json!({
        "requested": rep.requested,
        "rounds": rep.rounds.len(),
        "complete": rep.complete().count(),
        "level": storbench_model::confidence::LEVEL,
        "intervals": crate::intervals::of_run(run),
    })
}

/// Per job clone: engine facts, the CPU its helper threads used and that of a server on
/// this host it reached.
fn job_extras(j: &JobResult) -> Value {
    let engine: Map<String, Value> = j
        .engine_details
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let mut o = Map::new();
    o.insert("jobname".into(), json!(j.name));
    o.insert("groupid".into(), json!(j.groupid));
    o.insert("jobnum".into(), json!(j.jobnum));
    o.insert("ioengine".into(), json!(j.header.ioengine));
    if let Some(req) = &j.header.requested_ioengine {
        o.insert("requested_ioengine".into(), json!(req));
    }
    o.insert("direct".into(), json!(j.header.direct));
    o.insert("targets".into(), json!(j.targets));
    o.insert("engine".into(), Value::Object(engine));
    o.insert("cpu_helper_ns".into(), json!(j.cpu.helper_ns));
    if !j.server_cpu.is_empty() {
        o.insert(
            "server_cpu".into(),
            serde_json::to_value(&j.server_cpu).unwrap_or_default(),
        );
    }
    Value::Object(o)
}
