//! Sizing glibc's POSIX AIO pool for the run, before its first request.
//!
//! glibc serves one file descriptor's requests with one helper thread at a time, and starts
//! at most `aio_threads` helpers (default 20) for the whole process. fio's jobs are processes,
//! each with its own limit; storbench's are threads of one process sharing one. So each
//! posixaio engine, when it is created (every worker of a batch is created before any of them
//! issues IO), adds the descriptors it can keep busy and its depth to the process's totals
//! and hands them to `aio_init`. glibc takes the thread and request counts only while it has
//! not allocated its request pool (before the first request of the process); later calls
//! change nothing, so a process that runs several jobs one after another keeps the first
//! run's sizing, at least glibc's defaults.

use std::sync::Mutex;

/// glibc's own defaults (`aio_misc.c`), the least this asks for.
pub const DEFAULT_THREADS: u32 = 20;
pub const DEFAULT_REQUESTS: u32 = 64;

/// Descriptors and requests reserved so far in this process.
static TOTALS: Mutex<(u32, u32)> = Mutex::new((0, 0));

/// Adds one engine's busy descriptors (`fds`: at most one helper each) and `depth` to the
/// totals and passes them to glibc; returns the (threads, requests) asked for.
pub fn reserve(fds: u32, depth: u32) -> (u32, u32) {
    let mut totals = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    totals.0 = totals.0.saturating_add(fds);
    totals.1 = totals.1.saturating_add(depth);
    let sizing = sizing(totals.0, totals.1);
    init(sizing.0, sizing.1);
    sizing
}

/// The pool for `fds` busy descriptors and `requests` in flight: never below glibc's
/// defaults, within what its `int` fields hold.
pub fn sizing(fds: u32, requests: u32) -> (u32, u32) {
    let cap = i32::MAX as u32;
    (
        fds.max(DEFAULT_THREADS).min(cap),
        requests.max(DEFAULT_REQUESTS).min(cap),
    )
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn init(threads: u32, requests: u32) {
    /// glibc's `struct aioinit` (`<aio.h>`).
    #[repr(C)]
    struct AioInit {
        aio_threads: libc::c_int,
        aio_num: libc::c_int,
        aio_locks: libc::c_int,
        aio_usedba: libc::c_int,
        aio_debug: libc::c_int,
        aio_numusers: libc::c_int,
        aio_idle_time: libc::c_int,
        aio_reserved: libc::c_int,
    }
    unsafe extern "C" {
        fn aio_init(init: *const AioInit);
    }
    let init = AioInit {
        aio_threads: threads as libc::c_int,
        aio_num: requests as libc::c_int,
        aio_locks: 0,
        aio_usedba: 0,
        aio_debug: 0,
        aio_numusers: 0,
        // 0 keeps glibc's idle time (1 s).
        aio_idle_time: 0,
        aio_reserved: 0,
    };
    // SAFETY: a valid aioinit; glibc copies the fields under its own lock.
    unsafe { aio_init(&init) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn init(_threads: u32, _requests: u32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizing_never_goes_below_glibcs_defaults() {
        assert_eq!(sizing(1, 1), (DEFAULT_THREADS, DEFAULT_REQUESTS));
        assert_eq!(sizing(12, 384), (DEFAULT_THREADS, 384));
        assert_eq!(sizing(32, 1024), (32, 1024));
        assert_eq!(sizing(u32::MAX, u32::MAX), (i32::MAX as u32, i32::MAX as u32));
    }
}
