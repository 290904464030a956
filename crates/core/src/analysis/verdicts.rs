//! Validity verdicts: how far each reported entry can be trusted, `valid`, `suspect` or
//! `invalid`, each reason stated with the measured figure behind it. Every rule, its
//! threshold and the test that shows it are listed in docs/verdicts.md; the inputs are the
//! result model's figures and what the runner's sampler measured (`JobResult::measured`,
//! the disks below the files), never the settings alone.

use std::borrow::Cow;

use crate::space::human;
use storbench_model::result::{
    DiskUtil, JobResult, Measured, Reason, RunMode, RunResult, TimelinePoint, Validity, Verdict,
};

/// Below this share of the reported bytes moved by the disks, the cache served the rest.
const DISK_SHARE: f64 = 0.9;
/// A cache that served at least this share makes the figure memory speed: invalid.
const CACHE_INVALID: f64 = 0.5;
/// Fewer bytes than this are not judged on device counters (metadata and read-ahead
/// would dominate).
const CACHE_MIN_BYTES: u64 = 1 << 20;
/// Buffered writes whose median completes in under this share of the disk's own time per
/// write never waited on the disk.
const ABSORBED_WRITE: f64 = 0.25;
/// Sampled reads needed before zeros are judged, and the shares that make them suspect
/// and invalid.
const ZERO_MIN_SAMPLES: u64 = 4;
const ZERO_SUSPECT: f64 = 0.1;
const ZERO_INVALID: f64 = 0.5;
/// A server's likely RAM when it is not this host (a NAS has 8 to 64 GiB): reads of a
/// smaller region may all come from its cache.
const REMOTE_RAM: u64 = 64 << 30;
/// Per-second rates whose coefficient of variation exceeds this are unsteady.
const CV_MAX: f64 = 0.3;
/// A rate that falls below this share of what it was, and stays there, is a drop.
const DROP: f64 = 2.0 / 3.0;
/// A second shorter than this (the last, partial one) is not a sample of the rate.
const MIN_INTERVAL_MS: u64 = 500;
/// Shorter measurements are too short to trust.
const SHORT_MS: u64 = 1000;
/// Governors that lower the clock under a light load (an IO-bound benchmark is one).
const SLOW_GOVERNORS: [&str; 2] = ["powersave", "conservative"];
/// A mean clock below this share of the highest one is a slowed CPU.
const MHZ_SHARE: f64 = 0.8;
/// Steal, in percent of one CPU, above which the hypervisor took noticeable cycles.
const STEAL: f64 = 5.0;
/// Other processes' CPU, as a share of the machine's, that makes the host busy.
const OTHER_LOAD: f64 = 0.25;
/// The client's threads waiting for a CPU this share of their runtime (or more).
const CLIENT_WAIT: f64 = 0.25;
/// Other processes' bytes on the job's disks: at least this share of their traffic and
/// [`CACHE_MIN_BYTES`].
const OTHER_IO: f64 = 0.1;
/// Queue depths this low are judged for latency-bound IO, and the share of the depth that
/// IOPS × latency must reach (Little's law) to call the run latency-bound.
const LOW_DEPTH: u32 = 4;
const LITTLE: f64 = 0.8;
/// The time per IO is waiting when the client's CPU per IO is below this share of it and
/// the device's service time per IO (a network target: the round trip) at least this share.
const WAIT_SHARE: f64 = 0.5;

/// The verdict on each entry the reports show.
pub(super) fn judge(run: &RunResult, entries: &[Cow<'_, JobResult>]) -> Vec<Verdict> {
    let mut verdicts: Vec<Verdict> = entries
        .iter()
        .map(|e| {
            let mut reasons = Vec::new();
            if !storbench_job::catalogue::fakes_io(&e.header.ioengine) {
                cache(run, entries, e, &mut reasons);
                zeros(run, e, &mut reasons);
                compressible(entries, e, &mut reasons);
            }
            steady(e, run.mode, &mut reasons);
            host(run, e, &mut reasons);
            latency(e, &mut reasons);
            Verdict {
                job: e.name.clone(),
                validity: reasons.iter().map(|r| r.validity).max().unwrap_or_default(),
                reasons,
            }
        })
        .collect();
    verdicts.extend(bonnie_compressible(run));
    verdicts
}

/// bonnie's `--compressible` writes near-zero blocks: judged against the target's
/// compression like fio's compressible writes, as one verdict on the whole suite (its
/// results hold no jobs).
fn bonnie_compressible(run: &RunResult) -> Option<Verdict> {
    let b = run.bonnie.as_ref().filter(|b| b.compressible)?;
    let measured = Measured {
        compressible: Some("--compressible: bonnie's near-zero blocks".into()),
        target_compression: b.target_compression.clone(),
        compression_unknown: b.compression_unknown.clone(),
        ..Measured::default()
    };
    let mut reasons = Vec::new();
    compressible_of(&b.name, &measured, None, &mut reasons);
    Some(Verdict {
        job: b.name.clone(),
        validity: reasons.iter().map(|r| r.validity).max().unwrap_or_default(),
        reasons,
    })
}

fn reason(check: &str, validity: Validity, message: String) -> Reason {
    Reason {
        check: check.into(),
        validity,
        message,
    }
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// Whether the job reached a target over the network. A result keeps its targets as text
/// (masked, and perhaps imported), so the catalogue's protocol of that text decides: a URL
/// target is reached through a server.
fn is_network(job: &JobResult) -> bool {
    job.targets
        .iter()
        .any(|t| storbench_job::target::url_protocol(t).is_some())
}

/// The disks whose counters say what reached a disk: those flagged as holding the data,
/// else (results stored before the flag) every device recorded for the job or the run.
fn data_disks<'r>(
    run: &'r RunResult,
    job: &'r JobResult,
) -> Vec<&'r storbench_model::result::DiskUtil> {
    let own: &[storbench_model::result::DiskUtil] = if job.disks.is_empty() {
        &run.disks
    } else {
        &job.disks
    };
    let leaves: Vec<_> = own.iter().filter(|d| d.leaf).collect();
    if leaves.is_empty() {
        own.iter().collect()
    } else {
        leaves
    }
}

/// Bytes the disks moved against the bytes the job reported: its own share of the disks'
/// reads when its threads' reads were measured (a neighbour's disk reads, or another
/// process's, are not this job's), else every entry measured over the same disk counters
/// (the jobs of one batch share them). Holes and never-written blocks are left out of
/// what the disks had to move.
fn cache(run: &RunResult, entries: &[Cow<'_, JobResult>], job: &JobResult, out: &mut Vec<Reason>) {
    let name = &job.name;
    if is_network(job) {
        // server_disks are kept only for a server found on this host.
        if !job.measured.server_disks.is_empty() {
            local_server_cache(entries, job, out);
        } else {
            remote_cache(run, job, out);
        }
        return;
    }
    let disks = data_disks(run, job);
    if disks.is_empty() {
        out.extend(no_disk(run, job));
        return;
    }
    let peers: Vec<&JobResult> = entries
        .iter()
        .map(|e| e.as_ref())
        .filter(|e| e.disks == job.disks && !is_network(e))
        .collect();
    let names: Vec<&str> = disks.iter().map(|d| d.name.as_str()).collect();
    let names = names.join(", ");
    if let Some(read) = disk_reads(job, &peers, &disks)
        && read.share() < DISK_SHARE
    {
        let validity = if 1.0 - read.share() >= CACHE_INVALID {
            Validity::Invalid
        } else {
            Validity::Suspect
        };
        let served = (100.0 - read.share() * 100.0).max(0.0);
        let advice = if job.header.direct {
            " although the job used direct=1: a cache below the file system served them (a loop device without direct IO, or a file system that does not honour O_DIRECT)"
        } else {
            " (use --direct=1)"
        };
        out.push(reason("cache", validity, format!(
            "{name}: the disk ({names}) read {:.0}% of the bytes {} ({} of {}{}): the page cache served {served:.0}%, so reads ran at memory speed{advice}",
            read.share() * 100.0, read.whose, human(read.moved), human(read.expected as u64), read.holes_text()
        )));
    }
    let reported: u64 = peers.iter().map(|e| e.dirs[1].io_bytes).sum();
    let moved: u64 = disks.iter().map(|d| d.write_bytes).sum();
    if job.dirs[1].io_bytes > 0 && reported >= CACHE_MIN_BYTES {
        let share = moved as f64 / reported as f64;
        let advice = if job.header.direct {
            "compression, or a cache below the file system, absorbed the rest"
        } else {
            "the page cache (or compression) absorbed the rest (use --direct=1 or --end_fsync=1)"
        };
        if share < CACHE_INVALID {
            out.push(reason("cache", Validity::Suspect, format!(
                "{name}: the disk ({names}) wrote {:.0}% of the bytes reported ({} of {}) during the run: {advice}",
                pct(moved as f64, reported as f64), human(moved), human(reported)
            )));
        } else if !job.header.direct {
            out.extend(absorbed_writes(job, &disks, &names));
        }
    }
}

/// The median write latency of a job (total latency where measured, else completion).
fn write_p50_ns(job: &JobResult) -> f64 {
    let d = &job.dirs[1];
    let lat = if d.lat.samples > 0 || d.clat.samples == 0 {
        &d.lat
    } else {
        &d.clat
    };
    lat.percentiles(&[50.0])[0] as f64
}

/// Buffered writes whose median took a fraction of the disk's own time per write never
/// waited on the disk: the page cache absorbed them, even when the disk was busy writing
/// meanwhile (dirty pages of earlier jobs flushed during this one).
fn absorbed_writes(job: &JobResult, disks: &[&DiskUtil], names: &str) -> Option<Reason> {
    let p50 = write_p50_ns(job);
    let ios: u64 = disks.iter().map(|d| d.write_ios).sum();
    let ticks_ms: u64 = disks.iter().map(|d| d.write_ticks).sum();
    if p50 <= 0.0 || ios == 0 || ticks_ms == 0 {
        return None;
    }
    let per_write = ticks_ms as f64 * 1e6 / ios as f64;
    (p50 < per_write * ABSORBED_WRITE).then(|| reason("cache", Validity::Suspect, format!(
        "{}: buffered writes completed in {} (p50) while the disk ({names}) took {} per write: the page cache absorbed them, so writes ran at memory speed (use --direct=1 or --end_fsync=1)",
        job.name, micros(p50), micros(per_write)
    )))
}

/// A target with no block device below it: on tmpfs the data lives in memory; elsewhere
/// what reached a disk cannot be measured, for reads and for buffered writes (with their
/// median latency).
fn no_disk(run: &RunResult, job: &JobResult) -> Vec<Reason> {
    let name = &job.name;
    let in_memory = run.environment.as_ref().is_some_and(|env| {
        env.targets.iter().any(|t| {
            matches!(t.fs_type.as_deref(), Some("tmpfs" | "ramfs"))
                && job.targets.iter().any(|j| j.starts_with(&t.target))
        })
    });
    if in_memory && job.dirs[0].io_bytes + job.dirs[1].io_bytes > 0 {
        return vec![reason(
            "cache",
            Validity::Valid,
            format!(
                "{name}: the target is on tmpfs: the data lives in memory, so the figure is memory's, not a disk's"
            ),
        )];
    }
    let mut out = Vec::new();
    if job.dirs[0].io_bytes > 0 {
        out.push(reason("cache", Validity::Valid, format!(
            "{name}: cache unknown: no block device was found under the target, so what reached a disk cannot be measured"
        )));
    }
    if job.dirs[1].io_bytes > 0 && !job.header.direct {
        out.push(reason("cache", Validity::Valid, format!(
            "{name}: write cache unknown: buffered writes completed in {} (p50) and no block device was found under the target, so whether the page cache absorbed them cannot be measured (use --direct=1 or --end_fsync=1)",
            micros(write_p50_ns(job))
        )));
    }
    out
}

/// The reads a job's disks moved against those they had to move.
struct DiskReads {
    moved: u64,
    /// Bytes reported read outside holes and never-written blocks.
    expected: f64,
    /// The share of the reported bytes that needed no disk.
    unread: f64,
    whose: &'static str,
}

impl DiskReads {
    fn share(&self) -> f64 {
        self.moved as f64 / self.expected
    }

    fn holes_text(&self) -> String {
        if self.unread > 0.0 {
            format!(
                "; the other {:.0}% of the reads were holes or never-written blocks",
                self.unread * 100.0
            )
        } else {
            String::new()
        }
    }
}

/// None when too little was read to judge, or everything read was holes.
fn disk_reads(job: &JobResult, peers: &[&JobResult], disks: &[&DiskUtil]) -> Option<DiskReads> {
    if job.dirs[0].io_bytes == 0 {
        return None;
    }
    let expected = |e: &JobResult| e.dirs[0].io_bytes as f64 * (1.0 - unread_share(e));
    let disk_read: u64 = disks.iter().map(|d| d.read_bytes).sum();
    let read = match job.measured.own_read_bytes {
        Some(own) => DiskReads {
            moved: own.min(disk_read),
            expected: expected(job),
            unread: unread_share(job),
            whose: "the job reported",
        },
        None => DiskReads {
            moved: disk_read,
            expected: peers.iter().map(|e| expected(e)).sum(),
            unread: unread_share(job),
            whose: "reported",
        },
    };
    (read.expected >= CACHE_MIN_BYTES as f64).then_some(read)
}

/// The share of a job's reads that no disk had to move: the holes measured in its files'
/// region, else (a device or LUN, whose unwritten blocks cannot be asked for) the share of
/// sampled reads that returned zeros.
fn unread_share(job: &JobResult) -> f64 {
    let m = &job.measured;
    match m.hole_bytes {
        Some(h) if m.region_bytes > 0 => (h as f64 / m.region_bytes as f64).min(1.0),
        Some(_) => 0.0,
        None if m.sampled_reads >= ZERO_MIN_SAMPLES => m.zero_reads as f64 / m.sampled_reads as f64,
        None => 0.0,
    }
}

/// A server on this host: the bytes this machine's disks moved during the batch against
/// the bytes the batch's jobs to such a server reported. The server's own backing device is
/// not known from the client, so every disk of the machine counts; other processes' IO can
/// only add to what the disks moved, so a cache share found is never overstated.
fn local_server_cache(entries: &[Cow<'_, JobResult>], job: &JobResult, out: &mut Vec<Reason>) {
    let name = &job.name;
    let disks = &job.measured.server_disks;
    let peers: Vec<&JobResult> = entries
        .iter()
        .map(|e| e.as_ref())
        .filter(|e| e.measured.server_disks == *disks && is_network(e))
        .collect();
    let names: Vec<&str> = disks.iter().map(|d| d.name.as_str()).collect();
    let names = names.join(", ");
    let zeros = job.measured.sampled_reads >= ZERO_MIN_SAMPLES
        && job.measured.zero_reads as f64 >= job.measured.sampled_reads as f64 * ZERO_INVALID;
    let reported: u64 = peers.iter().map(|e| e.dirs[0].io_bytes).sum();
    let moved: u64 = disks.iter().map(|d| d.read_bytes).sum();
    if job.dirs[0].io_bytes > 0 && reported >= CACHE_MIN_BYTES && !zeros {
        let share = moved as f64 / reported as f64;
        if share < DISK_SHARE {
            let validity = if 1.0 - share >= CACHE_INVALID {
                Validity::Invalid
            } else {
                Validity::Suspect
            };
            out.push(reason("cache", validity, format!(
                "{name}: the server is on this host and its disks ({names}: this machine's, the server's own device cannot be known from here) read {:.0}% of the bytes reported ({} of {}): its page cache served the rest",
                pct(moved as f64, reported as f64), human(moved), human(reported)
            )));
        }
    }
    let reported: u64 = peers.iter().map(|e| e.dirs[1].io_bytes).sum();
    let moved: u64 = disks.iter().map(|d| d.write_bytes).sum();
    if job.dirs[1].io_bytes > 0 && reported >= CACHE_MIN_BYTES && moved < reported / 2 {
        out.push(reason("cache", Validity::Suspect, format!(
            "{name}: the server is on this host and its disks ({names}) wrote {:.0}% of the bytes reported ({} of {}) during the run: its page cache absorbed the rest",
            pct(moved as f64, reported as f64), human(moved), human(reported)
        )));
    }
}

/// A server's disks cannot be seen from here: its cache is unknown, and reads of a region
/// smaller than its likely RAM may all have come from it.
fn remote_cache(run: &RunResult, job: &JobResult, out: &mut Vec<Reason>) {
    if job.dirs[0].io_bytes == 0 {
        return;
    }
    let name = &job.name;
    let local = job.server_cpu.iter().any(|s| s.same_host) || !job.measured.server_disks.is_empty();
    let host_mem = run.environment.as_ref().map_or(0, |e| e.mem_bytes);
    let (ram, whose) = if local && host_mem > 0 {
        (host_mem, "this host's RAM, which the server on it shares")
    } else {
        (REMOTE_RAM, "the RAM a file server commonly has")
    };
    let region = job.measured.region_bytes;
    if region > 0 && region < ram {
        out.push(reason("cache", Validity::Suspect, format!(
            "{name}: the server's cache is unknown (its disks cannot be seen from here) and the reads covered {}, less than {whose} ({}): the server may have served them from memory",
            human(region), human(ram)
        )));
    } else {
        out.push(reason(
            "cache",
            Validity::Valid,
            format!("{name}: the server's cache is unknown: its disks cannot be seen from here"),
        ));
    }
}

/// Sampled reads that returned zeros, named as a sparse file or thin LUN only when that is
/// what answered: not when the file's region has no holes (SEEK_HOLE), nor when the disks
/// moved the bytes (zeros that were written).
fn zeros(run: &RunResult, job: &JobResult, out: &mut Vec<Reason>) {
    let m = &job.measured;
    if m.sampled_reads < ZERO_MIN_SAMPLES || m.hole_bytes == Some(0) {
        return;
    }
    let share = m.zero_reads as f64 / m.sampled_reads as f64;
    let validity = if share >= ZERO_INVALID {
        Validity::Invalid
    } else if share >= ZERO_SUSPECT {
        Validity::Suspect
    } else {
        return;
    };
    if m.hole_bytes.is_none() && disks_moved_the_reads(run, job) {
        return;
    }
    out.push(reason("zeros", validity, format!(
        "{}: {:.0}% of sampled reads ({} of {}) returned zeros: a sparse file or thin LUN answered without reading a disk; write the region first",
        job.name, share * 100.0, m.zero_reads, m.sampled_reads
    )));
}

/// A local job's disks, and its own reads, moved (nearly) all the bytes it reported read.
fn disks_moved_the_reads(run: &RunResult, job: &JobResult) -> bool {
    if is_network(job) {
        return false;
    }
    let disks = data_disks(run, job);
    let Some(own) = job.measured.own_read_bytes.filter(|_| !disks.is_empty()) else {
        return false;
    };
    let moved = own.min(disks.iter().map(|d| d.read_bytes).sum());
    moved as f64 >= job.dirs[0].io_bytes as f64 * DISK_SHARE
}

/// Compressible data on a compressing target, judged on what the file system's device
/// wrote over the batch against the bytes the batch's jobs reported: a file system may
/// store such data whole (btrfs gives up on data its heuristic finds incompressible, and
/// does not compress into preallocated extents).
fn compressible(entries: &[Cow<'_, JobResult>], job: &JobResult, out: &mut Vec<Reason>) {
    let own: Vec<&DiskUtil> = job.disks.iter().filter(|d| !d.below).collect();
    let written = (!own.is_empty() && !is_network(job)).then(|| {
        let reported: u64 = entries
            .iter()
            .filter(|e| e.disks == job.disks)
            .map(|e| e.dirs[1].io_bytes)
            .sum();
        let names: Vec<&str> = own.iter().map(|d| d.name.as_str()).collect();
        Written {
            device: names.join(", "),
            bytes: own.iter().map(|d| d.write_bytes).sum(),
            reported,
        }
    });
    compressible_of(&job.name, &job.measured, written.as_ref(), out);
}

/// What the file system's device wrote over a batch.
struct Written {
    device: String,
    bytes: u64,
    reported: u64,
}

fn compressible_of(name: &str, m: &Measured, written: Option<&Written>, out: &mut Vec<Reason>) {
    let Some(why) = &m.compressible else {
        return;
    };
    match (&m.target_compression, &m.compression_unknown) {
        (Some(c), _) if c == "off" => {}
        (Some(c), _) => match written.filter(|w| w.reported >= CACHE_MIN_BYTES) {
            Some(w) => {
                let share = w.bytes as f64 / w.reported as f64;
                if share >= DISK_SHARE {
                    return;
                }
                let validity = if share < CACHE_INVALID {
                    Validity::Invalid
                } else {
                    Validity::Suspect
                };
                out.push(reason("compressible", validity, format!(
                    "{name}: the data written compresses ({why}) and the target compresses it ({c}): its device ({}) wrote {:.0}% of the bytes reported ({} of {}), so the figure is not the disk's; write incompressible data",
                    w.device, share * 100.0, human(w.bytes), human(w.reported)
                )));
            }
            None => compressible_unmeasured(name, why, c, out),
        },
        (None, why_unknown) => {
            let unknown = why_unknown.as_deref().unwrap_or("unknown");
            out.push(reason("compressible", Validity::Suspect, format!(
                "{name}: the data written compresses ({why}) and the target's compression is unknown ({unknown}): if it compresses, the figure is not the disk's"
            )));
        }
    }
}

/// Compressible data on a compressing target whose device's writes were not measured
/// (bonnie's suite, which records no devices per phase): judged on the data's share.
fn compressible_unmeasured(name: &str, why: &str, c: &str, out: &mut Vec<Reason>) {
    let mostly = why.starts_with("zero_buffers")
        || why.starts_with("--compressible")
        || why.starts_with("buffer_pattern")
        || why
            .strip_prefix("buffer_compress_percentage=")
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|p| p >= 50);
    let validity = if mostly {
        Validity::Invalid
    } else {
        Validity::Suspect
    };
    out.push(reason("compressible", validity, format!(
        "{name}: the data written compresses ({why}) and the target compresses it ({c}): the disk may store fewer bytes than reported (its writes were not measured); write incompressible data"
    )));
}

/// The host during the batch: governor, clock, steal, other processes' CPU, the client's
/// wait for a CPU, and other processes' IO on the job's disks.
fn host(run: &RunResult, job: &JobResult, out: &mut Vec<Reason>) {
    let name = &job.name;
    let mut suspect = |message: String| out.push(reason("host", Validity::Suspect, message));
    let runtime_ms = job.runtime_ms / u64::from(job.jobs.max(1));
    let job_ns = job.runtime_ms as f64 * 1e6;
    if job.cpu.wait_ns > 0 && job_ns > 0.0 {
        let waited = job.cpu.wait_ns as f64 / job_ns;
        if waited >= CLIENT_WAIT {
            suspect(format!(
                "{name}: the client's threads waited for a CPU {:.0}% of their runtime: other work shared their CPU (client CPU)",
                (waited * 100.0).min(100.0)
            ));
        }
    }
    let Some(h) = &job.measured.host else {
        if let Some(cpu) = run.system_cpu.as_ref().filter(|c| c.steal >= STEAL) {
            suspect(steal_text(name, cpu.steal));
        }
        return;
    };
    if let Some(g) = &h.governor
        && g.split(',').any(|g| SLOW_GOVERNORS.contains(&g))
    {
        suspect(format!(
            "{name}: the CPU frequency governor is {g}: it lowers the clock under light load, and IO-bound runs are light; use performance"
        ));
    }
    if let (Some(mhz), Some(max)) = (h.mhz, h.max_mhz)
        && max > 0.0
        && mhz < max * MHZ_SHARE
    {
        suspect(format!(
            "{name}: the CPUs ran at {mhz:.0} MHz on average during the run, {:.0}% of their {max:.0} MHz",
            mhz / max * 100.0
        ));
    }
    if let Some(cpu) = &h.system_cpu {
        if cpu.steal >= STEAL {
            suspect(steal_text(name, cpu.steal));
        }
        let capacity = f64::from(cpu.ncpus.max(1)) * 100.0;
        let others = (cpu.user + cpu.system - h.own_cpu_percent.unwrap_or(0.0)).max(0.0);
        if runtime_ms > 0 && others >= capacity * OTHER_LOAD {
            suspect(format!(
                "{name}: other processes used {others:.0}% CPU of this machine's {capacity:.0}% during the run: the host was busy"
            ));
        }
    }
    other_io(run, job, h, out);
}

fn steal_text(name: &str, steal: f64) -> String {
    format!(
        "{name}: CPU steal was {steal:.0}% of one CPU: the hypervisor gave cycles to others, so figures are noisy; repeat the run"
    )
}

/// Bytes on the job's disks beyond what this process caused (/proc/self/io).
fn other_io(
    run: &RunResult,
    job: &JobResult,
    h: &storbench_model::result::HostFigures,
    out: &mut Vec<Reason>,
) {
    let (Some(r), Some(w)) = (h.own_read_bytes, h.own_write_bytes) else {
        return;
    };
    if is_network(job) || job.disks.is_empty() {
        return;
    }
    let disks = data_disks(run, job);
    let moved: u64 = disks.iter().map(|d| d.read_bytes + d.write_bytes).sum();
    let others = moved.saturating_sub(r + w);
    if others >= CACHE_MIN_BYTES && others as f64 >= moved as f64 * OTHER_IO {
        let names: Vec<&str> = disks.iter().map(|d| d.name.as_str()).collect();
        out.push(reason("host", Validity::Suspect, format!(
            "{}: other processes moved {} on {} during the run ({:.0}% of its traffic): they shared the device",
            job.name, human(others), names.join(", "), pct(others as f64, moved as f64)
        )));
    }
}

/// Little's law at a low queue depth: when IOPS × latency is about the depth in flight,
/// each IO waited for the one before. That is true of every synchronous job, so the time
/// per IO must also be shown to be waiting, not work: the client's CPU per IO must be a
/// small part of it, and the device's own service time per IO (or, for a network target,
/// the round trip measured before the run) a large one. Stated for information (the figure
/// is right, for that depth).
fn latency(job: &JobResult, out: &mut Vec<Reason>) {
    let depth = job.header.iodepth.max(1);
    if depth > LOW_DEPTH {
        return;
    }
    let (mut ios, mut lat_ns, mut rt_ms) = (0u64, 0u128, 0u64);
    for d in &job.dirs {
        let l = if d.lat.samples > 0 { &d.lat } else { &d.clat };
        ios += d.total_ios;
        lat_ns += l.sum_ns;
        rt_ms = rt_ms.max(d.runtime_ms);
    }
    let runtime_ms = rt_ms / u64::from(job.jobs.max(1)).max(1);
    if ios == 0 || lat_ns == 0 || runtime_ms == 0 {
        return;
    }
    let mean_ns = lat_ns as f64 / ios as f64;
    let iops = ios as f64 * 1000.0 / runtime_ms as f64 / f64::from(job.jobs.max(1));
    let in_flight = iops * mean_ns / 1e9;
    if in_flight < f64::from(depth) * LITTLE {
        return;
    }
    let cpu_per_io = (job.cpu.usr_ns + job.cpu.sys_ns) as f64 / ios as f64;
    if cpu_per_io >= mean_ns * WAIT_SHARE {
        return;
    }
    let waited_on = if is_network(job) {
        job.engine_details
            .iter()
            .find(|(k, _)| k == "round trip")
            .map(|(_, v)| format!(", of which the network round trip was {v}"))
            .unwrap_or_default()
    } else {
        // Reads the page cache served never waited on the device, whatever it served
        // others. (A network job's data arrives over its socket: its own disk reads are
        // none by design.)
        let read = job.dirs[0].io_bytes as f64;
        if let Some(own) = job.measured.own_read_bytes
            && read > 0.0
            && (own as f64) < read * WAIT_SHARE
        {
            return;
        }
        match device_time(job) {
            Some((ns, names)) if ns >= mean_ns * WAIT_SHARE => {
                format!(", of which the device ({names}) took {} per IO", micros(ns))
            }
            _ => return,
        }
    };
    out.push(reason("latency", Validity::Valid, format!(
        "{}: latency-bound: at QD{depth} each IO waited {} ({iops:.0} IOPS × {} ≈ {in_flight:.2} in flight){waited_on}; a deeper queue would raise IOPS",
        job.name, micros(mean_ns), micros(mean_ns)
    )));
}

/// The job's own devices' service time per IO over its batch (/proc/diskstats ticks over
/// IOs), and their names; None when they completed no IO.
fn device_time(job: &JobResult) -> Option<(f64, String)> {
    let own: Vec<&DiskUtil> = job.disks.iter().filter(|d| !d.below).collect();
    let ios: u64 = own.iter().map(|d| d.read_ios + d.write_ios).sum();
    let ticks_ms: u64 = own.iter().map(|d| d.read_ticks + d.write_ticks).sum();
    let names: Vec<&str> = own.iter().map(|d| d.name.as_str()).collect();
    (ios > 0).then(|| (ticks_ms as f64 * 1e6 / ios as f64, names.join(", ")))
}

fn micros(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.0} µs", ns / 1e3)
    }
}

/// Per-second rates (bytes/s over all directions) of a timeline: (start ms, rate) of each
/// interval of at least `min_span_ms`, so a short last one does not pull the series down.
pub(crate) fn rates_over(timeline: &[TimelinePoint], min_span_ms: u64) -> Vec<(u64, f64)> {
    let mut out = Vec::new();
    let mut prev = 0u64;
    for p in timeline {
        let span = p.t_ms.saturating_sub(prev);
        if span >= min_span_ms {
            let bytes: u64 = p.bytes.iter().sum();
            out.push((prev, bytes as f64 * 1000.0 / span as f64));
        }
        prev = p.t_ms;
    }
    out
}

/// Too short, unsteady (coefficient of variation of the per-second rate), or a rate that
/// fell by more than a third and stayed there, named with the second it happened.
fn steady(job: &JobResult, mode: RunMode, out: &mut Vec<Reason>) {
    let name = &job.name;
    // A merged group entry sums its members' runtimes (fio's job_runtime).
    let runtime_ms = job.runtime_ms / u64::from(job.jobs.max(1));
    if runtime_ms > 0 && runtime_ms < SHORT_MS {
        let advice = match mode {
            RunMode::Fio => "use runtime= with time_based",
            RunMode::Quick => "use a longer --runtime",
            RunMode::Bonnie => "use a larger -s",
            RunMode::Diagnose => "use a larger --budget",
        };
        out.push(reason("steady", Validity::Suspect, format!(
            "{name}: measured for only {runtime_ms} ms; figures from runs this short swing widely ({advice})"
        )));
        return;
    }
    let r = rates_over(&job.timeline, MIN_INTERVAL_MS);
    if r.len() < 3 {
        return;
    }
    if let Some((at_ms, before, after)) = drop_point(&r) {
        // Only writes fill a device's write cache.
        let causes = if job.dirs[1].io_bytes > 0 {
            "a device's write cache running out, throttling"
        } else {
            "throttling, or other work on the device"
        };
        out.push(reason("steady", Validity::Suspect, format!(
            "{name}: the rate fell from {:.1} MB/s to {:.1} MB/s at second {} and stayed there ({causes}): the mean mixes two rates",
            before / 1e6, after / 1e6, at_ms / 1000
        )));
        return;
    }
    let values: Vec<f64> = r.iter().map(|(_, v)| *v).collect();
    let s = storbench_model::result::SampleStats::from_values(&values);
    if s.mean > 0.0 && s.stddev / s.mean > CV_MAX {
        out.push(reason("steady", Validity::Suspect, format!(
            "{name}: unsteady: the per-second rate varied by {:.0}% (coefficient of variation; {:.1} to {:.1} MB/s over {} s)",
            s.stddev / s.mean * 100.0, s.min / 1e6, s.max / 1e6, values.len()
        )));
    }
}

/// The first second from which every later rate stays below [`DROP`] of the mean before
/// it: (its start in ms, the rate before, the mean after). At least one second before and
/// two after: one low second at the end is the run's last, partly idle, second, not a rate
/// that "stayed there".
fn drop_point(r: &[(u64, f64)]) -> Option<(u64, f64, f64)> {
    for k in 1..r.len().saturating_sub(1) {
        let before = r[..k].iter().map(|(_, v)| v).sum::<f64>() / k as f64;
        let rest = &r[k..];
        if before > 0.0 && rest.iter().all(|(_, v)| *v < before * DROP) {
            let after = rest.iter().map(|(_, v)| v).sum::<f64>() / rest.len() as f64;
            return Some((r[k].0, before, after));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(v: &[f64]) -> Vec<(u64, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, &x)| (i as u64 * 1000, x))
            .collect()
    }

    #[test]
    fn a_drop_that_stays_is_named_at_its_second() {
        let r = series(&[100.0, 104.0, 98.0, 30.0, 31.0, 29.0]);
        let (at, before, after) = drop_point(&r).unwrap();
        assert_eq!(at, 3000);
        assert!((before - 100.67).abs() < 0.1, "{before}");
        assert!((after - 30.0).abs() < 0.1, "{after}");
    }

    #[test]
    fn one_low_last_second_is_no_drop() {
        assert_eq!(drop_point(&series(&[100.0, 104.0, 98.0, 101.0, 0.0])), None);
        assert!(drop_point(&series(&[100.0, 104.0, 98.0, 1.0, 0.0])).is_some());
    }

    #[test]
    fn a_dip_that_recovers_or_noise_is_no_drop() {
        assert_eq!(drop_point(&series(&[100.0, 30.0, 100.0, 98.0])), None);
        assert_eq!(drop_point(&series(&[100.0, 80.0, 90.0, 75.0, 95.0])), None);
        // A rise is not a drop.
        assert_eq!(drop_point(&series(&[30.0, 100.0, 100.0])), None);
    }

    #[test]
    fn the_partial_last_second_is_not_a_sample() {
        let p = |t_ms, b| TimelinePoint {
            t_ms,
            bytes: [b, 0, 0],
            ..Default::default()
        };
        let r = rates_over(&[p(1000, 100), p(2000, 100), p(2100, 1)], MIN_INTERVAL_MS);
        assert_eq!(r, vec![(0, 100.0), (1000, 100.0)]);
    }
}
