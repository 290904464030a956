//! How often posixaio's reaps sleep: a reap that must wait lets about an eighth of the
//! requests in flight finish first (`posixaio::wait_rank`), as fio 3.33's wait on the
//! first 8 of its in-flight requests does on average, instead of waking for each one.

mod common;

use std::time::Duration;

use common::{Driver, job};
use storbench_core::{IoKind, IoUnit};

const BS: usize = 4096;
const DEPTH: u32 = 32;

/// 32 reads queued on one FIFO finish one at a time, a byte every 20 ms. A reap that needs
/// one completion returns only once the 4th (32 / 8) is done; waking for the oldest would
/// return after the first byte with one completion.
#[test]
fn a_waiting_reap_sleeps_until_an_eighth_of_the_queue_is_done() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let fifo = dir.path().join("fifo");
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0);
    // Held open for writing, so the engine's open does not wait for a writer.
    let writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let mut d = Driver::new(&job("posixaio", DEPTH, &[]), BS).unwrap();
    let file = d.open(fifo.to_str().unwrap(), common::read_only()).unwrap();
    for tag in 0..DEPTH {
        let io = IoUnit {
            file,
            kind: IoKind::Read,
            offset: 0,
            len: BS as u32,
            buf: d.arena.slot(tag),
            buf_index: tag,
            tag,
            ioprio: 0,
        };
        d.engine.queue(&io).unwrap();
    }
    d.engine.commit().unwrap();
    let feeder = std::thread::spawn({
        let mut w = writer.try_clone().unwrap();
        move || {
            for _ in 0..DEPTH {
                std::thread::sleep(Duration::from_millis(20));
                std::io::Write::write_all(&mut w, b"x").unwrap();
            }
        }
    });
    let mut out = Vec::new();
    d.engine.reap(1, &mut out).unwrap();
    let first = out.len();
    // glibc serves one descriptor's requests in queue order: the tags come back in order.
    let tags: Vec<u32> = out.iter().map(|c| c.tag).collect();
    assert_eq!(tags, (0..first as u32).collect::<Vec<_>>());
    assert!(out.iter().all(|c| c.result == 1), "{out:?}");
    // The rest: every request completes exactly once.
    while out.len() < DEPTH as usize {
        d.engine.reap(1, &mut out).unwrap();
    }
    feeder.join().unwrap();
    assert_eq!(out.len(), DEPTH as usize);
    assert!(
        first >= storbench_engines::posixaio::wait_rank(DEPTH as usize),
        "the first reap returned after {first} completion(s)"
    );
    assert_eq!(storbench_engines::posixaio::wait_rank(DEPTH as usize), 4);
    drop(writer);
}
