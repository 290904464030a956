//! What a job reads and writes: a local path, a local block device, or a URL of a protocol
//! in the catalogue. Parsed where input is read (fio's `filename`/`directory`, quick's and
//! bonnie's target, `iscsi discover`); everything after asks its [`TargetCaps`], never its
//! spelling.
//!
//! A URL stays as typed, because its engine needs all of it (credentials, options); its
//! protocol crate parses the details (`storbench_nfs::NfsUrl`, `storbench_iscsi::Url`)
//! when the engine connects, and the CLI checks them once before the run. A URL may
//! carry a CHAP secret: [`Target`] and [`SecretUrl`] print it masked, in `Display` and
//! `Debug` alike; only [`SecretUrl::expose`] gives the secret, for the engine.

use std::fmt;
use std::path::Path;

use crate::catalogue::{self, EngineInfo, Protocol};
use crate::redact;

/// A URL that may hold secrets; shown masked.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl(String);

impl SecretUrl {
    /// The URL with its secrets, for the engine that connects with it. Never print it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact::text(&self.0))
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", redact::text(&self.0))
    }
}

/// One target.
#[derive(Clone, PartialEq, Eq)]
pub enum Target {
    /// A local file or directory, or a character device (/dev/null).
    Path(String),
    /// A local block device.
    Device(String),
    /// A URL of a protocol storbench reaches with its own client.
    Url(&'static Protocol, SecretUrl),
}

/// What the rest of the code asks of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TargetCaps {
    /// A whole device (block device, iSCSI LUN): checked for existing data before a run
    /// writes it, never laid out, created or removed.
    pub device_like: bool,
    /// Reads may be served by this machine's page cache (local files and devices).
    pub page_cache: bool,
    /// Reached over the network through a server (its address is the engine's).
    pub network: bool,
    /// Holds files and directories with metadata operations.
    pub metadata: bool,
}

impl Target {
    /// A target as typed: a URL of a known protocol, or a local path (a block device
    /// when it is one). A URL of a scheme storbench does not reach is refused, unless a
    /// local path of that name exists (a directory named `foo:`).
    pub fn parse(text: &str) -> Result<Target, String> {
        let target = Target::classify(text);
        if let Target::Path(_) = target
            && let Some(scheme) = foreign_scheme(text)
            && !Path::new(text).exists()
        {
            let forms: Vec<&str> = catalogue::protocols().map(|p| p.form).collect();
            return Err(format!(
                "unsupported URL scheme {scheme:?} in {text}: use a path, {}",
                forms.join(" or ")
            ));
        }
        Ok(target)
    }

    /// The target `text` names, for text already checked by [`Target::parse`]; a URL of
    /// an unknown scheme is taken for a path.
    pub fn classify(text: &str) -> Target {
        if let Some(p) = url_protocol(text) {
            return Target::Url(p, SecretUrl(text.to_string()));
        }
        use std::os::unix::fs::FileTypeExt;
        let block = std::fs::metadata(text).is_ok_and(|m| m.file_type().is_block_device());
        if block {
            Target::Device(text.to_string())
        } else {
            Target::Path(text.to_string())
        }
    }

    /// The protocol of a URL target.
    pub fn protocol(&self) -> Option<&'static Protocol> {
        match self {
            Target::Url(p, _) => Some(p),
            _ => None,
        }
    }

    /// The engine a URL target needs; `None` for local targets (any local engine).
    pub fn engine(&self) -> Option<&'static EngineInfo> {
        self.protocol().and_then(catalogue::engine_for)
    }

    pub fn caps(&self) -> TargetCaps {
        match self {
            Target::Path(_) => TargetCaps {
                device_like: false,
                page_cache: true,
                network: false,
                metadata: true,
            },
            Target::Device(_) => TargetCaps {
                device_like: true,
                page_cache: true,
                network: false,
                metadata: false,
            },
            Target::Url(p, _) => TargetCaps {
                device_like: p.device_like,
                page_cache: false,
                network: true,
                metadata: p.metadata,
            },
        }
    }

    /// The target as typed, secrets included: for engines and file names only.
    pub fn expose(&self) -> &str {
        match self {
            Target::Path(p) | Target::Device(p) => p,
            Target::Url(_, u) => u.expose(),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Path(p) | Target::Device(p) => f.write_str(p),
            Target::Url(_, u) => fmt::Display::fmt(u, f),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Path(p) => write!(f, "Path({p:?})"),
            Target::Device(p) => write!(f, "Device({p:?})"),
            Target::Url(p, u) => write!(f, "Url({}, {u:?})", p.scheme),
        }
    }
}

/// The catalogue's protocol of `text` when it is written `scheme://…` (or `scheme\://…`,
/// fio's escaped colon in a `filename` list).
pub fn url_protocol(text: &str) -> Option<&'static Protocol> {
    let (scheme, rest) = text.split_once(':')?;
    if !rest.starts_with("//") {
        return None;
    }
    catalogue::protocol(scheme.strip_suffix('\\').unwrap_or(scheme))
}

/// The scheme of `text` written as a URL (`scheme://…` or `scheme:/…`), known or not.
fn foreign_scheme(text: &str) -> Option<&str> {
    let (scheme, rest) = text.split_once(':')?;
    let is_scheme = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    (is_scheme && rest.starts_with('/')).then_some(scheme)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{ISCSI, NFS};

    #[test]
    fn urls_take_their_protocol_and_mask_secrets() {
        let t = Target::parse("iscsi://u%pw@h/iqn.x:d/1?target_password=p2").unwrap();
        assert_eq!(t.protocol(), Some(&ISCSI));
        assert_eq!(t.engine().map(|e| e.name), Some("libiscsi"));
        assert!(t.caps().device_like && t.caps().network && !t.caps().metadata);
        let shown = format!("{t} {t:?}");
        assert!(!shown.contains("pw"), "{shown}");
        assert!(t.expose().contains("u%pw@"));
        assert_eq!(url_protocol("iscsi\\://h/iqn.x/1"), Some(&ISCSI));
        assert_eq!(url_protocol("nfs:/h/x"), None);
        let n = Target::parse("nfs://h/export").unwrap();
        assert_eq!(n.protocol(), Some(&NFS));
        assert!(n.caps().metadata && !n.caps().page_cache && !n.caps().device_like);
    }

    #[test]
    fn local_targets_are_paths_or_devices() {
        let t = Target::parse("/etc/hostname").unwrap();
        assert_eq!(t, Target::Path("/etc/hostname".into()));
        assert!(t.caps().page_cache && !t.caps().device_like && t.engine().is_none());
        assert_eq!(Target::parse("rel:ative").unwrap().protocol(), None);
    }

    #[test]
    fn unknown_schemes_are_refused_unless_the_path_exists() {
        let e = Target::parse("smbx://h/share").unwrap_err();
        assert!(
            e.starts_with("unsupported URL scheme \"smbx\" in smbx://h/share: use a path, nfs://"),
            "{e}"
        );
        assert_eq!(
            Target::classify("smbx://h/s"),
            Target::Path("smbx://h/s".into())
        );
    }
}
