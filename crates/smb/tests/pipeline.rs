//! Pipelining against a real Samba smbd behind a slow link: collecting one completion
//! must not wait for replies that are still arriving, or the requests in flight drain
//! before the caller can send new ones and the link idles once per queue depth. A server
//! that stops answering is named with what got no reply.
//! Skips with a reason when Samba is not installed.

use std::net::SocketAddr;
use std::time::Duration;

use storbench_smb::{Client, ClientConfig, SmbUrl, Submit};
use storbench_testkit::smbd::{self, SHARE, Smbd};
use storbench_testkit::stopped::Stopped;
use storbench_testkit::tcpcut::CutProxy;

const MIB: usize = 1 << 20;

#[test]
fn reaping_one_read_leaves_the_replies_still_arriving_in_flight() {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start().expect("start smbd");
    let data: Vec<u8> = (0..4 * MIB).map(|i| (i * 13 + i / 4093) as u8).collect();
    std::fs::write(s.share_dir(SHARE).join("paced.bin"), &data).unwrap();
    // About 6.4 MB/s from the server: each 1 MiB reply takes some 160 ms to arrive.
    let pace = Some((64 * 1024, Duration::from_millis(10)));
    let proxy =
        CutProxy::start_paced(SocketAddr::from(([127, 0, 0, 1], s.port)), pace).expect("relay");
    let url = format!(
        "smb://{}@127.0.0.1:{}/{SHARE}?vers=3.1.1",
        s.user(),
        proxy.port
    );
    let cfg =
        ClientConfig::from_url(&SmbUrl::parse(&url).unwrap(), Some(s.password().into())).unwrap();
    let mut c = Client::connect(&cfg).unwrap_or_else(|e| panic!("login: {e}\n{}", s.log()));
    let (id, _) = c.open_read("paced.bin").unwrap();
    let mut buf = vec![0u8; 4 * MIB];
    for (i, part) in buf.chunks_mut(MIB).enumerate() {
        // SAFETY: `buf` outlives every completion reaped below.
        let r = unsafe {
            c.submit_read(
                id,
                (i * MIB) as u64,
                part.as_mut_ptr(),
                MIB as u32,
                i as u64,
            )
        };
        assert_eq!(r.unwrap(), Submit::Queued, "credits for 4 MiB in flight");
    }
    c.commit().unwrap();
    // Each reap(1) must return once one reply is in: the next one is still arriving.
    let mut done = Vec::new();
    let mut per_call = Vec::new();
    while done.len() < 4 {
        let before = done.len();
        c.reap(1, &mut done).unwrap();
        per_call.push(done.len() - before);
    }
    assert!(
        per_call.iter().all(|&n| n == 1),
        "completions per reap(1): {per_call:?}; more than one means it waited for replies \
         that were still arriving while nothing new could be sent"
    );
    for d in &done {
        assert_eq!(d.result, Ok(MIB as u64), "IO {}", d.user);
    }
    assert!(buf == data, "the data read is the file's");
    c.close(id).unwrap();
}

/// A server that stops answering while IOs are in flight: the error says what got no reply
/// (it read "no reply to reply").
#[test]
fn a_silent_server_is_named_with_what_got_no_reply() {
    storbench_testkit::require!(smbd::unavailable());
    let s = Smbd::start().expect("start smbd");
    std::fs::write(s.share_dir(SHARE).join("still.bin"), vec![7u8; MIB]).unwrap();
    let url = format!("smb://{}@127.0.0.1:{}/{SHARE}?timeout=1", s.user(), s.port);
    let cfg =
        ClientConfig::from_url(&SmbUrl::parse(&url).unwrap(), Some(s.password().into())).unwrap();
    let mut c = Client::connect(&cfg).unwrap_or_else(|e| panic!("login: {e}\n{}", s.log()));
    let (id, _) = c.open_read("still.bin").unwrap();
    let pgid = s.pid().expect("smbd runs") as i32;
    // Continued when dropped, before the client (declared earlier) logs off.
    let _resume = Stopped::group(pgid);
    let mut buf = vec![0u8; MIB];
    // SAFETY: `buf` outlives the reap below.
    let r = unsafe { c.submit_read(id, 0, buf.as_mut_ptr(), MIB as u32, 1) };
    assert_eq!(r.unwrap(), Submit::Queued);
    let e = c.reap(1, &mut Vec::new()).unwrap_err().to_string();
    assert!(
        e.contains("no reply to the requests in flight within 1 s"),
        "{e}"
    );
}
