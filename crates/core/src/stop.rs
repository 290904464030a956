//! Cooperative stop on SIGINT/SIGTERM: the handler only sets a flag; workers and suites
//! poll it, stop issuing IO, and the caller cleans up what it created before exiting with a
//! non-zero code. A third signal exits at once for a user who really wants out.

use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
static COUNT: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    if COUNT.fetch_add(1, Ordering::SeqCst) >= 2 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// Installs the SIGINT and SIGTERM handlers (idempotent).
pub fn install_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a plain sigaction with an async-signal-safe handler.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// True once a stop was requested (by a signal or [`request`]).
#[inline]
pub fn requested() -> bool {
    SIGNAL.load(Ordering::Relaxed) != 0
}

/// The signal that asked us to stop, if any (0 for a programmatic request).
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Asks everything to stop as if SIGTERM had arrived (used on fatal errors and in tests).
pub fn request() {
    SIGNAL.store(libc::SIGTERM, Ordering::SeqCst);
}
