//! The hot-path rule, checked: once warmed up, pipelined WRITEs (with their copies kept for
//! re-sending and the automatic COMMITs that free them) and READs (small ones through the
//! record buffer, large ones placed directly) allocate nothing on the thread doing the IO.
//! Against a real nfs-ganesha; skips with a printed reason when it is not installed.

use storbench_nfs::{Client, Fh, NfsUrl, Stable};
use storbench_testkit::alloc::{CountingAllocator, allocations_during};
use storbench_testkit::ganesha::{self, Ganesha};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const DEPTH: usize = 16;

/// `rounds` rounds of DEPTH IOs of `bs` bytes, all in flight together.
fn rounds(c: &mut Client, fh: &Fh, bufs: &mut [Vec<u8>], write: bool, bs: u32, rounds: u64) {
    let (rsize, wsize) = (c.rsize(), c.wsize());
    let file_blocks = (4u64 << 20) / u64::from(bs);
    for r in 0..rounds {
        for (i, b) in bufs.iter_mut().enumerate() {
            let off = ((r * DEPTH as u64 + i as u64) % file_blocks) * u64::from(bs);
            let t = c.transport();
            // SAFETY: each buffer serves one request at a time and outlives the wait below.
            unsafe {
                if write {
                    t.write(
                        fh,
                        0,
                        off,
                        b.as_ptr(),
                        bs,
                        wsize,
                        Stable::Unstable,
                        i as u64,
                    )
                } else {
                    t.read(fh, 0, off, b.as_mut_ptr(), bs, rsize, i as u64)
                }
            }
            .unwrap();
        }
        c.transport().flush().unwrap();
        let mut left = DEPTH;
        while left > 0 {
            left -= c.transport().wait(1, &mut |_, _| {}).unwrap();
        }
    }
}

#[test]
fn steady_state_io_does_not_allocate() {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    // The counter sees this thread's allocations (or the test below would prove nothing).
    assert_eq!(
        allocations_during(|| drop(std::hint::black_box(vec![0u8; 16]))),
        1
    );
    let g = Ganesha::start().expect("start ganesha");
    // A 1 MiB uncommitted-write ring, so automatic COMMITs run many times in the test.
    let url = NfsUrl::parse(&(g.url("") + "&uncommitted=1m&wsize=65536")).unwrap();
    let mut c = Client::mount(&url).expect("mount");
    let fh = c.create("f", 0o644).unwrap();
    c.transport().set_path(0, "/export/f");
    let mut bufs = vec![vec![0x5au8; 256 << 10]; DEPTH];

    for (write, bs) in [(true, 64 << 10), (false, 4096), (false, 256 << 10)] {
        rounds(&mut c, &fh, &mut bufs, write, bs, 40);
        let n = allocations_during(|| rounds(&mut c, &fh, &mut bufs, write, bs, 100));
        let what = if write { "write" } else { "read" };
        assert_eq!(n, 0, "{n} allocations in 1600 {what}s of {bs} bytes");
    }
    let auto = c.transport().durability().auto_commits;
    assert!(
        auto > 50,
        "only {auto} automatic COMMITs: the ring was not exercised"
    );
}
