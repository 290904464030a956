//! Faults of `storbench fio` over NFSv4.1, against a real v4-only nfs-ganesha started by
//! the test (skipped with a printed reason when ganesha is missing): a restart mid-run
//! (session and opens reclaimed, UNSTABLE writes written again and verified after it), a
//! stopped server (bounded by `timeout` + `reconnect`, or resumed after SIGCONT), a restart
//! with a grace period (the open reclaimed in it), a lease that expires while storbench is
//! stopped, and waits longer than the lease (thinktime, `wait_for`, bonnie's seek test).

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::system::{ChildGuard, spawn, wait_for};
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::stopped::Stopped;
use storbench_testkit::tcpcut::CutProxy;

/// The lease of the servers whose lease the tests outlast, in seconds.
const LEASE: u32 = 3;

fn v4_only() -> Option<Ganesha> {
    storbench_testkit::require!(ganesha::unavailable());
    Some(Ganesha::start_v4_only().expect("start ganesha"))
}

fn short_lease() -> Option<Ganesha> {
    storbench_testkit::require!(ganesha::unavailable());
    Some(Ganesha::start_v4_only_lease(LEASE).expect("start ganesha"))
}

/// The server's URL for `rel` over NFSv4.1 with `query` added.
fn url(g: &Ganesha, rel: &str, query: &str) -> String {
    format!("--filename={}?version=4.1&{query}", g.url4(rel))
}

/// `storbench --no-save fio --output-format=json ARGS` in `cwd`, started in the background.
fn fio(cwd: &Path, args: &[&str]) -> ChildGuard {
    let mut all = vec!["--no-save", "fio", "--output-format=json", "--ioengine=nfs"];
    all.extend_from_slice(args);
    spawn(cwd, &all)
}

/// Waits until the export holds `name` with at least `bytes`.
fn written(g: &Ganesha, name: &str, bytes: u64) {
    let path = g.export_dir().join(name);
    let ok = wait_for(Duration::from_secs(30), || {
        fs::metadata(&path).is_ok_and(|m| m.len() >= bytes)
    });
    assert!(ok, "{name} never reached {bytes} bytes");
}

/// The fio JSON document of a run that succeeded, and its text (for notes and details).
fn succeeded(run: &common::Run) -> (serde_json::Value, String) {
    assert!(run.success(), "{}\n{}", run.stdout, run.stderr);
    common::assert_no_panic(&run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("fio JSON");
    assert_eq!(doc["jobs"][0]["error"], 0, "{doc}");
    let text = doc.to_string();
    (doc, text)
}

/// Sends SIGCONT to a stopped process when dropped, so that a failing test never leaves
/// it stopped (its own guard then ends it by PID).
/// ganesha killed and started again while a job writes with checksums: the job gets a new
/// session and its open back, the server's new write verifier has the client write its
/// kept UNSTABLE data again with FILE_SYNC, and the read-back verifies every block.
#[test]
fn v4_a_server_restart_mid_write_keeps_the_data_verified_after_it() {
    let Some(mut g) = v4_only() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let child = fio(
        cwd.path(),
        &[
            "--name=r",
            "--rw=write",
            "--bs=64k",
            "--size=16M",
            "--iodepth=8",
            "--rate=4m",
            "--verify=crc32c",
            "--do_verify=1",
            &url(&g, "restart.dat", "timeout=5&reconnect=30"),
        ],
    );
    // Laid out at full speed, then written again at 4 MiB/s: 1.5 s into those writes.
    written(&g, "restart.dat", 16 << 20);
    std::thread::sleep(Duration::from_millis(1500));
    g.crash();
    std::thread::sleep(Duration::from_millis(700));
    g.start_again().expect("restart ganesha");
    let (doc, text) = succeeded(&child.wait_output(Duration::from_secs(90)));
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"], 16 << 20, "{doc}");
    assert_eq!(
        doc["jobs"][0]["read"]["io_bytes"],
        16 << 20,
        "verified: {doc}"
    );
    assert!(text.contains("lost the session"), "no session note: {text}");
    assert!(
        text.contains("write verifier changed") && text.contains("written again with FILE_SYNC"),
        "no rewrite note: {text}"
    );
}

/// With ganesha stopped (SIGSTOP: the kernel still accepts connections) the run ends about
/// `timeout` + `reconnect` after the stop with one line naming why, and what it measured
/// is still printed.
#[test]
fn v4_a_stopped_server_ends_the_run_within_timeout_plus_reconnect() {
    let Some(g) = v4_only() else { return };
    let pid = g.pid().expect("ganesha runs") as i32;
    let cwd = tempfile::tempdir().unwrap();
    let child = fio(
        cwd.path(),
        &[
            "--name=hung",
            "--rw=randread",
            "--bs=64k",
            "--size=8M",
            "--iodepth=8",
            "--runtime=120",
            "--time_based",
            &url(&g, "hung.dat", "timeout=3&reconnect=5"),
        ],
    );
    written(&g, "hung.dat", 8 << 20);
    std::thread::sleep(Duration::from_secs(2));
    let _resume = Stopped::process(pid);
    let stopped = Instant::now();
    let run = child.wait_output(Duration::from_secs(30));
    let took = stopped.elapsed();
    assert!(took >= Duration::from_secs(7), "{took:?}\n{}", run.stderr);
    assert!(took < Duration::from_secs(20), "{took:?}\n{}", run.stderr);
    assert_ne!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    common::assert_no_panic(&run.stderr);
    let error = run
        .stderr
        .lines()
        .find(|l| l.contains("no reply completed"))
        .unwrap_or_else(|| panic!("no give-up line:\n{}", run.stderr));
    assert!(error.contains("timeout=3 s and reconnect=5 s"), "{error}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("fio JSON");
    assert!(
        doc["jobs"][0]["read"]["io_bytes"].as_u64() > Some(0),
        "the reads before the stop are kept: {doc}"
    );
}

/// ganesha stopped for 3 s and continued, within the reconnect window: the job goes on and
/// ends well, its slowest read showing the pause.
#[test]
fn v4_a_server_stopped_and_continued_within_the_window_resumes() {
    let Some(g) = v4_only() else { return };
    let pid = g.pid().expect("ganesha runs") as i32;
    let cwd = tempfile::tempdir().unwrap();
    let child = fio(
        cwd.path(),
        &[
            "--name=p",
            "--rw=randread",
            "--bs=64k",
            "--size=8M",
            "--iodepth=8",
            "--runtime=8",
            "--time_based",
            &url(&g, "pause.dat", "timeout=10&reconnect=30"),
        ],
    );
    written(&g, "pause.dat", 8 << 20);
    std::thread::sleep(Duration::from_secs(1));
    let resume = Stopped::process(pid);
    std::thread::sleep(Duration::from_secs(3));
    drop(resume);
    let (doc, _) = succeeded(&child.wait_output(Duration::from_secs(60)));
    let max = doc["jobs"][0]["read"]["clat_ns"]["max"].as_u64().unwrap();
    assert!(
        max >= 2_500_000_000,
        "slowest read {max} ns: the pause missed the reads"
    );
}

/// storbench itself stopped for four leases and more in the middle of a job: the server
/// drops its client, and when storbench continues its next request finds the session gone
/// (NFS4ERR_BADSESSION or a like status): a new client id and session are set up, the file
/// is opened again, and the job ends well, saying so.
#[test]
fn v4_a_lease_expired_while_storbench_was_stopped_is_recovered() {
    let Some(g) = short_lease() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let child = fio(
        cwd.path(),
        &[
            "--name=l",
            "--rw=randrw",
            "--bs=64k",
            "--size=4M",
            "--iodepth=4",
            "--runtime=18",
            "--time_based",
            &url(&g, "lease.dat", "timeout=5&reconnect=30"),
        ],
    );
    written(&g, "lease.dat", 4 << 20);
    std::thread::sleep(Duration::from_secs(1));
    let resume = Stopped::process(child.pid());
    std::thread::sleep(Duration::from_secs(u64::from(4 * LEASE) + 2));
    drop(resume);
    let (_, text) = succeeded(&child.wait_output(Duration::from_secs(60)));
    assert!(
        text.contains("lost the session"),
        "the expired lease went unnoticed: {text}"
    );
}

/// A job that thinks for longer than the lease between its IOs keeps its client id and
/// session: the worker renews the lease while it waits, so the server never drops it (the
/// test above shows what an unrenewed lease of the same length comes to).
#[test]
fn v4_thinktime_longer_than_the_lease_keeps_the_session() {
    let Some(g) = short_lease() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let think = format!("--thinktime={}s", 4 * LEASE + 2);
    let child = fio(
        cwd.path(),
        &[
            "--name=t",
            "--rw=randrw",
            "--bs=64k",
            "--size=1M",
            "--iodepth=2",
            "--thinktime_blocks=4",
            &think,
            "--runtime=20",
            "--time_based",
            &url(&g, "think.dat", "timeout=5&reconnect=30"),
        ],
    );
    let (doc, text) = succeeded(&child.wait_output(Duration::from_secs(60)));
    let ios = doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap()
        + doc["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
    assert!(ios >= 8, "IOs after the pauses too: {doc}");
    assert!(
        !text.contains("lost the session"),
        "the lease lapsed while the job thought: {text}"
    );
}

/// ganesha killed and started again with a grace period while a job writes with checksums:
/// the job's client is one the server knew, so it reclaims its open with CLAIM_PREVIOUS
/// inside the period and sends RECLAIM_COMPLETE, and the job goes on at once rather than
/// waiting the period out (which a new OPEN would have to); the kept UNSTABLE writes are
/// written again and every block verifies after the restart.
#[test]
fn v4_a_restart_with_a_grace_period_reclaims_the_open_and_the_data_verifies() {
    const GRACE: u64 = 40;
    storbench_testkit::require!(ganesha::unavailable());
    let mut g = Ganesha::start_v4_only_grace(10, GRACE as u32).expect("start ganesha");
    let cwd = tempfile::tempdir().unwrap();
    let child = fio(
        cwd.path(),
        &[
            "--name=g",
            "--rw=write",
            "--bs=64k",
            "--size=16M",
            "--iodepth=8",
            "--rate=4m",
            "--verify=crc32c",
            "--do_verify=1",
            &url(&g, "grace.dat", "timeout=5&reconnect=30"),
        ],
    );
    written(&g, "grace.dat", 16 << 20);
    std::thread::sleep(Duration::from_millis(1500));
    g.crash();
    std::thread::sleep(Duration::from_millis(700));
    g.start_again().expect("restart ganesha");
    let restarted = Instant::now();
    let (doc, text) = succeeded(&child.wait_output(Duration::from_secs(120)));
    let after = restarted.elapsed();
    assert_eq!(doc["jobs"][0]["write"]["io_bytes"], 16 << 20, "{doc}");
    assert_eq!(
        doc["jobs"][0]["read"]["io_bytes"],
        16 << 20,
        "verified: {doc}"
    );
    assert!(
        text.contains("1 reclaimed in its grace period, 0 opened again by handle"),
        "the open was not reclaimed with CLAIM_PREVIOUS: {text}"
    );
    assert!(
        text.contains("written again with FILE_SYNC"),
        "no rewrite note: {text}"
    );
    assert!(
        after < Duration::from_secs(GRACE - 10),
        "the job waited for the grace period to end ({after:?} after the restart)"
    );
}

/// A job that waits for another (`wait_for`) longer than the lease holds its session and
/// open file all the while: the worker renews the lease as it waits, so when its turn
/// comes its first IO goes through on the same session.
#[test]
fn v4_a_wait_for_longer_than_the_lease_keeps_the_session() {
    let Some(g) = short_lease() else { return };
    let cwd = tempfile::tempdir().unwrap();
    let first = format!("--runtime={}", 4 * LEASE + 3);
    let child = fio(
        cwd.path(),
        &[
            "--name=first",
            "--rw=randread",
            "--bs=64k",
            "--size=1M",
            "--rate_iops=20",
            &first,
            "--time_based",
            &url(&g, "first.dat", "timeout=5&reconnect=30"),
            "--name=second",
            "--wait_for=first",
            "--rw=write",
            "--bs=64k",
            "--size=1M",
            &url(&g, "second.dat", "timeout=5&reconnect=30"),
        ],
    );
    let (doc, text) = succeeded(&child.wait_output(Duration::from_secs(60)));
    assert_eq!(doc["jobs"][1]["jobname"], "second", "{doc}");
    assert_eq!(doc["jobs"][1]["write"]["io_bytes"], 1 << 20, "{doc}");
    assert!(
        !text.contains("lost the session"),
        "the waiting job's lease lapsed: {text}"
    );
}

/// bonnie over NFSv4 with a seek test longer than the lease (a relay adds 5 ms each way,
/// so each seek takes over 10 ms), two copies at once: each copy's own session, unused
/// while its seekers work on sessions of their own and while it waits for the other copy,
/// is kept alive, and its next call (removing the test file) needs no new session.
#[test]
fn v4_bonnie_with_a_seek_test_longer_than_the_lease_keeps_the_session() {
    let Some(g) = short_lease() else { return };
    fs::create_dir(g.export_dir().join("b")).unwrap();
    let server = std::net::SocketAddr::from((g.bind, g.nfs_port));
    let relay = CutProxy::start_delayed(server, Duration::from_millis(5)).expect("relay");
    let url = format!(
        "nfs://127.0.0.1:{}/export/b?version=4.1&timeout=5&reconnect=30",
        relay.port
    );
    let cwd = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let run = spawn(
        cwd.path(),
        &[
            "--no-save",
            "bonnie",
            "-q",
            "-d",
            &url,
            "-s",
            "4:64k:1600:1",
            "-r",
            "0",
            "-n",
            "0",
            "-c",
            "2",
        ],
    )
    .wait_output(Duration::from_secs(120));
    let took = t.elapsed();
    assert!(run.success(), "{}\n{}", run.stdout, run.stderr);
    common::assert_no_panic(&run.stderr);
    let csv = run.stdout.lines().last().unwrap_or_default();
    assert!(
        took > Duration::from_secs(u64::from(5 * LEASE)),
        "the run was not longer than the lease, so it shows nothing: {took:?}"
    );
    assert!(
        !run.stderr.contains("lost the session") && !run.stdout.contains("lost the session"),
        "the lease lapsed during the seeks: {}\n{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(csv.split(',').count(), 50, "{}", run.stdout);
    let left: Vec<_> = fs::read_dir(g.export_dir().join("b")).unwrap().collect();
    assert!(left.is_empty(), "left on the export: {left:?}");
}
