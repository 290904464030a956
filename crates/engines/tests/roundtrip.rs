//! Every local engine writes a pattern, then reads it back and compares: buffered and
//! O_DIRECT, on ext4 (/tmp) and tmpfs (/dev/shm), at iodepth 1 and 32 for async engines.

mod common;

use std::path::Path;

use common::{Driver, direct_ok, job, pattern, rw_open};
use storbench_core::IoKind;
use storbench_job::SizeSpec;

const BS: usize = 4096;
const BLOCKS: usize = 256;

fn ios(kind: IoKind, order: &[usize]) -> Vec<(IoKind, u64, u32)> {
    order
        .iter()
        .map(|&b| (kind, (b * BS) as u64, BS as u32))
        .collect()
}

/// Writes every block in one scrambled order, syncs, drops the cache, reads them back in
/// another order and compares each block with what was written.
fn roundtrip(engine: &str, opts: &[(&str, &str)], depth: u32, dir: &Path, direct: bool) {
    let what = format!(
        "{engine} {opts:?} iodepth={depth} direct={direct} in {}",
        dir.display()
    );
    let mut spec = job(engine, depth, opts);
    spec.size = Some(SizeSpec::Bytes((BLOCKS * BS) as u64));
    let mut d = Driver::new(&spec, BS).unwrap_or_else(|e| panic!("{what}: {e}"));
    let path = dir.join(format!("{engine}-{depth}-{direct}-{}", opts.len()));
    let id = d
        .open(path.to_str().unwrap(), rw_open(direct))
        .unwrap_or_else(|e| panic!("{what}: {e}"));

    let write_order: Vec<usize> = (0..BLOCKS).map(|i| (i * 97) % BLOCKS).collect();
    let mut written = 0;
    d.run(
        id,
        &ios(IoKind::Write, &write_order),
        |i, buf| pattern(write_order[i], buf),
        |i, _, r| {
            assert_eq!(r, BS as i64, "{what}: write {i}");
            written += 1;
        },
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(written, BLOCKS, "{what}: every write completed once");
    assert_eq!(d.one(id, IoKind::Fsync, 0, 0).unwrap(), 0, "{what}: fsync");
    d.engine
        .invalidate(id)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(
        d.engine.size(id).unwrap(),
        (BLOCKS * BS) as u64,
        "{what}: size"
    );

    let read_order: Vec<usize> = (0..BLOCKS).map(|i| (i * 61 + 5) % BLOCKS).collect();
    let mut expected = vec![0u8; BS];
    let mut read = 0;
    d.run(
        id,
        &ios(IoKind::Read, &read_order),
        |_, buf| buf.fill(0xAA),
        |i, buf, r| {
            assert_eq!(r, BS as i64, "{what}: read {i}");
            pattern(read_order[i], &mut expected);
            assert!(
                buf == expected.as_slice(),
                "{what}: block {} differs",
                read_order[i]
            );
            read += 1;
        },
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(read, BLOCKS, "{what}: every read completed once");
    d.engine.close(id).unwrap();
}

fn matrix(engine: &str, opts: &[(&str, &str)], depths: &[u32], with_direct: bool) {
    if !common::available(&job(engine, 1, opts)) {
        return;
    }
    for base in ["/tmp", "/dev/shm"] {
        let dir = tempfile::tempdir_in(base).unwrap();
        for direct in [false, true] {
            if direct && !(with_direct && direct_ok(dir.path())) {
                continue;
            }
            for &depth in depths {
                roundtrip(engine, opts, depth, dir.path(), direct);
            }
        }
    }
}

#[test]
fn psync_roundtrip() {
    matrix("psync", &[], &[1], true);
}

#[test]
fn sync_roundtrip() {
    matrix("sync", &[], &[1], true);
}

#[test]
fn pvsync2_roundtrip() {
    matrix("pvsync2", &[], &[1], true);
}

#[test]
fn io_uring_roundtrip() {
    matrix("io_uring", &[], &[1, 32], true);
}

#[test]
fn io_uring_registered_buffers_and_files_roundtrip() {
    matrix(
        "io_uring",
        &[("fixedbufs", ""), ("registerfiles", "")],
        &[1, 32],
        true,
    );
}

#[test]
fn io_uring_sqpoll_roundtrip() {
    matrix("io_uring", &[("sqthread_poll", "1")], &[1, 32], true);
}

#[test]
fn libaio_roundtrip() {
    matrix("libaio", &[], &[1, 32], true);
}

#[test]
fn posixaio_roundtrip() {
    matrix("posixaio", &[], &[1, 32], true);
}

#[test]
fn mmap_roundtrip() {
    matrix("mmap", &[], &[1], true);
}

/// Whether polled (hipri) O_DIRECT IO works in `dir`; prints why not.
fn hipri_ok(engine: &str, dir: &Path) -> bool {
    let mut d = Driver::new(&job(engine, 1, &[("hipri", "1")]), BS).unwrap();
    let path = dir.join(format!("{engine}-hipri-probe"));
    let id = match d.open(path.to_str().unwrap(), rw_open(true)) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("skip {engine} hipri in {}: {e}", dir.display());
            return false;
        }
    };
    // Devices without poll queues may take polled writes yet refuse polled reads (EOPNOTSUPP).
    let w = d.one(id, IoKind::Write, 0, BS as u32);
    let r = d.one(id, IoKind::Read, 0, BS as u32);
    let _ = std::fs::remove_file(path);
    match (w, r) {
        (Ok(w), Ok(r)) if w == BS as i64 && r == BS as i64 => true,
        other => {
            eprintln!(
                "skip {engine} hipri in {}: probe write/read gave {other:?}",
                dir.display()
            );
            false
        }
    }
}

/// Polled completions (io_uring IOPOLL, pvsync2 RWF_HIPRI) on O_DIRECT files.
#[test]
fn hipri_roundtrip() {
    for (engine, depths) in [("io_uring", &[1u32, 32][..]), ("pvsync2", &[1][..])] {
        if !common::available(&job(engine, 1, &[("hipri", "1")])) {
            continue;
        }
        for base in ["/tmp", "/dev/shm"] {
            let dir = tempfile::tempdir_in(base).unwrap();
            if !direct_ok(dir.path()) || !hipri_ok(engine, dir.path()) {
                continue;
            }
            for &depth in depths {
                roundtrip(engine, &[("hipri", "1")], depth, dir.path(), true);
            }
        }
    }
}

/// Dropping an async engine with IOs in flight waits for them, so the kernel (or glibc's
/// helper threads) never writes into a freed arena; it must not hang either.
#[test]
fn dropping_an_engine_with_ios_in_flight_is_safe() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let path = dir.path().join("inflight");
    std::fs::write(&path, vec![9u8; 32 * BS]).unwrap();
    for engine in ["io_uring", "libaio", "posixaio"] {
        if !common::available(&job(engine, 32, &[])) {
            continue;
        }
        let started = std::time::Instant::now();
        let mut d = Driver::new(&job(engine, 32, &[]), BS).unwrap();
        let open = storbench_core::OpenOptions {
            read: true,
            ..Default::default()
        };
        let id = d.open(path.to_str().unwrap(), open).unwrap();
        for tag in 0..32u32 {
            let io = storbench_core::IoUnit {
                file: id,
                kind: IoKind::Read,
                offset: u64::from(tag) * BS as u64,
                len: BS as u32,
                buf: d.arena.slot(tag),
                buf_index: tag,
                tag,
                ioprio: 0,
            };
            d.engine.queue(&io).unwrap();
        }
        d.engine.commit().unwrap();
        drop(d);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{engine}: drop hung"
        );
    }
}

/// With SQPOLL the ring's kernel thread `iou-sqp-<tid>` belongs to this process and is found
/// by `kernel_helper_threads`, so a CPU account can include it.
#[test]
fn sqpoll_thread_is_found_for_cpu_accounting() {
    let spec = job("io_uring", 4, &[("sqthread_poll", "1")]);
    if !common::available(&spec) {
        return;
    }
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let mut d = Driver::new(&spec, BS).unwrap();
    let id = d
        .open(dir.path().join("f").to_str().unwrap(), rw_open(false))
        .unwrap();
    assert_eq!(d.one(id, IoKind::Write, 0, BS as u32).unwrap(), BS as i64);
    let info = d.engine.info();
    let owner: i32 = info
        .details
        .iter()
        .find(|(k, _)| k == "io_uring_owner_tid")
        .map(|(_, v)| v.parse().unwrap())
        .expect("owner tid in info");
    // SAFETY: gettid has no preconditions.
    assert_eq!(
        owner,
        unsafe { libc::gettid() },
        "the ring was built on this thread"
    );
    let threads = storbench_engines::io_uring::kernel_helper_threads(owner);
    assert!(
        threads
            .iter()
            .any(|(_, name)| *name == format!("iou-sqp-{owner}")),
        "{threads:?}"
    );
}

/// posixaio waits for the oldest request of each file descriptor, not of all: a request
/// held up on one descriptor (a FIFO nobody has written to yet) must not hide one that
/// finished on another.
#[test]
fn posixaio_waits_for_every_descriptor() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let fifo = dir.path().join("fifo");
    let c_fifo = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0);
    // Held open for writing, so the engine's open does not wait for a writer.
    let mut writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; BS]).unwrap();
    let mut d = Driver::new(&job("posixaio", 4, &[]), BS).unwrap();
    let held = d.open(fifo.to_str().unwrap(), common::read_only()).unwrap();
    let ready = d.open(data.to_str().unwrap(), common::read_only()).unwrap();
    for (tag, file) in [(0, held), (1, ready)] {
        let io = storbench_core::IoUnit {
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
    let mut out = Vec::new();
    // Unblocks the FIFO's read after 3 s, so a wrong wait fails the test instead of hanging.
    let release = std::thread::spawn({
        let mut w = writer.try_clone().unwrap();
        move || {
            std::thread::sleep(std::time::Duration::from_secs(3));
            std::io::Write::write_all(&mut w, &[1u8; 4]).unwrap();
        }
    });
    let started = std::time::Instant::now();
    d.engine.reap(1, &mut out).unwrap();
    let waited = started.elapsed();
    assert_eq!(out.first().map(|c| (c.tag, c.result)), Some((1, BS as i64)));
    assert!(
        waited < std::time::Duration::from_secs(2),
        "waited {waited:?}"
    );
    release.join().unwrap();
    out.clear();
    d.engine.reap(1, &mut out).unwrap();
    assert_eq!(out.first().map(|c| (c.tag, c.result)), Some((0, 4)));
    std::io::Write::flush(&mut writer).unwrap();
}
