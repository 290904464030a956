//! "The why": after a run, say what limited each figure (device, client CPU, network link)
//! and how far each can be trusted (the validity verdicts of `verdicts.rs`: cache, zeros,
//! compressible data, steadiness; steal, interruptions). Works only from the result model,
//! so imported runs can be analysed too.

use std::borrow::Cow;

use storbench_model::result::{
    DiskUtil, JobResult, NicUsage, Note, NoteLevel, RunResult, ServerCpu, Validity, Verdict,
};

/// Thresholds, in percent.
const BUSY: f64 = 90.0;

/// Appends notes to `run.notes` (keeping the ones already there).
pub fn annotate(run: &mut RunResult) {
    let mut notes = Vec::new();
    if run.interrupted {
        notes.push(warn(
            "warn.interrupted",
            "the run was interrupted: figures cover only the part that ran".into(),
        ));
    }
    let cached_loops = cached_loop_devices(run);
    for (dev, backing) in &cached_loops {
        notes.push(warn(
            "warn.loop-cache",
            format!(
                "the target is on {dev}, a loop device over {backing} without direct IO: the host's page cache serves its reads and absorbs its writes, so figures are memory speed, not the disk's (losetup --direct-io=on)"
            ),
        ));
    }
    // Under group_reporting the reports show one merged entry: judge that one, not each
    // clone (whose notes would repeat under the same name).
    let entries = judged_jobs(run);
    device_limits(run, &entries, &cached_loops, &mut notes);
    link_limits(run, &entries, &mut notes);
    server_limits(run, &entries, &mut notes);
    shared_cpu_limits(run, &mut notes);
    let tmpfs = run.environment.as_ref().is_some_and(|e| {
        e.targets
            .iter()
            .any(|t| matches!(t.fs_type.as_deref(), Some("tmpfs" | "ramfs")))
    });
    if tmpfs {
        notes.push(limit(
            "limit.memory",
            "the target is on tmpfs: every figure is memory speed, not a device's".into(),
        ));
    }
    for job in entries.iter() {
        job_notes(job, &mut notes);
    }
    let verdicts = verdicts::judge(run, &entries);
    verdict_notes(&verdicts, &mut notes);
    dedupe(&mut notes);
    run.notes.extend(notes);
    run.verdicts = verdicts;
}

/// Loop devices under the targets that go through the host's page cache: (device, file).
fn cached_loop_devices(run: &RunResult) -> Vec<(String, String)> {
    let Some(env) = &run.environment else {
        return Vec::new();
    };
    let mut loops: Vec<(String, String)> = env
        .targets
        .iter()
        .filter(|t| t.loop_direct_io == Some(false))
        .filter_map(|t| {
            let backing = t
                .loop_backing_file
                .clone()
                .unwrap_or_else(|| "a file".into());
            Some((t.device.clone()?, backing))
        })
        .collect();
    loops.dedup();
    loops
}

/// A busy device is the limit, except a cached loop device: its busy time is the loop
/// worker copying to and from the host's page cache. Each job is judged on its own batch's
/// figures when the run has them (a device that one of quick's tests kept busy is idle in
/// the others, and the run-wide figure averages them); else on the run's.
/// Clones sharing a name give the same note, which `dedupe` keeps once.
fn device_limits(
    run: &RunResult,
    entries: &[Cow<'_, JobResult>],
    cached_loops: &[(String, String)],
    notes: &mut Vec<Note>,
) {
    let cached = |name: &str| cached_loops.iter().any(|(dev, _)| dev == name);
    let jobs: Vec<&JobResult> = entries
        .iter()
        .map(|j| j.as_ref())
        .filter(|j| !j.disks.is_empty())
        .collect();
    // Disks found below the file's device (a loop device's backing disk) carry other
    // work too; the device the job used is the one judged.
    let own = |d: &&DiskUtil| !d.below;
    if jobs.is_empty() {
        for d in run
            .disks
            .iter()
            .filter(|d| d.util >= BUSY && !cached(&d.name))
        {
            notes.push(busy_device(None, d));
        }
        return;
    }
    for job in jobs {
        for d in job
            .disks
            .iter()
            .filter(own)
            .filter(|d| d.util >= BUSY && !cached(&d.name))
        {
            notes.push(busy_device(Some(&job.name), d));
        }
    }
}

fn busy_device(job: Option<&str>, d: &DiskUtil) -> Note {
    let who = job.map(|j| format!("{j}: ")).unwrap_or_default();
    limit(
        "limit.device",
        format!(
            "{who}device {} was busy {:.0}% of the time: the device is the limit",
            d.name, d.util
        ),
    )
}

pub(crate) use storbench_model::hosts::LINK_FULL;

/// Names the network link as the limit. Each job is judged on its own data rate over the
/// interface it used, since a run of several jobs in turn (quick's eight tests) spreads the
/// interface's counters over all of them and a link that a sequential test filled would
/// look half idle. The run-wide counters still catch jobs that shared the link at once.
/// A job that does not fill its own link but runs steadily at a slower standard link's
/// ceiling gets the path rule's note ([`path`]).
fn link_limits(run: &RunResult, entries: &[Cow<'_, JobResult>], notes: &mut Vec<Note>) {
    let mut named: Vec<&str> = Vec::new();
    for job in entries {
        let Some((nic, speed)) = job_link(run, job) else {
            continue;
        };
        let rate = job_payload_mbps(job);
        if rate >= speed as f64 * LINK_FULL {
            notes.push(limit(
                "limit.link",
                format!(
                    "{}: {:.1} MB/s of data over {} fills its {} Mbit/s link: the network link is the limit",
                    job.name,
                    rate / 8.0,
                    nic.name,
                    speed
                ),
            ));
            named.push(&nic.name);
        } else if let Some(note) = path::path_note(job, nic, speed) {
            notes.push(note);
        }
    }
    for n in run
        .nics
        .iter()
        .filter(|n| !named.contains(&n.name.as_str()))
    {
        let Some(speed) = n.speed_mbps else {
            continue;
        };
        if n.duration_ms == 0 {
            continue;
        }
        let secs = n.duration_ms as f64 / 1000.0;
        let peak = n.rx_bytes.max(n.tx_bytes) as f64 * 8.0 / secs / 1e6;
        if peak >= speed as f64 * LINK_FULL {
            notes.push(limit(
                "limit.link",
                format!(
                    "network link {} ran at {:.0} Mbit/s of {} Mbit/s: the link is the limit",
                    n.name, peak, speed
                ),
            ));
        }
    }
}

/// A server on this host (an NFS or iSCSI target on 127.0.0.1) shares the client's CPUs:
/// it is named as the limit when its control group's CPU quota held it (90% of the quota
/// used, or throttled in most of its periods: `server_quota`), when its busiest thread
/// kept a CPU busy (one thread cannot use more, so a single event loop such as tgtd's is
/// then the limit; a many-threaded server such as ganesha using 90% of one CPU in all is
/// not), or when it and the client together kept all of the machine's CPUs busy (judged
/// only when the number of CPUs is known). The client's share counts every job clone
/// measured against the same server figure (one batch), so a many-threaded test is judged
/// on all its threads, not one clone's.
fn server_limits(run: &RunResult, entries: &[Cow<'_, JobResult>], notes: &mut Vec<Note>) {
    let ncpus = machine_cpus(run);
    for job in entries {
        for s in job.server_cpu.iter().filter(|s| s.duration_ms > 0) {
            match server_limit(run, &job.name, s, ncpus) {
                Some(message) => notes.push(limit("limit.server-cpu", message)),
                None => notes.push(info("info.server-cpu", server_figure(&job.name, s))),
            }
        }
    }
}

/// The number of CPUs of the machine that ran, when the run recorded it.
fn machine_cpus(run: &RunResult) -> Option<u32> {
    run.environment
        .as_ref()
        .map(|e| e.ncpus)
        .filter(|&n| n > 0)
        .or(run.system_cpu.as_ref().map(|c| c.ncpus).filter(|&n| n > 0))
}

/// A group's jobs waiting for a CPU this share of their time (or more) were limited by it.
const CPU_WAIT: f64 = 50.0;

/// More jobs than CPUs in a group, which waited for a CPU most of the time (the kernel's
/// run delay, when the run recorded it) or kept every CPU busy: no single job shows a busy
/// CPU (each had one only part of the time), yet the client's CPU is what limited the
/// group's figures. Judged over the group's longest runtime, the window its rates use.
fn shared_cpu_limits(run: &RunResult, notes: &mut Vec<Note>) {
    let Some(ncpus) = machine_cpus(run) else {
        return;
    };
    for group in &run.groups {
        let ran = || group.jobs.iter().filter(|j| j.runtime_ms > 0);
        let jobs: u32 = ran().map(|j| j.jobs.max(1)).sum();
        // A merged (imported) entry's runtime is its members' sum.
        let window_ms = ran().map(|j| j.runtime_ms / u64::from(j.jobs.max(1))).max();
        let Some(window_ms) = window_ms.filter(|&ms| ms > 0 && jobs > ncpus) else {
            continue;
        };
        let cpu_ns: u64 = ran().map(|j| j.cpu.usr_ns + j.cpu.sys_ns).sum();
        let wait_ns: u64 = ran().map(|j| j.cpu.wait_ns).sum();
        // Of the jobs' own runtimes (size-bound jobs end at different times).
        let job_ns: u64 = ran().map(|j| j.runtime_ms * 1_000_000).sum();
        let used = cpu_ns as f64 / (window_ms as f64 * 1e6) * 100.0;
        let waited = wait_ns as f64 / job_ns.max(1) as f64 * 100.0;
        if used < BUSY * f64::from(ncpus) && waited < CPU_WAIT {
            continue;
        }
        let mut names: Vec<&str> = ran().map(|j| j.name.as_str()).collect();
        names.dedup();
        let cpus = if ncpus == 1 {
            "1 CPU".to_string()
        } else {
            format!("{ncpus} CPUs")
        };
        let wait = if wait_ns > 0 {
            format!(
                ", each waiting for a CPU {:.0}% of the time",
                waited.min(100.0)
            )
        } else {
            String::new()
        };
        notes.push(limit(
            "limit.cpu",
            format!(
                "{}: {jobs} jobs shared this machine's {cpus}: they used {used:.0}% CPU over {window_ms} ms ({:.1}% per job){wait}: the client's CPU, not the storage, is the limit",
                names.join(", "),
                used / f64::from(jobs),
            ),
        ));
    }
}

/// What a server on this host used, when it was not the limit: the notes carry it, so
/// fio's normal output keeps fio's own lines.
fn server_figure(job: &str, s: &ServerCpu) -> String {
    let ms = s.duration_ms as f64 * 1e6;
    let busiest = s
        .busiest_thread_percent()
        .map(|t| format!(", {t:.0}% in its busiest thread"))
        .unwrap_or_default();
    format!(
        "{job}: {} (pid {}, {}) on this host used {:.0}% CPU (usr {:.0}%, sys {:.0}%){busiest}",
        s.process,
        s.pid,
        s.addr,
        s.percent(),
        s.usr_ns as f64 / ms * 100.0,
        s.sys_ns as f64 / ms * 100.0,
    )
}

/// The note for one server figure, if it was the limit (see [`server_limits`]).
fn server_limit(run: &RunResult, job: &str, s: &ServerCpu, ncpus: Option<u32>) -> Option<String> {
    let server = s.percent();
    let process = &s.process;
    let sharing = match ncpus {
        Some(1) => ", sharing this machine's 1 CPU,".to_string(),
        Some(n) => format!(", sharing this machine's {n} CPUs,"),
        None => String::new(),
    };
    if let Some(q) = server_quota::quota_use(s).filter(|q| q.at_ceiling()) {
        return Some(format!(
            "{job}: {} on this host used {:.0}% of its cgroup's CPU quota ({}): the server's CPU share is the limit, not the storage",
            s.process,
            q.share,
            server_quota::figures(s)
        ));
    }
    if let Some(thread) = s.busiest_thread_percent().filter(|&t| t >= BUSY) {
        return Some(format!(
            "{job}: {process} on this host used {server:.0}% CPU, {thread:.0}% in its busiest thread: the server{sharing} is the limit, not the storage"
        ));
    }
    let n = ncpus?;
    let client_ns: u64 = run
        .groups
        .iter()
        .flat_map(|g| &g.jobs)
        .filter(|j| j.server_cpu.contains(s))
        .map(|j| j.cpu.usr_ns + j.cpu.sys_ns)
        .sum();
    let client = client_ns as f64 / (s.duration_ms as f64 * 1e6) * 100.0;
    let cpus = if n == 1 {
        "1 CPU".to_string()
    } else {
        format!("{n} CPUs")
    };
    (server + client >= BUSY * f64::from(n)).then(|| format!(
        "{job}: {process} on this host used {server:.0}% CPU and the client {client:.0}%: together they kept this machine's {cpus} busy, so CPU, not the storage, is the limit"
    ))
}

/// The entries the reports show: a group_reporting group's merged entry, else each job
/// (borrowed, not copied).
fn judged_jobs(run: &RunResult) -> Vec<Cow<'_, JobResult>> {
    let mut out = Vec::new();
    for group in &run.groups {
        if group.group_reporting {
            out.extend(
                storbench_model::merge::merge_jobs(&group.jobs)
                    .into_iter()
                    .map(Cow::Owned),
            );
        } else {
            out.extend(group.jobs.iter().map(Cow::Borrowed));
        }
    }
    out
}

/// The interface a network job used (its engine's `interface` detail) and that
/// interface's speed, when the run recorded one.
pub(crate) fn job_link<'r>(run: &'r RunResult, job: &JobResult) -> Option<(&'r NicUsage, u64)> {
    let iface = job
        .engine_details
        .iter()
        .find(|(k, _)| k == "interface")
        .map(|(_, v)| v.as_str())?;
    let nic = run.nics.iter().find(|n| n.name == iface)?;
    Some((nic, nic.speed_mbps?))
}

/// The job's busier direction in Mbit/s of payload (reads and writes travel opposite ways
/// on a full-duplex link), over that direction's runtime: for a merged entry the longest
/// member's, as fio's group bandwidth.
fn job_payload_mbps(job: &JobResult) -> f64 {
    let rate = |d: &storbench_model::result::DirResult| match d.runtime_ms {
        0 => 0.0,
        ms => d.io_bytes as f64 * 8.0 / (ms as f64 / 1000.0) / 1e6,
    };
    rate(&job.dirs[0]).max(rate(&job.dirs[1]))
}

fn job_notes(job: &JobResult, notes: &mut Vec<Note>) {
    let name = &job.name;
    if let Some(err) = job.error_text.as_ref().filter(|_| job.stopped_by_error()) {
        notes.push(warn(
            "warn.error",
            format!("{name}: stopped by an error: {err}"),
        ));
    }
    if let Some(e) = job.measured.errors.as_ref().filter(|e| e.total > 0) {
        notes.push(warn(
            "warn.errors_passed",
            format!(
                "{name}: went past {} IO or verify errors (continue_on_error), the first \
                 errno {}: its figures count those IOs with no bytes",
                e.total, e.first
            ),
        ));
    }
    // A merged group entry sums its members' runtimes (fio's job_runtime).
    let runtime_ms = job.runtime_ms / u64::from(job.jobs.max(1));
    let cpu_pct =
        (job.cpu.usr_ns + job.cpu.sys_ns) as f64 / (runtime_ms.max(1) as f64 * 1e6) * 100.0;
    if cpu_pct >= BUSY * f64::from(job.jobs.max(1)) {
        notes.push(limit("limit.cpu", format!(
            "{name}: the client used {cpu_pct:.0}% CPU: the benchmark host, not the storage, may be the limit"
        )));
    }
}

/// Each verdict's reasons as notes, so every output that shows notes shows them; a reason
/// that makes the entry suspect or invalid is a warning, one stated for information a note.
fn verdict_notes(verdicts: &[Verdict], notes: &mut Vec<Note>) {
    for r in verdicts.iter().flat_map(|v| &v.reasons) {
        let code = format!("verdict.{}", r.check);
        notes.push(match r.validity {
            Validity::Valid => info(&code, r.message.clone()),
            _ => warn(&code, r.message.clone()),
        });
    }
}

fn dedupe(notes: &mut Vec<Note>) {
    let mut seen = std::collections::HashSet::new();
    notes.retain(|n| seen.insert(n.message.clone()));
}

fn limit(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Limit,
        code: code.into(),
        message,
    }
}

fn info(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Info,
        code: code.into(),
        message,
    }
}

fn warn(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Warning,
        code: code.into(),
        message,
    }
}

pub mod diagnose;
pub mod path;
mod server_quota;
pub mod server_stats;
mod verdicts;

#[cfg(test)]
mod tests;
