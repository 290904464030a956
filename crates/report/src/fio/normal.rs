//! fio's normal (human) output, line for line as fio 3.33 prints it (`show_thread_status_normal`,
//! `show_group_stats`, `show_disk_util`), followed by storbench's notes block.
//!
//! Deliberate differences from fio 3.33: the program is named `storbench-<version>`; the
//! `mixed:` line of unified_rw_reporting=both shows the real figures (fio prints zeros there
//! because it loses the job's units); and a notes block (limits, warnings, interruption)
//! follows the disk stats.

use std::io::{self, Write};
use storbench_model::merge::saturating_sum;

use storbench_model::merge::GroupRunStats;
use storbench_model::result::{
    DirResult, DiskUtil, JobResult, LatBuckets, LatStats, PrioLat, RunResult, UnifiedRw,
};

use super::FioOpts;
use super::units::{
    Unit, ctime, is_pow2, num2str, percentile_precision, percentile_scale, round_up_thousands,
    scale_lat, share,
};
use super::view::{self, Entry, GroupView};

/// Writes the whole end-of-run report.
pub fn render(run: &RunResult, opts: &FioOpts, out: &mut dyn Write) -> io::Result<()> {
    let out = &mut crate::terminal::Escaped::new(out);
    let groups = view::groups(run);
    writeln!(out)?;
    for g in &groups {
        for e in &g.entries {
            let date = ctime(end_ms(&e.job, run), opts.utc_offset_secs);
            write_entry(e, &g.rs, &date, out)?;
        }
    }
    for g in &groups {
        write_group_status(g, out)?;
    }
    write_disk_stats(&run.disks, out)?;
    crate::notes::render_run(run, out)?;
    crate::intervals::render_block(run, out)
}

fn end_ms(job: &JobResult, run: &RunResult) -> u64 {
    if job.end_unix_ms > 0 {
        job.end_unix_ms
    } else {
        run.finished_unix_ms
    }
}

/// One job (or group) block.
pub fn write_entry(
    e: &Entry,
    rs: &GroupRunStats,
    date: &str,
    out: &mut dyn Write,
) -> io::Result<()> {
    let j = &e.job;
    let bytes = saturating_sum(j.dirs.iter().map(|d| d.io_bytes));
    if bytes == 0 && e.rw_ios() == 0 {
        return Ok(());
    }
    match (j.error, &j.error_text) {
        (0, _) | (_, None) => writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {date}",
            j.name, j.groupid, j.jobs, j.error, j.pid
        )?,
        (err, Some(text)) => writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={err:2} ({text}): pid={}: {date}",
            j.name, j.groupid, j.jobs, j.pid
        )?,
    }
    if let Some(desc) = j.description.as_deref().filter(|d| !d.is_empty()) {
        writeln!(out, "  Description  : [{desc}]")?;
    }
    for (d, dir) in j.dirs.iter().enumerate() {
        if dir.io_bytes > 0 {
            write_dir(j, dir, e.dir_name(d), d == 1, rs.agg_bw[d], out)?;
        }
    }
    if let Some(mixed) = &e.mixed {
        // fio measures the mixed block's `per=` against the read aggregate.
        write_dir(j, mixed, "mixed", false, rs.agg_bw[0], out)?;
    }
    write_lat_buckets(&j.lat_buckets, e.rw_ios(), out)?;
    if j.sync.lat.samples > 0 {
        write_sync(j, out)?;
    }
    write_cpu_and_depths(e, out)
}

/// The lines of one data direction (fio's `show_ddir_status`).
fn write_dir(
    j: &JobResult,
    dir: &DirResult,
    label: &str,
    is_write: bool,
    agg_bw: u64,
    out: &mut dyn Write,
) -> io::Result<()> {
    if dir.runtime_ms == 0 {
        return Ok(());
    }
    let s = &j.settings;
    let (sig, pow2, rate) = (
        s.significant_figures,
        is_pow2(s.kb_base),
        Unit::rate(s.unit_base),
    );
    let bw = view::mul_div(dir.io_bytes, 1000, dir.runtime_ms);
    let iops = view::mul_div(dir.total_ios, 1000, dir.runtime_ms);
    let zone = if is_write && label != "mixed" {
        "; 0 zone resets"
    } else {
        ""
    };
    writeln!(
        out,
        "  {label}: IOPS={}, BW={} ({})({}/{}msec){zone}",
        num2str(iops, sig, 1, false, Unit::None),
        num2str(bw, sig, 1, pow2, rate),
        num2str(bw, sig, 1, !pow2, rate),
        num2str(dir.io_bytes, sig, 1, pow2, Unit::Byte),
        dir.runtime_ms
    )?;
    write_lat_line("slat", &dir.slat, out)?;
    write_lat_line("clat", &dir.clat, out)?;
    write_lat_line(" lat", &dir.lat, out)?;
    let list = view::sorted_percentiles(s);
    let prec = percentile_precision(&list);
    let (slat_on, clat_on, lat_on) = view::percentile_flags(s);
    let prio_kind = if lat_on { "lat" } else { "clat" };
    let prios = prios_shown(dir);
    for p in &prios {
        let (class, level) = (p.ioprio >> 13, p.ioprio & 7);
        write_lat_line(&format!("{prio_kind} prio {class}/{level}"), &p.lat, out)?;
    }
    for (on, name, stats) in [
        (slat_on, "slat", &dir.slat),
        (clat_on, "clat", &dir.clat),
        (lat_on, "lat", &dir.lat),
    ] {
        if on && stats.samples > 0 {
            write_percentiles(name, stats, &list, prec, out)?;
        }
    }
    if clat_on || lat_on {
        let all = if lat_on { &dir.lat } else { &dir.clat }.samples;
        for p in &prios {
            let (class, level) = (p.ioprio >> 13, p.ioprio & 7);
            let of_ios = 100.0 * p.lat.samples as f64 / all as f64;
            let name = format!("{prio_kind} prio {class}/{level} ({of_ios:.2}% of IOs)");
            write_percentiles(&name, &p.lat, &list, prec, out)?;
        }
    }
    write_samples(dir, s.kb_base, agg_bw, out)
}

/// The priorities whose latency fio prints apart (`clat prio 2/0` lines and percentiles):
/// each with samples, only when at least two have them.
fn prios_shown(dir: &DirResult) -> Vec<&PrioLat> {
    let with: Vec<&PrioLat> = dir.prios.iter().filter(|p| p.lat.samples > 0).collect();
    if with.len() >= 2 { with } else { Vec::new() }
}

/// `    clat (usec): min=…, max=…, avg=…, stdev=…` (nothing when there are no samples).
fn write_lat_line(name: &str, stats: &LatStats, out: &mut dyn Write) -> io::Result<()> {
    if stats.samples == 0 {
        return Ok(());
    }
    let l = scale_lat(stats.min_ns, stats.max_ns, stats.mean(), stats.stddev());
    writeln!(
        out,
        "    {name} ({}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        l.unit,
        num2str(l.min, 6, 1, false, Unit::None),
        num2str(l.max, 6, 1, false, Unit::None),
        l.mean,
        l.dev
    )
}

/// A percentile block, four (or as many as fit in 80 columns) per line.
fn write_percentiles(
    name: &str,
    stats: &LatStats,
    list: &[f64],
    prec: usize,
    out: &mut dyn Write,
) -> io::Result<()> {
    let vals = view::percentile_values(stats, list);
    if vals.is_empty() {
        return Ok(());
    }
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (unit, times) = percentile_scale(minv, maxv);
    let divisor = 1000u64.pow(times);
    let width = match maxv / divisor {
        0 => 5,
        q => (q.ilog10() as usize + 1).max(5),
    };
    let per_line = 73 / (prec + 10 + width);
    write!(out, "    {name} percentiles ({unit}):\n     |")?;
    for (j, (p, v)) in list.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            write!(out, "     |")?;
        }
        let last = j == list.len() - 1;
        let v = round_up_thousands(*v, times);
        let sep = if last { '\n' } else { ',' };
        write!(out, " {p:pw$.prec$}th=[{v:width$}]{sep}", pw = prec + 3)?;
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The `bw (  KiB/s)` and `iops` sample lines. fio keeps bandwidth samples in KiB/s and
/// switches to MiB/s (labelled so even with kb_base=1000) above kb_base² KiB/s.
fn write_samples(
    dir: &DirResult,
    kb_base: u32,
    agg_bw: u64,
    out: &mut dyn Write,
) -> io::Result<()> {
    let bw = &dir.bw_samples;
    if bw.samples > 0 {
        let per = view::share_of_agg(bw.mean, agg_bw);
        let base = kb_base as f64;
        let (mut min, mut max) = ((bw.min / 1024.0) as u64, (bw.max / 1024.0) as u64);
        let (mut mean, mut dev) = (bw.mean / 1024.0, bw.stddev / 1024.0);
        let mut label = if is_pow2(kb_base) { "KiB" } else { "kB" };
        if mean > base * base {
            min = (min as f64 / base) as u64;
            max = (max as f64 / base) as u64;
            mean /= base;
            dev /= base;
            label = "MiB";
        }
        writeln!(
            out,
            "   bw ({label:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            bw.samples
        )?;
    }
    let io = &dir.iops_samples;
    if io.samples > 0 {
        writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            io.min as u64, io.max as u64, io.mean, io.stddev, io.samples
        )?;
    }
    Ok(())
}

/// `  lat (usec)   : 250=…` lines: the clat distribution over all directions.
fn write_lat_buckets(b: &LatBuckets, total: u64, out: &mut dyn Write) -> io::Result<()> {
    const BOUNDS: [&str; 12] = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=",
        ">=2000=",
    ];
    for (unit, counts) in [
        ("nsec", &b.ns[..]),
        ("usec", &b.us[..]),
        ("msec", &b.ms[..]),
    ] {
        let shown: Vec<String> = counts
            .iter()
            .zip(BOUNDS)
            .filter(|(c, _)| share(**c, total, 0.01) > 0.0)
            .map(|(c, bound)| format!("{bound}{:3.2}%", share(*c, total, 0.01)))
            .collect();
        for line in shown.chunks(5) {
            writeln!(out, "  lat ({unit})   : {}", line.join(", "))?;
        }
    }
    Ok(())
}

/// The fsync/fdatasync block.
fn write_sync(j: &JobResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "  fsync/fdatasync/sync_file_range:")?;
    write_lat_line("sync", &j.sync.lat, out)?;
    let list = view::sorted_percentiles(&j.settings);
    write_percentiles("sync", &j.sync.lat, &list, percentile_precision(&list), out)
}

fn write_cpu_and_depths(e: &Entry, out: &mut dyn Write) -> io::Result<()> {
    let j = &e.job;
    let (usr, sys) = view::cpu_percent(j);
    writeln!(
        out,
        "  cpu          : usr={usr:3.2}%, sys={sys:3.2}%, ctx={}, majf={}, minf={}",
        j.cpu.ctx, j.cpu.majf, j.cpu.minf
    )?;
    let dist = |map: &[u64; 7], total: u64| -> Vec<f64> {
        map.iter().map(|c| share(*c, total, 0.1)).collect()
    };
    let l = dist(&j.depth.level, e.rw_ios());
    writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        l[0], l[1], l[2], l[3], l[4], l[5], l[6]
    )?;
    for (name, map) in [
        ("submit  ", &j.depth.submit),
        ("complete", &j.depth.complete),
    ] {
        let d = dist(map, saturating_sum(map.iter().copied()));
        writeln!(
            out,
            "     {name}  : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        )?;
    }
    let [r, w, t] = &j.dirs;
    writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        r.total_ios,
        w.total_ios,
        t.total_ios,
        j.sync.total_ios,
        r.short_ios + j.sync.datasyncs,
        w.short_ios,
        t.short_ios,
        r.drop_ios,
        w.drop_ios,
        t.drop_ios
    )?;
    if let Some(errors) = &j.measured.errors {
        writeln!(
            out,
            "     errors    : total={}, first_error={}/<{}>",
            errors.total,
            errors.first,
            strerror(errors.first)
        )?;
    }
    if let Some(lt) = &j.latency_target {
        writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            lt.target_ns, lt.window_us, lt.percentile, lt.depth
        )?;
    } else if j.header.iodepth > 0 {
        writeln!(
            out,
            "     latency   : target=0, window=0, percentile=100.00%, depth={}",
            j.header.iodepth
        )?;
    }
    if let Some(ss) = &j.steadystate {
        write_steadystate(j, ss, out)?;
    }
    Ok(())
}

/// fio's `show_ss_normal`: the window's mean bandwidth (as fio computes it, in units of
/// kb_base) and IOPS, and the criterion's last value.
fn write_steadystate(
    j: &JobResult,
    ss: &storbench_model::result::SteadyResult,
    out: &mut dyn Write,
) -> io::Result<()> {
    let s = &j.settings;
    let (sig, pow2, rate) = (
        s.significant_figures,
        is_pow2(s.kb_base),
        Unit::rate(s.unit_base),
    );
    let kb = u64::from(s.kb_base.max(1));
    let bw = ss.bw_mean() / kb;
    writeln!(
        out,
        "  steadystate  : attained={}, bw={} ({}), iops={}, {}{}={:.3}{}",
        if ss.attained { "yes" } else { "no" },
        num2str(bw, sig, kb, pow2, rate),
        num2str(bw, sig, kb, !pow2, rate),
        num2str(ss.iops_mean(), sig, 1, false, Unit::None),
        if ss.iops { "iops" } else { "bw" },
        if ss.slope_based {
            " slope"
        } else {
            " mean dev"
        },
        ss.criterion,
        if ss.percent { "%" } else { "" },
    )
}

/// `Run status group N (all jobs):` and its per-direction lines.
pub fn write_group_status(g: &GroupView, out: &mut dyn Write) -> io::Result<()> {
    const LABELS: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
    writeln!(out, "\nRun status group {} (all jobs):", g.id)?;
    let rs = &g.rs;
    for (d, dir_label) in LABELS.iter().enumerate() {
        if !rs.ran(d) {
            continue;
        }
        let label = if g.unified == UnifiedRw::Mixed {
            "  MIXED"
        } else {
            dir_label
        };
        let line = StatusLine {
            agg: rs.agg_bw[d],
            min: rs.min_bw[d],
            max: rs.max_bw[d],
            io: rs.io_bytes[d],
            min_run: rs.min_run_ms[d],
            max_run: rs.max_run_ms[d],
        };
        line.write(label, g, out)?;
    }
    if g.unified == UnifiedRw::Both {
        mixed_status(rs).write("  MIXED", g, out)?;
    }
    Ok(())
}

/// One `READ: bw=…` line's figures (bytes, bytes/s, ms).
struct StatusLine {
    agg: u64,
    min: u64,
    max: u64,
    io: u64,
    min_run: u64,
    max_run: u64,
}

impl StatusLine {
    fn write(&self, label: &str, g: &GroupView, out: &mut dyn Write) -> io::Result<()> {
        let s = &g.settings;
        let (sig, p2, rate) = (
            s.significant_figures,
            is_pow2(s.kb_base),
            Unit::rate(s.unit_base),
        );
        let n = |v, pow2, unit| num2str(v, sig, 1, pow2, unit);
        writeln!(
            out,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            n(self.agg, p2, rate),
            n(self.agg, !p2, rate),
            n(self.min, p2, rate),
            n(self.max, p2, rate),
            n(self.min, !p2, rate),
            n(self.max, !p2, rate),
            n(self.io, p2, Unit::Byte),
            n(self.io, !p2, Unit::Byte),
            self.min_run,
            self.max_run
        )
    }
}

/// The extra `MIXED:` line of unified_rw_reporting=both: directions summed.
fn mixed_status(rs: &GroupRunStats) -> StatusLine {
    let ran: Vec<usize> = (0..3).filter(|&d| rs.ran(d)).collect();
    StatusLine {
        agg: ran.iter().map(|&d| rs.agg_bw[d]).sum(),
        min: ran.iter().map(|&d| rs.min_bw[d]).min().unwrap_or(0),
        max: ran.iter().map(|&d| rs.max_bw[d]).max().unwrap_or(0),
        io: saturating_sum(ran.iter().map(|&d| rs.io_bytes[d])),
        min_run: ran.iter().map(|&d| rs.min_run_ms[d]).min().unwrap_or(0),
        max_run: ran.iter().map(|&d| rs.max_run_ms[d]).max().unwrap_or(0),
    }
}

/// `Disk stats (read/write):` and one line per device.
pub fn write_disk_stats(disks: &[DiskUtil], out: &mut dyn Write) -> io::Result<()> {
    if disks.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nDisk stats (read/write):")?;
    for d in disks {
        writeln!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
            d.name,
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            d.read_ticks,
            d.write_ticks,
            d.in_queue,
            d.util.clamp(0.0, 100.0)
        )?;
    }
    Ok(())
}

/// The C library's text of an errno as fio prints it (`Success` for 0).
fn strerror(errno: i32) -> String {
    if errno == 0 {
        return "Success".into();
    }
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    match text.rfind(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
