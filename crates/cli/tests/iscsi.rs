//! `storbench iscsi discover`, `storbench fio --ioengine=libiscsi` and `storbench quick` on
//! iscsi:// targets, against a real tgtd on 127.0.0.1 started by the test (skipped with a
//! printed reason when tgt is missing). Every test also checks that no session is left.

mod common;

use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use common::system::{ChildGuard, wait_for};
use storbench_testkit::netns;
use storbench_testkit::tgtd::{self, OneLun};

const IQN: &str = "iqn.2026-11.lab.storbench:cli";
const LUN_SIZE: u64 = 64 << 20;

/// The URL as fio users write it: colons of the IQN and port escaped.
fn fio_url(lab: &OneLun) -> String {
    format!(
        "iscsi\\://127.0.0.1\\:{}/{}/1",
        lab.tgtd.port(),
        IQN.replace(':', "\\:")
    )
}

fn lab() -> Option<OneLun> {
    OneLun::start(IQN, LUN_SIZE)
}

fn storbench() -> Command {
    let mut c = Command::cargo_bin("storbench").unwrap();
    c.arg("--no-save");
    c
}

fn fio(lab: &OneLun, rw: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    storbench()
        .args([
            "fio",
            "--name=j",
            "--ioengine=libiscsi",
            "--bs=64k",
            "--size=4M",
            "--iodepth=8",
        ])
        .arg(format!("--rw={rw}"))
        .arg(format!("--filename={}", fio_url(lab)))
        .args(extra)
        .timeout(Duration::from_secs(120))
        .assert()
}

#[test]
fn discover_lists_targets_and_luns() {
    let Some(lab) = lab() else { return };
    let out = storbench()
        .args(["iscsi", "discover", &lab.tgtd.portal()])
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains(IQN), "{text}");
    assert!(
        text.contains("64.0 MiB") && text.contains("VIRTUAL-DISK") && text.contains("IET"),
        "{text}"
    );
    assert!(text.contains(&lab.url()), "{text}");
    lab.assert_no_session_left();

    let out = storbench()
        .args(["iscsi", "discover", "--json", &lab.tgtd.portal()])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let luns = &json["targets"][0]["luns"];
    let disk = luns
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["lun"] == 1)
        .unwrap();
    assert_eq!(disk["size_bytes"], LUN_SIZE);
    assert_eq!(disk["block_size"], 512);

    // `| head` that has already exited: a quiet 141, no panic, no "Broken pipe".
    for json in [false, true] {
        let mut c = StdCommand::new(assert_cmd::cargo::cargo_bin("storbench"));
        c.args(["iscsi", "discover", &lab.tgtd.portal()]);
        if json {
            c.arg("--json");
        }
        let out = common::into_closed_pipe(&mut c);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "json={json}: {err}");
        assert!(err.is_empty(), "json={json}: {err}");
    }
    lab.assert_no_session_left();
}

/// Credentials are offered as `AuthMethod=CHAP,None`, as libiscsi's `iscsi-ls -s` offers
/// them: a target without CHAP is reached without it (the docs' own
/// `iscsi discover 'iscsi://alice%secret@host'`), one that requires it authenticates, and a
/// wrong secret fails.
#[test]
fn credentials_are_offered_not_imposed_as_libiscsi_does() {
    const SECRET: &str = "s3cret-s3cret";
    let Some(mut lab) = lab() else { return };
    let portal = lab.tgtd.portal();
    let discover = |userinfo: &str| {
        let out = storbench()
            .args(["iscsi", "discover"])
            .arg(format!("iscsi://{userinfo}@{portal}"))
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !err.contains(SECRET) && !err.contains("wrong-secret"),
            "{err}"
        );
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            err,
        )
    };
    let (ok, out, err) = discover(&format!("alice%{SECRET}"));
    assert!(
        ok && out.contains(IQN) && out.contains("64.0 MiB"),
        "{out}{err}"
    );
    lab.assert_no_session_left();
    // libiscsi with the same URL, where installed, agrees.
    let portal_url = format!("iscsi://alice%{SECRET}@{portal}");
    if let Ok(ls) = StdCommand::new("iscsi-ls")
        .args(["-s", &portal_url])
        .output()
    {
        let text = String::from_utf8_lossy(&ls.stdout);
        assert!(
            ls.status.success() && text.contains(IQN),
            "iscsi-ls: {text}"
        );
        lab.assert_no_session_left();
    }
    // A target that requires CHAP still gets it; a wrong secret is still refused.
    lab.tgtd.require_chap(1, "alice", SECRET).unwrap();
    let (ok, out, err) = discover(&format!("alice%{SECRET}"));
    assert!(ok && out.contains("64.0 MiB"), "{out}{err}");
    let (ok, out, err) = discover("alice%wrong-secret");
    let all = format!("{out}{err}");
    assert!(
        all.contains("authentication failure") && !out.contains("64.0 MiB"),
        "ok={ok}: {all}"
    );
    lab.assert_no_session_left();
}

#[test]
fn discover_of_a_closed_port_is_one_clear_line() {
    let port = tgtd::free_port().unwrap();
    let out = storbench()
        .args(["iscsi", "discover", &format!("127.0.0.1:{port}")])
        .timeout(Duration::from_secs(60))
        .assert()
        .failure()
        .get_output()
        .stderr
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.trim().lines().count(), 1, "{text}");
    assert!(
        text.contains(&format!("127.0.0.1:{port}")) && text.contains("connect"),
        "{text}"
    );
}

#[test]
fn fio_writes_the_pattern_and_reads_it_back() {
    let Some(lab) = lab() else { return };
    let out = fio(
        &lab,
        "write",
        &["--buffer_pattern=0xdeadbeef", "--output-format=json"],
    )
    .success()
    .get_output()
    .stdout
    .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["jobs"][0]["write"]["io_bytes"], 4 << 20);
    let data = std::fs::read(&lab.backing).unwrap();
    let want: Vec<u8> = [0xde, 0xad, 0xbe, 0xef]
        .iter()
        .copied()
        .cycle()
        .take(4 << 20)
        .collect();
    assert!(
        data[..4 << 20] == want[..],
        "the LUN does not hold the written pattern"
    );
    assert!(
        data[4 << 20..].iter().all(|&b| b == 0),
        "bytes beyond size= were written"
    );
    lab.assert_no_session_left();

    let out = fio(&lab, "randread", &["--output-format=json"])
        .success()
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["jobs"][0]["read"]["io_bytes"], 4 << 20);
    lab.assert_no_session_left();
}

#[test]
fn writes_to_a_lun_holding_ext4_are_refused_and_leave_it_unchanged() {
    let Some(lab) = lab() else { return };
    let mkfs = StdCommand::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&lab.backing)
        .status();
    storbench_testkit::require!(
        mkfs.is_ok_and(|s| s.success()),
        "mkfs.ext4 (e2fsprogs) is not available"
    );
    let before = std::fs::read(&lab.backing).unwrap();
    let out = fio(&lab, "write", &[])
        .failure()
        .get_output()
        .stderr
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(
        text.contains("ext2/3/4"),
        "the refusal must name what it found: {text}"
    );
    assert!(
        text.contains("--allow-destructive"),
        "the refusal must name the override: {text}"
    );
    assert!(
        std::fs::read(&lab.backing).unwrap() == before,
        "the LUN was modified"
    );
    // Reads are always allowed.
    fio(&lab, "read", &[]).success();
    lab.assert_no_session_left();
}

#[test]
fn quick_runs_on_a_fresh_lun() {
    quick(&[]);
}

#[test]
fn quick_runs_on_a_lun_with_the_override() {
    quick(&["--allow-destructive"]);
}

fn quick(extra: &[&str]) {
    let Some(lab) = lab() else { return };
    let out = storbench()
        .args(["quick", "--runtime=1s", "--size=16M", "--json", &lab.url()])
        .args(extra)
        .timeout(Duration::from_secs(180))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("iSCSI") || text.contains(IQN), "{text}");
    lab.assert_no_session_left();
}

#[test]
fn ctrl_c_mid_run_logs_the_session_out() {
    let Some(lab) = lab() else { return };
    let child = common::storbench()
        .args([
            "--no-save",
            "fio",
            "--name=j",
            "--ioengine=libiscsi",
            "--rw=randread",
            "--bs=4k",
            "--size=16M",
            "--iodepth=8",
            "--time_based",
            "--runtime=60",
        ])
        .arg(format!("--filename={}", fio_url(&lab)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    let logged_in = wait_for(Duration::from_secs(20), || {
        !lab.tgtd.nexus(1).unwrap().is_empty()
    });
    assert!(logged_in, "storbench never logged in");
    std::thread::sleep(Duration::from_millis(500));
    child.signal(libc::SIGINT);
    let run = child.wait_output(Duration::from_secs(15));
    assert_eq!(run.code, Some(130), "{run:?}");
    assert!(run.stdout.contains("  read: IOPS="), "{}", run.stdout);
    assert!(run.stdout.contains("interrupted"), "{}", run.stdout);
    lab.assert_no_session_left();
}

/// CHAP secrets typed in the URL (`user%secret@`, mutual `target_password=`) stay out of
/// the saved command line and target, so `history`, `show`, the HTML report and the
/// database file never carry them, and URL errors never show the mutual secret.
#[test]
fn chap_secrets_are_never_printed_saved_or_rendered() {
    const SECRETS: [&str; 2] = ["InitSecr3t1234", "TgtSecr3t56789"];
    let Some(mut lab) = lab() else { return };
    lab.tgtd.require_chap(1, "alice", SECRETS[0]).unwrap();
    lab.tgtd.mutual_chap(1, "bob", SECRETS[1]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let url = format!(
        "iscsi://alice%{}@{}/{IQN}/1?target_user=bob&target_password={}",
        SECRETS[0],
        lab.tgtd.portal(),
        SECRETS[1]
    );
    let sb = |args: &[&str]| {
        let out = Command::cargo_bin("storbench")
            .unwrap()
            .env("STORBENCH_DB", &db)
            .args(args)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), all)
    };
    let clean = |what: &str, text: &str| {
        for s in SECRETS {
            assert!(!text.contains(s), "{what} shows a secret:\n{text}");
        }
    };
    let (ok, text) = sb(&["quick", "--runtime=300ms", "--size=8M", &url]);
    assert!(ok, "{text}");
    clean("quick", &text);
    let fio_file = format!("--filename={url}");
    let (ok, text) = sb(&[
        "fio",
        "--name=j",
        "--rw=read",
        "--bs=64k",
        "--size=1M",
        &fio_file,
    ]);
    assert!(ok, "{text}");
    clean("fio", &text);
    for args in [
        &["history"][..],
        &["show", "1"],
        &["show", "2", "--format", "json"],
    ] {
        let (ok, text) = sb(args);
        assert!(ok, "{args:?}: {text}");
        clean(&format!("{args:?}"), &text);
    }
    let html = dir.path().join("r.html");
    let (ok, text) = sb(&["report", "1", "2", "-o", html.to_str().unwrap()]);
    assert!(ok, "{text}");
    clean("the HTML report", &std::fs::read_to_string(&html).unwrap());
    // The database and its write-ahead log, byte for byte.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        clean(&path.display().to_string(), &bytes);
    }
    // A URL error names the URL without its secrets.
    let bad = url.replace(&format!("{IQN}/1"), &format!("{IQN}/x"));
    let (ok, text) = sb(&["--no-save", "quick", &bad]);
    assert!(!ok && text.contains("LUN"), "{text}");
    clean("a URL error", &text);
    lab.assert_no_session_left();
}

/// tgtd killed in the middle of quick: the engine tries to log in again for `reconnect=`
/// seconds, then what finished is still printed, the loss is named on stderr, nothing
/// panics, and the exit code says the run failed.
#[test]
fn a_target_lost_mid_quick_keeps_finished_tests() {
    let Some(mut lab) = lab() else { return };
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "quick", "--size", "8m", "--runtime", "1s"])
        .args(["--eta", "never", &format!("{}?reconnect=5", lab.url())])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    // Past the first test (one second of reads), into the second.
    std::thread::sleep(Duration::from_millis(1700));
    lab.tgtd.crash();
    let t0 = std::time::Instant::now();
    let run = child.wait_output(Duration::from_secs(60));
    let (stdout, stderr) = (run.stdout.as_str(), run.stderr.as_str());
    // One reconnect window, not one more per call that follows (draining, closing).
    assert!(
        t0.elapsed() < Duration::from_millis(9500),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(run.code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("Connection reset") || stderr.contains("connection"),
        "the loss is not named:\n{stderr}"
    );
    assert!(stderr.contains("no new login within 5 s"), "{stderr}");
    // The test the loss stopped is marked: its figures include the wait.
    let write = stdout
        .lines()
        .find(|l| l.starts_with("SEQ1M Q8T1") && l.contains("write"));
    assert!(write.is_some_and(|l| l.ends_with("  FAILED")), "{stdout}");
    assert!(
        stdout.contains("FAILED: the test stopped on an error"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("SEQ1M Q8T1") && l.contains("read")),
        "finished tests not printed:\n{stdout}\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A target on this host shares the client's CPUs, so its CPU is measured from /proc (the
/// owner of the portal's listening socket, utime + stime around the measured phase),
/// recorded under storbench's own JSON key, shown in the text outputs and judged: tgtd is
/// named as the limit whenever it was measured busy.
#[test]
fn a_loopback_run_records_the_servers_cpu() {
    let Some(lab) = lab() else { return };
    let pid = u64::from(lab.tgtd.pid().expect("tgtd runs"));
    let out = storbench()
        .args(["quick", "--runtime=1s", "--size=16M", &lab.url()])
        .timeout(Duration::from_secs(180))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    eprintln!("{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("Test ") && l.contains("  Server CPU ")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Server CPU is that of tgtd (pid {pid}) on this host"
        )),
        "{text}"
    );

    let out = storbench()
        .args([
            "fio",
            "--name=rnd",
            "--ioengine=libiscsi",
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=32",
            "--size=16M",
            "--time_based",
            "--runtime=2",
            "--output-format=json",
            "--allow-destructive",
        ])
        .arg(format!("--filename={}", fio_url(&lab)))
        .timeout(Duration::from_secs(120))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let server = common::recorded_server_cpu(&doc, "tgtd", pid);
    assert_eq!(server["addr"], lab.tgtd.portal().as_str(), "{server}");
    let cpu_ns = server["usr_ns"].as_u64().unwrap() + server["sys_ns"].as_u64().unwrap();
    let ms = server["duration_ms"].as_u64().unwrap();
    assert!((1500..=3000).contains(&ms), "{server}");
    let percent = cpu_ns as f64 / (ms as f64 * 1e6) * 100.0;
    // tgtd does its work in one event loop thread.
    let thread_ns = server["busiest_thread_ns"]
        .as_u64()
        .expect("the busiest thread");
    assert!(thread_ns > 0 && thread_ns <= cpu_ns, "{server}");
    let thread = thread_ns as f64 / (ms as f64 * 1e6) * 100.0;
    let notes: Vec<&str> = doc["storbench"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == "limit.server-cpu")
        .filter_map(|n| n["message"].as_str())
        .collect();
    eprintln!("tgtd used {percent:.0}% CPU, {thread:.0}% in one thread; notes: {notes:?}");
    // The note on its busiest thread is there exactly when that thread met the rule.
    assert_eq!(
        notes
            .iter()
            .any(|m| m.starts_with("rnd: tgtd on this host used ")
                && m.contains("in its busiest thread")),
        thread >= 90.0,
        "{notes:?}"
    );
    // The one on server and client together, when the thread alone did not; the client's
    // figure is read back from fio's rounded percentages, so a sum within a point of the
    // threshold is not judged here (the analysis tests judge it exactly).
    let job = &doc["jobs"][0];
    let client_ns = (job["usr_cpu"].as_f64().unwrap() + job["sys_cpu"].as_f64().unwrap()) / 100.0
        * job["job_runtime"].as_f64().unwrap()
        * 1e6;
    let both = percent + client_ns / (ms as f64 * 1e6) * 100.0;
    let full = 90.0 * std::thread::available_parallelism().unwrap().get() as f64;
    if (both - full).abs() > 1.0 {
        assert_eq!(
            notes.iter().any(|m| m.contains("together they kept")),
            thread < 90.0 && both >= full,
            "{notes:?}"
        );
    }
    lab.assert_no_session_left();
}

/// quick over a veth shaped to 1 Gbit/s runs its sequential tests at the line rate
/// (119 MB/s) and names the link, although a veth states 10000 Mbit/s: the interface's
/// counters are judged per test, not over all eight tests at once (where the link would
/// look half idle).
#[test]
fn quick_over_a_shaped_link_names_the_link_as_the_limit() {
    storbench_testkit::require!(tgtd::unavailable());
    let Some(ns) = netns::shaped("1gbit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let backing = dir.path().join("remote.img");
    tgtd::sparse_file(&backing, LUN_SIZE).unwrap();
    let addr = ns.ns_addr.to_string();
    let port = tgtd::free_port().unwrap();
    let mut tgtd = tgtd::Tgtd::start_at(&addr, port, Some(&ns.name)).expect("tgtd in the ns");
    tgtd.add_target(1, IQN).unwrap();
    tgtd.add_lun(1, 1, &backing).unwrap();

    let url = format!("iscsi://{addr}:{port}/{IQN}/1");
    let db = dir.path().join("results.db");
    let out = Command::cargo_bin("storbench")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["quick", "--runtime=1s", "--size=32M", "--json", &url])
        .timeout(Duration::from_secs(180))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let links: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["code"] == "limit.link")
        .filter_map(|n| n["message"].as_str())
        .collect();
    assert!(
        links
            .iter()
            .any(|m| m.starts_with("SEQ1M ") && m.contains(&ns.host_if)),
        "the link is not named: {}",
        doc["notes"]
    );
    assert!(links.iter().all(|m| m.contains("1000 Mbit/s")), "{links:?}");
    // The environment of a network target names the interface and its link speed.
    let raw = Command::cargo_bin("storbench")
        .unwrap()
        .arg("--db")
        .arg(&db)
        .args(["show", "1", "-f", "raw"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let raw: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    let target = &raw["environment"]["targets"][0];
    assert_eq!(target["interface"], ns.host_if.as_str(), "{target}");
    assert_eq!(target["link_speed_mbps"], 1000, "{target}");
    assert!(
        tgtd.wait_no_nexus(1, Duration::from_secs(5))
            .unwrap()
            .is_empty()
    );
}

/// A LUN number the target does not have is named as missing: the target answers INQUIRY
/// for it with "no device here", which is not a device of another type.
#[test]
fn a_missing_lun_is_named_with_the_luns_the_target_has() {
    let Some(lab) = lab() else { return };
    let url = format!("iscsi://{}/{IQN}/7", lab.tgtd.portal());
    let mut quick = common::storbench();
    quick.args([
        "--no-save",
        "quick",
        "--size=8M",
        "--runtime=300ms",
        "--eta=never",
        &url,
    ]);
    let line = common::Run::of(&mut quick).one_error_line();
    assert!(
        line.contains(&format!("target {IQN} has no LUN 7 (its LUNs: 0, 1)")),
        "{line}"
    );
    lab.assert_no_session_left();
}

/// Data anywhere inside the region a job writes is found, not only in the LUN's first and
/// last MiB: data at 100 MiB refuses `--offset=100M --size=64M` without
/// --allow-destructive.
#[test]
fn data_inside_the_written_region_of_a_lun_is_refused() {
    let Some(lab) = OneLun::start(IQN, 256 << 20) else {
        return;
    };
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&lab.backing)
            .unwrap();
        f.write_all_at(&[0xAB; 4096], (100 << 20) + 8192).unwrap();
        f.sync_all().unwrap();
    }
    let before = std::fs::read(&lab.backing).unwrap();
    let run = |extra: &[&str]| {
        let mut c = common::storbench();
        c.args(["--no-save", "fio", "--name=o", "--rw=write", "--bs=1m"])
            .args(["--offset=100M", "--size=64M"])
            .arg(format!("--filename={}", lab.url()))
            .args(extra);
        common::Run::of(&mut c)
    };
    let err = run(&[]).one_error_line();
    assert!(
        err.contains(&format!("non-zero data at byte {}", (100u64 << 20) + 8192))
            && err.contains("128 KiB at every MiB boundary")
            && err.contains("--allow-destructive"),
        "{err}"
    );
    assert!(
        std::fs::read(&lab.backing).unwrap() == before,
        "the LUN was modified"
    );
    let ok = run(&["--allow-destructive"]);
    assert!(ok.success(), "{}", ok.stderr);
    lab.assert_no_session_left();
}

/// A CHAP secret given by environment or file is in neither `ps` nor /proc/PID/cmdline:
/// login works, a wrong one fails in one line, a missing one is named, and a secret in the
/// URL (which `ps` shows for the whole run) draws one warning.
#[test]
fn chap_secret_from_environment_or_file_stays_out_of_argv() {
    const SECRET: &str = "EnvSecr3t4242";
    let Some(mut lab) = lab() else { return };
    lab.tgtd.require_chap(1, "alice", SECRET).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chap");
    std::fs::write(&file, format!("{SECRET}\n")).unwrap();
    let base = format!("iscsi://alice@{}/{IQN}/1", lab.tgtd.portal());
    let by_file = format!("{base}?secret-file={}", file.display());
    let fio_cmd = |url: &str, env: Option<&str>| {
        let mut c = common::storbench();
        c.args([
            "--no-save",
            "fio",
            "--name=j",
            "--ioengine=libiscsi",
            "--rw=randread",
        ])
        .args(["--bs=4k", "--size=16M", "--iodepth=4"])
        .arg(format!("--filename={url}"))
        .env_remove("STORBENCH_ISCSI_SECRET");
        if let Some(s) = env {
            c.env("STORBENCH_ISCSI_SECRET", s);
        }
        c
    };
    for (url, env) in [(&base, Some(SECRET)), (&by_file, None)] {
        let mut c = fio_cmd(url, env);
        c.args(["--time_based", "--runtime=3"]);
        let child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let child = ChildGuard(Some(child));
        let logged_in = wait_for(Duration::from_secs(20), || {
            !lab.tgtd.nexus(1).unwrap().is_empty()
        });
        assert!(logged_in, "{url}: never logged in");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains(SECRET),
            "the secret is in argv"
        );
        let run = child.wait_output(Duration::from_secs(30));
        assert_eq!(run.code, Some(0), "{url}: {run:?}");
        assert!(run.stdout.contains("read: IOPS="), "{}", run.stdout);
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(
            !all.contains(SECRET) && !all.contains("CHAP secret in the URL"),
            "{all}"
        );
        lab.assert_no_session_left();
    }
    // A wrong secret: one line, no secret in it.
    let wrong = common::Run::of(&mut fio_cmd(&base, Some("Wr0ngSecret99")));
    let line = wrong.one_error_line();
    assert!(line.contains("auth"), "{line}");
    assert!(!line.contains("Wr0ngSecret99"), "{line}");
    // No secret at all, and no terminal to ask on: the ways to give one are named.
    let none = common::Run::of(&mut fio_cmd(&base, None));
    let line = none.one_error_line();
    assert!(
        line.contains("STORBENCH_ISCSI_SECRET") && line.contains("secret-file"),
        "{line}"
    );
    // quick takes it from the environment too.
    let quick = common::Run::of(
        common::storbench()
            .args(["--no-save", "quick", "--runtime=200ms", "--size=8M", &base])
            .env("STORBENCH_ISCSI_SECRET", SECRET),
    );
    assert!(quick.success(), "{}", quick.stderr);
    // In the URL it still works, with one warning line.
    let in_url = base.replace("alice@", &format!("alice%{SECRET}@"));
    let run = common::Run::of(&mut fio_cmd(&in_url, None));
    assert!(run.success(), "{}", run.stderr);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("warning: a CHAP secret in the URL"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(!run.stderr.contains(SECRET), "{}", run.stderr);
    lab.assert_no_session_left();
}

/// Drives `argv` on a pseudo-terminal (python3's pty module): waits for the CHAP prompt,
/// notes whether the secret is in the process's /proc/PID/cmdline, types `secret` and
/// returns (secret in cmdline, exit code, everything the terminal showed).
fn on_a_terminal(argv: &[&str], secret: &str) -> Option<(bool, i32, String)> {
    const DRIVER: &str = r#"
import os, pty, select, sys, time
secret = os.environ.pop("TYPED_SECRET").encode()
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = b""
def read(until, limit):
    global seen
    end = time.time() + limit
    while until not in seen and time.time() < end:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            seen += chunk
read(b"CHAP secret for", 30)
with open("/proc/%d/cmdline" % pid, "rb") as f:
    in_argv = secret in f.read()
os.write(fd, secret + b"\n")
read(b"\x00never", 60)
status = os.waitpid(pid, 0)[1]
sys.stdout.write("%d %d\n" % (in_argv, os.waitstatus_to_exitcode(status)))
sys.stdout.buffer.write(seen)
"#;
    let out = StdCommand::new("python3")
        .arg("-c")
        .arg(DRIVER)
        .args(argv)
        .env("TYPED_SECRET", secret)
        .env_remove("STORBENCH_ISCSI_SECRET")
        .env("STORBENCH_DB", "/dev/null/storbench-tests-must-not-save.db")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, shown) = text.split_once('\n')?;
    let mut head = head.split(' ');
    let in_argv = head.next()? == "1";
    let code = head.next()?.parse().ok()?;
    Some((in_argv, code, shown.to_string()))
}

/// `iscsi discover` of a target that requires CHAP, with the secret from the environment
/// or typed at the prompt on a terminal: the target's LUN is listed (its login needed the
/// secret), the secret is never in argv, and the prompt does not echo it.
#[test]
fn discover_takes_the_chap_secret_from_the_environment_or_the_terminal() {
    const SECRET: &str = "Typ3dSecret77";
    let Some(mut lab) = lab() else { return };
    lab.tgtd.require_chap(1, "alice", SECRET).unwrap();
    let url = format!("iscsi://alice@{}", lab.tgtd.portal());
    let discover = |secret: &str| {
        let out = storbench()
            .args(["iscsi", "discover", &url])
            .env("STORBENCH_ISCSI_SECRET", secret)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains(secret), "{all}");
        (out.status.success(), all)
    };
    let (ok, all) = discover(SECRET);
    assert!(ok && all.contains(IQN) && all.contains("64.0 MiB"), "{all}");
    let (_, all) = discover("Wr0ngSecret11");
    assert!(
        all.contains("authentication failure") && !all.contains("64.0 MiB"),
        "{all}"
    );
    lab.assert_no_session_left();

    let bin = assert_cmd::cargo::cargo_bin("storbench");
    let argv = [
        bin.to_str().unwrap(),
        "--no-save",
        "iscsi",
        "discover",
        &url,
    ];
    let Some((in_argv, code, shown)) = on_a_terminal(&argv, SECRET) else {
        eprintln!("skipped: python3 with the pty module is needed to drive a terminal");
        return;
    };
    assert!(!in_argv, "the typed secret is in /proc/PID/cmdline");
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("CHAP secret for iscsi://alice@"), "{shown}");
    assert!(
        shown.contains("64.0 MiB"),
        "the typed secret did not log in:\n{shown}"
    );
    assert!(!shown.contains(SECRET), "the secret was echoed:\n{shown}");
    lab.assert_no_session_left();
}
