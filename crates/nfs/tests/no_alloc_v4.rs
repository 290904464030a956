//! The hot-path rule for NFSv4.1: once warmed up, pipelined WRITEs and READs on the
//! session's slots allocate nothing on the thread doing the IO. Against a real v4-only
//! nfs-ganesha; skips with a printed reason when it is not installed.

use storbench_nfs::NfsUrl;
use storbench_nfs::v4::{Client4, Create, SHARE_ACCESS_BOTH, Stable4};
use storbench_testkit::alloc::{CountingAllocator, allocations_during};
use storbench_testkit::ganesha::{self, Ganesha};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const DEPTH: usize = 16;

/// `rounds` rounds of DEPTH IOs of `bs` bytes, all in flight together.
fn rounds(c: &mut Client4, f: u32, bufs: &mut [Vec<u8>], write: bool, bs: u32, rounds: u64) {
    let file_blocks = (4u64 << 20) / u64::from(bs);
    for r in 0..rounds {
        for (i, b) in bufs.iter_mut().enumerate() {
            let off = ((r * DEPTH as u64 + i as u64) % file_blocks) * u64::from(bs);
            // SAFETY: each buffer serves one request at a time and outlives the reap below.
            unsafe {
                if write {
                    c.submit_write(f, off, b.as_ptr(), bs, Stable4::Unstable, i as u64)
                } else {
                    c.submit_read(f, off, b.as_mut_ptr(), bs, i as u64)
                }
            }
            .unwrap();
        }
        c.flush().unwrap();
        let mut left = DEPTH;
        while left > 0 {
            left -= c.reap(1, &mut |_, _| {}).unwrap();
        }
    }
}

#[test]
fn v4_steady_state_io_does_not_allocate() {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    assert_eq!(
        allocations_during(|| drop(std::hint::black_box(vec![0u8; 16]))),
        1
    );
    let g = Ganesha::start_v4_only().expect("start ganesha");
    let url = NfsUrl::parse(&g.url4("")).unwrap();
    let mut c = Client4::connect(&url, 1, DEPTH as u32).expect("session");
    let f = c
        .open(
            "f",
            SHARE_ACCESS_BOTH,
            Some(Create::Guarded { mode: 0o644 }),
        )
        .unwrap();
    let mut bufs = vec![vec![0x5au8; 256 << 10]; DEPTH];
    for (write, bs) in [(true, 64 << 10), (false, 4096), (false, 256 << 10)] {
        rounds(&mut c, f, &mut bufs, write, bs, 40);
        let n = allocations_during(|| rounds(&mut c, f, &mut bufs, write, bs, 100));
        let what = if write { "write" } else { "read" };
        assert_eq!(n, 0, "{n} allocations in 1600 {what}s of {bs} bytes");
    }
    c.commit(f).unwrap();
}
