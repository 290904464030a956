//! fio `--output-format=json` / `json+` (3.x) into the result model. json+ `bins` become the
//! histogram, so percentiles can be recomputed exactly as fio computed them; plain JSON keeps
//! fio's own percentile list instead.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use storbench_model::fio::DEFAULT_ENGINE;
use storbench_model::histogram::bucket_of;
use storbench_model::hosts::{RankRun, merge};
use storbench_model::result::{
    CpuUsage, DepthStats, DirResult, DiskUtil, GroupResult, JobHeader, JobResult, LatBuckets,
    LatStats, PrioLat, ReportSettings, RunMode, RunResult, SampleStats, SyncResult, UnifiedRw,
};

use super::{ImportError, empty_run, info_note, json_start};

/// Parses fio's JSON output. With `--status-interval` fio writes several documents; the last
/// one holds the final figures and is the one imported. Documents that cannot be status
/// reports of one run (see [`same_run`]), as from `cat a.json b.json`, are separate runs.
pub fn parse_fio_json(file: &str, text: &str) -> Result<Vec<RunResult>, ImportError> {
    let start = json_start(text).ok_or_else(|| ImportError::new(file, None, "no JSON object"))?;
    let skipped_lines = text[..start].matches('\n').count();
    let body = &text[start..];
    let mut docs = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let mut all: Vec<Value> = Vec::new();
    let mut trailing_text = false;
    loop {
        let offset = docs.byte_offset();
        match docs.next() {
            None => break,
            Some(Ok(doc)) => all.push(doc),
            // fio's normal output may follow the JSON (`--output-format=json,normal`).
            Some(Err(_)) if !all.is_empty() && !body[offset..].trim_start().starts_with('{') => {
                trailing_text = true;
                break;
            }
            Some(Err(e)) => {
                let line = skipped_lines + e.line();
                return Err(ImportError::new(file, Some(line), format!("bad JSON: {e}")));
            }
        }
    }
    if all.is_empty() {
        return Err(ImportError::new(file, None, "no JSON object"));
    }
    let mut runs = Vec::new();
    for (first, count) in run_spans(&all) {
        let doc = &all[first + count - 1];
        let where_ = if runs.is_empty() && first + count == all.len() {
            String::new()
        } else {
            format!(" document {}", first + count)
        };
        let mut run = convert(doc).map_err(|m| {
            let m = if where_.is_empty() {
                m
            } else {
                format!("{}: {m}", where_.trim_start())
            };
            ImportError::new(file, None, m)
        })?;
        let mut docs_note = if count > 1 {
            format!(" (the last of {count} status reports)")
        } else {
            String::new()
        };
        if trailing_text {
            docs_note.push_str("; the text after the JSON was not read");
        }
        run.notes.push(info_note(
            "import.fio",
            format!("imported from {file}{where_}{docs_note}"),
        ));
        if run_has_given_percentiles_only(&run) {
            run.notes.push(info_note(
                "import.no-histogram",
                "fio's JSON carried percentiles but no histogram (json+ keeps one); only fio's \
                 own percentile list is available"
                    .into(),
            ));
        }
        runs.push(run);
    }
    Ok(runs)
}

/// Splits the documents into runs: (index of the first, number of documents).
fn run_spans(docs: &[Value]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for i in 0..docs.len() {
        match spans.last_mut() {
            Some((_, n)) if same_run(&docs[i - 1], &docs[i]) => *n += 1,
            _ => spans.push((i, 1)),
        }
    }
    spans
}

/// Status reports of one run list the same jobs, and their counters only grow: other jobs
/// or fewer bytes done mean a new run. Without this, all but the last of several
/// concatenated results were dropped as if they were status reports.
fn same_run(prev: &Value, next: &Value) -> bool {
    let jobs = |d: &Value| -> Vec<(String, u64)> {
        d.get("jobs")
            .or_else(|| d.get("client_stats"))
            .and_then(Value::as_array)
            .map(|jobs| {
                jobs.iter()
                    .map(|j| {
                        let name = j.get("jobname").and_then(Value::as_str).unwrap_or("");
                        let bytes = ["read", "write", "trim", "mixed"]
                            .iter()
                            .filter_map(|k| j.get(*k))
                            .map(|d| u_of(d, "io_bytes"))
                            .sum();
                        (name.to_string(), bytes)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (a, b) = (jobs(prev), jobs(next));
    a.len() == b.len()
        && a.iter()
            .zip(&b)
            .all(|((na, ba), (nb, bb))| na == nb && ba <= bb)
}

fn run_has_given_percentiles_only(run: &RunResult) -> bool {
    run.groups
        .iter()
        .flat_map(|g| &g.jobs)
        .flat_map(|j| &j.dirs)
        .any(|d| d.clat.hist.is_empty() && !d.clat.given_percentiles.is_empty())
}

/// The whole document; errors are messages naming the JSON path.
fn convert(doc: &Value) -> Result<RunResult, String> {
    let root = doc
        .as_object()
        .ok_or("the JSON document is not an object")?;
    let version = root
        .get("fio version")
        .and_then(Value::as_str)
        .ok_or("no \"fio version\" key: not fio JSON output")?;
    // fio always writes both; without them the run would sort as 1970 in the history.
    let finished = root
        .get("timestamp_ms")
        .and_then(Value::as_u64)
        .or_else(|| {
            root.get("timestamp")
                .and_then(Value::as_u64)
                .map(|s| s.saturating_mul(1000))
        })
        .filter(|&ms| ms > 0)
        .ok_or("no usable \"timestamp\" or \"timestamp_ms\" (fio writes both): cannot date the run; is the file complete?")?;
    let mut run = empty_run(RunMode::Fio, version.to_string(), finished);
    run.global_options = string_pairs(root.get("global options"));
    let jobs = job_values(root)?;
    if jobs.is_empty() {
        return Err("no jobs: nothing to import".into());
    }
    let mut groups: BTreeMap<u32, Vec<JobResult>> = BTreeMap::new();
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    for (i, job) in jobs.iter().enumerate() {
        let mut j = convert_job(job, &run.global_options).map_err(|m| format!("jobs[{i}]: {m}"))?;
        let n = seen.entry(j.name.clone()).or_default();
        j.jobnum = *n;
        *n += 1;
        j.end_unix_ms = finished;
        groups.entry(j.groupid).or_default().push(j);
    }
    let longest = groups
        .values()
        .flatten()
        .map(|j| j.elapsed_ms)
        .max()
        .unwrap_or(0);
    let did_io = groups
        .values()
        .flatten()
        .any(|j| j.dirs.iter().any(|d| d.total_ios > 0) || j.sync.total_ios > 0);
    if !did_io {
        return Err("no job did any IO: nothing measured to import".into());
    }
    run.started_unix_ms = finished.saturating_sub(longest);
    run.groups = groups
        .into_iter()
        .map(|(id, jobs)| GroupResult {
            id,
            group_reporting: false,
            jobs,
        })
        .collect();
    run.disks = disks(root.get("disk_util"));
    if root.get("jobs").is_none() && root.get("client_stats").is_some() {
        return clients_as_hosts(run);
    }
    Ok(run)
}

/// `jobs`, or in client/server mode the per-client entries of `client_stats` (without the
/// "All clients" aggregate).
fn job_values(root: &Map<String, Value>) -> Result<Vec<&Value>, String> {
    if let Some(jobs) = root.get("jobs").and_then(Value::as_array) {
        return Ok(jobs.iter().collect());
    }
    let clients = root
        .get("client_stats")
        .and_then(Value::as_array)
        .ok_or("neither \"jobs\" nor \"client_stats\" is present")?;
    Ok(clients
        .iter()
        .filter(|c| c.get("jobname").and_then(Value::as_str) != Some("All clients"))
        .collect())
}

fn convert_job(job: &Value, global: &[(String, String)]) -> Result<JobResult, String> {
    let obj = job.as_object().ok_or("not an object")?;
    let options = string_pairs(obj.get("job options"));
    let opt = |k: &str| lookup_option(&options, global, k);
    let runtime_ms = u(obj, "job_runtime");
    let mut dirs: [DirResult; 3] = Default::default();
    let mut settings = ReportSettings::default();
    if let Some(mixed) = obj.get("mixed") {
        dirs[0] = convert_dir(mixed).map_err(|m| format!("mixed: {m}"))?;
        settings.unified_rw = UnifiedRw::Mixed;
    } else {
        for (slot, key) in dirs.iter_mut().zip(["read", "write", "trim"]) {
            if let Some(v) = obj.get(key) {
                *slot = convert_dir(v).map_err(|m| format!("{key}: {m}"))?;
            }
        }
    }
    apply_percentile_settings(&mut settings, obj, &opt);
    let total_ios = dirs.iter().fold(0u64, |a, d| a.saturating_add(d.total_ios));
    let clat_samples = dirs
        .iter()
        .fold(0u64, |a, d| a.saturating_add(d.clat.samples));
    let cpu_ns = |key| (f(obj, key) / 100.0 * runtime_ms as f64 * 1e6).round() as u64;
    let mut engine_details = Vec::new();
    if let Some(host) = obj.get("hostname").and_then(Value::as_str) {
        engine_details.push(("client".to_string(), host.to_string()));
        if let Some(port) = obj.get("port").and_then(Value::as_u64) {
            engine_details.push(("client port".to_string(), port.to_string()));
        }
    }
    Ok(JobResult {
        name: obj
            .get("jobname")
            .and_then(Value::as_str)
            .ok_or("no \"jobname\"")?
            .to_string(),
        groupid: u(obj, "groupid") as u32,
        jobnum: 0,
        jobs: 1,
        pid: 0,
        error: obj.get("error").and_then(Value::as_i64).unwrap_or(0) as i32,
        error_text: None,
        description: obj.get("desc").and_then(Value::as_str).map(str::to_string),
        header: header(&opt),
        targets: targets(&opt),
        options,
        settings,
        elapsed_ms: u(obj, "elapsed").saturating_mul(1000),
        runtime_ms,
        end_unix_ms: 0,
        dirs,
        sync: SyncResult {
            total_ios: obj.get("sync").map_or(0, |s| u_of(s, "total_ios")),
            lat: obj
                .get("sync")
                .and_then(|s| s.get("lat_ns"))
                .map(lat_stats)
                .transpose()
                .map_err(|m| format!("sync: {m}"))?
                .unwrap_or_default(),
            // fio's JSON leaves end-of-job syncs out entirely.
            closing: 0,
            datasyncs: 0,
        },
        cpu: CpuUsage {
            usr_ns: cpu_ns("usr_cpu"),
            sys_ns: cpu_ns("sys_cpu"),
            helper_ns: 0,
            ctx: u(obj, "ctx"),
            majf: u(obj, "majf"),
            minf: u(obj, "minf"),
            // fio does not record it.
            wait_ns: 0,
        },
        depth: DepthStats {
            level: pct_counts(obj.get("iodepth_level"), total_ios),
            submit: pct_counts(obj.get("iodepth_submit"), total_ios),
            complete: pct_counts(obj.get("iodepth_complete"), total_ios),
        },
        lat_buckets: LatBuckets {
            ns: pct_counts(obj.get("latency_ns"), clat_samples),
            us: pct_counts(obj.get("latency_us"), clat_samples),
            ms: pct_counts(obj.get("latency_ms"), clat_samples),
        },
        timeline: Vec::new(),
        engine_details,
        disks: Vec::new(),
        server_cpu: Vec::new(),
        measured: Default::default(),
        steadystate: None,
        latency_target: None,
    })
}

fn convert_dir(v: &Value) -> Result<DirResult, String> {
    let obj = v.as_object().ok_or("not an object")?;
    let kib = |k| f(obj, k) * 1024.0;
    Ok(DirResult {
        io_bytes: u(obj, "io_bytes"),
        total_ios: u(obj, "total_ios"),
        short_ios: u(obj, "short_ios"),
        drop_ios: u(obj, "drop_ios"),
        runtime_ms: u(obj, "runtime"),
        slat: lat_of(obj, "slat_ns")?,
        clat: lat_of(obj, "clat_ns")?,
        lat: lat_of(obj, "lat_ns")?,
        bw_samples: SampleStats {
            samples: u(obj, "bw_samples"),
            min: kib("bw_min"),
            max: kib("bw_max"),
            mean: kib("bw_mean"),
            stddev: kib("bw_dev"),
        },
        iops_samples: SampleStats {
            samples: u(obj, "iops_samples"),
            min: f(obj, "iops_min"),
            max: f(obj, "iops_max"),
            mean: f(obj, "iops_mean"),
            stddev: f(obj, "iops_stddev"),
        },
        prios: prios_of(obj)?,
    })
}

/// fio's per-priority latencies (`prios`: `prioclass`, `prio` and `clat_ns` or `lat_ns`).
fn prios_of(obj: &Map<String, Value>) -> Result<Vec<PrioLat>, String> {
    let Some(list) = obj.get("prios").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .map(|p| {
            let p = p.as_object().ok_or("prios: an entry is not an object")?;
            let key = if p.contains_key("lat_ns") {
                "lat_ns"
            } else {
                "clat_ns"
            };
            Ok(PrioLat {
                ioprio: ((u(p, "prioclass") as u16) << 13) | (u(p, "prio") as u16 & 7),
                lat: lat_of(p, key)?,
            })
        })
        .collect()
}

fn lat_of(obj: &Map<String, Value>, key: &str) -> Result<LatStats, String> {
    match obj.get(key) {
        Some(v) => lat_stats(v).map_err(|m| format!("{key}: {m}")),
        None => Ok(LatStats::default()),
    }
}

/// fio gives count, min, max, mean and stddev; the exact sums are rebuilt from them.
/// Bin counts whose total would not fit 64 bits are refused.
fn lat_stats(v: &Value) -> Result<LatStats, String> {
    let n = u_of(v, "N");
    let mean = v.get("mean").and_then(Value::as_f64).unwrap_or(0.0);
    let sd = v.get("stddev").and_then(Value::as_f64).unwrap_or(0.0);
    let nf = n as f64;
    let sum_sq = sd * sd * (nf - 1.0).max(0.0) + nf * mean * mean;
    let mut stats = LatStats {
        samples: n,
        min_ns: u_of(v, "min"),
        max_ns: u_of(v, "max"),
        sum_ns: (mean * nf).round() as u128,
        sum_sq_ns: sum_sq.round() as u128,
        ..LatStats::default()
    };
    if let Some(bins) = v.get("bins").and_then(Value::as_object) {
        let mut total = 0u64;
        for (ns, count) in bins {
            if let (Ok(ns), Some(c)) = (ns.parse::<u64>(), count.as_u64()) {
                total = total
                    .checked_add(c)
                    .ok_or("bins: the counts add up beyond 64 bits")?;
                stats.hist.add_bucket(bucket_of(ns), c);
            }
        }
    }
    if stats.hist.is_empty()
        && let Some(p) = v.get("percentile").and_then(Value::as_object)
    {
        stats.given_percentiles = p
            .iter()
            .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, v.as_u64()?)))
            .filter(|(p, _)| *p > 0.0)
            .collect();
    }
    Ok(stats)
}

fn apply_percentile_settings(
    settings: &mut ReportSettings,
    job: &Map<String, Value>,
    opt: &dyn Fn(&str) -> Option<String>,
) {
    let dir_keys = ["read", "write", "trim", "mixed"];
    let has = |lat: &str| {
        dir_keys
            .iter()
            .filter_map(|d| job.get(*d)?.get(lat)?.get("percentile")?.as_object())
            .next()
            .cloned()
    };
    let clat = has("clat_ns");
    let lat = has("lat_ns");
    settings.clat_percentiles = clat.is_some();
    settings.lat_percentiles = lat.is_some();
    settings.slat_percentiles = has("slat_ns").is_some();
    if let Some(list) = clat.or(lat) {
        let mut ps: Vec<f64> = list.keys().filter_map(|k| k.parse().ok()).collect();
        ps.retain(|p| *p > 0.0);
        ps.sort_by(f64::total_cmp);
        if !ps.is_empty() {
            settings.percentile_list = ps;
        }
    }
    if let Some(base) = opt("kb_base").and_then(|b| b.parse().ok()) {
        settings.kb_base = base;
    }
}

fn header(opt: &dyn Fn(&str) -> Option<String>) -> JobHeader {
    let bs_all = opt("bs")
        .or_else(|| opt("blocksize"))
        .and_then(|b| parse_size(&b));
    let bs = bs_all.unwrap_or(4096);
    JobHeader {
        rw: opt("rw")
            .or_else(|| opt("readwrite"))
            .unwrap_or_else(|| "read".into()),
        bs: [(bs, bs); 3],
        ioengine: opt("ioengine").unwrap_or_else(|| DEFAULT_ENGINE.into()),
        requested_ioengine: None,
        iodepth: opt("iodepth").and_then(|d| d.parse().ok()).unwrap_or(1),
        numjobs: opt("numjobs").and_then(|d| d.parse().ok()).unwrap_or(1),
        direct: opt("direct").is_some_and(|d| d == "1" || d == "true"),
    }
}

fn targets(opt: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    if let Some(f) = opt("filename") {
        return f
            .split(':')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
    }
    opt("directory").into_iter().collect()
}

/// A job's option, else the global one (fio's JSON lists each only where it was given).
fn lookup_option(job: &[(String, String)], global: &[(String, String)], k: &str) -> Option<String> {
    job.iter()
        .chain(global)
        .find(|(name, _)| name == k)
        .map(|(_, v)| v.clone())
}

/// fio size strings as options print them: `4k`, `1m`, `64M`, `4096` (1024-based).
fn parse_size(s: &str) -> Option<u64> {
    let s = s.split([',', '-', ':']).next()?.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: u64 = s[..digits].parse().ok()?;
    let mult = match s[digits..]
        .to_ascii_lowercase()
        .trim_end_matches(['b', 'i'])
    {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    Some(n * mult)
}

/// fio prints distributions as percentages; counts are rebuilt against `total`.
fn pct_counts<const N: usize>(v: Option<&Value>, total: u64) -> [u64; N] {
    let mut out = [0u64; N];
    if let Some(obj) = v.and_then(Value::as_object) {
        for (slot, val) in out.iter_mut().zip(obj.values()) {
            *slot = (val.as_f64().unwrap_or(0.0) / 100.0 * total as f64).round() as u64;
        }
    }
    out
}

fn disks(v: Option<&Value>) -> Vec<DiskUtil> {
    let Some(list) = v.and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .map(|d| DiskUtil {
            name: d
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            read_ios: u_of(d, "read_ios"),
            write_ios: u_of(d, "write_ios"),
            read_merges: u_of(d, "read_merges"),
            write_merges: u_of(d, "write_merges"),
            read_ticks: u_of(d, "read_ticks"),
            write_ticks: u_of(d, "write_ticks"),
            in_queue: u_of(d, "in_queue"),
            util: d.get("util").and_then(Value::as_f64).unwrap_or(0.0),
            ..DiskUtil::default()
        })
        .collect()
}

fn string_pairs(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn u(obj: &Map<String, Value>, k: &str) -> u64 {
    obj.get(k).map_or(0, as_u64_lossy)
}

fn u_of(v: &Value, k: &str) -> u64 {
    v.get(k).map_or(0, as_u64_lossy)
}

/// fio writes some counters as floats; negative or missing values read as 0.
fn as_u64_lossy(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|x| *x >= 0.0).map(|x| x.round() as u64))
        .unwrap_or(0)
}

fn f(obj: &Map<String, Value>, k: &str) -> f64 {
    obj.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

/// `fio --client` output as one multi-host run (docs/multihost.md): each fio server (its
/// host, with the port when a host ran several) is a rank, its jobs named `HOST:job`.
/// fio's client JSON has one timestamp for the whole run and no per-client start, so every
/// client is taken to end at it: the aggregate is all bytes over the longest runtime.
fn clients_as_hosts(run: RunResult) -> Result<RunResult, String> {
    let detail = |j: &JobResult, k: &str| {
        j.engine_details
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
    };
    let jobs: Vec<&JobResult> = run.groups.iter().flat_map(|g| &g.jobs).collect();
    let host_of = |j: &JobResult| detail(j, "client").unwrap_or_else(|| "?".into());
    let several = |host: &str| {
        let mut ports: Vec<Option<String>> = jobs
            .iter()
            .filter(|j| host_of(j) == host)
            .map(|j| detail(j, "client port"))
            .collect();
        ports.dedup();
        ports.len() > 1
    };
    let label_of = |j: &JobResult| {
        let host = host_of(j);
        match detail(j, "client port") {
            Some(port) if several(&host) => format!("{host}#{port}"),
            _ => host,
        }
    };
    let mut labels: Vec<String> = Vec::new();
    for j in &jobs {
        let l = label_of(j);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let ranks = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let mut own = run.clone();
            for g in &mut own.groups {
                g.jobs.retain(|j| &label_of(j) == label);
            }
            own.groups.retain(|g| !g.jobs.is_empty());
            RankRun {
                rank: i as u32,
                host: label.clone(),
                clock_offset_ms: 0.0,
                result: Ok(own),
            }
        })
        .collect();
    merge("fio --client", ranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("4KiB"), Some(4096));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("4k,8k"), Some(4096));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn lat_stats_rebuild_sums() {
        let v: Value = serde_json::from_str(
            r#"{"min":10,"max":30,"mean":20.0,"stddev":10.0,"N":3,"bins":{"10":1,"20":1,"30":1}}"#,
        )
        .unwrap();
        let s = lat_stats(&v).unwrap();
        assert_eq!((s.samples, s.sum_ns, s.sum_sq_ns), (3, 60, 1400));
        assert!((s.stddev() - 10.0).abs() < 1e-9);
        assert_eq!(s.percentiles(&[50.0]), vec![20]);
    }
}
