//! What differs between compared runs besides their figures: the settings that change a
//! result (warned about up front: such runs do not measure the same thing), and the
//! environment each run recorded (listed, so a change of kernel or mount options is seen
//! next to the change in figures).

use std::collections::{BTreeMap, BTreeSet};

use storbench_model::result::{Environment, RunResult, TargetInfo};

use super::NamedRun;

/// Settings that change a result, by the name the warning gives them, in warning order.
const SETTINGS: [&str; 11] = [
    "profile",
    "size",
    "runtime",
    "direct/buffered",
    "engine",
    "protocol",
    "block size",
    "queue depth",
    "jobs",
    "workload",
    "storbench version",
];

/// "runs differ in size: #1 16777216, #2 33554432", one line per setting that differs.
pub fn setting_warnings(runs: &[NamedRun<'_>]) -> Vec<String> {
    let per_run: Vec<BTreeMap<&str, BTreeSet<String>>> =
        runs.iter().map(|r| settings_of(r.run)).collect();
    let mut out = Vec::new();
    for name in SETTINGS {
        let values: Vec<Option<&BTreeSet<String>>> = per_run.iter().map(|m| m.get(name)).collect();
        let known: Vec<(usize, &BTreeSet<String>)> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .collect();
        if known.len() < 2 || known.iter().all(|(_, v)| *v == known[0].1) {
            continue;
        }
        let parts: Vec<String> = known
            .iter()
            .map(|(i, v)| {
                let v: Vec<&str> = v.iter().map(String::as_str).collect();
                format!("{} {}", runs[*i].name, v.join("/"))
            })
            .collect();
        out.push(format!("runs differ in {name}: {}", parts.join(", ")));
    }
    out
}

/// A run's result-changing settings, each with every value its jobs used.
fn settings_of(run: &RunResult) -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut m: BTreeMap<&'static str, BTreeSet<String>> = BTreeMap::new();
    let mut add = |k: &'static str, v: String| {
        m.entry(k).or_default().insert(v);
    };
    add("storbench version", run.tool_version.clone());
    let global = |key: &str| {
        run.global_options
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    if let Some(p) = global("profile") {
        add("profile", p);
    }
    for job in run.groups.iter().flat_map(|g| &g.jobs) {
        let given = |keys: &[&str]| {
            keys.iter().find_map(|key| {
                job.options
                    .iter()
                    .rev()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
                    .or_else(|| global(key))
            })
        };
        let h = &job.header;
        add(
            "size",
            given(&["size", "filesize", "io_size"]).map_or("-".into(), |v| size_text(&v)),
        );
        add(
            "runtime",
            given(&["runtime", "timeout"]).map_or("-".into(), |v| runtime_text(&v)),
        );
        add(
            "direct/buffered",
            if h.direct { "direct" } else { "buffered" }.into(),
        );
        add("engine", h.ioengine.clone());
        // A network engine's protocol and version (NFSv3 against NFSv4.1).
        if let Some((_, p)) = job.engine_details.iter().find(|(k, _)| k == "protocol") {
            add("protocol", p.clone());
        }
        for (d, dir) in job.dirs.iter().enumerate() {
            if dir.total_ios > 0 {
                let (lo, hi) = h.bs[d];
                add(
                    "block size",
                    if lo == hi {
                        lo.to_string()
                    } else {
                        format!("{lo}-{hi}")
                    },
                );
            }
        }
        add("queue depth", h.iodepth.to_string());
        add("jobs", h.numjobs.to_string());
        add("workload", h.rw.clone());
    }
    m
}

/// A size option as people read it: `268435456` and `256m` are `256 MiB`; a percentage
/// or range stays as written.
fn size_text(v: &str) -> String {
    let Some(b) = stored_size(v) else {
        return v.to_string();
    };
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    let mut n = b;
    while unit + 1 < UNITS.len() && n >= 1024 && n.is_multiple_of(1024) {
        n /= 1024;
        unit += 1;
    }
    if unit + 1 < UNITS.len() && n >= 1024 {
        let x = b as f64 / 1024f64.powi(unit as i32 + 1);
        let x = format!("{x:.2}");
        return format!(
            "{} {}",
            x.trim_end_matches('0').trim_end_matches('.'),
            UNITS[unit + 1]
        );
    }
    format!("{n} {}", UNITS[unit])
}

/// A stored size option's bytes: digits with an optional binary unit (`k`, `m`, `g`, `t`,
/// `p`, with or without `i`/`b`, any case), as fio writes sizes with its default base;
/// anything else (a percentage, a range, an expression) is `None` and shown as written.
fn stored_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let digits = v.len() - v.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (n, unit) = v.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let unit = unit.to_ascii_lowercase();
    let unit = unit.trim_end_matches('b').trim_end_matches('i');
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// A stored runtime option's microseconds: digits with an optional unit (`us`, `ms`, `s`,
/// `m`/`min`, `h`, `d`; fio's default unit is the second); anything else is `None`.
fn stored_runtime_us(v: &str) -> Option<u64> {
    let v = v.trim();
    let digits = v.len() - v.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (n, unit) = v.split_at(digits);
    let n: u64 = n.parse().ok()?;
    let per: u64 = match unit.to_ascii_lowercase().as_str() {
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "" | "s" | "sec" => 1_000_000,
        "m" | "min" => 60_000_000,
        "h" | "hr" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return None,
    };
    n.checked_mul(per)
}

/// A runtime option (fio's default unit is the second) as `5 s`, `1500 ms`, `2 min`.
fn runtime_text(v: &str) -> String {
    let Some(us) = stored_runtime_us(v) else {
        return v.to_string();
    };
    match us {
        0 => "0 s".into(),
        us if us % 60_000_000 == 0 => format!("{} min", us / 60_000_000),
        us if us % 1_000_000 == 0 => format!("{} s", us / 1_000_000),
        us if us % 1_000 == 0 => format!("{} ms", us / 1_000),
        us => format!("{us} µs"),
    }
}

/// One line of a run's settings for a shared table: `size 4 MiB · runtime 5 s · direct ·
/// engine io_uring · profile real · device Samsung SSD 980 · file system ext4`; a setting
/// the jobs used several values of lists them with `/`.
pub fn settings_line(run: &RunResult) -> String {
    let m = settings_of(run);
    let mut parts = Vec::new();
    for (key, shown) in [
        ("size", "size"),
        ("runtime", "runtime"),
        ("direct/buffered", ""),
        ("engine", "engine"),
        ("profile", "profile"),
    ] {
        let Some(values) = m.get(key) else {
            continue;
        };
        let v: Vec<&str> = values
            .iter()
            .map(String::as_str)
            .filter(|v| !v.is_empty() && *v != "-")
            .collect();
        if v.is_empty() {
            continue;
        }
        let v = v.join("/");
        parts.push(if shown.is_empty() {
            v
        } else {
            format!("{shown} {v}")
        });
    }
    if let Some(t) = run.environment.as_ref().and_then(|e| e.targets.first()) {
        if let Some(model) = &t.device_model {
            parts.push(format!("device {model}"));
        }
        if let Some(fs) = &t.fs_type {
            parts.push(format!("file system {fs}"));
        }
    }
    parts.join(" · ")
}

/// "kernel: #1 6.1.0, #2 6.5.0", one line per recorded fact that differs between runs.
pub fn environment_differences(runs: &[NamedRun<'_>]) -> Vec<String> {
    let facts: Vec<Vec<(&'static str, String)>> = runs
        .iter()
        .map(|r| {
            r.run
                .environment
                .as_ref()
                .map(env_facts)
                .unwrap_or_default()
        })
        .collect();
    let mut names: Vec<&'static str> = Vec::new();
    for (name, _) in facts.iter().flatten() {
        if !names.contains(name) {
            names.push(name);
        }
    }
    let mut out = Vec::new();
    for name in names {
        let values: Vec<String> = facts
            .iter()
            .map(|f| {
                f.iter()
                    .find(|(n, _)| *n == name)
                    .map_or_else(|| "unknown".to_string(), |(_, v)| v.clone())
            })
            .collect();
        if values.iter().all(|v| *v == values[0]) {
            continue;
        }
        let parts: Vec<String> = runs
            .iter()
            .zip(&values)
            .map(|(r, v)| format!("{} {v}", r.name))
            .collect();
        out.push(format!("{name}: {}", parts.join(", ")));
    }
    out
}

/// The recorded facts of a run's environment, those of its first target included.
fn env_facts(e: &Environment) -> Vec<(&'static str, String)> {
    let mut f = vec![
        ("host", e.hostname.clone()),
        ("CPU", e.cpu_model.clone()),
        ("CPUs", e.ncpus.to_string()),
        ("memory", e.mem_bytes.to_string()),
        ("kernel", e.kernel.clone()),
    ];
    if let Some(t) = e.targets.first() {
        target_facts(t, &mut f);
    }
    f
}

fn target_facts(t: &TargetInfo, f: &mut Vec<(&'static str, String)>) {
    let mut opt = |name: &'static str, v: Option<String>| {
        if let Some(v) = v {
            f.push((name, v));
        }
    };
    opt("file system", t.fs_type.clone());
    opt("mount options", t.mount_options.clone());
    opt("device", t.device.clone());
    opt("device model", t.device_model.clone());
    opt(
        "rotational",
        t.rotational
            .map(|r| if r { "yes" } else { "no" }.to_string()),
    );
    opt("IO scheduler", t.scheduler.clone());
    opt("server", t.server.clone());
    opt("interface", t.interface.clone());
    opt(
        "link speed Mbit/s",
        t.link_speed_mbps.map(|s| s.to_string()),
    );
    opt(
        "loop direct IO",
        t.loop_direct_io
            .map(|d| if d { "on" } else { "off" }.to_string()),
    );
}

/// Other load differing by this many points of the machine's CPU time is worth a line.
const LOAD_DIFFERENCE_POINTS: f64 = 10.0;

/// "CPU load besides storbench: a 2% of the machine, b 47%", when the runs recorded the
/// machine's CPU and the load of other processes differs by [`LOAD_DIFFERENCE_POINTS`]:
/// a difference in figures may then come from the machine rather than the storage.
pub fn load_difference(runs: &[NamedRun<'_>]) -> Option<String> {
    let loads: Vec<Option<f64>> = runs.iter().map(|r| other_load_pct(r.run)).collect();
    let known: Vec<f64> = loads.iter().flatten().copied().collect();
    let spread = known.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        - known.iter().copied().fold(f64::INFINITY, f64::min);
    if known.len() < 2 || spread < LOAD_DIFFERENCE_POINTS {
        return None;
    }
    let parts: Vec<String> = runs
        .iter()
        .zip(&loads)
        .map(|(r, l)| match l {
            Some(l) => format!("{} {l:.0}%", r.name),
            None => format!("{} unknown", r.name),
        })
        .collect();
    Some(format!(
        "CPU load besides storbench (percent of the machine): {}; a difference may come from \
         the machine rather than the storage",
        parts.join(", ")
    ))
}

/// The machine's busy CPU time over the run (its last round) less storbench's own, in
/// percent of all its CPUs; None where the run did not record the machine's CPU.
fn other_load_pct(run: &RunResult) -> Option<f64> {
    let sys = run.system_cpu.as_ref().filter(|s| s.ncpus > 0)?;
    let (start, end) = run
        .repeats
        .as_ref()
        .and_then(|r| r.rounds.last())
        .map_or((run.started_unix_ms, run.finished_unix_ms), |r| {
            (r.started_unix_ms, r.finished_unix_ms)
        });
    let wall_ns = end.saturating_sub(start) as f64 * 1e6;
    if wall_ns <= 0.0 {
        return None;
    }
    let own_ns: u64 = run
        .groups
        .iter()
        .flat_map(|g| &g.jobs)
        .map(|j| j.cpu.usr_ns + j.cpu.sys_ns)
        .sum();
    let own_pct = own_ns as f64 / wall_ns * 100.0;
    let busy = sys.user + sys.system + sys.steal;
    Some(((busy - own_pct) / f64::from(sys.ncpus)).clamp(0.0, 100.0))
}

#[cfg(test)]
mod unit_tests {
    use super::{runtime_text, size_text};

    #[test]
    fn sizes_and_runtimes_print_with_units() {
        assert_eq!(size_text("268435456"), "256 MiB");
        assert_eq!(size_text("1g"), "1 GiB");
        assert_eq!(size_text("1536k"), "1.5 MiB");
        assert_eq!(size_text("4096"), "4 KiB");
        assert_eq!(size_text("100"), "100 B");
        assert_eq!(size_text("50%"), "50%");
        assert_eq!(runtime_text("5"), "5 s");
        assert_eq!(runtime_text("1500ms"), "1500 ms");
        assert_eq!(runtime_text("120"), "2 min");
        assert_eq!(size_text("256MiB"), "256 MiB");
        assert_eq!(size_text("4k-8k"), "4k-8k");
        assert_eq!(size_text("99999999999999999999"), "99999999999999999999");
        assert_eq!(runtime_text("2m"), "2 min");
        assert_eq!(runtime_text("10x"), "10x");
    }
}
