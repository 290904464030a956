//! `iscsi://[user[%password]@]host[:port]/target-iqn/lun[?key=value&…]`, the form libiscsi
//! and fio use. fio's escaped colons (`\:`) are accepted. Query keys: `initiator` (our IQN),
//! `target_user` / `target_password` (mutual CHAP), `secret-file` / `target-secret-file`,
//! `header_digest` / `data_digest` (`none` or `crc32c`), `timeout` and `reconnect` (seconds).
//!
//! A secret in the URL is seen by every user of the machine (`ps`, /proc/PID/cmdline) for
//! the whole run, so a URL may name the user alone (`iscsi://alice@host/…`) and
//! [`Url::resolve_secrets`] finds the secret in a file (`?secret-file=PATH`), the
//! environment ([`SECRET_ENV`], [`MUTUAL_SECRET_ENV`]) or what the CLI asked for on the
//! terminal ([`set_prompted`]).

use std::fmt;

use crate::error::{Error, Result};
use crate::text::Digest;

/// The default iSCSI port.
pub const DEFAULT_PORT: u16 = 3260;
/// The initiator name used when the URL does not set one.
pub const DEFAULT_INITIATOR: &str = "iqn.2026-11.org.storbench:initiator";

/// The environment variable holding the initiator's CHAP secret.
pub const SECRET_ENV: &str = "STORBENCH_ISCSI_SECRET";
/// The environment variable holding the target's secret for mutual CHAP.
pub const MUTUAL_SECRET_ENV: &str = "STORBENCH_ISCSI_MUTUAL_SECRET";
/// A secret file larger than this is refused (CHAP secrets are at most 255 bytes here).
const MAX_SECRET_FILE: u64 = 4096;

/// Secrets typed at a terminal prompt: (ours, the target's), set once by the CLI.
static PROMPTED: std::sync::OnceLock<(Option<String>, Option<String>)> = std::sync::OnceLock::new();

/// Keeps secrets read from a terminal for [`Url::resolve_secrets`] (first call wins).
pub fn set_prompted(secret: Option<String>, mutual: Option<String>) {
    let _ = PROMPTED.set((secret, mutual));
}

/// Whether secrets were read from a terminal already (a second prompt would not count).
pub fn prompted() -> bool {
    PROMPTED.get().is_some()
}

/// Where a URL's secrets come from: set by [`Url::parse`] from what the URL says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecretSources {
    /// `user%secret@` or `target_password=`: the URL itself holds a secret.
    pub in_url: bool,
    /// `secret-file=`.
    pub file: Option<String>,
    /// `target-secret-file=`.
    pub target_file: Option<String>,
}

/// CHAP secrets: ours, and optionally the target's for mutual authentication.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub secret: String,
    /// For mutual CHAP: the name and secret the target must prove.
    pub target_user: Option<String>,
    pub target_secret: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print secrets.
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("target_user", &self.target_user)
            .finish_non_exhaustive()
    }
}

/// A parsed iSCSI URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// Target IQN; empty for a portal-only URL (discovery).
    pub target: String,
    /// LUN; `None` for portal-only or target-only URLs.
    pub lun: Option<u64>,
    pub credentials: Option<Credentials>,
    pub initiator: String,
    pub header_digest: Digest,
    pub data_digest: Digest,
    /// How long to keep logging in again after a lost connection (0: fail at once).
    pub reconnect: std::time::Duration,
    /// `timeout=`: how long commands may be outstanding without one completing before the
    /// connection counts as lost (the NOP-Out ping's timeouts are capped by it too).
    pub timeout: std::time::Duration,
    /// Where the CHAP secrets are to come from.
    pub secrets: SecretSources,
}

/// `reconnect=`'s default and largest value, seconds (as for NFS URLs).
pub const DEFAULT_RECONNECT_SECS: u64 = 60;
/// `timeout=`'s default, seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
const MAX_RECONNECT_SECS: u64 = 86_400;

impl Url {
    /// Parses a URL; the LUN and target are optional here, callers that need them check.
    pub fn parse(raw: &str) -> Result<Url> {
        let text = raw.replace("\\:", ":");
        let bad = |reason: &str| Error::Url {
            url: redact(raw),
            reason: reason.to_string(),
        };
        let rest = text
            .strip_prefix("iscsi://")
            .ok_or_else(|| bad("it must start with iscsi://"))?;
        let (userinfo, rest) = split_userinfo(rest);
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (hostport, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (host, port) = split_host_port(hostport).ok_or_else(|| {
            bad(&format!(
                "bad host or port {hostport:?}: a host name or address, and a port from 1 to 65535"
            ))
        })?;
        let (target, lun) = split_path(path).ok_or_else(|| bad("the LUN must be a number"))?;
        let mut url = Url {
            host,
            port,
            target,
            lun,
            credentials: userinfo.map(parse_userinfo).transpose().map_err(&bad)?,
            initiator: DEFAULT_INITIATOR.to_string(),
            header_digest: Digest::None,
            data_digest: Digest::None,
            reconnect: std::time::Duration::from_secs(DEFAULT_RECONNECT_SECS),
            timeout: std::time::Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            secrets: SecretSources::default(),
        };
        url.secrets.in_url = userinfo.is_some_and(|u| u.contains('%'));
        if let Some(q) = query {
            url.apply_query(q).map_err(|r| bad(&r))?;
        }
        if url.secrets.file.is_some() && url.credentials.is_none() {
            return Err(bad("secret-file= needs a CHAP user: iscsi://user@host/…"));
        }
        Ok(url)
    }

    /// Whether the URL names a CHAP user (or a mutual one) whose secret is not in it.
    pub fn needs_secret(&self) -> (bool, bool) {
        match &self.credentials {
            None => (false, false),
            Some(c) => (
                c.secret.is_empty() && !self.secrets.in_url,
                c.target_user.is_some() && c.target_secret.is_none(),
            ),
        }
    }

    /// Fills in the secrets the URL does not hold: from `secret-file=` / `target-secret-file=`,
    /// else [`SECRET_ENV`] / [`MUTUAL_SECRET_ENV`], else a terminal prompt's answer. A user
    /// without any secret is an error naming the ways to give one.
    pub fn resolve_secrets(&mut self) -> Result<()> {
        let (need, need_mutual) = self.needs_secret();
        let shown = self.to_string();
        let err = |reason: String| Error::Url {
            url: shown.clone(),
            reason,
        };
        let prompted = PROMPTED.get();
        if need {
            let found = match &self.secrets.file {
                Some(path) => Some(read_secret_file(path).map_err(err)?),
                None => std::env::var(SECRET_ENV)
                    .ok()
                    .filter(|s| !s.is_empty())
                    .or_else(|| prompted.and_then(|p| p.0.clone())),
            };
            let user = self.credentials.as_ref().map(|c| c.user.clone());
            let secret = found.ok_or_else(|| {
                err(format!(
                    "CHAP user {} has no secret: set {SECRET_ENV}, add ?secret-file=PATH, or \
                     run on a terminal to be asked",
                    user.unwrap_or_default()
                ))
            })?;
            self.creds_mut().map_err(err)?.secret = secret;
        }
        if need_mutual {
            let found = match &self.secrets.target_file {
                Some(path) => Some(read_secret_file(path).map_err(err)?),
                None => std::env::var(MUTUAL_SECRET_ENV)
                    .ok()
                    .filter(|s| !s.is_empty())
                    .or_else(|| prompted.and_then(|p| p.1.clone())),
            };
            let secret = found.ok_or_else(|| {
                err(format!(
                    "mutual CHAP (target_user=) has no target secret: set \
                     {MUTUAL_SECRET_ENV}, add ?target-secret-file=PATH, or run on a terminal \
                     to be asked"
                ))
            })?;
            self.creds_mut().map_err(err)?.target_secret = Some(secret);
        }
        Ok(())
    }

    fn apply_query(&mut self, query: &str) -> Result<(), String> {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "initiator" | "initiator-name" | "initiator_name" => {
                    if v.is_empty() {
                        return Err("initiator= needs an IQN".into());
                    }
                    self.initiator = v.to_string();
                }
                "target_user" | "target-user" => self.creds_mut()?.target_user = Some(v.into()),
                "target_password" | "target-password" => {
                    self.secrets.in_url = true;
                    self.creds_mut()?.target_secret = Some(v.into())
                }
                "secret_file" | "secret-file" => self.secrets.file = Some(file_param(k, v)?),
                "target_secret_file" | "target-secret-file" => {
                    self.creds_mut()?;
                    self.secrets.target_file = Some(file_param(k, v)?)
                }
                "header_digest" | "header-digest" => self.header_digest = parse_digest(v)?,
                "data_digest" | "data-digest" => self.data_digest = parse_digest(v)?,
                "reconnect" => match v.parse::<u64>() {
                    Ok(secs) if secs <= MAX_RECONNECT_SECS => {
                        self.reconnect = std::time::Duration::from_secs(secs)
                    }
                    _ => {
                        return Err(format!(
                            "reconnect={v} is out of range: a whole number from 0 to \
                             {MAX_RECONNECT_SECS} s"
                        ));
                    }
                },
                "timeout" => match v.parse::<u64>() {
                    Ok(secs) if (1..=MAX_RECONNECT_SECS).contains(&secs) => {
                        self.timeout = std::time::Duration::from_secs(secs)
                    }
                    _ => {
                        return Err(format!(
                            "timeout={v} is out of range: a whole number from 1 to \
                             {MAX_RECONNECT_SECS} s"
                        ));
                    }
                },
                _ => return Err(format!("unknown option {k:?}")),
            }
        }
        Ok(())
    }

    fn creds_mut(&mut self) -> Result<&mut Credentials, String> {
        self.credentials
            .as_mut()
            .ok_or_else(|| "mutual CHAP needs a CHAP user (iscsi://USER@host/…) first".to_string())
    }

    /// `host:port`, with brackets for IPv6.
    pub fn portal(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The LUN, or an error naming the URL when it has none.
    pub fn require_lun(&self) -> Result<u64> {
        match (self.target.is_empty(), self.lun) {
            (false, Some(lun)) => Ok(lun),
            _ => Err(Error::Url {
                url: self.to_string(),
                reason: "it needs a target and a LUN: iscsi://host[:port]/iqn/lun".into(),
            }),
        }
    }
}

impl fmt::Display for Url {
    /// The URL without the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "iscsi://")?;
        if let Some(c) = &self.credentials {
            write!(f, "{}@", c.user)?;
        }
        write!(f, "{}", self.portal())?;
        if !self.target.is_empty() {
            write!(f, "/{}", self.target)?;
            if let Some(lun) = self.lun {
                write!(f, "/{lun}")?;
            }
        }
        Ok(())
    }
}

fn split_host_port(hostport: &str) -> Option<(String, u16)> {
    if let Some(rest) = hostport.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => DEFAULT_PORT,
            None => return None,
        };
        return (!host.is_empty() && port != 0).then(|| (host.to_string(), port));
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (hostport, DEFAULT_PORT),
    };
    (!host.is_empty() && port != 0).then(|| (host.to_string(), port))
}

fn split_path(path: &str) -> Option<(String, Option<u64>)> {
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        return Some((String::new(), None));
    }
    match path.rsplit_once('/') {
        Some((target, lun)) => Some((target.to_string(), Some(lun.parse().ok()?))),
        None => Some((path.to_string(), None)),
    }
}

fn file_param(key: &str, value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Err(format!("{key}= needs a file name"));
    }
    Ok(value.to_string())
}

/// A secret from a file: a regular file (no FIFO or device to block on or stream from), at
/// most [`MAX_SECRET_FILE`] bytes, UTF-8; one trailing newline is dropped. Errors name the
/// file, never its content.
fn read_secret_file(path: &str) -> std::result::Result<String, String> {
    use std::io::Read;
    let why = |e: std::io::Error| format!("secret file {path}: {e}");
    let file = std::fs::File::open(path).map_err(why)?;
    let meta = file.metadata().map_err(why)?;
    if !meta.is_file() {
        return Err(format!("secret file {path}: not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SECRET_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(why)?;
    if bytes.len() as u64 > MAX_SECRET_FILE {
        return Err(format!(
            "secret file {path}: larger than {MAX_SECRET_FILE} bytes, not a CHAP secret"
        ));
    }
    let text =
        String::from_utf8(bytes).map_err(|_| format!("secret file {path}: not UTF-8 text"))?;
    let secret = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if secret.is_empty() || secret.contains(['\n', '\r']) {
        return Err(format!(
            "secret file {path}: must hold one line, the secret"
        ));
    }
    Ok(secret.to_string())
}

fn parse_userinfo(info: &str) -> Result<Credentials, &'static str> {
    let (user, secret) = info.split_once('%').unwrap_or((info, ""));
    if user.is_empty() {
        return Err("the CHAP user name is empty");
    }
    Ok(Credentials {
        user: user.to_string(),
        secret: secret.to_string(),
        target_user: None,
        target_secret: None,
    })
}

fn parse_digest(v: &str) -> Result<Digest, String> {
    match v.to_ascii_lowercase().as_str() {
        "none" => Ok(Digest::None),
        "crc32c" => Ok(Digest::Crc32c),
        _ => Err(format!("digest must be none or crc32c, not {v:?}")),
    }
}

/// The URL with its CHAP secrets replaced, for error messages: the password before `@`
/// and the value of every query option whose name holds `password` or `secret`
/// (`target_password`, `target-password`).
/// Splits `user[%secret]@` off the text after `iscsi://`. People type secrets as they are,
/// not percent-encoded, so a secret may hold `?`, `/` or `@`: the user info ends at the
/// first `@` that follows a user name (no `/` or `?` before its `%`) and is followed by
/// something shaped as a host and port, up to `/`, `?` or the end.
fn split_userinfo(rest: &str) -> (Option<&str>, &str) {
    for (at, _) in rest.match_indices('@') {
        let info = &rest[..at];
        let user = info.split_once('%').map_or(info, |(u, _)| u);
        if user.contains(['/', '?']) {
            break; // past the host: an `@` in the path or query, no user info
        }
        let after = &rest[at + 1..];
        let hostport = &after[..after.find(['/', '?']).unwrap_or(after.len())];
        let host_shaped = !hostport.is_empty()
            && hostport
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_:[]%\\".contains(&b));
        if host_shaped {
            return (Some(info), after);
        }
    }
    (None, rest)
}

fn redact(raw: &str) -> String {
    let (scheme, rest) = match raw.find("://") {
        Some(i) => raw.split_at(i + 3),
        None => ("", raw),
    };
    let mut out = scheme.to_string();
    let rest = match split_userinfo(rest) {
        (Some(info), after) => {
            match info.split_once('%') {
                Some((user, _)) => out.push_str(&format!("{user}%***@")),
                None => out.push_str(&format!("{info}@")),
            }
            after
        }
        (None, rest) => rest,
    };
    let (head, query) = match rest.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (rest, None),
    };
    out.push_str(head);
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if is_secret_key(k) => format!("{k}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    out
}

fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("password") || k.contains("secret")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn full_url() {
        let u = Url::parse(
            "iscsi://alice%s3cret@10.0.0.7:3261/iqn.2026-11.lab:disk/2?initiator=iqn.x:y&target_user=t&target_password=p&data_digest=crc32c",
        )
        .unwrap();
        assert_eq!(u.host, "10.0.0.7");
        assert_eq!(u.port, 3261);
        assert_eq!(u.target, "iqn.2026-11.lab:disk");
        assert_eq!(u.lun, Some(2));
        assert_eq!(u.initiator, "iqn.x:y");
        let c = u.credentials.as_ref().unwrap();
        assert_eq!((c.user.as_str(), c.secret.as_str()), ("alice", "s3cret"));
        assert_eq!(c.target_secret.as_deref(), Some("p"));
        assert_eq!(u.data_digest, Digest::Crc32c);
        assert_eq!(
            u.to_string(),
            "iscsi://alice@10.0.0.7:3261/iqn.2026-11.lab:disk/2"
        );
    }

    #[test]
    fn fio_escapes_and_defaults() {
        let u = Url::parse("iscsi\\://127.0.0.1/iqn.2026-11.lab\\:disk/1").unwrap();
        assert_eq!(
            (u.port, u.target.as_str(), u.lun),
            (3260, "iqn.2026-11.lab:disk", Some(1))
        );
        assert_eq!(u.initiator, DEFAULT_INITIATOR);
    }

    #[test]
    fn reconnect_window() {
        let secs = |q: &str| Url::parse(&format!("iscsi://h/iqn.x:d/1{q}")).map(|u| u.reconnect);
        assert_eq!(secs("").unwrap().as_secs(), DEFAULT_RECONNECT_SECS);
        assert_eq!(secs("?reconnect=5").unwrap().as_secs(), 5);
        assert!(secs("?reconnect=0").unwrap().is_zero());
        for bad in ["-1", "abc", "", "86401"] {
            let e = secs(&format!("?reconnect={bad}")).unwrap_err().to_string();
            assert!(
                e.contains(&format!("reconnect={bad} is out of range")),
                "{e}"
            );
        }
    }

    /// A secret holding `?`, `/` or `@` is the secret, and no part of it is in an error.
    #[test]
    fn secrets_with_url_delimiters_are_whole_and_never_shown() {
        for secret in ["se?cret", "pa/ss", "p@ss", "a?b=c&d/e@f"] {
            let url = Url::parse(&format!("iscsi://alice%{secret}@host:3261/iqn.x:d/1")).unwrap();
            assert_eq!(url.credentials.unwrap().secret, secret);
            assert_eq!((url.host.as_str(), url.port), ("host", 3261));
            assert_eq!((url.target.as_str(), url.lun), ("iqn.x:d", Some(1)));
            let e = Url::parse(&format!("iscsi://alice%{secret}@host/iqn.x:d/x"))
                .unwrap_err()
                .to_string();
            let tail = &secret[1..];
            assert!(!e.contains(tail) && e.contains("alice%***@host"), "{e}");
        }
        // An `@` after the host is no user info.
        let url = Url::parse("iscsi://host/iqn.x:d/1?secret-file=/a@b/c");
        assert!(url.unwrap_err().to_string().contains("needs a CHAP user"));
    }

    #[test]
    fn timeout_bounds_every_wait_for_commands() {
        let parse = |q: &str| Url::parse(&format!("iscsi://h/iqn.x:d/1{q}"));
        assert_eq!(parse("").unwrap().timeout.as_secs(), DEFAULT_TIMEOUT_SECS);
        let t = crate::Config::new(parse("?timeout=2").unwrap()).timeouts;
        assert_eq!(t.io.as_secs(), 2);
        assert_eq!(t.nop_interval.as_secs(), 1);
        assert_eq!(t.nop_timeout.as_secs(), 2);
        let t = crate::Config::new(parse("").unwrap()).timeouts;
        assert_eq!(t, crate::session::Timeouts::default());
        for bad in ["0", "-1", "abc", "", "86401"] {
            let e = parse(&format!("?timeout={bad}")).unwrap_err().to_string();
            assert!(e.contains(&format!("timeout={bad} is out of range")), "{e}");
        }
    }

    #[test]
    fn secrets_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours");
        let theirs = dir.path().join("theirs");
        std::fs::write(&ours, "s3cret-ours\n").unwrap();
        std::fs::write(&theirs, "s3cret-theirs").unwrap();
        let raw = format!(
            "iscsi://alice@h/iqn.x:d/1?secret-file={}&target_user=bob&target-secret-file={}",
            ours.display(),
            theirs.display()
        );
        let mut u = Url::parse(&raw).unwrap();
        assert_eq!(u.needs_secret(), (true, true));
        assert!(!u.secrets.in_url);
        u.resolve_secrets().unwrap();
        let c = u.credentials.as_ref().unwrap();
        assert_eq!(c.secret, "s3cret-ours");
        assert_eq!(c.target_secret.as_deref(), Some("s3cret-theirs"));
        assert!(Url::parse("iscsi://a%b@h/t/1").unwrap().secrets.in_url);
        assert!(Url::parse("iscsi://h/t/1?secret-file=/x").is_err());
        // Not a regular file, too large, absent: named, content never shown.
        std::fs::write(&ours, "x".repeat(5000)).unwrap();
        for path in [
            "/dev/zero".to_string(),
            ours.display().to_string(),
            "/nonexistent".into(),
        ] {
            let mut u = Url::parse(&format!("iscsi://alice@h/t/1?secret-file={path}")).unwrap();
            let e = u.resolve_secrets().unwrap_err().to_string();
            assert!(
                e.contains(&format!("secret file {path}")) && !e.contains("xxx"),
                "{e}"
            );
        }
    }

    #[test]
    fn portal_only_and_ipv6() {
        let u = Url::parse("iscsi://[::1]:3300").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 3300));
        assert_eq!(u.portal(), "[::1]:3300");
        assert!(u.require_lun().is_err());
    }

    /// Found by fuzzing (fuzz/regressions/url): port 0 was refused after a host name but
    /// taken after a bracketed IPv6 address.
    #[test]
    fn port_zero_is_refused_in_every_form() {
        for bad in ["iscsi://h:0/t/1", "iscsi://[::1]:0/t/1", "iscsi://[;:1]:0"] {
            let e = Url::parse(bad).unwrap_err().to_string();
            assert!(e.contains("a port from 1 to 65535"), "{bad}: {e}");
        }
    }

    #[test]
    fn errors_are_one_line_and_hide_passwords() {
        for bad in [
            "nfs://x/y",
            "iscsi://h:99999/t/1",
            "iscsi://h/t/x",
            "iscsi://u%pw@h/t/1?bogus=1",
            "iscsi:///t/1",
            "iscsi://u%pw@h/t/x?target_user=t&target_password=pw",
            "iscsi://u%pw@h/t/1?target-password=pw&bogus=1",
        ] {
            let e = Url::parse(bad).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
            if bad.contains("99999") {
                assert!(e.contains("\"h:99999\"") && e.contains("1 to 65535"), "{e}");
            }
            assert!(!e.contains("pw"), "{e}");
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,100}") {
            let _ = Url::parse(&s);
        }

        #[test]
        fn display_round_trips(host in "[a-z][a-z0-9.]{0,20}", port in 1u16.., lun in 0u64..16384,
                               tgt in "iqn\\.[0-9]{4}-[0-9]{2}\\.[a-z]{1,8}:[a-z0-9.]{1,10}") {
            let s = format!("iscsi://{host}:{port}/{tgt}/{lun}");
            let u = Url::parse(&s).unwrap();
            prop_assert_eq!(u.to_string(), s);
        }
    }
}
