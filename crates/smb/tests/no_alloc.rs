//! The hot-path rule, checked: once warmed up, pipelined READs and WRITEs (plain, signed and
//! sealed) allocate nothing on the thread doing the IO. Against a real smbd; skips with a
//! printed reason when Samba is not installed.

use storbench_smb::{Client, ClientConfig, Completion, FileId, SmbUrl, Submit};
use storbench_testkit::alloc::{CountingAllocator, allocations_during};
use storbench_testkit::smbd::{self, SHARE, Smbd, SmbdOptions};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const DEPTH: usize = 16;

/// `n` rounds of DEPTH IOs of `bs` bytes, all in flight together.
fn rounds(
    c: &mut Client,
    id: FileId,
    bufs: &mut [Vec<u8>],
    out: &mut Vec<Completion>,
    write: bool,
    bs: u32,
    n: u64,
) {
    for r in 0..n {
        for (i, b) in bufs.iter_mut().enumerate() {
            let off = ((r * DEPTH as u64 + i as u64) % 32) * u64::from(bs);
            // SAFETY: each buffer serves one IO at a time and outlives the wait below.
            let s = unsafe {
                if write {
                    c.submit_write(id, off, b.as_ptr(), bs, i as u64)
                } else {
                    c.submit_read(id, off, b.as_mut_ptr(), bs, i as u64)
                }
            }
            .unwrap();
            assert_eq!(s, Submit::Queued);
        }
        c.commit().unwrap();
        out.clear();
        c.reap(DEPTH, out).unwrap();
        assert!(out.iter().all(|d| d.result == Ok(u64::from(bs))), "{out:?}");
    }
}

#[test]
fn smb_pipelined_io_allocates_nothing_plain_signed_or_sealed() {
    if let Some(why) = smbd::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let s = Smbd::start_with(SmbdOptions::default()).expect("start smbd");
    for (k, query) in ["", "?sign=1", "?seal=1"].into_iter().enumerate() {
        let u = SmbUrl::parse(&format!(
            "smb://{}@127.0.0.1:{}/{SHARE}{query}",
            s.user(),
            s.port
        ))
        .unwrap();
        let mut c =
            Client::connect(&ClientConfig::from_url(&u, Some(s.password().into())).unwrap())
                .unwrap();
        let (id, _) = c.open(&format!("na{k}"), true, true).unwrap();
        for bs in [4096u32, 1 << 20] {
            let mut bufs: Vec<Vec<u8>> = (0..DEPTH).map(|_| vec![7u8; bs as usize]).collect();
            let mut out = Vec::with_capacity(DEPTH);
            for write in [true, false] {
                rounds(&mut c, id, &mut bufs, &mut out, write, bs, 3);
                let n =
                    allocations_during(|| rounds(&mut c, id, &mut bufs, &mut out, write, bs, 8));
                assert_eq!(n, 0, "{query:?} bs={bs} write={write}: {n} allocations");
            }
        }
        c.close(id).unwrap();
    }
}
