//! `storbench diagnose`: the battery of stages that walks the chain from the client to the
//! server's disks. Every stage is an ordinary job, each its own stonewalled reporting group,
//! run once through the runner; the analysis (core's `analysis::diagnose`) finds the
//! stages by the job names below.
//!
//! Two regions: a small "hot" one the server holds in its memory after a warming read (the
//! path's ceiling: network, protocol and server processing without the disks), and a "cold"
//! one read once (the storage's ceiling; O_DIRECT locally). A device, a LUN or a file on a
//! directory that refuses new files is only read, in place.

use std::time::Duration;

use crate::relpath::RelPath;
use crate::spec::{BlockSize, JobSpec, Rw, RwKind, SizeSpec, Workload};
use crate::target::Target;

/// The hot region: small enough for any server's memory, large enough to stream from.
pub const HOT_BYTES: u64 = 32 << 20;
/// The least `--max-bytes`: the hot region laid out and warmed, and something to measure.
pub const MIN_BYTES: u64 = 4 * HOT_BYTES;
/// The block size of the streaming stages.
pub const BIG_BS: u64 = 1 << 20;
const SMALL_BS: u64 = 4096;

pub const WARM: &str = "warm";
pub const QD1: &str = "qd1 4k read";
/// The path's read ladder: rising queue depth at 1 MiB, in order.
pub const PATH_READS: [(&str, u32); 3] = [
    ("path read 1M Q1", 1),
    ("path read 1M Q4", 4),
    ("path read 1M Q16", 16),
];
pub const PATH_WRITE: &str = "path write 1M Q8";
const PATH_WRITE_QD: u32 = 8;
pub const COLD: &str = "storage read 1M Q8";
const COLD_QD: u32 = 8;

/// What the user chose and what the target allows.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagnoseOptions {
    /// The directory the test files go in, or the device, LUN or file read in place.
    pub target: Target,
    /// A device, a LUN or a file on a read-only share: read only, the regions at its start.
    pub in_place: bool,
    /// The size of what is read in place, when known: the cold region ends within it.
    pub in_place_bytes: Option<u64>,
    /// A local directory or device: the hot region is read through the page cache.
    pub local: bool,
    /// The storage stage reads with O_DIRECT (false where the file system refuses it).
    pub direct: bool,
    /// The path-write stage may run.
    pub writable: bool,
    pub ioengine: String,
    /// `storbench-diagnose.PID`: the files are PREFIX.hot and PREFIX.cold.
    pub file_prefix: String,
    /// The whole battery's time.
    pub budget: Duration,
    /// Bytes the battery may move in all, lay-out included.
    pub max_bytes: u64,
}

/// The timed stages this battery runs.
fn timed_stages(o: &DiagnoseOptions) -> u32 {
    2 + PATH_READS.len() as u32 + u32::from(o.writable)
}

/// Each timed stage's runtime: the budget shared out, one share kept for lay-out and
/// warming.
pub fn stage_runtime(o: &DiagnoseOptions) -> Duration {
    let per = o.budget / (timed_stages(o) + 1);
    per.max(Duration::from_secs(1))
}

/// The cold region: one read of it is the storage stage's share of the bytes.
pub fn cold_bytes(o: &DiagnoseOptions) -> u64 {
    let room = o
        .in_place_bytes
        .map_or(u64::MAX, |n| n.saturating_sub(HOT_BYTES));
    round_down(share(o, 14).min(room), BIG_BS).max(BIG_BS)
}

/// `percent` of the bytes left after the hot region's lay-out and warming.
fn share(o: &DiagnoseOptions, percent: u64) -> u64 {
    o.max_bytes.saturating_sub(2 * HOT_BYTES) / 100 * percent
}

fn round_down(n: u64, to: u64) -> u64 {
    n / to * to
}

/// The battery, in order: warm, QD1, the read ladder, the write (where allowed), the cold
/// read.
pub fn workload(o: &DiagnoseOptions) -> Workload {
    let runtime = stage_runtime(o);
    let hot = file(o, "hot");
    let mut jobs = Vec::new();
    let mut warm = job(o, WARM, &hot, RwKind::Read, BIG_BS, 4);
    warm.size = Some(SizeSpec::Bytes(HOT_BYTES));
    warm.time_based = false;
    warm.runtime = Some(runtime);
    jobs.push(warm);
    let mut qd1 = timed(o, QD1, &hot, RwKind::RandRead, SMALL_BS, 1, runtime);
    qd1.number_ios = Some(share(o, 2) / SMALL_BS);
    jobs.push(qd1);
    for ((name, qd), percent) in PATH_READS.iter().zip([5, 15, 40]) {
        let mut j = timed(o, name, &hot, RwKind::Read, BIG_BS, *qd, runtime);
        j.number_ios = Some((share(o, percent) / BIG_BS).max(1));
        jobs.push(j);
    }
    if o.writable {
        let mut j = timed(
            o,
            PATH_WRITE,
            &hot,
            RwKind::Write,
            BIG_BS,
            PATH_WRITE_QD,
            runtime,
        );
        j.number_ios = Some((share(o, 10) / BIG_BS).max(1));
        jobs.push(j);
    }
    let cold = cold_bytes(o);
    let mut j = timed(
        o,
        COLD,
        &file(o, "cold"),
        RwKind::Read,
        BIG_BS,
        COLD_QD,
        runtime,
    );
    j.direct = o.direct;
    j.invalidate = true;
    j.size = Some(SizeSpec::Bytes(cold));
    if o.in_place {
        j.offset = SizeSpec::Bytes(HOT_BYTES);
    }
    // One pass: a second would be served from the cache the first filled.
    j.number_ios = Some(cold / BIG_BS);
    jobs.push(j);
    for (group, j) in jobs.iter_mut().enumerate() {
        j.group = group as u32;
        j.stonewall = group > 0;
        j.options
            .push(("direct".into(), if j.direct { "1" } else { "0" }.into()));
    }
    Workload {
        jobs,
        global_options: vec![
            ("runtime".into(), format!("{}", runtime.as_secs())),
            ("ioengine".into(), o.ioengine.clone()),
        ],
        job_files: Vec::new(),
    }
}

fn timed(
    o: &DiagnoseOptions,
    name: &str,
    file: &Target,
    kind: RwKind,
    bs: u64,
    qd: u32,
    runtime: Duration,
) -> JobSpec {
    let mut j = job(o, name, file, kind, bs, qd);
    j.runtime = Some(runtime);
    j.time_based = true;
    j
}

fn job(o: &DiagnoseOptions, name: &str, file: &Target, kind: RwKind, bs: u64, qd: u32) -> JobSpec {
    let mut j = JobSpec::new(name);
    j.filenames = vec![file.clone()];
    j.size = Some(SizeSpec::Bytes(HOT_BYTES));
    j.bs = [
        BlockSize::Fixed(bs),
        BlockSize::Fixed(bs),
        BlockSize::Fixed(bs),
    ];
    j.rw = Rw {
        kind,
        nr: 1,
        hole: 0,
        back: 0,
    };
    j.iodepth = qd;
    j.numjobs = 1;
    j.ioengine = o.ioengine.clone();
    // Locally the hot region is read through the page cache (the memory stage); over the
    // network there is no client cache and the server's memory serves it.
    j.direct = !o.local;
    // The hot region stays in the page cache from one stage to the next.
    j.invalidate = false;
    j.overwrite = true;
    j.group_reporting = true;
    j.options = vec![
        ("rw".into(), kind.fio_name().into()),
        ("bs".into(), bs.to_string()),
        ("iodepth".into(), qd.to_string()),
    ];
    j
}

/// PREFIX.`which` in the target directory, or what is read in place.
fn file(o: &DiagnoseOptions, which: &str) -> Target {
    if o.in_place {
        return o.target.clone();
    }
    let name = format!("{}.{which}", o.file_prefix);
    RelPath::new(&name)
        .and_then(|n| o.target.join(n))
        .unwrap_or_else(|_| Target::local_join(o.target.expose(), &name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(writable: bool) -> DiagnoseOptions {
        DiagnoseOptions {
            target: Target::Path("/tmp".into()),
            in_place: false,
            in_place_bytes: None,
            local: true,
            direct: true,
            writable,
            ioengine: "psync".into(),
            file_prefix: "storbench-diagnose.1".into(),
            budget: Duration::from_secs(90),
            max_bytes: 1 << 30,
        }
    }

    #[test]
    fn the_battery_stays_within_its_bytes_and_budget() {
        for writable in [true, false] {
            let o = opts(writable);
            let w = workload(&o);
            let laid_out = HOT_BYTES + cold_bytes(&o);
            let moved: u64 = w
                .jobs
                .iter()
                .map(|j| {
                    let bs = match j.bs[0] {
                        BlockSize::Fixed(b) => b,
                        _ => unreachable!(),
                    };
                    j.number_ios.map_or(HOT_BYTES, |n| n * bs)
                })
                .sum();
            assert!(laid_out + moved <= o.max_bytes, "{}", laid_out + moved);
            let timed = w.jobs.iter().filter(|j| j.time_based).count() as u32;
            assert!(stage_runtime(&o) * (timed + 1) <= o.budget);
            assert_eq!(w.jobs.iter().any(|j| j.name == PATH_WRITE), writable);
        }
    }

    #[test]
    fn a_device_is_read_in_place_and_never_written() {
        let mut o = opts(false);
        o.in_place = true;
        o.target = Target::Path("/dev/loop9".into());
        let w = workload(&o);
        assert!(
            w.jobs
                .iter()
                .all(|j| j.filenames == vec![Target::Path("/dev/loop9".into())])
        );
        assert!(w.jobs.iter().all(|j| !j.rw.kind.writes()));
        let cold = w.jobs.last().unwrap();
        assert_eq!(cold.offset, SizeSpec::Bytes(HOT_BYTES));
        assert_eq!(cold.name, COLD);
        // A file of known size read in place: the cold region ends within it.
        o.in_place_bytes = Some(HOT_BYTES + 5 * BIG_BS + 10);
        assert_eq!(cold_bytes(&o), 5 * BIG_BS);
    }
}
