//! `storbench fio` and `storbench quick` on nfs:// targets, against a real nfs-ganesha on
//! 127.0.0.1 started by the test (skipped with a printed reason when ganesha is missing).

mod common;

use std::fs;
use std::time::Duration;

use assert_cmd::Command;
use common::system::{ChildGuard, wait_for};
use storbench_testkit::ganesha::{self, Ganesha};
use storbench_testkit::stopped::Stopped;

fn server() -> Option<Ganesha> {
    storbench_testkit::require!(ganesha::unavailable());
    Some(Ganesha::start().expect("start ganesha"))
}

fn storbench() -> Command {
    let mut c = Command::cargo_bin("storbench").unwrap();
    c.arg("--no-save");
    c
}

/// ganesha on this host shares the client's CPUs: its CPU over the job (the owner of the
/// NFS port's listening socket, found through /proc) is recorded under storbench's key.
#[test]
fn a_loopback_run_records_the_servers_cpu() {
    let Some(g) = server() else { return };
    let pid = u64::from(g.pid().expect("ganesha runs"));
    let out = storbench()
        .args([
            "fio",
            "--name=r",
            "--ioengine=nfs",
            "--rw=randread",
            "--bs=4k",
            "--iodepth=16",
            "--size=8M",
            "--time_based",
            "--runtime=2",
            "--output-format=json",
        ])
        .arg(format!("--filename={}", g.url("cpu.dat")))
        .timeout(Duration::from_secs(120))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let server = common::recorded_server_cpu(&doc, "ganesha.nfsd", pid);
    assert!(server["duration_ms"].as_u64().unwrap() >= 1500, "{server}");
}

#[test]
fn fio_writes_the_pattern_and_reads_it_back() {
    let Some(g) = server() else { return };
    let out = storbench()
        .args([
            "fio",
            "--name=w",
            "--ioengine=nfs",
            "--rw=write",
            "--bs=64k",
            "--size=4M",
        ])
        .args([
            "--iodepth=8",
            "--buffer_pattern=0xdeadbeef",
            "--output-format=json",
        ])
        .arg(format!("--filename={}", g.url("pattern.dat")))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["jobs"][0]["write"]["io_bytes"], 4 << 20);
    let data = fs::read(g.export_dir().join("pattern.dat")).unwrap();
    assert_eq!(data.len(), 4 << 20);
    assert!(
        data.chunks(4).all(|c| c == [0xde, 0xad, 0xbe, 0xef]),
        "the export holds other bytes"
    );

    let out = storbench()
        .args([
            "fio",
            "--name=r",
            "--ioengine=nfs",
            "--rw=randread",
            "--bs=4k",
            "--size=4M",
        ])
        .args(["--iodepth=16", "--output-format=json"])
        .arg(format!("--nfs_url={}", g.url("")))
        .arg("--filename=pattern.dat")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["jobs"][0]["read"]["io_bytes"], 4 << 20);
    assert_eq!(json["jobs"][0]["error"], 0);
}

#[test]
fn fio_generated_names_under_a_directory_url_are_removed_with_unlink() {
    let Some(g) = server() else { return };
    fs::create_dir(g.export_dir().join("d")).unwrap();
    storbench()
        .args([
            "fio",
            "--name=j",
            "--ioengine=nfs",
            "--rw=write",
            "--bs=128k",
            "--size=2M",
        ])
        .args(["--nrfiles=3", "--numjobs=2", "--unlink=1", "--iodepth=4"])
        .arg(format!("--directory={}", g.url("d")))
        .assert()
        .success();
    let left: Vec<_> = fs::read_dir(g.export_dir().join("d")).unwrap().collect();
    assert!(left.is_empty(), "files left on the export: {left:?}");

    // The same job without unlink leaves its 2 x 3 files, so the check above means something.
    fs::create_dir(g.export_dir().join("k")).unwrap();
    storbench()
        .args([
            "fio",
            "--name=j",
            "--ioengine=nfs",
            "--rw=write",
            "--bs=128k",
            "--size=2M",
        ])
        .args(["--nrfiles=3", "--numjobs=2", "--iodepth=4"])
        .arg(format!("--directory={}", g.url("k")))
        .assert()
        .success();
    assert_eq!(fs::read_dir(g.export_dir().join("k")).unwrap().count(), 6);
}

#[test]
fn quick_runs_on_an_export_and_cleans_up() {
    let Some(g) = server() else { return };
    let out = storbench()
        .args([
            "quick",
            "--size",
            "8M",
            "--runtime",
            "300ms",
            "--eta",
            "never",
        ])
        .arg(g.url(""))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("SEQ1M") && text.contains("RND4K"), "{text}");
    let left: Vec<_> = fs::read_dir(g.export_dir()).unwrap().collect();
    assert!(left.is_empty(), "files left on the export: {left:?}");
}

#[test]
fn a_wrong_export_is_one_clear_line() {
    let Some(g) = server() else { return };
    let url = format!(
        "nfs://127.0.0.1:{}/nothere/f?mountport={}",
        g.nfs_port, g.mount_port
    );
    let mut fio = common::storbench();
    fio.args([
        "--no-save",
        "fio",
        "--name=x",
        "--ioengine=nfs",
        "--rw=read",
        "--bs=4k",
        "--size=1M",
    ])
    .arg(format!("--filename={url}"));
    let line = common::Run::of(&mut fio).one_error_line();
    assert!(
        line.contains(&format!("127.0.0.1:{}", g.mount_port)) && line.contains("/nothere"),
        "{line}"
    );
}

#[test]
fn a_server_restart_mid_run_is_survived_and_noted() {
    let Some(mut g) = server() else { return };
    let bin = assert_cmd::cargo::cargo_bin("storbench");
    let child = std::process::Command::new(bin)
        .args([
            "--no-save",
            "fio",
            "--name=r",
            "--ioengine=nfs",
            "--rw=randrw",
            "--bs=64k",
        ])
        .args(["--size=8M", "--iodepth=8", "--runtime=5", "--time_based"])
        .arg(format!("--filename={}", g.url("restart.dat")))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2000));
    g.crash();
    std::thread::sleep(std::time::Duration::from_millis(700));
    g.start_again().expect("restart ganesha");
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("reconnected after"),
        "no outage note in:\n{all}"
    );
    // The restarted server has a new write verifier (it started in a later second): the
    // writes it may have lost were written again, and the result says so.
    assert!(
        all.contains("write verifier changed") && all.contains("written again with FILE_SYNC"),
        "no rewrite note in:\n{all}"
    );
}

/// A server that stops answering for 5 s leaves eight IOs in flight for that long: their
/// squared latencies add far past 2^64 ns². The run must print its figures and save them.
#[test]
fn a_five_second_server_pause_is_reported_and_saved() {
    let Some(g) = server() else { return };
    let pid = g.pid().expect("ganesha runs") as i32;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let bin = assert_cmd::cargo::cargo_bin("storbench");
    let child = std::process::Command::new(&bin)
        .env("STORBENCH_DB", &db)
        .args(["fio", "--output-format=json", "--name=p", "--ioengine=nfs"])
        .args(["--rw=randread", "--bs=64k", "--size=8M", "--iodepth=8"])
        .args(["--runtime=9", "--time_based"])
        .arg(format!("--filename={}", g.url("pause.dat")))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    // Past the lay-out (8 MiB at loopback speed) and into the reads.
    std::thread::sleep(Duration::from_secs(3));
    let stopped = Stopped::process(pid);
    std::thread::sleep(Duration::from_secs(5));
    drop(stopped);
    let out = child.wait_output(Duration::from_secs(60));
    assert!(out.success(), "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("fio JSON");
    let max = doc["jobs"][0]["read"]["clat_ns"]["max"].as_u64().unwrap();
    assert!(
        max >= 4_500_000_000,
        "slowest read {max} ns: the pause missed the reads"
    );
    let history = std::process::Command::new(&bin)
        .env("STORBENCH_DB", &db)
        .args(["history", "--format", "json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&history.stdout).expect("history");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "the run is saved");
}

#[test]
fn bonnie_runs_on_an_export_and_cleans_up() {
    let Some(g) = server() else { return };
    fs::create_dir(g.export_dir().join("b")).unwrap();
    let out = storbench()
        .args(["bonnie", "-s", "16", "-r", "8", "-n", "1", "-d"])
        .arg(g.url("b"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("Sequential Create"), "{text}");
    let left: Vec<_> = fs::read_dir(g.export_dir().join("b")).unwrap().collect();
    assert!(left.is_empty(), "files left on the export: {left:?}");
}

/// A server that dies for good mid-run: what was measured is printed, the error says more
/// than that the reconnect's MOUNT was refused, and the test file left on the export is
/// named.
#[test]
fn a_server_lost_mid_quick_keeps_finished_tests_and_names_the_leftover_file() {
    let Some(mut g) = server() else { return };
    let url = format!("{}&reconnect=1", g.url(""));
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "quick", "--size", "8m", "--runtime", "1s"])
        .args(["--eta", "never", &url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Past the first test (lay-out and one second of reads), into the second.
    std::thread::sleep(std::time::Duration::from_millis(1700));
    g.crash();
    let t0 = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // Default timeout=30: a call on the given-up connection must not wait for it.
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        t0.elapsed()
    );
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("SEQ1M Q8T1") && l.contains("read")),
        "finished tests not printed:\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains("connection lost") || stderr.contains("server lost"),
        "the loss is not named:\n{stderr}"
    );
    let (marks, left): (Vec<String>, Vec<String>) = fs::read_dir(g.export_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .partition(|n| n.starts_with(".storbench-quick."));
    assert_eq!(left.len(), 1, "{left:?}");
    // The run's mark stays beside the file, for `storbench clean`.
    assert_eq!(marks.len(), 1, "{marks:?}");
    let warning = stderr
        .lines()
        .find(|l| l.contains("warning") && l.contains(&left[0]))
        .unwrap_or_else(|| panic!("no warning names {}:\n{stderr}", left[0]));
    assert!(warning.contains("could not remove"), "{warning}");
    for line in stderr.lines() {
        assert!(!line.contains("panicked"), "{stderr}");
    }
}

/// The one error line of a failed `storbench <args>` (besides quick's banner).
fn error_line(args: &[&str]) -> String {
    let out = storbench()
        .args(args)
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("storbench quick: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}

/// URL errors name the URL the user typed and the export asked for, never quick's temp
/// file (`cannot resolve NFS server storbench-quick.N.tmp`, `MOUNT
/// /nope/storbench-quick.N.tmp`) or bonnie's and fio's generated names.
#[test]
fn url_errors_quote_the_url_as_typed() {
    let Some(g) = server() else { return };
    let (p, m) = (g.nfs_port, g.mount_port);
    let no_path = format!("nfs://127.0.0.1:{p}?mountport={m}");
    let nope = format!("nfs://127.0.0.1:{p}/nope?mountport={m}");
    let bad_port = format!("nfs://127.0.0.1:99999/export?mountport={m}");
    let dir = |u: &str| format!("--directory={u}");
    let fio = ["fio", "--name=j", "--rw=write", "--size=1m"];
    let cases: Vec<(Vec<String>, Vec<String>)> = vec![
        (
            vec!["quick".into(), "nfs://".into()],
            vec!["\"nfs://\"".into()],
        ),
        (
            vec!["quick".into(), no_path.clone()],
            vec![format!("no export path in URL {no_path}")],
        ),
        (
            vec!["quick".into(), nope.clone()],
            vec!["MOUNT /nope ".into()],
        ),
        (
            vec!["quick".into(), bad_port.clone()],
            vec![format!("{bad_port:?}"), "bad port".into()],
        ),
        (
            vec!["bonnie".into(), "-d".into(), nope.clone()],
            vec!["MOUNT /nope ".into()],
        ),
        (
            vec!["bonnie".into(), "-d".into(), no_path.clone()],
            vec!["no export path".into()],
        ),
        (
            fio.iter()
                .map(|s| s.to_string())
                .chain([dir(&nope)])
                .collect(),
            vec!["MOUNT /nope ".into()],
        ),
        (
            fio.iter()
                .map(|s| s.to_string())
                .chain([dir(&bad_port)])
                .collect(),
            vec![format!("{bad_port:?}")],
        ),
        (
            fio.iter()
                .map(|s| s.to_string())
                .chain([format!("--filename={no_path}")])
                .collect(),
            vec!["no export path".into()],
        ),
    ];
    for (args, needles) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = error_line(&args);
        for n in &needles {
            assert!(
                line.contains(n.as_str()),
                "{args:?}: {n:?} missing from: {line}"
            );
        }
        for generated in ["storbench-quick", "Bonnie", "j.0.0"] {
            assert!(!line.contains(generated), "{args:?}: {line}");
        }
    }
    assert_eq!(fs::read_dir(g.export_dir()).unwrap().count(), 0);
}

/// Ctrl-C in the middle of quick on an export lets the NFS calls in flight finish: the test
/// then running is not marked FAILED ("WRITE interrupted by a stop request"), and the
/// clean-up's own calls are not cut off, so the test file is removed and not reported left
/// behind.
#[test]
fn ctrl_c_mid_quick_drains_its_ios_and_removes_the_test_file() {
    let Some(g) = server() else { return };
    let sub = g.export_dir().join("sub");
    fs::create_dir(&sub).unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "quick", "--size", "64m", "--runtime", "2s"])
        .args(["--eta", "never", &g.url("sub")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    let created = wait_for(Duration::from_secs(20), || {
        fs::read_dir(&sub).is_ok_and(|mut d| d.next().is_some())
    });
    assert!(created, "no test file appeared");
    // Into the second test (sequential writes, 8 in flight).
    std::thread::sleep(Duration::from_millis(3000));
    child.signal(libc::SIGINT);
    let run = child.wait_output(Duration::from_secs(30));
    let (stdout, stderr) = (run.stdout.as_str(), run.stderr.as_str());
    assert_eq!(run.code, Some(130), "{stdout}\n{stderr}");
    assert!(stdout.contains("interrupted"), "{stdout}");
    assert!(!stdout.contains("FAILED"), "{stdout}\n{stderr}");
    assert!(
        !stderr.contains("stop request") && !stderr.contains("left behind"),
        "{stderr}"
    );
    let left: Vec<_> = fs::read_dir(&sub).unwrap().collect();
    assert!(left.is_empty(), "files left on the export: {left:?}");
}

/// With ganesha stopped (SIGSTOP: the kernel still accepts connections), a run with
/// `?timeout=3&reconnect=5` does not reconnect every 3 s for ever: the window bounds the
/// whole time without a complete reply, so the run ends about 3 + 5 s after the stop, with
/// one error line, and what it measured is still printed and saved.
#[test]
fn a_stopped_server_ends_the_run_within_timeout_plus_reconnect_and_keeps_the_result() {
    let Some(g) = server() else { return };
    let pid = g.pid().expect("ganesha runs") as i32;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let url = format!("{}&timeout=3&reconnect=5", g.url("hung.dat"));
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .env("STORBENCH_DB", &db)
        .args([
            "fio",
            "--name=hung",
            "--ioengine=nfs",
            "--rw=randread",
            "--bs=64k",
        ])
        .args(["--size=8M", "--iodepth=8", "--runtime=120", "--time_based"])
        .arg(format!("--filename={url}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    let laid_out = wait_for(Duration::from_secs(30), || {
        fs::metadata(g.export_dir().join("hung.dat")).is_ok_and(|m| m.len() == 8 << 20)
    });
    assert!(laid_out, "the file was never laid out");
    std::thread::sleep(Duration::from_millis(2000));
    let _resume = Stopped::process(pid);
    let stopped = std::time::Instant::now();
    // timeout 3 + reconnect 5, and 7 s of margin (UMNT's 2 s, a loaded machine).
    let run = child.wait_output(Duration::from_secs(15));
    let took = stopped.elapsed();
    assert!(took >= Duration::from_secs(7), "{took:?}\n{}", run.stderr);
    let (stdout, stderr) = (run.stdout.as_str(), run.stderr.as_str());
    assert_ne!(run.code, Some(0), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.contains("no reply completed"))
        .unwrap_or_else(|| panic!("no give-up line:\n{stderr}"));
    assert!(
        error.contains("timeout=3 s and reconnect=5 s") && error.contains("reconnect(s) made"),
        "{error}"
    );
    // The job's result up to the stop is printed and saved.
    assert!(
        stdout.contains("hung: (groupid=0") && stdout.contains("read: IOPS="),
        "{stdout}\n{stderr}"
    );
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let history = Command::cargo_bin("storbench")
        .unwrap()
        .env("STORBENCH_DB", &db)
        .arg("history")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let history = String::from_utf8_lossy(&history);
    assert!(history.contains("hung"), "not saved:\n{history}");
}

/// A name a job file puts under an export must stay below it: `..` or an absolute
/// `filename=`, or a `filename_format` that climbs out, is one line before anything is
/// mounted or created, and nothing appears beside the directory.
#[test]
fn a_job_file_name_reaching_outside_the_export_is_one_line() {
    let Some(g) = server() else { return };
    fs::create_dir(g.export_dir().join("d")).unwrap();
    let jobs = tempfile::tempdir().unwrap();
    for (name, line) in [
        ("../escape", "filename=../escape"),
        ("/escape", "filename=/escape"),
        ("../escape", "filename_format=../escape"),
    ] {
        let file = jobs.path().join("j.fio");
        fs::write(
            &file,
            format!(
                "[j]\nioengine=nfs\ndirectory={}\n{line}\nrw=write\nbs=4k\nsize=64k\n",
                g.url("d")
            ),
        )
        .unwrap();
        let mut fio = common::storbench();
        fio.args(["--no-save", "fio"]).arg(&file);
        let err = common::Run::of(&mut fio).one_error_line();
        assert!(
            err.contains(&format!("{name:?} cannot name a file under its target"))
                && err.contains(&g.url("d")),
            "{line}: {err}"
        );
        assert!(!g.export_dir().join("escape").exists(), "{line}");
        assert_eq!(fs::read_dir(g.export_dir().join("d")).unwrap().count(), 0);
    }
}

/// A `filename=` written as an absolute path on the server that lies inside the export
/// named by `directory=` (or `nfs_url`) is made relative to it, as before names were
/// typed: the job writes there. One outside it, or climbing out with `..`, stays one line
/// before any IO.
#[test]
fn an_absolute_name_inside_the_export_is_a_name_below_it() {
    let Some(g) = server() else { return };
    fs::create_dir(g.export_dir().join("sub")).unwrap();
    let jobs = tempfile::tempdir().unwrap();
    let file = jobs.path().join("j.fio");
    let run = |root: &str, name: &str| {
        fs::write(
            &file,
            format!("[j]\nioengine=nfs\n{root}\nfilename={name}\nrw=write\nbs=4k\nsize=64k\n"),
        )
        .unwrap();
        let mut fio = common::storbench();
        fio.args(["--no-save", "fio"]).arg(&file);
        common::Run::of(&mut fio)
    };
    for (root, name, written) in [
        (format!("directory={}", g.url("")), "/export/sub/f", "sub/f"),
        (
            format!("directory={}", g.url("sub")),
            "/export/sub/g",
            "sub/g",
        ),
        (format!("nfs_url={}", g.url("")), "/export/sub/h", "sub/h"),
    ] {
        let r = run(&root, name);
        assert!(r.success(), "{root} {name}: {}", r.stderr);
        let len = fs::metadata(g.export_dir().join(written)).unwrap().len();
        assert_eq!(len, 64 << 10, "{root} {name}");
    }
    for (name, why) in [
        ("/elsewhere/f", "is absolute and not inside /export/sub"),
        ("/export/sub/../../f", "`..`"),
    ] {
        let err = run(&format!("directory={}", g.url("sub")), name).one_error_line();
        assert!(
            err.contains(&format!("{name:?} cannot name a file under its target"))
                && err.contains(why),
            "{name}: {err}"
        );
    }
    assert!(!g.export_dir().join("f").exists());
}
