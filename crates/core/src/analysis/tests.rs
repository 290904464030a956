use super::*;
use crate::fixtures::{job, run_with};
use storbench_model::result::*;

fn codes(run: &RunResult) -> Vec<&str> {
    run.notes.iter().map(|n| n.code.as_str()).collect()
}

#[test]
fn writes_the_disk_did_not_see_are_a_cache_reason_with_the_share() {
    let mut j = job();
    j.header.direct = false;
    j.dirs[1].io_bytes = 64 << 20;
    j.disks.push(DiskUtil {
        name: "vda".into(),
        write_bytes: 4 << 20,
        leaf: true,
        ..Default::default()
    });
    let mut run = run_with(j.clone());
    annotate(&mut run);
    let v = &run.verdicts[0];
    assert_eq!(v.validity, Validity::Suspect, "{v:?}");
    assert!(
        v.reasons[0]
            .message
            .contains("wrote 6% of the bytes reported"),
        "{v:?}"
    );
    assert!(codes(&run).contains(&"verdict.cache"));
    // The same writes flushed to the disk before the job ended (end_fsync=1): valid.
    j.disks[0].write_bytes = 66 << 20;
    let mut run = run_with(j);
    annotate(&mut run);
    assert_eq!(
        run.verdicts[0].validity,
        Validity::Valid,
        "{:?}",
        run.verdicts
    );
    assert!(!codes(&run).contains(&"verdict.cache"), "{:?}", run.notes);
}

/// Buffered 4 KiB writes at 9 µs while the disk flushed earlier dirty pages (it wrote more
/// than half the bytes reported, so the share rule stays quiet) at 2 ms per write: the
/// write side's cache reason names both figures. At 30% of the disk's time, none.
#[test]
fn buffered_writes_far_faster_than_the_disk_name_the_page_cache() {
    let mut j = job();
    j.name = "RND4K Q1T1 write".into();
    j.header.direct = false;
    j.dirs[1].io_bytes = 64 << 20;
    for _ in 0..100 {
        j.dirs[1].lat.record(9_000);
    }
    j.disks.push(DiskUtil {
        name: "vda".into(),
        write_bytes: 60 << 20,
        write_ios: 100,
        write_ticks: 200,
        leaf: true,
        ..Default::default()
    });
    let mut run = run_with(j.clone());
    annotate(&mut run);
    let v = &run.verdicts[0];
    assert_eq!(v.validity, Validity::Suspect, "{v:?}");
    let cache: Vec<&str> = v
        .reasons
        .iter()
        .filter(|r| r.check == "cache")
        .map(|r| r.message.as_str())
        .collect();
    assert_eq!(cache.len(), 1, "{v:?}");
    for figure in [
        "writes completed in 9 µs (p50)",
        "(vda) took 2.00 ms per write",
        "page cache absorbed",
    ] {
        assert!(cache[0].contains(figure), "{figure}: {}", cache[0]);
    }
    // Just under the threshold: the median at 30% of the disk's time per write.
    j.dirs[1].lat = LatStats::default();
    for _ in 0..100 {
        j.dirs[1].lat.record(600_000);
    }
    let mut run = run_with(j.clone());
    annotate(&mut run);
    assert!(
        run.verdicts[0].reasons.iter().all(|r| r.check != "cache"),
        "{:?}",
        run.verdicts
    );
    // Direct writes are never blamed on the page cache.
    j.header.direct = true;
    j.dirs[1].lat = LatStats::default();
    j.dirs[1].lat.record(9_000);
    let mut run = run_with(j);
    annotate(&mut run);
    assert!(
        run.verdicts[0].reasons.iter().all(|r| r.check != "cache"),
        "{:?}",
        run.verdicts
    );
}

/// With no block device below the target, buffered writes say so with their median.
#[test]
fn buffered_writes_without_a_disk_name_the_write_side() {
    let mut j = job();
    j.header.direct = false;
    j.dirs[1].io_bytes = 64 << 20;
    j.dirs[1].lat.record(9_000);
    let mut run = run_with(j);
    annotate(&mut run);
    let msgs: Vec<&str> = run.verdicts[0]
        .reasons
        .iter()
        .filter(|r| r.check == "cache")
        .map(|r| r.message.as_str())
        .collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("write cache unknown: buffered writes completed in 9 µs (p50)")),
        "{msgs:?}"
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
        run.environment = Some(storbench_model::result::Environment {
            targets: vec![storbench_model::result::TargetInfo {
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
/// (all in its one event loop thread) and the job's client thread `client_ms`.
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
        busiest_thread_ns: Some(server_ms * 1_000_000),
        quota_basis_points: None,
        throttled_periods: None,
    }];
    j
}

/// As [`loopback_job`], against a server whose work is spread over `threads` threads.
fn threaded_server_job(name: &str, server_ms: u64, client_ms: u64, threads: u64) -> JobResult {
    let mut j = loopback_job(name, server_ms, client_ms);
    j.server_cpu[0].process = "ganesha.nfsd".into();
    j.server_cpu[0].busiest_thread_ns = Some(server_ms * 1_000_000 / threads);
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
            "RND4K Q32T1 write: tgtd on this host used 97% CPU, 97% in its busiest thread: the server, sharing this machine's 2 CPUs, is the limit, not the storage"
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
    // Its figure is told all the same, as information.
    let told: Vec<&str> = run
        .notes
        .iter()
        .filter(|n| n.code == "info.server-cpu")
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(
        told,
        [
            "j: tgtd (pid 4242, 127.0.0.1:3260) on this host used 20% CPU (usr 6%, sys 14%), 20% in its busiest thread"
        ]
    );
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
    assert!(
        run.notes.iter().all(|n| !n.code.contains("server")),
        "{:?}",
        run.notes
    );
}

/// A server held by its cgroup's CPU quota is named with the share of the quota it used,
/// though no CPU of the machine was busy; the same server far from its quota is not.
#[test]
fn a_server_at_its_cgroup_cpu_quota_is_the_limit() {
    // 2.9% of one CPU under a 3% quota.
    let mut j = loopback_job("j", 58, 100);
    j.server_cpu[0].quota_basis_points = Some(300);
    j.server_cpu[0].throttled_periods = Some([20, 17]);
    let mut run = on_cpus(j.clone(), 2);
    annotate(&mut run);
    assert_eq!(
        server_notes(&run),
        [
            "j: tgtd on this host used 97% of its cgroup's CPU quota (2.9% of one CPU, its cgroup's quota 3.0%, throttled in 85% of its periods): the server's CPU share is the limit, not the storage"
        ]
    );
    // 2.9% under a 10% quota, rarely throttled: no limit of its own.
    j.server_cpu[0].quota_basis_points = Some(1000);
    j.server_cpu[0].throttled_periods = Some([20, 1]);
    let mut run = on_cpus(j, 2);
    annotate(&mut run);
    assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
}

/// ganesha spreads its work over many threads; 97% of one CPU in all, on a
/// machine with CPUs to spare, is no limit when no thread of it came near a full CPU.
#[test]
fn a_many_threaded_server_is_judged_on_its_busiest_thread() {
    let mut run = on_cpus(threaded_server_job("j", 1940, 600, 8), 4);
    annotate(&mut run);
    assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
    // One of its threads at a full CPU is.
    let mut j = threaded_server_job("j", 1940, 600, 8);
    j.server_cpu[0].busiest_thread_ns = Some(1_900_000_000);
    let mut run = on_cpus(j, 4);
    annotate(&mut run);
    assert_eq!(
        server_notes(&run),
        [
            "j: ganesha.nfsd on this host used 97% CPU, 95% in its busiest thread: the server, sharing this machine's 4 CPUs, is the limit, not the storage"
        ]
    );
}

/// A result stored before threads were measured says nothing of them: its total is not
/// taken for one thread's, and the field reads as absent.
#[test]
fn a_stored_figure_without_threads_is_judged_only_with_the_client() {
    let mut j = loopback_job("j", 1940, 600);
    j.server_cpu[0].busiest_thread_ns = None;
    let mut run = on_cpus(j, 2);
    annotate(&mut run);
    assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
    let old = r#"{"process":"tgtd","pid":1,"addr":"127.0.0.1:3260","same_host":true,"usr_ns":1,"sys_ns":2,"duration_ms":3}"#;
    let s: ServerCpu = serde_json::from_str(old).unwrap();
    assert_eq!(s.busiest_thread_ns, None);
    assert!(!serde_json::to_string(&s).unwrap().contains("busiest"));
}

/// With the number of CPUs unknown, the server and client together are not judged (the
/// note would name a machine size never measured); the busiest thread still is, without
/// the machine's size.
#[test]
fn an_unknown_number_of_cpus_is_never_printed() {
    let mut run = run_with(loopback_job("j", 1200, 2600));
    run.environment = None;
    run.system_cpu = None;
    annotate(&mut run);
    assert!(server_notes(&run).is_empty(), "{:?}", run.notes);
    let mut run = run_with(loopback_job("j", 1940, 100));
    run.environment = None;
    run.system_cpu = None;
    annotate(&mut run);
    assert_eq!(
        server_notes(&run),
        [
            "j: tgtd on this host used 97% CPU, 97% in its busiest thread: the server is the limit, not the storage"
        ]
    );
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
fn page_cache_reads_are_measured_on_the_disks_holding_the_data() {
    let mut j = job();
    j.header.direct = false;
    j.dirs[0].io_bytes = 1 << 30;
    // dm-0 over vda: the disk holding the data read 2% of what the job reported.
    j.disks = vec![
        DiskUtil {
            name: "dm-0".into(),
            read_bytes: 1 << 30,
            ..Default::default()
        },
        DiskUtil {
            name: "vda".into(),
            read_bytes: 1 << 24,
            leaf: true,
            ..Default::default()
        },
    ];
    let mut run = run_with(j.clone());
    annotate(&mut run);
    let v = &run.verdicts[0];
    assert_eq!(v.validity, Validity::Invalid, "{v:?}");
    assert!(
        v.reasons[0]
            .message
            .contains("the disk (vda) read 2% of the bytes reported")
            && v.reasons[0].message.contains("the page cache served 98%"),
        "{v:?}"
    );
    // The disk moved every byte (cold reads): no cache reason, whatever direct= said.
    j.disks[1].read_bytes = (1 << 30) + 4096;
    let mut run = run_with(j);
    annotate(&mut run);
    assert!(run.verdicts[0].reasons.is_empty(), "{:?}", run.verdicts);
}

#[test]
fn zeros_in_sampled_reads_make_an_entry_invalid() {
    let mut j = job();
    j.dirs[0].io_bytes = 1 << 20;
    j.measured.sampled_reads = 40;
    j.measured.zero_reads = 37;
    let mut run = run_with(j.clone());
    annotate(&mut run);
    let v = &run.verdicts[0];
    assert_eq!(v.validity, Validity::Invalid);
    assert!(
        v.reasons.iter().any(|r| r.check == "zeros"
            && r.message
                .contains("92% of sampled reads (37 of 40) returned zeros")),
        "{v:?}"
    );
    j.measured.zero_reads = 0;
    let mut run = run_with(j);
    annotate(&mut run);
    assert_eq!(run.verdicts[0].validity, Validity::Valid);
}

#[test]
fn compressible_writes_meet_the_targets_compression() {
    let mut j = job();
    j.dirs[1].io_bytes = 1 << 20;
    j.measured.compressible = Some("zero_buffers=1".into());
    for (comp, unknown, want) in [
        (Some("zstd"), None, Validity::Invalid),
        (Some("off"), None, Validity::Valid),
        (None, Some("a network target"), Validity::Suspect),
    ] {
        j.measured.target_compression = comp.map(String::from);
        j.measured.compression_unknown = unknown.map(String::from);
        let mut run = run_with(j.clone());
        annotate(&mut run);
        assert_eq!(run.verdicts[0].validity, want, "{:?}", run.verdicts);
    }
}

#[test]
fn network_reads_of_a_small_region_are_suspect_for_the_servers_cache() {
    let mut j = job();
    j.targets = vec!["nfs://nas/export/f".into()];
    j.dirs[0].io_bytes = 1 << 30;
    j.measured.region_bytes = 256 << 20;
    let mut run = run_with(j.clone());
    annotate(&mut run);
    let v = &run.verdicts[0];
    assert_eq!(v.validity, Validity::Suspect);
    assert!(
        v.reasons[0]
            .message
            .contains("the server's cache is unknown"),
        "{v:?}"
    );
    j.measured.region_bytes = 100 << 30;
    let mut run = run_with(j);
    annotate(&mut run);
    assert_eq!(
        run.verdicts[0].validity,
        Validity::Valid,
        "{:?}",
        run.verdicts
    );
}

#[test]
fn a_rate_that_falls_and_stays_is_named_with_its_second() {
    let mut j = job();
    j.dirs[1].io_bytes = 1 << 30;
    j.timeline = [100u64, 100, 100, 20, 20, 20]
        .iter()
        .enumerate()
        .map(|(i, mb)| TimelinePoint {
            t_ms: (i as u64 + 1) * 1000,
            bytes: [0, mb * 1_000_000, 0],
            ..Default::default()
        })
        .collect();
    let mut run = run_with(j);
    annotate(&mut run);
    let v = &run.verdicts[0];
    assert_eq!(v.validity, Validity::Suspect);
    assert!(
        v.reasons[0]
            .message
            .contains("fell from 100.0 MB/s to 20.0 MB/s at second 3"),
        "{v:?}"
    );
    assert!(v.reasons[0].message.contains("write cache"), "{v:?}");
}

/// A job that only read is not told of a write cache running out.
#[test]
fn a_read_jobs_drop_names_no_write_cache() {
    let mut j = job();
    j.dirs[0].io_bytes = 1 << 30;
    j.timeline = [100u64, 100, 100, 20, 20, 20]
        .iter()
        .enumerate()
        .map(|(i, mb)| TimelinePoint {
            t_ms: (i as u64 + 1) * 1000,
            bytes: [mb * 1_000_000, 0, 0],
            ..Default::default()
        })
        .collect();
    let mut run = run_with(j);
    annotate(&mut run);
    let steady: Vec<&Reason> = run.verdicts[0]
        .reasons
        .iter()
        .filter(|r| r.check == "steady")
        .collect();
    assert_eq!(steady.len(), 1, "{:?}", run.verdicts);
    assert!(!steady[0].message.contains("write cache"), "{steady:?}");
    assert!(
        steady[0]
            .message
            .contains("throttling, or other work on the device")
    );
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
        .filter(|n| n.code == "verdict.steady")
        .collect();
    assert_eq!(short.len(), 1, "{:?}", run.notes);
    assert!(short[0].message.contains("500 ms"), "{}", short[0].message);
}

#[test]
fn short_and_interrupted_runs_warn() {
    let mut j = job();
    j.runtime_ms = 200;
    let mut run = run_with(j);
    run.interrupted = true;
    annotate(&mut run);
    assert!(codes(&run).contains(&"verdict.steady"));
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
        let short = run
            .notes
            .iter()
            .find(|n| n.code == "verdict.steady")
            .unwrap();
        assert!(short.message.ends_with(advice), "{}", short.message);
    }
}

/// `n` clones of one job, each busy `cpu_ms` over `runtime_ms`, on a machine of `ncpus`.
fn shared_cpus(n: u32, cpu_ms: u64, runtime_ms: u64, ncpus: u32) -> RunResult {
    let mut j = job();
    j.header.ioengine = "null".into();
    j.runtime_ms = runtime_ms;
    j.cpu.usr_ns = cpu_ms * 1_000_000;
    let mut run = on_cpus(j.clone(), ncpus);
    for k in 1..n {
        let mut other = j.clone();
        other.jobnum = k;
        run.groups[0].jobs.push(other);
    }
    run.groups[0].group_reporting = true;
    run
}

#[test]
fn more_busy_jobs_than_cpus_name_the_shared_cpus_with_figures() {
    // 256 jobs over 2 s on 2 CPUs, 15.5 ms of CPU each: 3.97 s in all, 99% of 2 CPUs.
    let mut run = shared_cpus(256, 15, 2000, 2);
    for j in &mut run.groups[0].jobs {
        j.cpu.sys_ns = 500_000;
    }
    annotate(&mut run);
    let cpu: Vec<&Note> = run.notes.iter().filter(|n| n.code == "limit.cpu").collect();
    assert_eq!(cpu.len(), 1, "{:?}", run.notes);
    assert_eq!(cpu[0].level, NoteLevel::Limit);
    assert_eq!(
        cpu[0].message,
        "j: 256 jobs shared this machine's 2 CPUs: they used 198% CPU over 2000 ms (0.8% per job): the client's CPU, not the storage, is the limit"
    );
}

/// On a machine that others keep busy too, the jobs use less than all CPUs, but their
/// wait for one says that CPU is their limit.
#[test]
fn jobs_waiting_for_shared_cpus_name_them_with_the_wait() {
    let mut run = shared_cpus(64, 20, 2000, 2);
    for j in &mut run.groups[0].jobs {
        j.cpu.wait_ns = 1_900_000_000;
    }
    annotate(&mut run);
    let cpu: Vec<&Note> = run.notes.iter().filter(|n| n.code == "limit.cpu").collect();
    assert_eq!(cpu.len(), 1, "{:?}", run.notes);
    assert_eq!(
        cpu[0].message,
        "j: 64 jobs shared this machine's 2 CPUs: they used 64% CPU over 2000 ms (1.0% per job), each waiting for a CPU 95% of the time: the client's CPU, not the storage, is the limit"
    );
    // Jobs that seldom waited for a CPU (waiting on a device) are not limited by it.
    for j in &mut run.groups[0].jobs {
        j.cpu.wait_ns = 100_000_000;
    }
    run.notes.clear();
    annotate(&mut run);
    assert!(!codes(&run).contains(&"limit.cpu"), "{:?}", run.notes);
}

#[test]
fn shared_cpus_are_no_limit_when_idle_or_not_oversubscribed() {
    // Jobs waiting on a device: 256 of them, but the CPUs mostly idle.
    let mut run = shared_cpus(256, 1, 2000, 2);
    annotate(&mut run);
    assert!(!codes(&run).contains(&"limit.cpu"), "{:?}", run.notes);
    // Two busy jobs on four CPUs: not shared (each job's own CPU note covers a busy one).
    let mut run = shared_cpus(2, 1000, 2000, 4);
    annotate(&mut run);
    assert!(!codes(&run).contains(&"limit.cpu"), "{:?}", run.notes);
    // The number of CPUs unknown: nothing is guessed.
    let mut run = shared_cpus(256, 16, 2000, 2);
    run.environment = None;
    annotate(&mut run);
    assert!(!codes(&run).contains(&"limit.cpu"), "{:?}", run.notes);
}

#[test]
fn verdicts_round_trip_and_results_stored_before_them_still_read() {
    let mut j = job();
    j.dirs[0].io_bytes = 1 << 20;
    j.measured.sampled_reads = 8;
    j.measured.zero_reads = 8;
    j.disks.push(DiskUtil {
        name: "vda".into(),
        leaf: true,
        below: true,
        ..Default::default()
    });
    let mut run = run_with(j);
    annotate(&mut run);
    assert_eq!(run.validity(), Some(Validity::Invalid));
    let text = serde_json::to_string(&run).unwrap();
    let back: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back, run);
    // A result stored before verdicts: no verdicts, measured figures or disk flags.
    let mut old = serde_json::to_value(&run).unwrap();
    old.as_object_mut().unwrap().remove("verdicts");
    let job = &mut old["groups"][0]["jobs"][0];
    job.as_object_mut().unwrap().remove("measured");
    for key in ["leaf", "below"] {
        job["disks"][0].as_object_mut().unwrap().remove(key);
    }
    let old: RunResult = serde_json::from_value(old).unwrap();
    assert!(old.verdicts.is_empty());
    assert_eq!(old.validity(), None);
    let j = &old.groups[0].jobs[0];
    assert!(j.measured.is_empty() && !j.disks[0].leaf && !j.disks[0].below);
}

/// bonnie's `--compressible` suite has no jobs: one verdict on the suite, against the
/// target's compression as looked up by the run.
#[test]
fn bonnie_compressible_blocks_meet_the_targets_compression() {
    let bonnie = |compressible: bool, comp: Option<&str>, unknown: Option<&str>| {
        let mut run = run_with(job());
        run.mode = RunMode::Bonnie;
        run.groups.clear();
        run.bonnie = Some(BonnieResult {
            name: "nas".into(),
            version: "2.00a".into(),
            concurrency: 1,
            seed: 0,
            file_size_mib: 64,
            chunk_bytes: 8192,
            seeks: 8000,
            seekers: 3,
            num_files: 0,
            max_size: 0,
            min_size: 0,
            num_dirs: 0,
            file_chunk_bytes: 4096,
            compressible,
            target_compression: comp.map(String::from),
            compression_unknown: unknown.map(String::from),
            direct: false,
            fsync_each_write: false,
            tests: vec![],
        });
        annotate(&mut run);
        run.verdicts
    };
    let v = bonnie(true, Some("zstd"), None);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        (v[0].job.as_str(), v[0].validity),
        ("nas", Validity::Invalid)
    );
    assert!(
        v[0].reasons[0].message.contains(
            "(--compressible: bonnie's near-zero blocks) and the target compresses it (zstd)"
        ),
        "{v:?}"
    );
    assert_eq!(bonnie(true, Some("off"), None)[0].validity, Validity::Valid);
    assert_eq!(
        bonnie(true, None, Some("a network target"))[0].validity,
        Validity::Suspect
    );
    assert!(bonnie(false, Some("zstd"), None).is_empty());
}

/// The host rules on recorded readings. This VM has no cpufreq and little steal, so the
/// governor and clock rule is fed the figures a laptop's cpufreq gives (powersave, 1000 of
/// 4700 MHz; `host.rs` reads such files in its own test), and the steal and load rules
/// this VM's real /proc/stat 5 s apart under the other builds' load (1% steal: no reason;
/// 199% of 200% CPU used by others: named). The same pair with 100 ticks of steal added
/// to the later reading names the steal with its figure.
#[test]
fn host_rules_on_recorded_readings_name_governor_clock_steal_and_load_with_figures() {
    let stat = |text: &str| crate::cpu::StatSample::parse(text).unwrap();
    let (before, after) = (
        stat(include_str!("../../tests/data/host/stat.0")),
        stat(include_str!("../../tests/data/host/stat.1")),
    );
    let host_reasons = |h: HostFigures| {
        let mut j = job();
        j.dirs[0].io_bytes = 1 << 30;
        j.measured.host = Some(h);
        let mut run = run_with(j);
        annotate(&mut run);
        run.notes
            .iter()
            .filter(|n| n.code == "verdict.host")
            .map(|n| n.message.clone())
            .collect::<Vec<_>>()
    };
    let laptop = HostFigures {
        governor: Some("powersave".into()),
        mhz: Some(1000.0),
        max_mhz: Some(4700.0),
        ..HostFigures::default()
    };
    let got = host_reasons(laptop.clone());
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].contains("governor is powersave"), "{got:?}");
    assert!(
        got[1].contains("ran at 1000 MHz on average during the run, 21% of their 4700 MHz"),
        "{got:?}"
    );
    let fast = HostFigures {
        governor: Some("performance".into()),
        mhz: Some(4600.0),
        ..laptop
    };
    assert!(host_reasons(fast).is_empty());

    // The machine's CPUs are /proc/stat's, whatever this process's affinity allows (a
    // client pinned to one CPU still judges the load of both).
    assert_eq!(after.machine_cpus(), 2);
    let real = HostFigures {
        system_cpu: Some(after.since(&before, after.machine_cpus())),
        own_cpu_percent: Some(0.0),
        ..HostFigures::default()
    };
    let got = host_reasons(real.clone());
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("other processes used 199% CPU of this machine's 200%"),
        "{got:?}"
    );
    let mut stolen = after;
    stolen.steal += 100;
    stolen.total += 100;
    let got = host_reasons(HostFigures {
        system_cpu: Some(stolen.since(&before, 2)),
        ..real
    });
    assert!(
        got.iter()
            .any(|m| m.contains("CPU steal was 19% of one CPU")),
        "{got:?}"
    );
}

/// A server on this host (found by its socket): this machine's disks over the batch say
/// what its page cache served, with the figure; a server that read the bytes from its
/// disks gets no cache reason, and writes its disks did not see are named too.
#[test]
fn a_server_on_this_host_is_judged_on_this_machines_disks() {
    let mut j = loopback_job("local", 100, 100);
    j.targets = vec!["nfs://127.0.0.1/export/f".into()];
    j.dirs[0].io_bytes = 256 << 20;
    j.measured.region_bytes = 256 << 20;
    j.measured.server_disks = vec![DiskUtil {
        name: "vda".into(),
        read_bytes: 8 << 20,
        leaf: true,
        ..DiskUtil::default()
    }];
    let mut run = run_with(j.clone());
    annotate(&mut run);
    let v = &run.verdicts[0];
    assert_eq!(v.validity, Validity::Invalid, "{v:?}");
    let m = &v
        .reasons
        .iter()
        .find(|r| r.check == "cache")
        .unwrap()
        .message;
    assert!(
        m.contains("its disks (vda: this machine's")
            && m.contains("read 3% of the bytes reported (8.0 MiB of 256.0 MiB): its page cache served the rest"),
        "{m}"
    );
    j.measured.server_disks[0].read_bytes = 250 << 20;
    let mut run = run_with(j.clone());
    annotate(&mut run);
    assert!(
        run.verdicts[0].reasons.iter().all(|r| r.check != "cache"),
        "{:?}",
        run.verdicts
    );
    j.dirs[0].io_bytes = 0;
    j.dirs[1].io_bytes = 256 << 20;
    let mut run = run_with(j);
    annotate(&mut run);
    let m = &run.verdicts[0]
        .reasons
        .iter()
        .find(|r| r.check == "cache")
        .unwrap()
        .message;
    assert!(
        m.contains("wrote 0% of the bytes reported") && m.contains("page cache absorbed"),
        "{m}"
    );
}

/// `job` with `mb` MB/s in each of its seconds.
fn with_seconds(mut job: JobResult, mb: &[f64]) -> JobResult {
    job.timeline = mb
        .iter()
        .enumerate()
        .map(|(i, mb)| storbench_model::result::TimelinePoint {
            t_ms: (i as u64 + 1) * 1000,
            bytes: [(mb * 1e6) as u64, 0, 0],
            ..Default::default()
        })
        .collect();
    job
}

fn path_notes(run: &RunResult) -> Vec<&str> {
    run.notes
        .iter()
        .filter(|n| n.code == "limit.path-link")
        .map(|n| n.message.as_str())
        .collect()
}

/// The article's set-up: the client's NIC is 10 Gbit/s and far from full, the NAS's port is
/// 1 Gbit/s. A steady 117.6 MB/s is named as a 1 Gbit/s link on the path, with the other
/// cause that gives the same figure; 100 MB/s, or the same rate on a 1 Gbit/s client NIC
/// (the link rule's case), or an unsteady one is not.
#[test]
fn a_steady_rate_at_a_slower_links_ceiling_names_the_path() {
    let seq = |mb: &[f64]| {
        let secs = mb.len() as u64;
        with_seconds(
            veth_job(
                "SEQ1M Q8T1 read",
                (mb.iter().sum::<f64>() * 1e6) as u64,
                secs * 1000,
            ),
            mb,
        )
    };
    let mut run = run_with(seq(&[117.6, 117.5, 117.7, 117.6]));
    run.nics.push(veth(470_000_000, 2_000_000, 4000, 10_000));
    annotate(&mut run);
    let notes = path_notes(&run);
    assert_eq!(notes.len(), 1, "{:?}", run.notes);
    for part in [
        "SEQ1M Q8T1 read: 117.6 MB/s",
        "of 1 Gbit/s Ethernet's payload ceiling (117.7 MB/s at MTU 1500)",
        "veth1 is 10000 Mbit/s",
        "server's disks or CPU",
    ] {
        assert!(notes[0].contains(part), "{part}: {}", notes[0]);
    }
    assert!(!codes(&run).contains(&"limit.link"), "{:?}", run.notes);

    for (mb, speed) in [
        (vec![100.0, 100.2, 99.9, 100.1], 10_000),
        (vec![117.6, 117.5, 117.7, 117.6], 1_000),
        (vec![90.0, 117.6, 140.0, 117.6], 10_000),
    ] {
        let mut run = run_with(seq(&mb));
        run.nics.push(veth(470_000_000, 2_000_000, 4000, speed));
        annotate(&mut run);
        assert!(
            path_notes(&run).is_empty(),
            "{mb:?} {speed}: {:?}",
            run.notes
        );
    }
}
