//! Cooperative stop on SIGINT, SIGTERM, SIGHUP and SIGQUIT: the handler only sets a flag;
//! workers and suites poll it, stop issuing IO, and the caller cleans up what it created
//! before exiting with 128 + the signal. A hang-up (a dropped ssh session) must not leave a
//! test file of twice the RAM behind any more than Ctrl-C may. A signal the parent set to be
//! ignored (`nohup`, a background job's SIGINT) stays ignored. A third signal exits at once
//! for a user who really wants out, and says what that may leave.

use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, Ordering};

static SIGNAL: AtomicI32 = AtomicI32::new(0);
static COUNT: AtomicU32 = AtomicU32::new(0);
/// The third signal's message naming what may be left, once [`name_leftovers`] has been
/// called: written whole by the handler, which cannot format.
static AT_ONCE_NAMED: AtomicPtr<&'static [u8]> = AtomicPtr::new(std::ptr::null_mut());

/// The signals that stop a run.
pub const STOP_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

const AT_ONCE: &[u8] =
    b"storbench: third signal: exiting at once; files this run created may be left behind\n";

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    if COUNT.fetch_add(1, Ordering::SeqCst) >= 2 {
        let named = AT_ONCE_NAMED.load(Ordering::SeqCst);
        // SAFETY: a non-null pointer is a leaked, never-freed `&'static [u8]`.
        let message: &[u8] = if named.is_null() {
            AT_ONCE
        } else {
            unsafe { *named }
        };
        // SAFETY: write and _exit are async-signal-safe; the message is never freed.
        unsafe {
            libc::write(2, message.as_ptr().cast(), message.len());
            libc::_exit(128 + sig);
        }
    }
}

/// A stop in a process forked to run one clone (`crates/run/src/forked.rs`): only the flag, however
/// often it comes. The parent counts the signals and leaves at the third, and its end kills
/// the clone's process (`PR_SET_PDEATHSIG`).
extern "C" fn on_signal_in_clone(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
}

/// Installs the stop handlers (idempotent), leaving ignored signals ignored.
pub fn install_handlers() {
    install(on_signal);
}

/// Installs the handlers of a clone's own process (see `on_signal_in_clone`).
pub fn install_clone_handlers() {
    install(on_signal_in_clone);
}

fn install(handler: extern "C" fn(libc::c_int)) {
    for sig in STOP_SIGNALS {
        // SAFETY: sigaction queries and sets a plain handler that is async-signal-safe.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = handler as *const () as usize;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
}

/// Names `path` (the first of the files a run creates and would remove) in the message a
/// third signal prints, so that a user who forces the exit knows where to clean up. The
/// first call of a process wins: one message is built and kept for its life.
pub fn name_leftovers(path: &str) {
    if !AT_ONCE_NAMED.load(Ordering::SeqCst).is_null() {
        return;
    }
    let text = format!(
        "storbench: third signal: exiting at once; files this run created may be left behind \
         (such as {})\n",
        storbench_model::redact::text(path)
    );
    let message: &'static [u8] = Box::leak(text.into_bytes().into_boxed_slice());
    let boxed = Box::into_raw(Box::new(message));
    let null = std::ptr::null_mut();
    if AT_ONCE_NAMED
        .compare_exchange(null, boxed, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: `boxed` was never shared; the leaked text stays (a few bytes, once).
        drop(unsafe { Box::from_raw(boxed) });
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
