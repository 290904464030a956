//! Byte-level tests of the session against a scripted in-process target on 127.0.0.1, for
//! what tgtd cannot be made to do on demand: UNIT ATTENTION, BUSY and TASK SET FULL answers,
//! a one-command CmdSN window, NOP-In pings from the target and sense decoding. These come in
//! addition to the tgtd tests, not instead of them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use storbench_iscsi::pdu::{BHS_LEN, Bhs, RESERVED_TAG, op, pad_len};
use storbench_iscsi::{Config, Dir, Error, ScsiFailure, Session, Url, scsi};

/// How the target answers the n-th SCSI command it receives.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Good,
    Status(u8),
    Sense { key: u8, asc: u8 },
}

#[derive(Default, Debug)]
struct Seen {
    commands: usize,
    max_outstanding: usize,
    nop_replies: Vec<u32>,
}

fn read_pdu(s: &mut TcpStream) -> Option<(Bhs, Vec<u8>)> {
    let mut h = [0u8; BHS_LEN];
    s.read_exact(&mut h).ok()?;
    let bhs = Bhs(h);
    let len = bhs.data_len() as usize;
    let mut data = vec![0u8; len + pad_len(len)];
    s.read_exact(&mut data).ok()?;
    data.truncate(len);
    Some((bhs, data))
}

fn send(s: &mut TcpStream, mut bhs: Bhs, data: &[u8]) {
    bhs.set_data_len(data.len() as u32);
    let mut out = bhs.0.to_vec();
    out.extend_from_slice(data);
    out.resize(out.len() + pad_len(data.len()), 0);
    let _ = s.write_all(&out);
}

/// Starts a target that logs anyone in with a CmdSN window of `window` and answers commands
/// from `script` (then GOOD). With `ping`, it sends a NOP-In ping before the first answer.
fn target(
    window: u32,
    script: Vec<Answer>,
    ping: bool,
) -> (String, Arc<Mutex<Seen>>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "iscsi://{}/iqn.2026-11.test:scripted/1",
        listener.local_addr().unwrap()
    );
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = seen.clone();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut stat_sn = 1u32;
        let mut exp_cmd_sn = 0u32;
        let mut pending: Vec<(Bhs, Answer)> = Vec::new();
        let mut pinged = !ping;
        while let Some((req, _data)) = read_pdu(&mut s) {
            let mut r = Bhs::default();
            r.set_u32(16, req.itt());
            match req.opcode() {
                op::LOGIN_REQ => {
                    exp_cmd_sn = req.u32_at(24);
                    let (csg, nsg) = ((req.flags() >> 2) & 3, req.flags() & 3);
                    r.0[0] = op::LOGIN_RESP;
                    r.0[1] = 0x80 | (csg << 2) | if csg == 0 { 1 } else { nsg };
                    r.0[8..14].copy_from_slice(&req.0[8..14]);
                    r.0[14..16].copy_from_slice(&7u16.to_be_bytes());
                    r.set_u32(24, stat_sn);
                    r.set_u32(28, exp_cmd_sn);
                    r.set_u32(32, exp_cmd_sn + window - 1);
                    stat_sn += 1;
                    let keys: &[u8] = if csg == 1 {
                        b"MaxRecvDataSegmentLength=8192\0InitialR2T=Yes\0"
                    } else {
                        b""
                    };
                    send(&mut s, r, keys);
                }
                op::SCSI_CMD => {
                    let mut st = seen2.lock().unwrap();
                    let answer = script.get(st.commands).copied().unwrap_or(Answer::Good);
                    st.commands += 1;
                    pending.push((req, answer));
                    st.max_outstanding = st.max_outstanding.max(pending.len());
                    drop(st);
                    if !pinged {
                        pinged = true;
                        let mut p = Bhs::default();
                        p.0[0] = op::NOP_IN;
                        p.0[1] = 0x80;
                        p.set_u32(16, RESERVED_TAG);
                        p.set_u32(20, 0x1234_5678);
                        p.set_u32(24, stat_sn);
                        p.set_u32(28, exp_cmd_sn);
                        p.set_u32(32, exp_cmd_sn + window - 1);
                        send(&mut s, p, &[]);
                    }
                    // Give the initiator time to (wrongly) send past the window before we
                    // answer: anything already on the wire counts as outstanding.
                    s.set_read_timeout(Some(std::time::Duration::from_millis(30)))
                        .unwrap();
                    if s.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
                        let mut st = seen2.lock().unwrap();
                        st.max_outstanding = st.max_outstanding.max(pending.len() + 1);
                    }
                    s.set_read_timeout(None).unwrap();
                    let (cmd, answer) = pending.remove(0);
                    exp_cmd_sn = cmd.u32_at(24).wrapping_add(1);
                    respond(&mut s, &cmd, answer, stat_sn, exp_cmd_sn, window);
                    stat_sn += 1;
                }
                op::NOP_OUT => seen2.lock().unwrap().nop_replies.push(req.ttt()),
                op::LOGOUT_REQ => {
                    r.0[0] = op::LOGOUT_RESP;
                    r.0[1] = 0x80;
                    r.set_u32(24, stat_sn);
                    r.set_u32(28, exp_cmd_sn);
                    r.set_u32(32, exp_cmd_sn + window - 1);
                    send(&mut s, r, &[]);
                    return;
                }
                _ => {}
            }
        }
    });
    (url, seen, handle)
}

fn respond(s: &mut TcpStream, cmd: &Bhs, answer: Answer, stat_sn: u32, exp: u32, window: u32) {
    let mut r = Bhs::default();
    r.0[0] = op::SCSI_RESP;
    r.0[1] = 0x80;
    r.set_u32(16, cmd.itt());
    r.set_u32(24, stat_sn);
    r.set_u32(28, exp);
    r.set_u32(32, exp + window - 1);
    let mut data = Vec::new();
    match answer {
        Answer::Good => {}
        Answer::Status(st) => r.0[3] = st,
        Answer::Sense { key, asc } => {
            r.0[3] = 0x02;
            let mut sense = [0u8; 18];
            sense[0] = 0x70;
            sense[2] = key;
            sense[7] = 10;
            sense[12] = asc;
            data.extend_from_slice(&(sense.len() as u16).to_be_bytes());
            data.extend_from_slice(&sense);
        }
    }
    send(s, r, &data);
}

fn connect(url: &str) -> Session {
    let mut cfg = Config::new(Url::parse(url).unwrap());
    cfg.max_tasks = 8;
    Session::connect(cfg).expect("login to the scripted target")
}

#[test]
fn unit_attention_is_retried_once_and_pings_are_answered() {
    let (url, seen, t) = target(8, vec![Answer::Sense { key: 6, asc: 0x29 }], true);
    let mut s = connect(&url);
    s.test_unit_ready().expect("UNIT ATTENTION retried");
    s.logout().unwrap();
    t.join().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.commands, 2);
    assert_eq!(seen.nop_replies, vec![0x1234_5678]);
}

#[test]
fn a_second_unit_attention_is_an_error() {
    let ua = Answer::Sense { key: 6, asc: 0x29 };
    let (url, _, t) = target(8, vec![ua, ua], false);
    let mut s = connect(&url);
    let e = s.test_unit_ready().unwrap_err();
    assert!(
        e.to_string().contains("reset occurred") || e.to_string().contains("power on"),
        "{e}"
    );
    s.logout().unwrap();
    t.join().unwrap();
}

#[test]
fn busy_and_task_set_full_are_backed_off_and_retried() {
    let (url, seen, t) = target(
        8,
        vec![
            Answer::Status(0x08),
            Answer::Status(0x28),
            Answer::Status(0x08),
        ],
        false,
    );
    let mut s = connect(&url);
    s.test_unit_ready().expect("retried until GOOD");
    s.logout().unwrap();
    t.join().unwrap();
    assert_eq!(seen.lock().unwrap().commands, 4);
}

#[test]
fn write_protect_is_named() {
    let (url, _, t) = target(8, vec![Answer::Sense { key: 7, asc: 0x27 }], false);
    let mut s = connect(&url);
    let mut buf = vec![0u8; 512];
    let cdb = s.rw_cdb(true, 5, 1).unwrap();
    let e = s.command(cdb, Dir::Write, &mut buf).unwrap_err();
    match &e {
        Error::Scsi {
            status: ScsiFailure::Check(sense),
            lba,
            command,
            ..
        } => {
            assert_eq!((sense.key, *lba, *command), (7, Some(5), "WRITE(16)"));
        }
        other => panic!("unexpected {other}"),
    }
    assert!(
        e.to_string()
            .contains("WRITE(16) at LBA 5: CHECK CONDITION: write protected"),
        "{e}"
    );
    s.logout().unwrap();
    t.join().unwrap();
}

#[test]
fn a_one_command_window_is_respected() {
    let (url, seen, t) = target(1, Vec::new(), false);
    let mut s = connect(&url);
    assert_eq!(s.cmdsn_window(), 1);
    let cdb = scsi::test_unit_ready();
    for tag in 0..6 {
        // SAFETY: no data buffer.
        assert!(unsafe { s.submit(tag, cdb, Dir::None, std::ptr::null_mut(), 0) }.unwrap());
    }
    s.flush().unwrap();
    let mut done = 0;
    while done < 6 {
        s.wait_finished(1).unwrap();
        done += s.drain_finished().count();
    }
    s.logout().unwrap();
    t.join().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!((seen.commands, seen.max_outstanding), (6, 1));
}
