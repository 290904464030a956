//! How storbench asks the person running it for a secret a protocol needs before a run
//! (`storbench_core::ask::Ask`, which each engine file's `prepare` uses): on standard
//! input, only when it is a terminal, with echo off; warnings go to stderr.

use std::io::{BufRead, IsTerminal, Write};

use storbench_core::EngineError;
use storbench_core::ask::Ask;

/// The terminal on standard input and stderr.
pub struct Terminal;

impl Ask for Terminal {
    fn secret(&self, question: &str, what: &str) -> Result<Option<String>, EngineError> {
        if !std::io::stdin().is_terminal() {
            return Ok(None);
        }
        prompt(question, what)
            .map(Some)
            .map_err(|e| EngineError::new(storbench_core::ErrorKind::Refused, e.to_string()))
    }

    fn warn(&self, message: &str) {
        eprintln!("storbench: warning: {message}");
    }
}

/// Reads one line from the terminal on standard input with echo off (restored after).
/// Echo goes off before the question is shown: a secret typed (or pasted) the moment the
/// question appears is never echoed.
fn prompt(question: &str, what: &str) -> anyhow::Result<String> {
    let echo = EchoOff::new();
    let mut err = std::io::stderr().lock();
    write!(err, "{question}")?;
    err.flush()?;
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    drop(echo);
    writeln!(err)?;
    read?;
    let secret = line.trim_end_matches(['\n', '\r']).to_string();
    if secret.is_empty() {
        anyhow::bail!("no {what} typed");
    }
    Ok(secret)
}

/// Terminal echo switched off on standard input while it lives. A signal that would end
/// the process meanwhile (Ctrl-C, Ctrl-Backslash, a hang-up, SIGTERM) first turns echo back on,
/// then ends it as it would have: a prompt left with Ctrl-C leaves the terminal as it was.
struct EchoOff(Option<(libc::termios, [libc::sigaction; ENDING.len()])>);

/// The signals whose default action ends the process while a prompt waits.
const ENDING: [libc::c_int; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM];

/// The terminal's settings before the prompt, for the signal handler: written before the
/// handler is installed, read only by it.
struct Saved(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::termios>>);
// SAFETY: written once before any handler that reads it is installed (see `EchoOff::new`).
unsafe impl Sync for Saved {}
static SAVED: Saved = Saved(std::cell::UnsafeCell::new(std::mem::MaybeUninit::uninit()));

/// Restores the saved terminal settings, then ends the process by the same signal with its
/// default action. Only async-signal-safe calls (tcsetattr, signal, raise).
extern "C" fn restore_and_end(sig: libc::c_int) {
    // SAFETY: SAVED was written before this handler was installed; the calls are
    // async-signal-safe.
    unsafe {
        libc::tcsetattr(0, libc::TCSANOW, (*SAVED.0.get()).as_ptr());
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

impl EchoOff {
    fn new() -> EchoOff {
        // SAFETY: tcgetattr/tcsetattr on fd 0 with a termios we own; sigaction with
        // handlers that only restore that termios (see `restore_and_end`).
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return EchoOff(None);
            }
            (*SAVED.0.get()).write(t);
            let mut old: [libc::sigaction; ENDING.len()] = std::mem::zeroed();
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = restore_and_end as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut act.sa_mask);
            for (sig, old) in ENDING.iter().zip(old.iter_mut()) {
                libc::sigaction(*sig, &act, old);
            }
            let saved = t;
            t.c_lflag &= !libc::ECHO;
            libc::tcsetattr(0, libc::TCSANOW, &t);
            EchoOff(Some((saved, old)))
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some((saved, old)) = &self.0 {
            // SAFETY: restores the settings and signal actions read in `new`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, saved);
                for (sig, old) in ENDING.iter().zip(old.iter()) {
                    libc::sigaction(*sig, old, std::ptr::null_mut());
                }
            }
        }
    }
}
