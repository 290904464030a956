//! An iSCSI target that stops making progress must end the run within its windows, with
//! the loss named in one line and the result so far printed and saved. tgtd cannot be made
//! to take a login and then never answer, nor to trickle a reply, so these tests script a
//! small target in-process (`scripted` below) that answers the commands of a normal start
//! (TEST UNIT READY, INQUIRY, READ CAPACITY) and some reads, then turns faulty:
//!
//! - `Silent`: it takes every new login and never answers a command or a ping again;
//! - `Trickle`: as `Silent`, but it sends a Data-In one byte every 100 ms, so bytes keep
//!   arriving and no command ever completes;
//! - `Gone`: it closes the connection and its listening socket (a target lost for good).

mod common;

use std::time::Duration;

use assert_cmd::Command;
use common::system::ChildGuard;
use scripted::Fault;

const TIMEOUT: u64 = 2;
const RECONNECT: u64 = 3;

struct Ended {
    /// From the moment the target turned faulty to the exit of storbench.
    took: Duration,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    history: String,
}

/// Runs a time-based read job against a scripted target with `fault`, waiting at most
/// `limit` for it to end.
fn run_until_given_up(fault: Fault, limit: Duration) -> Ended {
    let target = scripted::start(fault, 200);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("storbench"))
        .env("STORBENCH_DB", &db)
        .args([
            "fio",
            "--name=stall",
            "--ioengine=libiscsi",
            "--rw=randread",
        ])
        .args(["--bs=4k", "--iodepth=4", "--runtime=300", "--time_based"])
        .arg(format!(
            "--filename={}?timeout={TIMEOUT}&reconnect={RECONNECT}",
            target.url
        ))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = ChildGuard(Some(child));
    let run = child.wait_output(limit);
    let faulty = target
        .faulty_since()
        .expect("the target never turned faulty");
    let took = faulty.elapsed();
    let history = Command::cargo_bin("storbench")
        .unwrap()
        .env("STORBENCH_DB", &db)
        .arg("history")
        .output()
        .unwrap();
    Ended {
        took,
        code: run.code,
        stdout: run.stdout,
        stderr: run.stderr,
        history: String::from_utf8_lossy(&history.stdout).into_owned(),
    }
}

/// The job's figures up to the loss are printed and the run is in the database; the exit
/// code says it failed; the loss is one line.
fn assert_reported_and_saved(e: &Ended, why: &str) {
    let all = format!("{}\n{}", e.stdout, e.stderr);
    assert_eq!(e.code, Some(1), "{all}");
    assert!(!e.stderr.contains("panicked"), "{all}");
    let lines: Vec<&str> = e.stderr.lines().filter(|l| l.contains(why)).collect();
    assert_eq!(
        lines.len(),
        1,
        "the loss is not one line naming {why:?}:\n{all}"
    );
    assert!(
        e.stdout.contains("stall: (groupid=0") && e.stdout.contains("read: IOPS="),
        "{all}"
    );
    assert!(e.history.contains("stall"), "not saved:\n{}", e.history);
}

/// A target that logs in again after every loss and then never answers: before
/// `reconnect=` bounded the time without a completed command, every successful login
/// started a new window, and the run went on for as long as the target kept taking logins.
/// The loss is noticed within `timeout=` at each connection and the window is checked at
/// each loss, so the run ends at most 2 x timeout + reconnect after the last completion.
#[test]
fn a_target_that_logs_in_again_and_never_answers_ends_the_run() {
    let e = run_until_given_up(Fault::Silent, Duration::from_secs(25));
    eprintln!("{:?}\n{}", e.took, e.stderr);
    assert_reported_and_saved(&e, "no command completed for");
    let bound = Duration::from_secs(2 * TIMEOUT + RECONNECT + 2);
    assert!(e.took < bound, "{:?}\n{}", e.took, e.stderr);
    assert!(
        e.took >= Duration::from_secs(RECONNECT),
        "{:?}\n{}",
        e.took,
        e.stderr
    );
}

/// Bytes that keep arriving are no progress: only a completed command is.
#[test]
fn a_target_trickling_a_reply_ends_the_run() {
    let e = run_until_given_up(Fault::Trickle, Duration::from_secs(25));
    eprintln!("{:?}\n{}", e.took, e.stderr);
    assert_reported_and_saved(&e, "no command completed for");
    let bound = Duration::from_secs(2 * TIMEOUT + RECONNECT + 2);
    assert!(e.took < bound, "{:?}\n{}", e.took, e.stderr);
}

/// A target lost for good (connections refused) is given up one reconnect window after
/// the loss, not one more window for each call that follows (draining, closing).
#[test]
fn a_target_lost_for_good_is_given_up_after_one_reconnect_window() {
    let e = run_until_given_up(Fault::Gone, Duration::from_secs(25));
    eprintln!("{:?}\n{}", e.took, e.stderr);
    assert_reported_and_saved(&e, &format!("no new login within {RECONNECT} s"));
    let window = Duration::from_secs(RECONNECT);
    assert!(
        e.took >= window && e.took < window + Duration::from_secs(3),
        "{:?}\n{}",
        e.took,
        e.stderr
    );
}

/// The scripted target: iSCSI PDUs built with the initiator's own codec.
mod scripted {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use storbench_iscsi::pdu::{BHS_LEN, Bhs, RESERVED_TAG, flag, op, pad_len};

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Fault {
        Silent,
        Trickle,
        Gone,
    }

    /// 64 MiB of 512-byte blocks.
    const BLOCKS: u64 = 128 * 1024;
    const WINDOW: u32 = 32;

    struct Shared {
        fault: Fault,
        /// Reads answered before the fault.
        good_reads: usize,
        reads: AtomicUsize,
        faulty_since: Mutex<Option<Instant>>,
        gone: AtomicBool,
    }

    impl Shared {
        /// Whether the target is faulty now; the read that crosses the limit turns it so.
        fn faulty(&self, is_read: bool) -> bool {
            if self.faulty_since.lock().unwrap().is_some() {
                return true;
            }
            if is_read && self.reads.fetch_add(1, Ordering::Relaxed) >= self.good_reads {
                *self.faulty_since.lock().unwrap() = Some(Instant::now());
                return true;
            }
            false
        }
    }

    pub struct Target {
        pub url: String,
        shared: Arc<Shared>,
    }

    impl Target {
        pub fn faulty_since(&self) -> Option<Instant> {
            *self.shared.faulty_since.lock().unwrap()
        }
    }

    impl Drop for Target {
        fn drop(&mut self) {
            self.shared.gone.store(true, Ordering::Relaxed);
        }
    }

    /// Starts the target on 127.0.0.1; it answers `good_reads` reads, then turns faulty.
    pub fn start(fault: Fault, good_reads: usize) -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!(
            "iscsi://{}/iqn.2026-12.test:stall/0",
            listener.local_addr().unwrap()
        );
        let shared = Arc::new(Shared {
            fault,
            good_reads,
            reads: AtomicUsize::new(0),
            faulty_since: Mutex::new(None),
            gone: AtomicBool::new(false),
        });
        let s = shared.clone();
        std::thread::spawn(move || {
            while !s.gone.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        conn.set_nonblocking(false).unwrap();
                        let s = s.clone();
                        std::thread::spawn(move || serve(conn, &s));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
            // Dropping the listener refuses later connections: the target is gone.
        });
        Target { url, shared }
    }

    fn read_pdu(s: &mut TcpStream) -> Option<Bhs> {
        let mut h = [0u8; BHS_LEN];
        s.read_exact(&mut h).ok()?;
        let bhs = Bhs(h);
        let len = bhs.data_len() as usize;
        let mut data = vec![0u8; len + pad_len(len)];
        s.read_exact(&mut data).ok()?;
        Some(bhs)
    }

    fn pdu_bytes(mut bhs: Bhs, data: &[u8]) -> Vec<u8> {
        bhs.set_data_len(data.len() as u32);
        let mut out = bhs.0.to_vec();
        out.extend_from_slice(data);
        out.resize(out.len() + pad_len(data.len()), 0);
        out
    }

    /// Sequence numbers of one connection.
    struct Sn {
        stat: u32,
        exp_cmd: u32,
    }

    impl Sn {
        fn stamp(&mut self, r: &mut Bhs, status: bool) {
            r.set_u32(24, self.stat);
            r.set_u32(28, self.exp_cmd);
            r.set_u32(32, self.exp_cmd + WINDOW - 1);
            if status {
                self.stat += 1;
            }
        }
    }

    fn serve(mut s: TcpStream, shared: &Shared) {
        let mut sn = Sn {
            stat: 1,
            exp_cmd: 0,
        };
        let mut trickling = false;
        while let Some(req) = read_pdu(&mut s) {
            let faulty = shared.faulty(req.opcode() == op::SCSI_CMD && is_read(&req));
            match req.opcode() {
                op::LOGIN_REQ => login(&mut s, &req, &mut sn),
                _ if faulty && shared.fault == Fault::Gone => {
                    shared.gone.store(true, Ordering::Relaxed);
                    let _ = s.shutdown(Shutdown::Both);
                    return;
                }
                op::SCSI_CMD if faulty && shared.fault == Fault::Trickle && !trickling => {
                    trickling = true;
                    let head = data_in_head(&req, &mut sn);
                    let out = s.try_clone().unwrap();
                    std::thread::spawn(move || trickle(out, head));
                }
                _ if faulty => {}
                op::SCSI_CMD => {
                    if !req.is_immediate() {
                        sn.exp_cmd = req.u32_at(24).wrapping_add(1);
                    }
                    let _ = s.write_all(&answer(&req, &mut sn));
                }
                op::NOP_OUT if req.itt() != RESERVED_TAG => {
                    let mut r = Bhs::default();
                    r.0[0] = op::NOP_IN;
                    r.0[1] = 0x80;
                    r.set_u32(16, req.itt());
                    r.set_u32(20, RESERVED_TAG);
                    sn.stamp(&mut r, true);
                    let _ = s.write_all(&pdu_bytes(r, &[]));
                }
                op::LOGOUT_REQ => {
                    let mut r = Bhs::default();
                    r.0[0] = op::LOGOUT_RESP;
                    r.0[1] = 0x80;
                    r.set_u32(16, req.itt());
                    sn.stamp(&mut r, true);
                    let _ = s.write_all(&pdu_bytes(r, &[]));
                    return;
                }
                _ => {}
            }
        }
    }

    /// Takes any login: security stage straight to operational, then full feature phase.
    fn login(s: &mut TcpStream, req: &Bhs, sn: &mut Sn) {
        sn.exp_cmd = req.u32_at(24);
        let (csg, nsg) = ((req.flags() >> 2) & 3, req.flags() & 3);
        let mut r = Bhs::default();
        r.0[0] = op::LOGIN_RESP;
        r.0[1] = 0x80 | (csg << 2) | if csg == 0 { 1 } else { nsg };
        r.0[8..14].copy_from_slice(&req.0[8..14]);
        r.0[14..16].copy_from_slice(&7u16.to_be_bytes());
        r.set_u32(16, req.itt());
        sn.stamp(&mut r, true);
        let keys: &[u8] = if csg == 1 {
            b"MaxRecvDataSegmentLength=65536\0InitialR2T=Yes\0ImmediateData=No\0"
        } else {
            b""
        };
        let _ = s.write_all(&pdu_bytes(r, keys));
    }

    fn is_read(cmd: &Bhs) -> bool {
        matches!(cmd.0[32], 0x08 | 0x28 | 0x88 | 0xa8)
    }

    /// The answer to a command of a healthy target: data for INQUIRY and READ CAPACITY(16),
    /// zeros for reads, GOOD for the rest.
    fn answer(cmd: &Bhs, sn: &mut Sn) -> Vec<u8> {
        let wants = cmd.u32_at(20) as usize;
        if cmd.flags() & flag::READ == 0 || wants == 0 {
            let mut r = Bhs::default();
            r.0[0] = op::SCSI_RESP;
            r.0[1] = 0x80;
            r.set_u32(16, cmd.itt());
            sn.stamp(&mut r, true);
            return pdu_bytes(r, &[]);
        }
        let mut data = vec![0u8; wants];
        match cmd.0[32] {
            0x12 => {
                // INQUIRY: a disk, with a vendor and product.
                data[4] = 91;
                data[8..16].copy_from_slice(b"STORBNCH");
                data[16..32].copy_from_slice(b"SCRIPTED TARGET ");
            }
            0x9e => {
                // READ CAPACITY(16): last LBA and block size.
                data[0..8].copy_from_slice(&(BLOCKS - 1).to_be_bytes());
                data[8..12].copy_from_slice(&512u32.to_be_bytes());
            }
            _ => {}
        }
        pdu_bytes(data_in_head(cmd, sn), &data)
    }

    /// A final Data-In with status carrying all of `cmd`'s data, as a header.
    fn data_in_head(cmd: &Bhs, sn: &mut Sn) -> Bhs {
        let mut r = Bhs::default();
        r.0[0] = op::DATA_IN;
        r.0[1] = flag::FINAL | flag::STATUS;
        r.set_u32(16, cmd.itt());
        r.set_u32(20, RESERVED_TAG);
        sn.stamp(&mut r, true);
        r.set_data_len(cmd.u32_at(20));
        r
    }

    /// Sends `head` and its data one byte every 100 ms until the connection closes.
    fn trickle(mut out: TcpStream, head: Bhs) {
        let len = head.data_len() as usize;
        let mut bytes = head.0.to_vec();
        bytes.resize(BHS_LEN + len + pad_len(len), 0);
        for b in bytes {
            std::thread::sleep(Duration::from_millis(100));
            if out.write_all(&[b]).is_err() {
                return;
            }
        }
    }
}
