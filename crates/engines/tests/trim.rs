//! Trim punches a hole in files: the range reads back as zeros, its neighbours keep their data.

mod common;

use std::os::unix::fs::MetadataExt;

use common::{Driver, job, pattern, rw_open};
use storbench_core::IoKind;

const BS: usize = 4096;

fn trim_punches_hole(engine: &str, base: &str) {
    let dir = tempfile::tempdir_in(base).unwrap();
    let path = dir.path().join("trim");
    let path_s = path.to_str().unwrap();
    let mut d = Driver::new(&job(engine, 8, &[]), BS).unwrap();
    assert!(d.engine.caps().trim);
    let id = d.open(path_s, rw_open(false)).unwrap();
    let writes: Vec<_> = (0..16u64)
        .map(|b| (IoKind::Write, b * BS as u64, BS as u32))
        .collect();
    d.run(id, &writes, pattern, |_, _, r| assert_eq!(r, BS as i64))
        .unwrap();
    d.one(id, IoKind::Fsync, 0, 0).unwrap();
    let blocks_before = std::fs::metadata(&path).unwrap().blocks();

    assert_eq!(
        d.one(id, IoKind::Trim, 4 * BS as u64, 4 * BS as u32)
            .unwrap(),
        (4 * BS) as i64
    );
    assert!(
        std::fs::metadata(&path).unwrap().blocks() < blocks_before,
        "{engine}: space freed"
    );
    assert_eq!(
        d.engine.size(id).unwrap(),
        16 * BS as u64,
        "{engine}: trim keeps the size"
    );

    let reads: Vec<_> = (0..16u64)
        .map(|b| (IoKind::Read, b * BS as u64, BS as u32))
        .collect();
    let mut expected = vec![0u8; BS];
    d.run(
        id,
        &reads,
        |_, buf| buf.fill(0xAA),
        |i, buf, r| {
            assert_eq!(r, BS as i64);
            if (4..8).contains(&i) {
                assert!(
                    buf.iter().all(|&b| b == 0),
                    "{engine} {base}: block {i} not zero after trim"
                );
            } else {
                pattern(i, &mut expected);
                assert!(
                    buf == expected.as_slice(),
                    "{engine} {base}: block {i} lost its data"
                );
            }
        },
    )
    .unwrap();
}

#[test]
fn trim_on_ext4_and_tmpfs() {
    for engine in [
        "psync", "sync", "pvsync2", "io_uring", "libaio", "posixaio", "mmap",
    ] {
        if !common::available(&job(engine, 8, &[])) {
            continue;
        }
        for base in ["/tmp", "/dev/shm"] {
            trim_punches_hole(engine, base);
        }
    }
}
