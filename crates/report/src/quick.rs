//! `storbench quick`: the CrystalDiskMark-style table and its JSON form.
//!
//! Contract with the quick preset (`RunMode::Quick`): every test is one reporting group; its
//! jobs (one per thread) are named `"<TEST> <direction>"`, e.g. `"SEQ1M Q8T1 read"` or
//! `"RND4K Q32T16 write"`, direction being `read`, `write` or `mix`. One row per group: the
//! group's jobs merged, its directions together. Rates count all bytes over the longest job
//! runtime; latency percentiles come from the total latency (fio's `lat`: from just before
//! submission to completion), which is what people compare across engines; only where it was
//! not measured (disable_lat, some imports) from the completion latency (`clat`), and the row
//! says so;
//! CPU is the client's user+system time over that runtime, in percent of one CPU; a server
//! on this host that the test reached (an NFS or iSCSI target on 127.0.0.1) gets a column
//! of its own, its CPU over the test in percent of one CPU.
//!
//! The JSON form (`--format quick-json`) is described by `docs/quick.schema.json`.

use std::io::{self, Write};
use storbench_model::merge::saturating_sum;

use crate::numfmt::{TimeUnit, num, percent};
use serde::Serialize;
use storbench_model::hosts::MultiHost;
use storbench_model::merge::{merge_dir_into, merge_jobs};
use storbench_model::result::{DirResult, GroupResult, LatStats, Reason, RunResult, Validity};

/// Schema identifier of the JSON form; bumped on incompatible changes.
pub const SCHEMA: &str = "storbench-quick/1";

/// One table row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuickRow {
    /// `SEQ1M Q8T1`.
    pub test: String,
    /// `read`, `write` or `mix`.
    pub direction: String,
    pub block_size: u64,
    pub queue_depth: u32,
    pub threads: u32,
    pub io_bytes: u64,
    pub runtime_ms: u64,
    /// Decimal megabytes (10^6 bytes) per second.
    pub mb_per_s: f64,
    /// Binary mebibytes (2^20 bytes) per second.
    pub mib_per_s: f64,
    pub iops: f64,
    pub latency_ns: QuickLatency,
    /// Client CPU (user + system) in percent of one CPU.
    pub cpu_percent: f64,
    /// The server on this host the test reached, and its CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu: Option<QuickServerCpu>,
    /// The test stopped on an error (the notes name it): its figures cover the time until
    /// then, a wait for a lost server included.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// How far the row's figures can be trusted, when the run judged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<QuickVerdict>,
    /// In a multi-host run: the host of a per-host row (docs/multihost.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// In a multi-host run, on the row of all hosts: one row per host. That row's rates
    /// are IOR's aggregate: all bytes over the earliest start to the latest end.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<QuickRow>,
}

/// A test's verdict in the JSON form: the result model's, without the repeated name.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuickVerdict {
    pub validity: Validity,
    pub reasons: Vec<Reason>,
}

/// A server process on the benchmark's host and the CPU it used during one test.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QuickServerCpu {
    /// Command name (`tgtd`, `ganesha.nfsd`).
    pub process: String,
    pub pid: u32,
    /// User + system, in percent of one CPU.
    pub cpu_percent: f64,
}

/// Latency summary of one row, ns.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct QuickLatency {
    pub mean: u64,
    pub p50: u64,
    pub p99: u64,
    pub p99_9: u64,
    /// Which latency the figures are.
    pub measured: LatencyKind,
}

/// fio's `lat` (total) or `clat` (completion): with libaio on a fast device the IO can end
/// inside io_submit, so clat alone can read a few µs at a few thousand IOPS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyKind {
    /// From just before submission to completion.
    #[default]
    Total,
    /// From the end of submission to completion (total latency was not measured).
    Completion,
}

/// The rows of a run, in test order; groups without jobs, or whose jobs failed before any
/// IO (the run stopped there), are skipped: the notes say why.
pub fn rows(run: &RunResult) -> Vec<QuickRow> {
    run.groups
        .iter()
        .filter_map(|g| match run.hosts.as_deref() {
            Some(hosts) => all_hosts_row(run, hosts, g),
            None => row(run, g),
        })
        .collect()
}

/// A multi-host test: the row of all hosts, with IOR's aggregate rates, holding one row per
/// host (its jobs are named `HOST:test`).
fn all_hosts_row(run: &RunResult, hosts: &MultiHost, g: &GroupResult) -> Option<QuickRow> {
    let mut all = row(run, g)?;
    if let Some(a) = hosts.groups.iter().find(|a| a.group == g.id)
        && a.last_done_ms > 0
    {
        let secs = a.last_done_ms as f64 / 1000.0;
        let bytes = saturating_sum(a.bytes) as f64;
        let ios = saturating_sum(
            g.jobs
                .iter()
                .flat_map(|j| j.dirs.iter().map(|d| d.total_ios)),
        ) as f64;
        all.runtime_ms = a.last_done_ms;
        all.mb_per_s = bytes / secs / 1e6;
        all.mib_per_s = bytes / secs / 1_048_576.0;
        all.iops = ios / secs;
    }
    let mut labels: Vec<&str> = Vec::new();
    for j in &g.jobs {
        let label = storbench_model::hosts::split_name(&j.name).0;
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    all.hosts = labels
        .iter()
        .filter_map(|label| {
            let mine = GroupResult {
                jobs: g
                    .jobs
                    .iter()
                    .filter(|j| storbench_model::hosts::split_name(&j.name).0 == *label)
                    .cloned()
                    .collect(),
                ..g.clone()
            };
            let mut r = row(run, &mine)?;
            r.host = Some(label.to_string());
            Some(r)
        })
        .collect();
    Some(all)
}

fn row(run: &RunResult, g: &GroupResult) -> Option<QuickRow> {
    let merged = merge_jobs(&g.jobs)?;
    // A multi-host run's jobs carry their host before the test's name.
    let own_name = match run.hosts {
        Some(_) => storbench_model::hosts::split_name(&merged.name).1,
        None => merged.name.as_str(),
    };
    let (test, direction) = split_name(own_name);
    let mut all = DirResult::default();
    for d in &merged.dirs {
        merge_dir_into(&mut all, d);
    }
    if all.total_ios == 0 && g.jobs.iter().any(|j| j.error != 0) {
        return None;
    }
    let runtime_ms = all.runtime_ms;
    let per_sec = |v: f64| {
        if runtime_ms == 0 {
            0.0
        } else {
            v * 1000.0 / runtime_ms as f64
        }
    };
    let (lat, measured): (&LatStats, _) = if all.lat.samples > 0 || all.clat.samples == 0 {
        (&all.lat, LatencyKind::Total)
    } else {
        (&all.clat, LatencyKind::Completion)
    };
    let pct = lat.percentiles(&[50.0, 99.0, 99.9]);
    let cpu_ns = saturating_sum(
        g.jobs
            .iter()
            .map(|j| j.cpu.usr_ns.saturating_add(j.cpu.sys_ns)),
    );
    let wall_ms = g.jobs.iter().map(|j| j.runtime_ms).max().unwrap_or(0);
    let h = &merged.header;
    let used = merged
        .dirs
        .iter()
        .position(|d| d.total_ios > 0)
        .unwrap_or(0);
    Some(QuickRow {
        test,
        direction,
        block_size: h.bs[used].1,
        queue_depth: h.iodepth,
        threads: g.jobs.len() as u32,
        io_bytes: all.io_bytes,
        runtime_ms,
        mb_per_s: per_sec(all.io_bytes as f64) / 1e6,
        mib_per_s: per_sec(all.io_bytes as f64) / 1_048_576.0,
        iops: per_sec(all.total_ios as f64),
        latency_ns: QuickLatency {
            mean: lat.mean().round() as u64,
            p50: pct[0],
            p99: pct[1],
            p99_9: pct[2],
            measured,
        },
        cpu_percent: if wall_ms == 0 {
            0.0
        } else {
            cpu_ns as f64 / (wall_ms as f64 * 1e6) * 100.0
        },
        server_cpu: merged.server_cpu.first().map(|s| QuickServerCpu {
            process: s.process.clone(),
            pid: s.pid,
            cpu_percent: s.percent(),
        }),
        failed: g.jobs.iter().any(|j| j.error != 0),
        verdict: run
            .verdicts
            .iter()
            .find(|v| v.job == merged.name)
            .map(|v| QuickVerdict {
                validity: v.validity,
                reasons: v.reasons.clone(),
            }),
        host: None,
        hosts: Vec::new(),
    })
}

/// `"SEQ1M Q8T1 read"` → (`SEQ1M Q8T1`, `read`); a name without a direction keeps it whole.
fn split_name(name: &str) -> (String, String) {
    match name.rsplit_once(' ') {
        Some((test, dir)) if matches!(dir, "read" | "write" | "mix") => (test.into(), dir.into()),
        _ => (name.into(), String::new()),
    }
}

/// A latency in the unit that reads best, about three significant digits.
pub fn latency_text(ns: u64) -> String {
    let v = ns as f64;
    match ns {
        0..1_000 => format!("{ns} ns"),
        1_000..10_000 => format!("{:.2} µs", v / 1e3),
        10_000..100_000 => format!("{:.1} µs", v / 1e3),
        100_000..1_000_000 => format!("{:.0} µs", v / 1e3),
        1_000_000..10_000_000 => format!("{:.2} ms", v / 1e6),
        10_000_000..100_000_000 => format!("{:.1} ms", v / 1e6),
        100_000_000..1_000_000_000 => format!("{:.0} ms", v / 1e6),
        _ => format!("{:.2} s", v / 1e9),
    }
}

/// The table's columns; each latency column's heading gets its unit (`p50 µs`).
const HEADER: [&str; 9] = [
    "Test", "Dir", "MB/s", "MiB/s", "IOPS", "p50", "p99", "p99.9", "CPU",
];

/// The unit of the latency columns (p50, p99, p99.9) over the rows shown: one for the
/// three, so a row reads in order (`35,914` then `35,920`, never `35,914 µs` then
/// `35.91 ms`), named in each column's heading.
fn latency_units(rows: &[&QuickRow]) -> [TimeUnit; 3] {
    let all = rows.iter().flat_map(|r| {
        let l = &r.latency_ns;
        [l.p50, l.p99, l.p99_9].map(|ns| ns as f64)
    });
    [TimeUnit::for_column(all); 3]
}

/// The column of a multi-host run: `all N` on a test's row of all hosts, then each host.
const HOSTS_HEADER: &str = "Hosts";

/// The column shown when a server on this host was measured.
const SERVER_HEADER: &str = "Server CPU";

/// The column of verdicts, shown when the run judged its tests.
const VERDICT_HEADER: &str = "Valid";

/// A row's verdict in the table: the notes below give the reasons.
fn verdict_mark(v: Option<&QuickVerdict>) -> &'static str {
    match v.map(|v| v.validity) {
        None => "-",
        Some(Validity::Valid) => "ok",
        Some(Validity::Suspect) => "suspect",
        Some(Validity::Invalid) => "INVALID",
    }
}

/// The table, then the notes block without the verdict lines (the Valid column holds them).
pub fn render(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    render_for(run, crate::notes::Layout::default(), out)
}

/// The table, then the notes block laid out by `layout`.
pub fn render_for(
    run: &RunResult,
    layout: crate::notes::Layout,
    out: &mut dyn Write,
) -> io::Result<()> {
    let out = &mut crate::terminal::Escaped::new(out);
    let targets = named_targets(run);
    writeln!(out, "storbench quick: {}", targets.join(", "))?;
    writeln!(out)?;
    let rows = rows(run);
    let servers = server_names(&rows);
    let multi = run.hosts.is_some();
    // A multi-host test's row of all hosts is followed by one row per host.
    let shown: Vec<&QuickRow> = rows
        .iter()
        .flat_map(|r| std::iter::once(r).chain(&r.hosts))
        .collect();
    let units = latency_units(&shown);
    let mut header: Vec<String> = HEADER.map(String::from).to_vec();
    for (k, u) in units.iter().enumerate() {
        header[5 + k] = format!("{} {}", HEADER[5 + k], u.name);
    }
    if multi {
        header.insert(2, HOSTS_HEADER.into());
    }
    if !servers.is_empty() {
        header.push(SERVER_HEADER.into());
    }
    let judged = rows.iter().any(|r| r.verdict.is_some());
    if judged {
        header.push(VERDICT_HEADER.into());
    }
    let mut lines: Vec<Vec<String>> = vec![header];
    let intervals = crate::intervals::of_run(run);
    for r in shown.iter().copied() {
        let (test, direction) = match &r.host {
            Some(_) => (String::new(), String::new()),
            None => (r.test.clone(), r.direction.clone()),
        };
        let mut line = vec![
            test,
            direction,
            num(r.mb_per_s),
            num(r.mib_per_s),
            num(r.iops),
            units[0].cell(r.latency_ns.p50 as f64),
            units[1].cell(r.latency_ns.p99 as f64),
            units[2].cell(r.latency_ns.p99_9 as f64),
            percent(r.cpu_percent),
        ];
        if let Some(iv) = row_intervals(&intervals, r).filter(|_| !multi) {
            with_intervals(&mut line, iv, &units);
        }
        if multi {
            let hosts = match &r.host {
                Some(h) => h.clone(),
                None => format!("all {}", r.hosts.len()),
            };
            line.insert(2, hosts);
        }
        if !servers.is_empty() {
            line.push(
                r.server_cpu
                    .as_ref()
                    .map_or("-".into(), |s| percent(s.cpu_percent)),
            );
        }
        if judged {
            line.push(verdict_mark(r.verdict.as_ref()).into());
        }
        lines.push(line);
    }
    let columns = lines[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    // The header line, then one per row.
    let failed = std::iter::once(false).chain(shown.iter().map(|r| r.failed));
    // Test, direction (and hosts) are left-aligned, the figures right-aligned.
    let left = if multi { 3 } else { 2 };
    for (l, failed) in lines.iter().zip(failed) {
        let mut s = String::new();
        for (c, cell) in l.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c < left {
                s.push_str(cell);
                s.push_str(&" ".repeat(pad + 2));
            } else {
                s.push_str(&" ".repeat(pad + usize::from(c > left) * 2));
                s.push_str(cell);
            }
        }
        let mark = if failed { "  FAILED" } else { "" };
        writeln!(out, "{}{mark}", s.trim_end())?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "MB/s = 1,000,000 bytes/s, MiB/s = 1,048,576 bytes/s; latency is per IO (in each column's unit), {}; CPU is the client's, in % of one CPU.",
        latency_meaning(&rows)
    )?;
    if !servers.is_empty() {
        writeln!(
            out,
            "Server CPU is that of {} on this host, sharing its CPUs with the client, in % of one CPU.",
            servers.join(", ")
        )?;
    }
    if judged {
        writeln!(
            out,
            "Valid: ok, suspect or INVALID, from what the run measured (cache, zeros, compression, steadiness); the notes give each reason with its figure."
        )?;
    }
    if !intervals.is_empty() {
        writeln!(
            out,
            "Figures are means over {} rounds ± the half width of their 95% interval (t interval; bootstrap for latency); CPU is the last round's.",
            crate::intervals::rounds_used(run)
        )?;
    }
    if rows.iter().any(|r| r.failed) {
        writeln!(
            out,
            "FAILED: the test stopped on an error (see the notes); its figures cover the time until then, including any wait for a lost server."
        )?;
    }
    crate::notes::render_run_for(run, layout, out)
}

/// The intervals of a row's test, for a repeated run.
fn row_intervals<'a>(
    intervals: &'a [crate::intervals::TestIntervals],
    r: &QuickRow,
) -> Option<&'a crate::intervals::TestIntervals> {
    let name = format!("{} {}", r.test, r.direction);
    intervals.iter().find(|t| t.test == name.trim())
}

/// A row's cells as mean ± half width over the rounds (`1,412 ± 37`), where measured.
fn with_intervals(
    line: &mut [String],
    iv: &crate::intervals::TestIntervals,
    units: &[TimeUnit; 3],
) {
    use crate::compare::MetricId::*;
    use crate::intervals::interval_cell;
    let rate = [(2, BandwidthMb), (3, BandwidthMib), (4, Iops)];
    for (col, metric) in rate {
        if let Some(m) = iv.get(metric) {
            line[col] = interval_cell(m.interval.mean, m.interval.low, m.interval.high);
        }
    }
    // Latency figures are µs in the comparison's figures; shown in the column's unit.
    let lat = [(5, ClatP50), (6, ClatP99), (7, ClatP999)];
    for ((col, metric), unit) in lat.into_iter().zip(units) {
        if let Some(m) = iv.get(metric) {
            let in_unit = |us: f64| us * 1000.0 / unit.ns;
            let iv = &m.interval;
            line[col] = interval_cell(in_unit(iv.mean), in_unit(iv.low), in_unit(iv.high));
        }
    }
}

/// What the latency columns measure, in the footnote's words.
fn latency_meaning(rows: &[QuickRow]) -> &'static str {
    let completion = |r: &&QuickRow| r.latency_ns.measured == LatencyKind::Completion;
    match rows.iter().filter(completion).count() {
        0 => "from just before submission to completion",
        n if n == rows.len() => {
            "from the end of submission to completion (total latency was not measured)"
        }
        _ => {
            "from just before submission to completion, or where that was not measured from the end of submission"
        }
    }
}

/// The measured servers, as `tgtd (pid 4242)`, each once.
fn server_names(rows: &[QuickRow]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in rows.iter().filter_map(|r| r.server_cpu.as_ref()) {
        let name = format!("{} (pid {})", s.process, s.pid);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// What the user named (the directory, device or URL), else the jobs' files.
fn named_targets(run: &RunResult) -> Vec<String> {
    let named: Vec<String> = run
        .environment
        .iter()
        .flat_map(|e| &e.targets)
        .map(|t| t.target.clone())
        .fold(Vec::new(), |mut all, t| {
            if !all.contains(&t) {
                all.push(t);
            }
            all
        });
    if named.is_empty() {
        targets(run)
    } else {
        named
    }
}

fn targets(run: &RunResult) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for t in run
        .groups
        .iter()
        .flat_map(|g| &g.jobs)
        .flat_map(|j| &j.targets)
    {
        if !all.contains(t) {
            all.push(t.clone());
        }
    }
    all
}

/// The JSON document of `storbench quick --format quick-json`.
#[derive(Clone, Debug, Serialize)]
pub struct QuickDoc {
    pub schema: &'static str,
    pub tool_version: String,
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    pub targets: Vec<String>,
    pub interrupted: bool,
    pub tests: Vec<QuickRow>,
    pub notes: Vec<QuickNote>,
    /// A repeated run (`--repeat N`): `tests` are its last round; here each test's mean
    /// and 95% interval over the complete rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats: Option<QuickRepeats>,
}

/// The rounds of a repeated quick run, as the JSON form gives them.
#[derive(Clone, Debug, Serialize)]
pub struct QuickRepeats {
    pub requested: u32,
    pub rounds: usize,
    pub complete: usize,
    pub intervals: Vec<crate::intervals::TestIntervals>,
}

/// A note as it appears in the JSON form.
#[derive(Clone, Debug, Serialize)]
pub struct QuickNote {
    pub level: &'static str,
    pub code: String,
    pub message: String,
}

pub fn document(run: &RunResult) -> QuickDoc {
    QuickDoc {
        schema: SCHEMA,
        tool_version: run.tool_version.clone(),
        started_unix_ms: run.started_unix_ms,
        finished_unix_ms: run.finished_unix_ms,
        targets: targets(run),
        interrupted: run.interrupted,
        tests: rows(run),
        notes: run
            .notes
            .iter()
            .map(|n| QuickNote {
                level: crate::notes::level_name(n.level),
                code: n.code.clone(),
                message: n.message.clone(),
            })
            .collect(),
        repeats: run.repeats.as_ref().map(|rep| QuickRepeats {
            requested: rep.requested,
            rounds: rep.rounds.len(),
            complete: rep.complete().count(),
            intervals: crate::intervals::of_run(run),
        }),
    }
}

/// Writes the JSON form, pretty-printed, with a final newline.
pub fn render_json(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &document(run)).map_err(io::Error::other)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_test_and_direction() {
        assert_eq!(
            split_name("SEQ1M Q8T1 read"),
            ("SEQ1M Q8T1".into(), "read".into())
        );
        assert_eq!(
            split_name("RND4K Q32T16 mix"),
            ("RND4K Q32T16".into(), "mix".into())
        );
        assert_eq!(split_name("custom"), ("custom".into(), String::new()));
    }

    #[test]
    fn latency_units() {
        assert_eq!(latency_text(850), "850 ns");
        assert_eq!(latency_text(4_567), "4.57 µs");
        assert_eq!(latency_text(45_670), "45.7 µs");
        assert_eq!(latency_text(456_700), "457 µs");
        assert_eq!(latency_text(1_062_000), "1.06 ms");
        assert_eq!(latency_text(17_100_000_000), "17.10 s");
    }
}
