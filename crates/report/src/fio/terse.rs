//! fio's terse output, version 3: one `;`-separated line per reporting entry. Latencies in µs
//! (truncated), sizes in KiB, 121 fields, then 9 per disk and the description if any.

use std::fmt::Write as _;
use std::io::{self, Write};
use storbench_model::merge::saturating_sum;

use storbench_model::merge::GroupRunStats;
use storbench_model::result::{DirResult, DiskUtil, JobResult, LatStats, RunResult, UnifiedRw};

use super::units::share;
use super::view::{self, Entry};

/// Number of fields of one line without disks.
pub const FIELDS: usize = 121;
/// Fields added per disk.
pub const DISK_FIELDS: usize = 9;
/// fio's fixed number of percentile slots per direction.
const PERCENTILE_SLOTS: usize = 20;

/// Writes one line per entry.
pub fn render(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let program = super::program_name(run);
    for g in view::groups(run) {
        for e in &g.entries {
            out.write_all(line(e, &g.rs, &program, &run.disks).as_bytes())?;
        }
    }
    Ok(())
}

/// One entry's line, newline included.
pub fn line(e: &Entry, rs: &GroupRunStats, program: &str, disks: &[DiskUtil]) -> String {
    let j = &e.job;
    let mut s = format!("3;{program};{};{};{}", j.name, j.groupid, j.error);
    dir_fields(&mut s, j, &j.dirs[0], rs.agg_bw[0]);
    if e.unified() != UnifiedRw::Mixed {
        dir_fields(&mut s, j, &j.dirs[1], rs.agg_bw[1]);
    }
    if let Some(mixed) = &e.mixed {
        dir_fields(&mut s, j, mixed, rs.agg_bw[0]);
    }
    let (usr, sys) = view::cpu_percent(j);
    let c = &j.cpu;
    let _ = write!(s, ";{usr:.6}%;{sys:.6}%;{};{};{}", c.ctx, c.majf, c.minf);
    dist_fields(&mut s, e);
    for d in disks {
        let _ = write!(
            s,
            ";{};{};{};{};{};{};{};{};{:3.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util.clamp(0.0, 100.0)
        );
    }
    if let Some(desc) = j.description.as_deref().filter(|d| !d.is_empty()) {
        let _ = write!(s, ";{desc}");
    }
    s.push('\n');
    s
}

/// IO depth shares, then the µs (ns folded into `<=2`) and ms latency shares.
fn dist_fields(s: &mut String, e: &Entry) {
    let j = &e.job;
    let total = e.rw_ios();
    for count in j.depth.level {
        let _ = write!(s, ";{:3.1}%", share(count, total, 0.1));
    }
    let b = &j.lat_buckets;
    let ns_share = if total == 0 {
        0.0
    } else {
        saturating_sum(b.ns.iter().copied()) as f64 * 100.0 / total as f64
    };
    for (i, count) in b.us.iter().enumerate() {
        let extra = if i == 0 { ns_share } else { 0.0 };
        let _ = write!(s, ";{:3.2}%", share(*count, total, 0.01) + extra);
    }
    for count in b.ms {
        let _ = write!(s, ";{:3.2}%", share(count, total, 0.01));
    }
}

/// The 41 fields of one direction.
fn dir_fields(s: &mut String, j: &JobResult, d: &DirResult, agg_bw: u64) {
    let bw = view::mul_div(d.io_bytes, 1000, d.runtime_ms) / 1024;
    let iops = view::mul_div(d.total_ios, 1000, d.runtime_ms);
    let _ = write!(s, ";{};{bw};{iops};{}", d.io_bytes >> 10, d.runtime_ms);
    lat_fields(s, &d.slat);
    lat_fields(s, &d.clat);
    let set = &j.settings;
    let hist = match view::percentile_flags(set) {
        (_, _, true) => Some(&d.lat),
        (_, true, false) => Some(&d.clat),
        _ => None,
    };
    let list = view::sorted_percentiles(set);
    let vals = hist
        .map(|h| view::percentile_values(h, &list))
        .unwrap_or_default();
    for i in 0..PERCENTILE_SLOTS {
        match (list.get(i), vals.get(i)) {
            (Some(p), Some(v)) => {
                let _ = write!(s, ";{p:.6}%={}", v / 1000);
            }
            _ => s.push_str(";0%=0"),
        }
    }
    lat_fields(s, &d.lat);
    let b = &d.bw_samples;
    if b.samples > 0 {
        let agg_kib = agg_bw / 1024;
        // fio divides by whole KiB/s: an aggregate below 1 KiB/s gives 100%.
        let per = if agg_kib == 0 {
            100.0
        } else {
            (b.mean / 1024.0 * 100.0 / agg_kib as f64).min(100.0)
        };
        let _ = write!(
            s,
            ";{};{};{per:.6}%;{:.6};{:.6}",
            (b.min / 1024.0) as u64,
            (b.max / 1024.0) as u64,
            b.mean / 1024.0,
            b.stddev / 1024.0
        );
    } else {
        s.push_str(";0;0;0.000000%;0.000000;0.000000");
    }
}

/// min, max (µs, truncated), mean, stdev (µs).
fn lat_fields(s: &mut String, l: &LatStats) {
    if l.samples == 0 {
        s.push_str(";0;0;0.000000;0.000000");
    } else {
        let _ = write!(
            s,
            ";{};{};{:.6};{:.6}",
            l.min_ns / 1000,
            l.max_ns / 1000,
            l.mean() / 1000.0,
            l.stddev() / 1000.0
        );
    }
}
