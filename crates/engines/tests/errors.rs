//! Bad input and missing kernel features give one clear error, never a panic.

mod common;

use std::io;

use common::{Driver, direct_ok, job, rw_open};
use storbench_core::{ErrorKind, IoKind, IoUnit};
use storbench_engines::io_uring::{RingConfig, create_with_probe, setup_error};

/// A misaligned O_DIRECT buffer or offset is refused before reaching the kernel, with a
/// message naming the alignment, for every engine that does O_DIRECT.
#[test]
fn misaligned_direct_io_is_a_clear_error() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    if !direct_ok(dir.path()) {
        return;
    }
    for engine in ["psync", "sync", "pvsync2", "io_uring", "libaio", "posixaio"] {
        if !common::available(&job(engine, 4, &[])) {
            continue;
        }
        let mut d = Driver::new(&job(engine, 4, &[]), 8192).unwrap();
        let path = dir.path().join(engine);
        let id = d.open(path.to_str().unwrap(), rw_open(true)).unwrap();
        let aligned = d.arena.slot(0);
        // SAFETY: one byte into an 8 KiB slot.
        let odd_buf = unsafe { std::ptr::NonNull::new_unchecked(aligned.as_ptr().add(1)) };
        let cases = [
            (odd_buf, 0u64, 4096u32),
            (aligned, 100, 4096),
            (aligned, 0, 1000),
        ];
        for (buf, offset, len) in cases {
            let io = IoUnit {
                file: id,
                kind: IoKind::Write,
                offset,
                len,
                buf,
                buf_index: 0,
                tag: 0,
                ioprio: 0,
            };
            let err = d
                .engine
                .queue(&io)
                .expect_err("misaligned O_DIRECT IO must be refused");
            assert_eq!(err.kind, ErrorKind::Unsupported, "{engine}: {err}");
            assert_eq!(err.errno, Some(libc::EINVAL));
            assert!(err.message.contains("O_DIRECT"), "{engine}: {err}");
            assert!(err.message.contains("--direct=0"), "{engine}: {err}");
            assert!(!err.message.contains('\n'));
        }
    }
}

/// A file system without O_DIRECT support (procfs here) gets the message that says how to
/// proceed.
#[test]
fn direct_refused_by_file_system_says_how_to_proceed() {
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    let open = storbench_core::OpenOptions {
        read: true,
        direct: true,
        ..Default::default()
    };
    let err = d
        .open("/proc/self/status", open)
        .expect_err("procfs refuses O_DIRECT");
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert_eq!(
        err.message,
        "the file system under /proc/self refuses O_DIRECT (EINVAL); run with --direct=0 \
         (buffered, page cache in play)"
    );
}

/// io_uring disabled (EPERM from seccomp or the sysctl, ENOSYS on old kernels): the create
/// fails with a message suggesting psync or libaio.
#[test]
fn io_uring_unavailable_suggests_other_engines() {
    for errno in [libc::EPERM, libc::ENOSYS] {
        let result = create_with_probe(&job("io_uring", 8, &[]), |_| {
            Err(io::Error::from_raw_os_error(errno))
        });
        let err = result.err().expect("the probe failed, so create must fail");
        assert_eq!(err.kind, ErrorKind::Unsupported);
        assert_eq!(err.errno, Some(errno));
        assert!(
            err.message.starts_with("io_uring is disabled here"),
            "{err}"
        );
        assert!(
            err.message.ends_with("use --ioengine=psync or libaio"),
            "{err}"
        );
    }
    let cfg = RingConfig::from_job(&job("io_uring", 8, &[("sqthread_poll", "1")])).unwrap();
    let err = setup_error(libc::EINVAL, &cfg);
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(err.message.contains("sqthread_poll (SQPOLL)"), "{err}");
    assert!(err.message.contains("psync or libaio"), "{err}");
    let err = setup_error(libc::ENOMEM, &cfg);
    assert!(err.message.contains("ulimit -l"), "{err}");
}

#[test]
fn unknown_engine_lists_the_available_ones() {
    let err = storbench_engines::create(&job("splice", 1, &[]))
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(
        err.message.starts_with("ioengine=splice is not available"),
        "{err}"
    );
    assert!(
        err.message.contains("io_uring") && err.message.contains("psync"),
        "{err}"
    );
}

#[test]
fn bad_engine_option_values_are_refused() {
    // Parsed once, by the option table, before any engine sees them.
    let mut o = storbench_job::EngineOptions::default();
    let err = o.set("hipri", "maybe").unwrap_err();
    assert_eq!(err, "expected 0 or 1");
    let err = o.set("sqthread_poll_cpu", "x").unwrap_err();
    assert!(!err.is_empty());
    assert_eq!(
        o,
        storbench_job::EngineOptions::default(),
        "nothing was set"
    );
}

/// hipri (IOPOLL) needs O_DIRECT: a buffered open says so instead of failing every IO.
#[test]
fn io_uring_hipri_needs_direct() {
    let spec = job("io_uring", 4, &[("hipri", "")]);
    if !common::available(&spec) {
        return;
    }
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let mut d = Driver::new(&spec, 4096).unwrap();
    let err = d
        .open(dir.path().join("f").to_str().unwrap(), rw_open(false))
        .expect_err("buffered hipri must be refused");
    assert!(err.message.contains("needs --direct=1"), "{err}");
}

/// A read that crosses the end of the file is reported short (the runner counts those),
/// and a read past the end returns 0 bytes; no engine turns them into errors.
#[test]
fn short_reads_are_reported_as_such() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    for engine in [
        "psync", "sync", "pvsync2", "io_uring", "libaio", "posixaio", "mmap",
    ] {
        if !common::available(&job(engine, 4, &[])) {
            continue;
        }
        let path = dir.path().join(engine);
        std::fs::write(&path, vec![7u8; 4096 + 100]).unwrap();
        let mut d = Driver::new(&job(engine, 4, &[]), 8192).unwrap();
        let open = storbench_core::OpenOptions {
            read: true,
            ..Default::default()
        };
        let id = d.open(path.to_str().unwrap(), open).unwrap();
        assert_eq!(
            d.one(id, IoKind::Read, 4096, 4096).unwrap(),
            100,
            "{engine}"
        );
        assert_eq!(d.one(id, IoKind::Read, 65536, 4096).unwrap(), 0, "{engine}");
        assert!(d.arena.buf(0)[..100].iter().all(|&b| b == 7), "{engine}");
    }
}

/// io_submit stops at an iocb the kernel refuses (here a read on a write-only descriptor):
/// that IO completes with -EBADF, and the IOs around it still complete normally.
#[test]
fn libaio_refused_iocb_completes_with_its_errno() {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, vec![1u8; 8192]).unwrap();
    std::fs::write(&b, vec![2u8; 8192]).unwrap();
    let mut d = Driver::new(&job("libaio", 4, &[]), 4096).unwrap();
    let read_only = storbench_core::OpenOptions {
        read: true,
        ..Default::default()
    };
    let write_only = storbench_core::OpenOptions {
        write: true,
        ..Default::default()
    };
    let fa = d.open(a.to_str().unwrap(), read_only).unwrap();
    let fb = d.open(b.to_str().unwrap(), write_only).unwrap();
    for (tag, file) in [(0, fa), (1, fb), (2, fa)] {
        let io = IoUnit {
            file,
            kind: IoKind::Read,
            offset: 0,
            len: 4096,
            buf: d.arena.slot(tag),
            buf_index: tag,
            tag,
            ioprio: 0,
        };
        assert_eq!(
            d.engine.queue(&io).unwrap(),
            storbench_core::Queued::Pending
        );
    }
    d.engine.commit().unwrap();
    let mut out = Vec::new();
    while out.len() < 3 {
        d.engine.reap(1, &mut out).unwrap();
    }
    out.sort_by_key(|c| c.tag);
    let results: Vec<i64> = out.iter().map(|c| c.result).collect();
    assert_eq!(results, vec![4096, -i64::from(libc::EBADF), 4096]);
}

/// tmpfs takes O_DIRECT at any alignment and statx reports none: no pre-check refuses it.
#[test]
fn direct_on_tmpfs_is_not_refused_by_a_guessed_alignment() {
    let dir = tempfile::tempdir_in("/dev/shm").unwrap();
    if !direct_ok(dir.path()) {
        return;
    }
    let mut d = Driver::new(&job("psync", 1, &[]), 8192).unwrap();
    let id = d
        .open(dir.path().join("f").to_str().unwrap(), rw_open(true))
        .unwrap();
    assert_eq!(d.one(id, IoKind::Write, 100, 1000).unwrap(), 1000);
    assert_eq!(d.one(id, IoKind::Read, 100, 1000).unwrap(), 1000);
}
