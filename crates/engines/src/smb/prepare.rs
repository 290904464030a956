//! What an SMB target needs before a run: its password, and for a directory one login.

use std::sync::Once;

use storbench_core::ask::Ask;
use storbench_core::{EngineError, ErrorKind};
use storbench_job::catalogue;
use storbench_job::target::Target;
use storbench_smb::SmbUrl;
use storbench_smb::url::{PASSWORD_ENV, password_from_env, set_prompted};

static WARNED: Once = Once::new();

/// A password in the URL draws one warning, a user without one gets it from
/// `STORBENCH_SMB_PASSWORD` or a prompt, and a directory (where storbench creates files)
/// must be reachable: one login, tree connect and stat, so bad credentials or a missing
/// share are one line before any banner.
pub(super) fn check(target: &Target, directory: bool, ask: &dyn Ask) -> Result<(), EngineError> {
    let Target::Smb(typed) = target else {
        return Ok(());
    };
    let url = &typed.url;
    password(url, ask)?;
    if directory {
        let smb =
            |e: storbench_smb::SmbError| EngineError::new(ErrorKind::Refused, format!("smb: {e}"));
        let cfg = storbench_smb::ClientConfig::from_url(url, password_from_env())
            .map_err(|e| EngineError::new(ErrorKind::Refused, e.to_string()))?;
        let mut c = storbench_smb::Client::connect(&cfg).map_err(smb)?;
        if !url.path.is_empty() {
            let info = c.stat(&url.path).map_err(smb)?;
            if !info.is_dir() {
                return Err(EngineError::new(
                    ErrorKind::Refused,
                    format!("smb: {} is not a directory", url.display()),
                ));
            }
        }
        let _ = c.logoff();
    }
    Ok(())
}

/// The password `url` logs in with: a password in the URL draws one warning; a user named
/// without one gets it from `STORBENCH_SMB_PASSWORD` or, only on a terminal, a prompt
/// without echo, and is refused in one line before any connection when neither is there.
/// No user means a guest login.
pub fn password(url: &SmbUrl, ask: &dyn Ask) -> Result<(), EngineError> {
    if url.password_in_url() {
        WARNED.call_once(|| {
            ask.warn(&format!(
                "a password in an {}:// URL can be read by every user of this machine (ps, \
                 /proc) while storbench runs; give it in {PASSWORD_ENV} instead",
                catalogue::SMB.scheme
            ))
        });
        return Ok(());
    }
    if url.user.is_none() || password_from_env().is_some() {
        return Ok(());
    }
    match ask.secret(
        &format!("SMB password for {}: ", url.display()),
        "SMB password",
    )? {
        Some(pw) => {
            set_prompted(pw);
            Ok(())
        }
        // Logging in with an empty password would be a failed login that may count
        // toward the account's lockout.
        None => Err(EngineError::new(
            ErrorKind::Refused,
            format!(
                "smb: {} names a user but no password, and standard input is not a terminal \
                 to ask on: set {PASSWORD_ENV} (or run on a terminal to be asked); leave the \
                 user out of the URL for a guest login",
                url.display()
            ),
        )),
    }
}
