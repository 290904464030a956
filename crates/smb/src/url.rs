//! `smb://[user[;domain][:password]@]host[:port]/share[/path][?options]`, the SMB URL
//! convention (as gvfs and smbclient spell it). The query ends at the next `/` and the path
//! goes on after it (`smb://h/s/dir?seal=1/job.0.0`), as for `nfs://`.
//!
//! Options: `seal=1` (encrypt even if the server does not require it), `sign=1` (sign even
//! if not required), `vers=2.0.2|2.1|3.0|3.0.2|3.1.1` (highest dialect offered),
//! `timeout=SECONDS` (connect and each reply, default 30), `reconnect=SECONDS` (how long a
//! lost connection may take to come back, 0 to fail at once; default 60), `credits=N`
//! (window asked for, default 512), `durable=0` (no lease and durable handle requests: files
//! are reopened by name after a lost connection). A password in the URL is accepted but [`SmbUrl::password_in_url`] says so,
//! since argv is visible to other users; `Debug` never shows it.

use std::fmt;
use std::time::Duration;

use crate::crypto::{SMB202, SMB210, SMB300, SMB302, SMB311};
use crate::error::SmbError;

/// The environment variable the password is read from.
pub const PASSWORD_ENV: &str = "STORBENCH_SMB_PASSWORD";

static PROMPTED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Keeps a password typed at a prompt for every connection of this process.
pub fn set_prompted(password: String) {
    let _ = PROMPTED.set(password);
}

/// The password from the environment, else the one typed at the prompt.
pub fn password_from_env() -> Option<String> {
    std::env::var(PASSWORD_ENV)
        .ok()
        .filter(|p| !p.is_empty())
        .or_else(|| PROMPTED.get().cloned())
}

pub const DEFAULT_PORT: u16 = 445;

#[derive(Clone, PartialEq, Eq)]
pub struct SmbUrl {
    pub user: Option<String>,
    pub domain: String,
    password: Option<String>,
    pub host: String,
    pub port: u16,
    pub share: String,
    /// The path inside the share, `/`-separated, without leading or trailing `/`.
    pub path: String,
    pub seal: bool,
    pub sign: bool,
    pub max_dialect: u16,
    pub timeout: Duration,
    /// How long a lost connection may stay lost (no IO completed) before the engine gives
    /// up; zero fails at the first loss.
    pub reconnect: Duration,
    pub credits: u16,
    /// Ask for durable handles (with a read+handle lease) on data files.
    pub durable: bool,
}

impl fmt::Debug for SmbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

impl SmbUrl {
    pub fn parse(url: &str) -> Result<SmbUrl, SmbError> {
        let bad = |reason: &str| SmbError::Url {
            url: redact(url),
            reason: reason.to_string(),
        };
        let rest = url
            .strip_prefix("smb://")
            .ok_or_else(|| bad("must start with smb://"))?;
        // The query ends at the next `/`, and what follows continues the path, so that a
        // directory URL with options can have file names appended (fio's --directory).
        let joined;
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => match q.split_once('/') {
                Some((q, more)) => {
                    joined = format!("{}/{more}", r.trim_end_matches('/'));
                    (joined.as_str(), Some(q))
                }
                None => (r, Some(q)),
            },
            None => (rest, None),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (auth, hostport) = match authority.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, authority),
        };
        let (host, port) = split_port(hostport).map_err(|r| bad(&r))?;
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let mut parts = path.split('/').filter(|s| !s.is_empty());
        let share = parts
            .next()
            .ok_or_else(|| bad("no share name"))?
            .to_string();
        // Each name is decoded on its own, so that `%2F` cannot hide a separator (or `%2E%2E`
        // a parent) inside one name.
        let mut path = Vec::new();
        for part in parts {
            let name = decode(part).map_err(|r| bad(&r))?;
            if name == "." || name == ".." {
                return Err(bad("`.` and `..` are not allowed in the path"));
            }
            if name.contains(['/', '\\']) {
                return Err(bad("a name in the path holds an escaped / or \\"));
            }
            path.push(name);
        }
        let mut u = SmbUrl {
            user: None,
            domain: String::new(),
            password: None,
            host: host.to_string(),
            port,
            share: decode(&share).map_err(|r| bad(&r))?,
            path: path.join("/"),
            seal: false,
            sign: false,
            max_dialect: SMB311,
            timeout: Duration::from_secs(30),
            reconnect: Duration::from_secs(60),
            credits: 512,
            durable: true,
        };
        if let Some(a) = auth {
            let (who, pw) = match a.split_once(':') {
                Some((w, p)) => (w, Some(decode(p).map_err(|r| bad(&r))?)),
                None => (a, None),
            };
            let (user, domain) = match who.split_once(';') {
                Some((d, u)) => (u, d),
                None => (who, ""),
            };
            if user.is_empty() {
                return Err(bad("empty user name before @"));
            }
            u.user = Some(decode(user).map_err(|r| bad(&r))?);
            u.domain = decode(domain).map_err(|r| bad(&r))?;
            u.password = pw;
        }
        for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "seal" => u.seal = flag(v).map_err(|r| bad(&r))?,
                "sign" => u.sign = flag(v).map_err(|r| bad(&r))?,
                "durable" => u.durable = flag(v).map_err(|r| bad(&r))?,
                "vers" => {
                    u.max_dialect = match v {
                        "2.0.2" | "2.02" => SMB202,
                        "2.1" | "2.10" => SMB210,
                        "3.0" | "3" => SMB300,
                        "3.0.2" | "3.02" => SMB302,
                        "3.1.1" | "3.11" => SMB311,
                        _ => {
                            return Err(bad(&format!(
                                "vers={v}: expected 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1"
                            )));
                        }
                    }
                }
                "timeout" => {
                    let s: u64 = v
                        .parse()
                        .ok()
                        .filter(|&s| s > 0 && s <= 3600)
                        .ok_or_else(|| bad(&format!("timeout={v}: expected 1 to 3600 seconds")))?;
                    u.timeout = Duration::from_secs(s);
                }
                "reconnect" => {
                    let s: u64 = v.parse().ok().filter(|&s| s <= 86_400).ok_or_else(|| {
                        bad(&format!("reconnect={v}: expected 0 to 86400 seconds"))
                    })?;
                    u.reconnect = Duration::from_secs(s);
                }
                "credits" => {
                    u.credits = v
                        .parse()
                        .ok()
                        .filter(|&c| (1..=crate::conn::MAX_CREDITS).contains(&c))
                        .ok_or_else(|| {
                            bad(&format!(
                                "credits={v}: expected 1 to {}",
                                crate::conn::MAX_CREDITS
                            ))
                        })?;
                }
                _ => return Err(bad(&format!("unknown option {k:?}"))),
            }
        }
        Ok(u)
    }

    /// True when the URL itself carried a password (the caller should warn).
    pub fn password_in_url(&self) -> bool {
        self.password.is_some()
    }

    /// The password: from the URL, else from `env_password` (the environment), else none.
    pub fn credentials(&self, env_password: Option<String>) -> crate::ntlm::Credentials {
        crate::ntlm::Credentials {
            user: self.user.clone().unwrap_or_default(),
            domain: self.domain.clone(),
            password: self.password.clone().or(env_password).unwrap_or_default(),
        }
    }

    /// The same share and options with `name` (a relative name, `/`-separated, whose
    /// components the caller checked) below the path: a directory URL plus a file name.
    /// A component holding `\\` is refused, as in a parsed URL: the client sends `/` as
    /// `\\`, so it would split into two names.
    pub fn join(&self, name: &str) -> Result<SmbUrl, SmbError> {
        if name.contains('\\') {
            return Err(SmbError::Url {
                url: self.display(),
                reason: format!("{name:?}: a name in the path holds a \\"),
            });
        }
        let path = if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.path)
        };
        Ok(SmbUrl {
            path,
            ..self.clone()
        })
    }

    /// `host:port` for messages.
    pub fn server(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The URL without any password, for messages and results (it parses back to the same
    /// target).
    pub fn display(&self) -> String {
        let who = match &self.user {
            Some(u) if self.domain.is_empty() => format!("{}@", escape(u, "")),
            Some(u) => format!("{};{}@", escape(&self.domain, ""), escape(u, "")),
            None => String::new(),
        };
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let port = if self.port == DEFAULT_PORT {
            String::new()
        } else {
            format!(":{}", self.port)
        };
        let path = if self.path.is_empty() {
            String::new()
        } else {
            format!("/{}", escape(&self.path, "/"))
        };
        format!("smb://{who}{host}{port}/{}{path}", escape(&self.share, ""))
    }
}

/// A URL as typed, with any password replaced (for error messages).
pub fn redact(url: &str) -> String {
    let Some(rest) = url.strip_prefix("smb://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..end].rfind('@') else {
        return url.to_string();
    };
    match rest[..at].split_once(':') {
        Some((who, _)) => format!("smb://{who}:***{}", &rest[at..]),
        None => url.to_string(),
    }
}

fn split_port(hp: &str) -> Result<(&str, u16), String> {
    if let Some(r) = hp.strip_prefix('[') {
        let (h, tail) = r.split_once(']').ok_or("unclosed [ in host")?;
        if h.contains('[') || h.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("bad host [{h}]"));
        }
        return match tail.strip_prefix(':') {
            Some(p) => Ok((h, port(p)?)),
            None if tail.is_empty() => Ok((h, DEFAULT_PORT)),
            None => Err("junk after ]".into()),
        };
    }
    let (h, p) = match hp.rsplit_once(':') {
        Some((h, p)) => (h, port(p)?),
        None => (hp, DEFAULT_PORT),
    };
    // An IPv6 address goes in brackets; anything else with a colon, a bracket, a space or a
    // control character is no host name, and would not read back the same when shown.
    if h.contains([':', '[', ']']) || h.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "bad host {h:?} (an IPv6 address goes in brackets: [addr])"
        ));
    }
    Ok((h, p))
}

fn port(p: &str) -> Result<u16, String> {
    p.parse::<u16>()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| format!("bad port {p:?}"))
}

fn flag(v: &str) -> Result<bool, String> {
    match v {
        "1" | "yes" | "true" | "" => Ok(true),
        "0" | "no" | "false" => Ok(false),
        _ => Err(format!("expected 0 or 1, got {v:?}")),
    }
}

/// Percent-encoding of the characters that delimit URL parts (`keep` are left as they are).
fn escape(s: &str, keep: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "%/?@:;#[]&= ".contains(c) && !keep.contains(c) || c.is_control() {
            let mut b = [0u8; 4];
            for byte in c.encode_utf8(&mut b).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Percent-decoding (UTF-8).
fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("bad %-escape")?;
            out.push(h);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "%-escapes are not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_url_parses_and_never_shows_the_password() {
        let u =
            SmbUrl::parse("smb://WORK;alice:s%40cret@nas.lan:4455/data/bench/f1?seal=1&vers=3.0")
                .unwrap();
        assert_eq!(u.user.as_deref(), Some("alice"));
        assert_eq!(u.domain, "WORK");
        assert_eq!(u.host, "nas.lan");
        assert_eq!(u.port, 4455);
        assert_eq!(u.share, "data");
        assert_eq!(u.path, "bench/f1");
        assert!(u.seal && !u.sign);
        assert_eq!(u.max_dialect, SMB300);
        assert!(u.password_in_url());
        assert_eq!(u.credentials(None).password, "s@cret");
        assert!(!format!("{u:?}").contains("cret"));
        assert_eq!(u.display(), "smb://WORK;alice@nas.lan:4455/data/bench/f1");
    }

    #[test]
    fn options_may_stand_before_appended_file_names() {
        let u = SmbUrl::parse("smb://h/s/dir?seal=1&vers=3.0/job.0.0").unwrap();
        assert_eq!(u.path, "dir/job.0.0");
        assert!(u.seal);
        assert_eq!(u.max_dialect, SMB300);
    }

    #[test]
    fn a_name_with_a_backslash_is_refused_below_a_share() {
        assert!(SmbUrl::parse("smb://h/s").unwrap().join("a\\b").is_err());
    }

    #[test]
    fn guest_url_and_env_password() {
        let u = SmbUrl::parse("smb://nas/share").unwrap();
        assert_eq!((u.port, u.path.as_str(), u.user.clone()), (445, "", None));
        let u = SmbUrl::parse("smb://bob@[::1]/s/d/").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.path, "d");
        assert_eq!(u.credentials(Some("pw".into())).password, "pw");
        assert_eq!(u.server(), "[::1]:445");
    }

    #[test]
    fn bad_urls_are_one_line_errors_without_the_password() {
        for bad in [
            "nfs://x/y",
            "smb://host",
            "smb:///share",
            "smb://h:0/s",
            "smb://h:99999/s",
            "smb://h/s/../x",
            "smb://h/s?vers=4",
            "smb://h/s?bogus=1",
            "smb://h/s?timeout=0",
            "smb://h/s?reconnect=-1",
            "smb://h/s?reconnect=86401",
            "smb://:pw@h/s",
            "smb://h/s/%zz",
            "smb://h/s/a%2F/b",
            "smb://h/s/%2E%2E/x",
            "smb://h/s/a%5Cb",
        ] {
            let e = SmbUrl::parse(bad).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
        }
        let e = SmbUrl::parse("smb://u:topsecret@h?vers=9")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("topsecret"), "{e}");
    }

    #[test]
    fn reconnect_window() {
        let secs = |q: &str| SmbUrl::parse(&format!("smb://h/s{q}")).map(|u| u.reconnect);
        assert_eq!(secs("").unwrap().as_secs(), 60);
        assert_eq!(secs("?reconnect=5").unwrap().as_secs(), 5);
        assert!(secs("?reconnect=0").unwrap().is_zero());
        let e = secs("?reconnect=x").unwrap_err().to_string();
        assert!(
            e.contains("reconnect=x: expected 0 to 86400 seconds"),
            "{e}"
        );
    }
}
