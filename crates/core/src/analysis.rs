//! "The why": after a run, say what limited each figure (device, client CPU, network link)
//! and warn when a figure cannot be trusted (page cache, buffered writes, short runs, steal,
//! interruptions). Works only from the result model, so imported runs can be analysed too.

use std::borrow::Cow;

use crate::result::{DiskUtil, JobResult, NicUsage, Note, NoteLevel, RunMode, RunResult};

/// Thresholds, in percent.
const BUSY: f64 = 90.0;
const STEAL: f64 = 5.0;

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
    if let Some(cpu) = &run.system_cpu
        && cpu.steal >= STEAL
    {
        notes.push(warn("warn.steal", format!(
                "CPU steal was {:.0}% of one CPU: the hypervisor gave cycles to others, so figures are noisy; repeat the run",
                cpu.steal
            )));
    }
    let mem = run.environment.as_ref().map(|e| e.mem_bytes).unwrap_or(0);
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
    let device_read_bytes: u64 = run.disks.iter().map(|d| d.read_bytes).sum();
    let local_disks = !run.disks.is_empty();
    for job in entries.iter() {
        job_notes(
            job,
            run.mode,
            mem,
            local_disks,
            device_read_bytes,
            &mut notes,
        );
    }
    dedupe(&mut notes);
    run.notes.extend(notes);
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

/// TCP/IP over Ethernet carries about 94% of the line rate as payload; a transfer within
/// 90% of that has filled the link.
const LINK_FULL: f64 = 0.94 * 0.9;

/// Names the network link as the limit. Each job is judged on its own data rate over the
/// interface it used, since a run of several jobs in turn (quick's eight tests) spreads the
/// interface's counters over all of them and a link that a sequential test filled would
/// look half idle. The run-wide counters still catch jobs that shared the link at once.
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
/// it is named as the limit when it kept a CPU busy, or when it and the client together
/// kept all of the machine's CPUs busy. The client's share counts every job clone measured
/// against the same server figure (one batch), so a many-threaded test is judged on all
/// its threads, not one clone's.
fn server_limits(run: &RunResult, entries: &[Cow<'_, JobResult>], notes: &mut Vec<Note>) {
    let ncpus = run
        .environment
        .as_ref()
        .map(|e| e.ncpus)
        .or(run.system_cpu.as_ref().map(|c| c.ncpus))
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let cpus = if ncpus == 1 {
        "1 CPU".to_string()
    } else {
        format!("{ncpus} CPUs")
    };
    for job in entries {
        for s in job.server_cpu.iter().filter(|s| s.duration_ms > 0) {
            let server = s.percent();
            let client_ns: u64 = run
                .groups
                .iter()
                .flat_map(|g| &g.jobs)
                .filter(|j| j.server_cpu.contains(s))
                .map(|j| j.cpu.usr_ns + j.cpu.sys_ns)
                .sum();
            let client = client_ns as f64 / (s.duration_ms as f64 * 1e6) * 100.0;
            let message = if server >= BUSY {
                format!(
                    "{}: {} on this host used {server:.0}% CPU: the server, sharing this machine's {cpus}, is the limit, not the storage",
                    job.name, s.process
                )
            } else if server + client >= BUSY * f64::from(ncpus) {
                format!(
                    "{}: {} on this host used {server:.0}% CPU and the client {client:.0}%: together they kept this machine's {cpus} busy, so CPU, not the storage, is the limit",
                    job.name, s.process
                )
            } else {
                continue;
            };
            notes.push(limit("limit.server-cpu", message));
        }
    }
}

/// The entries the reports show: a group_reporting group's merged entry, else each job
/// (borrowed, not copied).
fn judged_jobs(run: &RunResult) -> Vec<Cow<'_, JobResult>> {
    let mut out = Vec::new();
    for group in &run.groups {
        if group.group_reporting {
            out.extend(
                crate::merge::merge_jobs(&group.jobs)
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
fn job_link<'r>(run: &'r RunResult, job: &JobResult) -> Option<(&'r NicUsage, u64)> {
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
    let rate = |d: &crate::result::DirResult| match d.runtime_ms {
        0 => 0.0,
        ms => d.io_bytes as f64 * 8.0 / (ms as f64 / 1000.0) / 1e6,
    };
    rate(&job.dirs[0]).max(rate(&job.dirs[1]))
}

/// Warns of a run too short to trust; the advice names the option of the command that ran,
/// since `runtime=` means nothing to `storbench quick` or bonnie.
fn short_note(job: &JobResult, runtime_ms: u64, mode: RunMode, notes: &mut Vec<Note>) {
    if runtime_ms == 0 || runtime_ms >= 1000 {
        return;
    }
    let advice = match mode {
        RunMode::Fio => "use runtime= with time_based",
        RunMode::Quick => "use a longer --runtime",
        RunMode::Bonnie => "use a larger -s",
    };
    notes.push(warn(
        "warn.short",
        format!(
            "{}: measured for only {runtime_ms} ms; figures from runs this short swing widely ({advice})",
            job.name
        ),
    ));
}

fn job_notes(
    job: &JobResult,
    mode: RunMode,
    mem: u64,
    local_disks: bool,
    device_read_bytes: u64,
    notes: &mut Vec<Note>,
) {
    let name = &job.name;
    if let Some(err) = &job.error_text {
        notes.push(warn(
            "warn.error",
            format!("{name}: stopped by an error: {err}"),
        ));
    }
    // A merged group entry sums its members' runtimes (fio's job_runtime).
    let runtime_ms = job.runtime_ms / u64::from(job.jobs.max(1));
    short_note(job, runtime_ms, mode, notes);
    let cpu_pct =
        (job.cpu.usr_ns + job.cpu.sys_ns) as f64 / (runtime_ms.max(1) as f64 * 1e6) * 100.0;
    if cpu_pct >= BUSY * f64::from(job.jobs.max(1)) {
        notes.push(limit("limit.cpu", format!(
            "{name}: the client used {cpu_pct:.0}% CPU: the benchmark host, not the storage, may be the limit"
        )));
    }
    if job.header.ioengine == "null" {
        return;
    }
    let network = job.targets.iter().any(|t| t.contains("://"));
    let direct = job.header.direct;
    let reads = &job.dirs[0];
    let writes = &job.dirs[1];
    if !direct && !network && reads.io_bytes > 0 {
        if local_disks && device_read_bytes < reads.io_bytes / 2 {
            notes.push(warn("warn.page-cache", format!(
                "{name}: the device read {} of the {} bytes the job read: reads came from the page cache, so this is memory speed (use --direct=1)",
                device_read_bytes, reads.io_bytes
            )));
        } else if mem > 0 && reads.io_bytes < mem {
            notes.push(warn("warn.buffered", format!(
                "{name}: buffered reads (direct=0) of less data than RAM: the page cache may serve part of them; use --direct=1 to measure the device"
            )));
        }
    }
    let synced = job.sync.total_ios > 0 || job.sync.closing > 0;
    if !direct && !network && writes.io_bytes > 0 && !synced {
        notes.push(warn("warn.buffered-writes", format!(
            "{name}: buffered writes without fsync: the figure is how fast the page cache absorbed them, not the device (use --direct=1 or --end_fsync=1)"
        )));
    }
    for (d, label) in [(0, "read"), (1, "write")] {
        let s = &job.dirs[d].bw_samples;
        if s.samples >= 4 && s.mean > 0.0 && s.stddev / s.mean > 0.3 {
            notes.push(warn("warn.variable", format!(
                "{name}: {label} bandwidth varied by ±{:.0}% between samples (min {:.1} MB/s, max {:.1} MB/s)",
                s.stddev / s.mean * 100.0,
                s.min / 1e6,
                s.max / 1e6
            )));
        }
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

fn warn(code: &str, message: String) -> Note {
    Note {
        level: NoteLevel::Warning,
        code: code.into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::*;

    fn run_with(job: JobResult) -> RunResult {
        RunResult {
            schema: RESULT_SCHEMA,
            mode: RunMode::Fio,
            tool_version: "t".into(),
            started_unix_ms: 0,
            finished_unix_ms: 0,
            command_line: vec![],
            job_files: vec![],
            global_options: vec![],
            groups: vec![GroupResult {
                id: 0,
                group_reporting: false,
                jobs: vec![job],
            }],
            disks: vec![],
            nics: vec![],
            system_cpu: None,
            notes: vec![],
            environment: None,
            bonnie: None,
            interrupted: false,
        }
    }

    fn job() -> JobResult {
        JobResult {
            name: "j".into(),
            groupid: 0,
            jobnum: 0,
            jobs: 1,
            pid: 1,
            error: 0,
            error_text: None,
            description: None,
            options: vec![],
            header: JobHeader {
                direct: true,
                ..Default::default()
            },
            settings: ReportSettings::default(),
            targets: vec!["/tmp/x".into()],
            elapsed_ms: 5000,
            runtime_ms: 5000,
            end_unix_ms: 0,
            dirs: Default::default(),
            sync: Default::default(),
            cpu: Default::default(),
            depth: Default::default(),
            lat_buckets: Default::default(),
            timeline: vec![],
            engine_details: vec![],
            disks: Vec::new(),
            server_cpu: Vec::new(),
        }
    }

    fn codes(run: &RunResult) -> Vec<&str> {
        run.notes.iter().map(|n| n.code.as_str()).collect()
    }

    #[test]
    fn buffered_writes_synced_only_at_the_end_are_not_unsynced() {
        let mut j = job();
        j.header.direct = false;
        j.dirs[1].io_bytes = 1 << 20;
        let mut run = run_with(j.clone());
        annotate(&mut run);
        assert!(codes(&run).contains(&"warn.buffered-writes"));
        // end_fsync=1: fio (and so storbench) leaves the closing sync out of total_ios.
        j.sync.closing = 1;
        let mut run = run_with(j);
        annotate(&mut run);
        assert!(
            !codes(&run).contains(&"warn.buffered-writes"),
            "{:?}",
            run.notes
        );
    }

    #[test]
    fn busy_device_and_cpu_are_limits() {
        let mut j = job();
        j.cpu.usr_ns = 2_000_000_000;
        j.cpu.sys_ns = 2_800_000_000;
        let mut run = run_with(j);
        run.disks.push(DiskUtil {
            name: "vda".into(),
            util: 97.0,
            ..Default::default()
        });
        annotate(&mut run);
        assert!(codes(&run).contains(&"limit.device"));
        assert!(codes(&run).contains(&"limit.cpu"));
    }

    #[test]
    fn a_loop_device_without_direct_io_is_memory_speed_not_a_busy_device() {
        for dio in [false, true] {
            let mut run = run_with(job());
            run.disks.push(DiskUtil {
                name: "loop3".into(),
                util: 97.0,
                ..Default::default()
            });
            run.environment = Some(crate::result::Environment {
                targets: vec![crate::result::TargetInfo {
                    target: "/mnt/img".into(),
                    device: Some("loop3".into()),
                    loop_backing_file: Some("/var/tmp/disk.img".into()),
                    loop_direct_io: Some(dio),
                    ..Default::default()
                }],
                ..Default::default()
            });
            annotate(&mut run);
            let cached = run.notes.iter().find(|n| n.code == "warn.loop-cache");
            if dio {
                assert!(cached.is_none(), "{:?}", run.notes);
                assert!(codes(&run).contains(&"limit.device"), "{:?}", run.notes);
            } else {
                let m = &cached.expect("warned").message;
                assert!(
                    m.contains("loop3") && m.contains("/var/tmp/disk.img"),
                    "{m}"
                );
                assert!(m.contains("--direct-io=on"), "{m}");
                assert!(!codes(&run).contains(&"limit.device"), "{:?}", run.notes);
            }
        }
    }

    /// A job that read `bytes` in `ms` over NFS through interface `veth1`.
    fn veth_job(name: &str, bytes: u64, ms: u64) -> JobResult {
        let mut j = job();
        j.name = name.into();
        j.targets = vec!["nfs://10.0.0.2/export/f".into()];
        j.runtime_ms = ms;
        j.dirs[0].runtime_ms = ms;
        j.dirs[0].io_bytes = bytes;
        j.engine_details = vec![("interface".into(), "veth1".into())];
        j
    }

    /// `veth1`'s counters over the run: `rx` and `tx` bytes in `ms`, on a `speed` link.
    fn veth(rx: u64, tx: u64, ms: u64, speed: u64) -> NicUsage {
        NicUsage {
            name: "veth1".into(),
            rx_bytes: rx,
            tx_bytes: tx,
            duration_ms: ms,
            speed_mbps: Some(speed),
        }
    }

    /// quick runs eight tests in turn over one link: the sequential ones fill it while the
    /// run-wide counters, spread over all eight, stay far below the line rate.
    #[test]
    fn a_job_that_fills_its_link_names_the_link_though_the_run_average_is_low() {
        // 119.5 MB/s for 2 s, then a test at 20 MB/s.
        let mut run = run_with(veth_job("SEQ1M Q8T1 read", 239_000_000, 2000));
        run.groups.push(GroupResult {
            id: 1,
            group_reporting: false,
            jobs: vec![veth_job("RND4K Q1T1 read", 40_000_000, 2000)],
        });
        run.nics.push(veth(300_000_000, 10_000_000, 19_000, 1000));
        annotate(&mut run);
        let links: Vec<&str> = run
            .notes
            .iter()
            .filter(|n| n.code == "limit.link")
            .map(|n| n.message.as_str())
            .collect();
        assert_eq!(links.len(), 1, "{:?}", run.notes);
        assert!(
            links[0].starts_with("SEQ1M Q8T1 read: 119.5 MB/s") && links[0].contains("veth1"),
            "{}",
            links[0]
        );
    }

    /// A group's rate is its bytes over its longest member's runtime (fio's group
    /// bandwidth), not over their average: 1,000 MB in 10 s beside 10 MB in 1 s is
    /// 101 MB/s (the average runtime would make it 184 MB/s and fill a 1 Gbit/s link).
    #[test]
    fn a_groups_link_rate_is_over_its_longest_member() {
        let mut run = run_with(veth_job("j", 1_000_000_000, 10_000));
        run.groups[0].jobs.push(veth_job("j", 10_000_000, 1_000));
        run.groups[0].group_reporting = true;
        run.nics.push(veth(1_010_000_000, 0, 10_000, 1000));
        annotate(&mut run);
        assert!(!codes(&run).contains(&"limit.link"), "{:?}", run.notes);
        // On a 900 Mbit/s link the same 101 MB/s (808 Mbit/s) does fill it.
        run.nics[0].speed_mbps = Some(900);
        run.notes.clear();
        annotate(&mut run);
        assert!(codes(&run).contains(&"limit.link"), "{:?}", run.notes);
    }

    /// numjobs clones without group_reporting share a name: a device they kept busy is
    /// named once for them, not once per clone.
    #[test]
    fn clones_sharing_a_name_name_their_busy_device_once() {
        let mut j = job();
        j.disks = vec![DiskUtil {
            name: "sda".into(),
            util: 97.0,
            ..Default::default()
        }];
        let mut run = run_with(j.clone());
        run.groups[0].jobs.extend([j.clone(), j]);
        annotate(&mut run);
        let busy = codes(&run)
            .into_iter()
            .filter(|c| *c == "limit.device")
            .count();
        assert_eq!(busy, 1, "{:?}", run.notes);
    }

    /// quick runs its tests one after another: the device a sequential test kept busy is
    /// idle between tests and less busy in others, so the run-wide figure stays below the
    /// threshold while the test itself was device-bound.
    #[test]
    fn a_job_whose_batch_kept_the_device_busy_names_the_device() {
        let local_job = |name: &str, util: f64| {
            let mut j = job();
            j.name = name.into();
            j.disks = vec![DiskUtil {
                name: "vda".into(),
                util,
                ..Default::default()
            }];
            j
        };
        let mut run = run_with(local_job("SEQ1M Q8T1 read", 99.0));
        run.groups.push(GroupResult {
            id: 1,
            group_reporting: false,
            jobs: vec![local_job("RND4K Q1T1 write", 40.0)],
        });
        run.disks.push(DiskUtil {
            name: "vda".into(),
            util: 80.0,
            ..Default::default()
        });
        annotate(&mut run);
        let busy: Vec<&str> = run
            .notes
            .iter()
            .filter(|n| n.code == "limit.device")
            .map(|n| n.message.as_str())
            .collect();
        assert_eq!(
            busy,
            ["SEQ1M Q8T1 read: device vda was busy 99% of the time: the device is the limit"]
        );
    }

    /// A job against tgtd on 127.0.0.1 that ran 2 s, while tgtd used `server_ms` of CPU
    /// and the job's client thread `client_ms`.
    fn loopback_job(name: &str, server_ms: u64, client_ms: u64) -> JobResult {
        let mut j = job();
        j.name = name.into();
        j.targets = vec!["iscsi://127.0.0.1:3260/iqn.2026-11.lab:t/1".into()];
        j.runtime_ms = 2000;
        j.cpu.usr_ns = client_ms * 400_000;
        j.cpu.sys_ns = client_ms * 600_000;
        j.server_cpu = vec![ServerCpu {
            process: "tgtd".into(),
            pid: 4242,
            addr: "127.0.0.1:3260".into(),
            same_host: true,
            usr_ns: server_ms * 300_000,
            sys_ns: server_ms * 700_000,
            duration_ms: 2000,
        }];
        j
    }

    fn on_cpus(job: JobResult, ncpus: u32) -> RunResult {
        let mut run = run_with(job);
        run.environment = Some(Environment {
            ncpus,
            ..Default::default()
        });
        run
    }

    fn server_notes(run: &RunResult) -> Vec<&str> {
        run.notes
            .iter()
            .filter(|n| n.code == "limit.server-cpu")
            .map(|n| n.message.as_str())
            .collect()
    }

    #[test]
    fn a_server_on_this_host_that_kept_a_cpu_busy_is_the_limit() {
        let mut run = on_cpus(loopback_job("RND4K Q32T1 write", 1940, 600), 2);
        annotate(&mut run);
        assert_eq!(
            server_notes(&run),
            [
                "RND4K Q32T1 write: tgtd on this host used 97% CPU: the server, sharing this machine's 2 CPUs, is the limit, not the storage"
            ]
        );
        assert_eq!(run.notes[0].level, NoteLevel::Limit);
        // The client's 30% is no limit of its own.
        assert!(!codes(&run).contains(&"limit.cpu"), "{:?}", run.notes);
    }

    #[test]
    fn a_server_and_client_that_together_fill_the_machine_are_the_limit() {
        // 60% + 130% of 2 CPUs.
        let mut run = on_cpus(loopback_job("SEQ1M Q8T1 read", 1200, 2600), 2);
        annotate(&mut run);
        assert_eq!(
            server_notes(&run),
            [
                "SEQ1M Q8T1 read: tgtd on this host used 60% CPU and the client 130%: together they kept this machine's 2 CPUs busy, so CPU, not the storage, is the limit"
            ]
        );
        // On 4 CPUs the same figures leave half the machine idle.
        let mut run = on_cpus(loopback_job("SEQ1M Q8T1 read", 1200, 2600), 4);
        annotate(&mut run);
        assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
    }

    #[test]
    fn a_quiet_server_or_none_measured_gives_no_note() {
        let mut run = on_cpus(loopback_job("j", 400, 400), 2);
        annotate(&mut run);
        assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
        let mut j = loopback_job("j", 2000, 400);
        j.server_cpu.clear();
        let mut run = on_cpus(j, 2);
        annotate(&mut run);
        assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
        // A figure over no time says nothing.
        let mut j = loopback_job("j", 2000, 400);
        j.server_cpu[0].duration_ms = 0;
        let mut run = on_cpus(j, 2);
        annotate(&mut run);
        assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
    }

    /// Four threads of one test each used 40% of a CPU against a server at 30%: no thread
    /// fills the machine, all four with the server do.
    #[test]
    fn the_client_share_counts_every_thread_against_the_same_server() {
        let t = loopback_job("RND4K Q1T4 read", 600, 800);
        for group_reporting in [false, true] {
            let mut run = on_cpus(t.clone(), 2);
            run.groups[0].jobs.extend([t.clone(), t.clone(), t.clone()]);
            run.groups[0].group_reporting = group_reporting;
            annotate(&mut run);
            assert_eq!(
                server_notes(&run),
                [
                    "RND4K Q1T4 read: tgtd on this host used 30% CPU and the client 160%: together they kept this machine's 2 CPUs busy, so CPU, not the storage, is the limit"
                ],
                "group_reporting={group_reporting}"
            );
        }
    }

    #[test]
    fn page_cache_reads_are_flagged() {
        let mut j = job();
        j.header.direct = false;
        j.dirs[0].io_bytes = 1 << 30;
        let mut run = run_with(j);
        run.disks.push(DiskUtil {
            name: "vda".into(),
            read_bytes: 1 << 20,
            ..Default::default()
        });
        annotate(&mut run);
        assert!(codes(&run).contains(&"warn.page-cache"), "{:?}", run.notes);
    }

    #[test]
    fn quiet_direct_run_has_no_warnings() {
        let mut j = job();
        j.dirs[0].io_bytes = 1 << 30;
        let mut run = run_with(j);
        annotate(&mut run);
        assert!(
            run.notes.iter().all(|n| n.level != NoteLevel::Warning),
            "{:?}",
            run.notes
        );
    }

    #[test]
    fn group_reporting_is_judged_on_the_merged_entry() {
        let mut j = job();
        j.runtime_ms = 500;
        j.dirs[1].io_bytes = 1 << 20;
        j.dirs[1].bw_samples = SampleStats {
            min: 20.0,
            max: 180.0,
            mean: 100.0,
            stddev: 50.0,
            samples: 8,
        };
        let mut other = j.clone();
        other.jobnum = 1;
        other.dirs[1].bw_samples.mean = 90.0;
        let mut run = run_with(j);
        run.groups[0].jobs.push(other);
        run.groups[0].group_reporting = true;
        annotate(&mut run);
        let short: Vec<&Note> = run
            .notes
            .iter()
            .filter(|n| n.code == "warn.short")
            .collect();
        assert_eq!(short.len(), 1, "{:?}", run.notes);
        assert!(short[0].message.contains("500 ms"), "{}", short[0].message);
        assert!(!codes(&run).contains(&"warn.variable"), "{:?}", run.notes);
    }

    #[test]
    fn short_and_interrupted_runs_warn() {
        let mut j = job();
        j.runtime_ms = 200;
        let mut run = run_with(j);
        run.interrupted = true;
        annotate(&mut run);
        assert!(codes(&run).contains(&"warn.short"));
        assert!(codes(&run).contains(&"warn.interrupted"));
    }

    #[test]
    fn short_run_advice_names_the_commands_option() {
        for (mode, advice) in [
            (RunMode::Fio, "(use runtime= with time_based)"),
            (RunMode::Quick, "(use a longer --runtime)"),
            (RunMode::Bonnie, "(use a larger -s)"),
        ] {
            let mut j = job();
            j.runtime_ms = 200;
            let mut run = run_with(j);
            run.mode = mode;
            annotate(&mut run);
            let short = run.notes.iter().find(|n| n.code == "warn.short").unwrap();
            assert!(short.message.ends_with(advice), "{}", short.message);
        }
    }
}
