//! What an iSCSI target needs before a run: a LUN, and its CHAP secrets kept out of the
//! command line. A secret typed in the URL draws one warning (every user of the machine can
//! read it in `ps` and /proc/PID/cmdline for the whole run); a user without a secret gets
//! it from `?secret-file=`, the environment, or, only when there is a terminal to ask on, a
//! prompt without echo, whose answer every session of the run then uses
//! ([`storbench_iscsi::url::set_prompted`]).

use std::sync::Once;

use storbench_core::ask::Ask;
use storbench_core::{EngineError, ErrorKind};
use storbench_iscsi::Url;
use storbench_iscsi::url::{MUTUAL_SECRET_ENV, SECRET_ENV, prompted, set_prompted};
use storbench_job::target::Target;

static WARNED: Once = Once::new();

fn refused(e: storbench_iscsi::Error) -> EngineError {
    EngineError::new(ErrorKind::Refused, e.to_string())
}

/// A LUN named, and its secrets found (see [`secrets`]).
pub(super) fn check(target: &Target, _directory: bool, ask: &dyn Ask) -> Result<(), EngineError> {
    let Target::Iscsi(typed) = target else {
        return Ok(());
    };
    typed.url.require_lun().map_err(refused)?;
    secrets(&typed.url, ask)
}

/// Warns about a secret in the URL, asks for a missing one on a terminal, and fails (one
/// line) when one cannot be found.
pub fn secrets(url: &Url, ask: &dyn Ask) -> Result<(), EngineError> {
    if url.secrets.in_url {
        WARNED.call_once(|| {
            ask.warn(&format!(
                "a CHAP secret in the URL can be read by every user of this machine (ps, \
                 /proc) while storbench runs; give it in {SECRET_ENV} ({MUTUAL_SECRET_ENV} for \
                 mutual CHAP) or ?secret-file=PATH instead"
            ))
        });
    }
    let unset = |var: &str| std::env::var(var).map_or(true, |v| v.is_empty());
    let (need, need_mutual) = url.needs_secret();
    let ask_ours = need && url.secrets.file.is_none() && unset(SECRET_ENV);
    let ask_mutual = need_mutual && url.secrets.target_file.is_none() && unset(MUTUAL_SECRET_ENV);
    if (ask_ours || ask_mutual) && !prompted() {
        let question = |ask_it: bool, q: String| {
            if ask_it {
                ask.secret(&q, "CHAP secret")
            } else {
                Ok(None)
            }
        };
        let ours = question(ask_ours, format!("CHAP secret for {url}: "))?;
        let mutual = question(
            ask_mutual,
            format!("target's CHAP secret (mutual) for {url}: "),
        )?;
        if ours.is_some() || mutual.is_some() {
            set_prompted(ours, mutual);
        }
    }
    url.clone().resolve_secrets().map_err(refused)
}
