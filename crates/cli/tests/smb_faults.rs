//! Faults on smb:// targets against a real Samba smbd started by the test: a server
//! restarted mid-run under `fio` and under `quick` (the run goes on, the outage is noted,
//! the data is intact, nothing is left), a connection cut on the way while the server runs
//! (the durable handle is reclaimed, not reopened), a server that never answers (one
//! bounded line), Ctrl-C while the server is silent (honoured within the stop grace), and a
//! server killed for good under `quick` and `fio` (one `reconnect=` window after the loss,
//! not one per later step).

mod common;

use std::time::{Duration, Instant};

use common::system::{ChildGuard, wait_for};
use storbench_testkit::smbd::{self, Smbd};
use storbench_testkit::stopped::Stopped;
use storbench_testkit::tcpcut::CutProxy;

fn server() -> Option<Smbd> {
    storbench_testkit::require!(smbd::unavailable());
    Some(Smbd::start().expect("start smbd"))
}

fn dir_url(s: &Smbd, query: &str) -> String {
    format!(
        "smb://{}@127.0.0.1:{}/{}/{query}",
        s.user(),
        s.port,
        smbd::SHARE
    )
}

fn left_in(s: &Smbd) -> Vec<String> {
    std::fs::read_dir(s.share_dir(smbd::SHARE))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// `storbench fio` writing 16 MiB with verify headers at a limited rate (so the write phase
/// lasts about 4 s), into a generated name under the share.
fn fio_with_verify(s: &Smbd, query: &str) -> ChildGuard {
    fio_with_verify_at(s, &dir_url(s, query))
}

fn fio_with_verify_at(s: &Smbd, dir: &str) -> ChildGuard {
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "fio", "--name=restart", "--ioengine=smb"])
        .args(["--rw=write", "--bs=64k", "--size=16M", "--iodepth=8"])
        .args(["--rate=4m", "--verify=crc32c", "--unlink=1"])
        // fio writes its verify state to the working directory: not in the source tree.
        .arg("--verify_state_save=0")
        .arg(format!("--directory={dir}"))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    ChildGuard(Some(child))
}

#[test]
fn smb_server_restart_mid_run_is_survived_noted_verified_and_leaves_nothing() {
    let Some(mut s) = server() else { return };
    let child = fio_with_verify(&s, "");
    // Laid out (16 MiB at full speed), then into the rate-limited writes (about 4 s).
    let laid_out = wait_for(Duration::from_secs(30), || {
        std::fs::read_dir(s.share_dir(smbd::SHARE))
            .unwrap()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() == 16 << 20))
    });
    assert!(laid_out, "the file was never laid out");
    std::thread::sleep(Duration::from_millis(1500));
    // The whole server goes, with the process serving this connection.
    s.stop();
    std::thread::sleep(Duration::from_millis(500));
    s.start_again().expect("restart smbd");
    let run = child.wait_output(Duration::from_secs(120));
    let (stdout, stderr) = (run.stdout.as_str(), run.stderr.as_str());
    assert_eq!(run.code, Some(0), "{stdout}\n{stderr}");
    let all = format!("{stdout}{stderr}");
    let note = all
        .lines()
        .find(|l| l.contains("SMB connection to 127.0.0.1:"))
        .unwrap_or_else(|| panic!("no outage note in:\n{all}"));
    // Samba grants the durable handle but does not keep it across its own restart: the
    // reclaim is refused and the file reopened by name.
    assert!(
        note.contains("reconnected after")
            && note.contains("1 file(s) reopened (durable handle reclaim refused: STATUS_"),
        "{note}"
    );
    // Every block was read back and checked (verify=crc32c) after the outage.
    assert!(!all.contains("verify:"), "{all}");
    assert!(!all.contains(s.password()), "{all}");
    assert!(left_in(&s).is_empty(), "left: {:?}", left_in(&s));
}

/// The connection cut on the way (a relay the test closes) while smbd keeps running: the
/// file's durable handle is reclaimed on the new connection, not opened again by name, and
/// every block verifies.
#[test]
fn smb_connection_cut_mid_run_reclaims_the_durable_handle() {
    let Some(s) = server() else { return };
    let relay = CutProxy::start(std::net::SocketAddr::from(([127, 0, 0, 1], s.port)))
        .expect("start the relay");
    let url = format!(
        "smb://{}@127.0.0.1:{}/{}/",
        s.user(),
        relay.port,
        smbd::SHARE
    );
    let child = fio_with_verify_at(&s, &url);
    let laid_out = wait_for(Duration::from_secs(30), || {
        std::fs::read_dir(s.share_dir(smbd::SHARE))
            .unwrap()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() == 16 << 20))
    });
    assert!(laid_out, "the file was never laid out");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(relay.cut() >= 1, "no connection to cut");
    let run = child.wait_output(Duration::from_secs(120));
    let all = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(run.code, Some(0), "{all}");
    let note = all
        .lines()
        .find(|l| l.contains("SMB connection to 127.0.0.1:"))
        .unwrap_or_else(|| panic!("no outage note in:\n{all}"));
    assert!(
        note.contains("1 file(s) reclaimed by durable handle") && !note.contains("reopened"),
        "{note}"
    );
    assert!(!all.contains("verify:"), "{all}");
    assert!(left_in(&s).is_empty(), "left: {:?}", left_in(&s));
}

/// `storbench quick` with smbd restarted in the middle of its tests: the run completes,
/// the outage is noted (a lost connection, or a job's login waiting for the server that
/// answered before), and nothing is left on the share.
#[test]
fn smb_quick_survives_a_server_restart_notes_it_and_leaves_nothing() {
    let Some(mut s) = server() else { return };
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "quick", "--size", "16M", "--runtime", "2s"])
        .args(["--eta", "never"])
        .arg(dir_url(&s, ""))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    let laid_out = wait_for(Duration::from_secs(60), || {
        std::fs::read_dir(s.share_dir(smbd::SHARE))
            .unwrap()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() == 16 << 20))
    });
    assert!(laid_out, "the test file was never laid out");
    std::thread::sleep(Duration::from_millis(3000));
    s.stop();
    std::thread::sleep(Duration::from_millis(500));
    s.start_again().expect("restart smbd");
    let run = child.wait_output(Duration::from_secs(240));
    let all = format!("{}{}", run.stdout, run.stderr);
    assert_eq!(run.code, Some(0), "{all}");
    assert!(all.contains("SEQ1M") && all.contains("RND4K"), "{all}");
    assert!(
        all.contains("SMB connection to 127.0.0.1:")
            || all.contains("did not answer when the job started"),
        "no outage note in:\n{all}"
    );
    assert!(!all.contains("panicked"), "{all}");
    assert!(!all.contains(s.password()), "{all}");
    assert!(left_in(&s).is_empty(), "left: {:?}", left_in(&s));
}

/// A server that takes the connection and never answers: one line naming the wait, after
/// `timeout=` (not a hang, not a panic).
#[test]
fn smb_server_that_never_answers_is_one_bounded_line() {
    let port = storbench_testkit::ports::free_port().expect("free port");
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind");
    let held = std::thread::spawn(move || {
        let (sock, _) = listener.accept().expect("accept");
        std::thread::sleep(Duration::from_secs(20));
        drop(sock);
    });
    let started = Instant::now();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "fio", "--name=silent", "--ioengine=smb"])
        .args(["--rw=read", "--bs=4k", "--size=1M"])
        .arg(format!(
            "--filename=smb://127.0.0.1:{port}/share/f?timeout=2"
        ))
        .env_remove("STORBENCH_SMB_PASSWORD")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("no reply to NEGOTIATE within 2 s"), "{err}");
    drop(held);
}

/// Ctrl-C while the server is frozen (SIGSTOP: the kernel still holds the connection, no
/// reply comes) ends the run within the stop grace, not after `timeout=` or `reconnect=`.
#[test]
fn smb_ctrl_c_while_the_server_is_silent_is_honoured() {
    let Some(s) = server() else { return };
    let pgid = s.pid().expect("smbd runs") as i32;
    let child = fio_with_verify(&s, "?timeout=60&reconnect=60");
    let writing = wait_for(Duration::from_secs(30), || {
        std::fs::read_dir(s.share_dir(smbd::SHARE))
            .unwrap()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() >= 1 << 20))
    });
    assert!(writing, "the run never wrote 1 MiB");
    let _resume = Stopped::group(pgid);
    std::thread::sleep(Duration::from_millis(500));
    let stopped = Instant::now();
    child.signal(libc::SIGINT);
    let run = child.wait_output(Duration::from_secs(30));
    let took = stopped.elapsed();
    assert!(
        took < Duration::from_secs(12),
        "took {took:?}\n{}",
        run.stderr
    );
    assert_ne!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// The reconnect window the lost-for-good tests give (`reconnect=`).
const WINDOW: Duration = Duration::from_secs(5);

/// Kills the test's smbd and every process of its group (the one serving the connection
/// too) with SIGKILL; it is never started again.
fn kill_for_good(s: &Smbd) {
    let pgid = s.pid().expect("smbd runs") as i32;
    // SAFETY: signalling the test's own smbd process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// Waits for the run, then checks it ended within one window of the loss (plus a margin
/// for the loss to be noticed and the run to wind down), failing with one line that names
/// the loss.
fn ends_within_one_window(child: ChildGuard, killed: Instant) {
    let run = child.wait_output(Duration::from_secs(240));
    let took = killed.elapsed();
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        took < 2 * WINDOW + Duration::from_secs(10),
        "took {took:?}:\n{all}"
    );
    assert_ne!(run.code, Some(0), "{all}");
    assert!(!all.contains("panicked"), "{all}");
    let loss = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("storbench: ") && l.contains("within 5 s"))
        .count();
    assert!(loss >= 1, "no line names the loss:\n{all}");
}

/// `storbench quick` with smbd killed for good in the middle of its tests: the test under
/// way gives up one `reconnect=` window after the loss, and every later step (close, the
/// next tests, removing the test file) fails at once instead of waiting a window again.
#[test]
fn smb_quick_with_the_server_lost_for_good_ends_one_window_after_the_loss() {
    let Some(s) = server() else { return };
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args(["--no-save", "quick", "--size", "16M", "--runtime", "2s"])
        .args(["--eta", "never"])
        .arg(dir_url(&s, &format!("?reconnect={}", WINDOW.as_secs())))
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    let laid_out = wait_for(Duration::from_secs(60), || {
        std::fs::read_dir(s.share_dir(smbd::SHARE))
            .unwrap()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() == 16 << 20))
    });
    assert!(laid_out, "the test file was never laid out");
    std::thread::sleep(Duration::from_millis(1500));
    kill_for_good(&s);
    ends_within_one_window(child, Instant::now());
}

/// `storbench fio` with two jobs, smbd killed for good while the first writes: the first
/// gives up one window after the loss, and the second fails at once.
#[test]
fn smb_fio_with_the_server_lost_for_good_ends_one_window_after_the_loss() {
    let Some(s) = server() else { return };
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .args([
            "--no-save",
            "fio",
            "--ioengine=smb",
            "--rw=write",
            "--bs=64k",
        ])
        .args(["--size=16M", "--iodepth=8", "--rate=4m", "--unlink=1"])
        .arg(format!(
            "--directory={}",
            dir_url(&s, &format!("?reconnect={}", WINDOW.as_secs()))
        ))
        .args(["--name=first", "--name=second", "--stonewall"])
        .env("STORBENCH_SMB_PASSWORD", s.password())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    let laid_out = wait_for(Duration::from_secs(30), || {
        std::fs::read_dir(s.share_dir(smbd::SHARE))
            .unwrap()
            .flatten()
            .any(|e| e.metadata().is_ok_and(|m| m.len() == 16 << 20))
    });
    assert!(laid_out, "the file was never laid out");
    std::thread::sleep(Duration::from_millis(1500));
    kill_for_good(&s);
    ends_within_one_window(child, Instant::now());
}
