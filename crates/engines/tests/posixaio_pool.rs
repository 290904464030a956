//! glibc's POSIX AIO pool sized by the posixaio engine: more busy file descriptors than
//! glibc's default 20 helper threads each get a helper, as each of fio's job processes
//! would. Its own test binary: glibc takes the sizing only before the process's first
//! AIO request.

use std::time::{Duration, Instant};

use storbench_engines::posixaio::pool;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

#[test]
fn every_busy_descriptor_gets_a_helper_beyond_glibcs_default() {
    const FDS: usize = pool::DEFAULT_THREADS as usize + 4;
    assert_eq!(pool::reserve(FDS as u32, FDS as u32).0, FDS as u32);
    // One read on each of FDS empty pipes: each blocks its helper thread until written.
    let pipes: Vec<[i32; 2]> = (0..FDS)
        .map(|_| {
            let mut p = [0; 2];
            // SAFETY: p has room for two descriptors.
            assert_eq!(unsafe { libc::pipe(p.as_mut_ptr()) }, 0);
            p
        })
        .collect();
    let mut bufs = [[0u8; 1]; FDS];
    // SAFETY: aiocb is plain data; all-zero is valid.
    let mut cbs: Vec<libc::aiocb> = (0..FDS).map(|_| unsafe { std::mem::zeroed() }).collect();
    let before = threads();
    for (i, cb) in cbs.iter_mut().enumerate() {
        cb.aio_fildes = pipes[i][0];
        cb.aio_buf = bufs[i].as_mut_ptr().cast();
        cb.aio_nbytes = 1;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        // SAFETY: cb and its buffer outlive the request (waited for below).
        assert_eq!(unsafe { libc::aio_read(cb) }, 0);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while threads() < before + FDS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let helpers = threads() - before;
    for p in &pipes {
        // SAFETY: writes one byte to the pipe's write end.
        assert_eq!(unsafe { libc::write(p[1], b"x".as_ptr().cast(), 1) }, 1);
    }
    for cb in &mut cbs {
        // SAFETY: cb is a request in flight; the pipe now holds its byte.
        while unsafe { libc::aio_error(cb) } == libc::EINPROGRESS {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(unsafe { libc::aio_return(cb) }, 1);
    }
    for p in &pipes {
        // SAFETY: both descriptors are ours and closed once.
        unsafe {
            libc::close(p[0]);
            libc::close(p[1]);
        }
    }
    assert_eq!(helpers, FDS, "helper threads for {FDS} blocked reads");
}
