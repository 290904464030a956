//! CHAP secrets for `iscsi://` targets, kept out of the command line: before a run, each
//! iSCSI URL is checked once here. A secret typed in the URL draws one warning (every user
//! of the machine can read it in `ps` and /proc/PID/cmdline for the whole run); a user
//! without a secret gets it from `?secret-file=`, the environment, or — only when standard
//! input is a terminal — a prompt without echo, whose answer the engines then use
//! ([`storbench_iscsi::url::set_prompted`]).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Once;

use storbench_iscsi::Url;
use storbench_iscsi::url::{MUTUAL_SECRET_ENV, SECRET_ENV, set_prompted};
use storbench_job::catalogue;
use storbench_job::target::url_protocol;

static WARNED: Once = Once::new();

/// Checks every `iscsi://` target among `targets`: warns about secrets in URLs, asks for
/// missing ones on a terminal, and fails (one line) when one cannot be found.
pub fn prepare_iscsi<'a>(targets: impl IntoIterator<Item = &'a str>) -> anyhow::Result<()> {
    let urls: Vec<Url> = targets
        .into_iter()
        .filter(|t| url_protocol(t) == Some(&catalogue::ISCSI))
        .map(Url::parse)
        .collect::<Result<_, _>>()?;
    if urls.iter().any(|u| u.secrets.in_url) {
        WARNED.call_once(|| {
            eprintln!(
                "storbench: warning: a CHAP secret in the URL can be read by every user of \
                 this machine (ps, /proc) while storbench runs; give it in {SECRET_ENV} \
                 ({MUTUAL_SECRET_ENV} for mutual CHAP) or ?secret-file=PATH instead"
            )
        });
    }
    let unset = |var: &str| std::env::var(var).map_or(true, |v| v.is_empty());
    let ask = |u: &Url| {
        let (need, need_mutual) = u.needs_secret();
        (
            need && u.secrets.file.is_none() && unset(SECRET_ENV),
            need_mutual && u.secrets.target_file.is_none() && unset(MUTUAL_SECRET_ENV),
        )
    };
    let ask_ours = urls.iter().find(|u| ask(u).0);
    let ask_mutual = urls.iter().find(|u| ask(u).1);
    if (ask_ours.is_some() || ask_mutual.is_some()) && std::io::stdin().is_terminal() {
        let ours = ask_ours
            .map(|u| prompt(&format!("CHAP secret for {u}: "), "CHAP secret"))
            .transpose()?;
        let mutual = ask_mutual
            .map(|u| {
                prompt(
                    &format!("target's CHAP secret (mutual) for {u}: "),
                    "CHAP secret",
                )
            })
            .transpose()?;
        set_prompted(ours, mutual);
    }
    for mut u in urls {
        u.resolve_secrets()?;
    }
    Ok(())
}

static WARNED_SMB: Once = Once::new();

/// Checks every `smb://` target among `targets` as `prepare_iscsi` does: a password in the
/// URL draws one warning; a user named without one gets it from `STORBENCH_SMB_PASSWORD`
/// or, only on a terminal, a prompt without echo, and is refused in one line before any
/// connection when neither is there. No user means a guest login.
pub fn prepare_smb<'a>(targets: impl IntoIterator<Item = &'a str>) -> anyhow::Result<()> {
    use storbench_smb::url::{PASSWORD_ENV, password_from_env, set_prompted};
    let urls: Vec<storbench_smb::SmbUrl> = targets
        .into_iter()
        .filter(|t| url_protocol(t) == Some(&catalogue::SMB))
        .map(storbench_smb::SmbUrl::parse)
        .collect::<Result<_, _>>()?;
    if urls.iter().any(|u| u.password_in_url()) {
        WARNED_SMB.call_once(|| {
            eprintln!(
                "storbench: warning: a password in an {}:// URL can be read by every user of \
                 this machine (ps, /proc) while storbench runs; give it in {PASSWORD_ENV} instead",
                catalogue::SMB.scheme
            )
        });
    }
    let needs = urls
        .iter()
        .find(|u| u.user.is_some() && !u.password_in_url());
    let Some(u) = needs else {
        return Ok(());
    };
    if password_from_env().is_some() {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        // Logging in with an empty password would be a failed login that may count
        // toward the account's lockout.
        anyhow::bail!(
            "smb: {} names a user but no password, and standard input is not a terminal to \
             ask on: set {PASSWORD_ENV} (or run on a terminal to be asked); leave the user out \
             of the URL for a guest login",
            u.display()
        );
    }
    set_prompted(prompt(
        &format!("SMB password for {}: ", u.display()),
        "SMB password",
    )?);
    Ok(())
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
