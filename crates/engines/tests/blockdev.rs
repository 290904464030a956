//! The block-device path on a loop device (root only; skips with a reason otherwise): size
//! through BLKGETSIZE64, O_DIRECT write and read back, BLKDISCARD trim, BLKFLSBUF invalidate.

mod common;

use std::process::Command;

use common::{Driver, job, pattern, rw_open};
use storbench_core::IoKind;

const DEV_SIZE: u64 = 64 << 20;
const BS: usize = 4096;

/// A loop device over a sparse file, detached on drop (also when a test fails).
struct LoopDev {
    dev: String,
    _backing: tempfile::NamedTempFile,
}

impl LoopDev {
    fn attach() -> Option<LoopDev> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skip: loop devices need root");
            return None;
        }
        let backing = tempfile::NamedTempFile::new_in("/tmp").ok()?;
        backing.as_file().set_len(DEV_SIZE).ok()?;
        let out = match Command::new("losetup")
            .args(["-f", "--show"])
            .arg(backing.path())
            .output()
        {
            Ok(out) if out.status.success() => out,
            Ok(out) => {
                eprintln!(
                    "skip: losetup failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                return None;
            }
            Err(e) => {
                eprintln!("skip: cannot run losetup: {e}");
                return None;
            }
        };
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Some(LoopDev {
            dev,
            _backing: backing,
        })
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn block_device_round_trip(dev: &str, engine: &str, depth: u32) {
    let mut d = Driver::new(&job(engine, depth, &[]), BS).unwrap();
    let open = storbench_core::OpenOptions {
        create: false,
        ..rw_open(true)
    };
    let id = d
        .open(dev, open)
        .unwrap_or_else(|e| panic!("{engine}: {e}"));
    assert_eq!(
        d.engine.size(id).unwrap(),
        DEV_SIZE,
        "{engine}: BLKGETSIZE64"
    );
    d.engine.invalidate(id).unwrap();

    let blocks: Vec<u64> = (0..128u64).map(|i| (i * 37) % 128 + 1000).collect();
    let ios = |kind| {
        blocks
            .iter()
            .map(|&b| (kind, b * BS as u64, BS as u32))
            .collect::<Vec<_>>()
    };
    d.run(id, &ios(IoKind::Write), pattern, |_, _, r| {
        assert_eq!(r, BS as i64)
    })
    .unwrap();
    d.one(id, IoKind::Fsync, 0, 0).unwrap();
    let mut expected = vec![0u8; BS];
    d.run(
        id,
        &ios(IoKind::Read),
        |_, buf| buf.fill(0xAA),
        |i, buf, r| {
            assert_eq!(r, BS as i64, "{engine}");
            pattern(i, &mut expected);
            assert!(
                buf == expected.as_slice(),
                "{engine}: block {} differs",
                blocks[i]
            );
        },
    )
    .unwrap();

    // BLKDISCARD on a loop device punches the backing file: the range reads back as zeros.
    let first = blocks.iter().min().unwrap() * BS as u64;
    assert_eq!(
        d.one(id, IoKind::Trim, first, 64 * BS as u32).unwrap(),
        64 * BS as i64
    );
    d.run(
        id,
        &[(IoKind::Read, first, BS as u32)],
        |_, b| b.fill(0xAA),
        |_, b, r| {
            assert_eq!(r, BS as i64);
            assert!(
                b.iter().all(|&x| x == 0),
                "{engine}: trimmed block reads back zeros"
            );
        },
    )
    .unwrap();
    d.engine.close(id).unwrap();
}

#[test]
fn loop_device_block_path() {
    let Some(lo) = LoopDev::attach() else { return };
    for (engine, depth) in [
        ("psync", 1),
        ("io_uring", 32),
        ("libaio", 32),
        ("posixaio", 8),
    ] {
        if common::available(&job(engine, depth, &[])) {
            block_device_round_trip(&lo.dev, engine, depth);
        }
    }
}
