use super::*;
use crate::fixtures::{job, run_of};
use storbench_model::result::{DiskUtil, TimelinePoint};

/// A battery job named `name` reading `mb` MB/s for `secs` seconds over eth0.
fn step(name: &str, mb: f64, secs: u64) -> JobResult {
    let mut j = job();
    j.name = name.into();
    let bytes = (mb * 1e6) as u64;
    j.runtime_ms = secs * 1000;
    j.dirs[0].io_bytes = bytes * secs;
    j.dirs[0].total_ios = bytes * secs / (1 << 20);
    j.dirs[0].runtime_ms = secs * 1000;
    j.timeline = (1..=secs)
        .map(|s| TimelinePoint {
            t_ms: s * 1000,
            bytes: [bytes, 0, 0],
            ..TimelinePoint::default()
        })
        .collect();
    j.engine_details = vec![("interface".into(), "eth0".into())];
    j
}

fn battery(path: [f64; 3], cold: f64, nic_mbps: u64) -> RunResult {
    let mut jobs: Vec<JobResult> = preset::PATH_READS
        .iter()
        .zip(path)
        .map(|((name, _), mb)| step(name, mb, 4))
        .collect();
    jobs.push(step(preset::COLD, cold, 2));
    let mut run = run_of(jobs);
    run.nics = vec![NicUsage {
        name: "eth0".into(),
        speed_mbps: Some(nic_mbps),
        ..NicUsage::default()
    }];
    run
}

fn network() -> Context {
    Context::default()
}

#[test]
fn reads_from_memory_at_a_slower_links_ceiling_name_that_link() {
    let d = judge(&battery([117.5, 117.6, 117.6], 117.4, 10_000), &network());
    assert_eq!(d.limit.stage, LimitStage::Link, "{}", d.limit.message);
    assert!(
        d.limit
            .message
            .contains("the limit is a 1 Gbit/s link on the path")
            && d.limit.message.contains("Cold reads ran as fast"),
        "{}",
        d.limit.message
    );
    let path = &d.stages[1];
    assert_eq!(path.ceiling_what, "1 Gbit/s link");
    // Between standard links: nothing is named as a link.
    let d = judge(&battery([190.0, 190.2, 190.1], 190.0, 10_000), &network());
    assert_eq!(d.limit.stage, LimitStage::None, "{}", d.limit.message);
}

#[test]
fn the_clients_own_full_nic_is_its_own_link() {
    let d = judge(&battery([117.5, 117.6, 117.6], 117.4, 1_000), &network());
    assert_eq!(d.limit.stage, LimitStage::Link);
    assert!(
        d.limit.message.contains("this client's own link"),
        "{}",
        d.limit.message
    );
}

#[test]
fn a_rate_still_rising_with_depth_is_latency_over_the_network_only() {
    let mut run = battery([30.0, 60.0, 110.0], 110.0, 10_000);
    // Without a round trip to account for the wait, latency is not guessed.
    assert_eq!(judge(&run, &network()).limit.stage, LimitStage::None);
    // A 20 µs round trip is no part of the 35 ms a 1 MiB read took at QD1: not latency.
    let rtt = |text: &str| ("round trip".to_string(), text.to_string());
    run.groups[0].jobs[0].engine_details.push(rtt("20 µs"));
    assert_eq!(judge(&run, &network()).limit.stage, LimitStage::None);
    // A 30 ms one is most of it.
    run.groups[0].jobs[0].engine_details.pop();
    run.groups[0].jobs[0].engine_details.push(rtt("30.00 ms"));
    let d = judge(&run, &network());
    assert_eq!(d.limit.stage, LimitStage::Latency, "{}", d.limit.message);
    assert!(d.limit.message.contains("with a round trip of 30.00 ms"));
    let local = Context {
        local: true,
        ..Context::default()
    };
    assert_eq!(judge(&run, &local).limit.stage, LimitStage::None);
}

#[test]
fn a_busy_client_thread_is_the_client() {
    let mut run = battery([50.0, 50.1, 50.0], 50.0, 10_000);
    for j in &mut run.groups[0].jobs {
        j.cpu.usr_ns = j.runtime_ms * 1_000_000 * 6 / 10;
        j.cpu.wait_ns = j.runtime_ms * 1_000_000 * 35 / 100;
    }
    let d = judge(&run, &network());
    assert_eq!(d.limit.stage, LimitStage::Client, "{}", d.limit.message);
}

#[test]
fn slow_cold_reads_are_the_storage_only_when_a_disk_served_them() {
    let local = Context {
        local: true,
        ..Context::default()
    };
    let mut run = battery([900.0, 1000.0, 1000.0], 20.0, 10_000);
    // No disk under the file (tmpfs): memory, not storage.
    assert_eq!(judge(&run, &local).limit.stage, LimitStage::None);
    let cold = run.groups[0].jobs.last_mut().unwrap();
    cold.disks = vec![DiskUtil {
        name: "loop0".into(),
        read_bytes: cold.dirs[0].io_bytes,
        util: 99.0,
        ..DiskUtil::default()
    }];
    let d = judge(&run, &local);
    assert_eq!(d.limit.stage, LimitStage::Storage, "{}", d.limit.message);
    // Whatever bounded the reads from memory (here a server at its CPU quota), the cold
    // reads' lower ceiling is the one named.
    with_server_quota(&mut run, 3, 3, 92);
    let d = judge(&run, &local);
    assert_eq!(d.limit.stage, LimitStage::Storage, "{}", d.limit.message);
    // Over the network with no agent to show the server's disks: not named, but said.
    let run = battery([150.0, 200.0, 205.0], 120.0, 10_000);
    let d = judge(&run, &network());
    assert_eq!(d.limit.stage, LimitStage::None, "{}", d.limit.message);
    assert!(
        d.limit
            .message
            .contains("its cache or a busy moment cannot be ruled out"),
        "{}",
        d.limit.message
    );
}

#[test]
fn skipped_stages_say_why() {
    let ctx = Context {
        skipped: vec![(StageKind::PathWrite, "read only".into())],
        local: false,
    };
    let d = judge(&battery([117.5, 117.6, 117.6], 117.4, 10_000), &ctx);
    let write = d
        .stages
        .iter()
        .find(|s| s.stage == StageKind::PathWrite)
        .unwrap();
    assert_eq!(write.skipped.as_deref(), Some("read only"));
    assert!(
        d.remarks
            .iter()
            .any(|r| r == "path write skipped: read only")
    );
}

/// Each read step's server figure: `used` % of one CPU against a cgroup quota of `quota` %,
/// throttled `throttled` % of the time.
fn with_server_quota(run: &mut RunResult, used: u64, quota: u64, throttled: u64) {
    for j in &mut run.groups[0].jobs {
        let ms = j.runtime_ms;
        j.server_cpu = vec![storbench_model::result::ServerCpu {
            process: "tgtd".into(),
            pid: 4242,
            addr: "10.0.0.2:3260".into(),
            same_host: true,
            usr_ns: ms * 10_000 * used,
            sys_ns: 0,
            duration_ms: ms,
            busiest_thread_ns: None,
            quota_basis_points: Some(quota * 100),
            throttled_periods: Some([ms / 100, ms / 100 * throttled / 100]),
        }];
    }
}

#[test]
fn a_server_at_its_cpu_quota_is_the_server_even_below_a_link() {
    let mut run = battery([33.0, 33.1, 33.0], 33.0, 10_000);
    with_server_quota(&mut run, 3, 3, 92);
    let d = judge(&run, &network());
    assert_eq!(d.limit.stage, LimitStage::Server, "{}", d.limit.message);
    assert!(
        d.limit
            .message
            .contains("tgtd on this host: 3.0% of one CPU, its cgroup's quota 3.0%"),
        "{}",
        d.limit.message
    );
    // A link's ceiling with the same server far from its quota: the link.
    let mut run = battery([117.5, 117.6, 117.6], 117.4, 10_000);
    with_server_quota(&mut run, 10, 20, 0);
    assert_eq!(judge(&run, &network()).limit.stage, LimitStage::Link);
}

#[test]
fn a_client_thread_waiting_for_its_cpu_is_the_client_below_a_link_only() {
    let mut run = battery([24.0, 26.0, 30.0], 21.0, 10_000);
    for j in &mut run.groups[0].jobs {
        j.cpu.usr_ns = j.runtime_ms * 1_000_000 / 100;
        j.cpu.wait_ns = j.runtime_ms * 1_000_000 * 79 / 100;
    }
    let d = judge(&run, &network());
    assert_eq!(d.limit.stage, LimitStage::Client, "{}", d.limit.message);
    assert!(d.limit.message.contains("waited for a CPU 79%"));
    // The same waits at a slower link's ceiling: the link was met first.
    let mut run = battery([117.5, 117.6, 117.6], 117.4, 10_000);
    for j in &mut run.groups[0].jobs {
        j.cpu.usr_ns = j.runtime_ms * 1_000_000 * 6 / 100;
        j.cpu.wait_ns = j.runtime_ms * 1_000_000 * 55 / 100;
    }
    assert_eq!(judge(&run, &network()).limit.stage, LimitStage::Link);
}
