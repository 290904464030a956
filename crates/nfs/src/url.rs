//! `nfs://` URLs: `nfs://host[:port]/export/path[?option=value&…]`.
//!
//! The query may also stand in the middle (`nfs://h/export/dir?version=3/job.0.0`), because
//! fio-style runners append generated file names to a directory that carries the options:
//! a query ends at the next `/`, and what follows continues the path.

use std::fmt;
use std::time::Duration;

use crate::error::NfsError;

/// Options accepted in the query string, for messages.
const KNOWN: &str = "version, uid, gid, port (nfsport), mountport, nconnect, rsize, wsize, timeout, reconnect, uncommitted, readahead=0";
/// Default for `uncommitted=`: acknowledged UNSTABLE data kept for re-sending.
pub const DEFAULT_UNCOMMITTED: usize = 64 << 20;

/// The protocol version a URL asks for with `version=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NfsVersion {
    V3,
    /// `version=4`: the highest minor version the server offers (4.2, else 4.1).
    V4,
    V4_1,
    V4_2,
}

impl NfsVersion {
    fn parse(v: &str) -> Result<NfsVersion, String> {
        match v {
            "3" => Ok(NfsVersion::V3),
            "4" => Ok(NfsVersion::V4),
            "4.1" => Ok(NfsVersion::V4_1),
            "4.2" => Ok(NfsVersion::V4_2),
            "4.0" => {
                Err("version=4.0 is not supported; storbench speaks NFSv3, 4.1 and 4.2".into())
            }
            _ => Err(format!(
                "version={v} is not supported; storbench speaks NFSv3 (version=3), 4.1 and 4.2 (version=4.1, 4.2, or 4 for the highest)"
            )),
        }
    }

    /// The NFSv4 minor version asked for, `None` for v3 or "the highest".
    pub fn minor(self) -> Option<u32> {
        match self {
            NfsVersion::V4_1 => Some(1),
            NfsVersion::V4_2 => Some(2),
            NfsVersion::V3 | NfsVersion::V4 => None,
        }
    }

    pub fn is_v4(self) -> bool {
        self != NfsVersion::V3
    }
}

/// A parsed NFS URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfsUrl {
    /// Host name or address, IPv6 without brackets.
    pub host: String,
    /// NFS port; `None` asks the portmapper.
    pub port: Option<u16>,
    /// MOUNT port; `None` asks the portmapper.
    pub mount_port: Option<u16>,
    /// Absolute, normalised path: export plus the path inside it.
    pub path: String,
    pub uid: u32,
    pub gid: u32,
    /// TCP connections per client (`nconnect`).
    pub nconnect: usize,
    /// Caps on the READ and WRITE size below the server's rtmax/wtmax.
    pub rsize: Option<u32>,
    pub wsize: Option<u32>,
    /// How long a call may go without a reply byte before the connection counts as lost.
    pub timeout: Duration,
    /// How long to keep reconnecting after a loss (0: fail at once).
    pub reconnect: Duration,
    /// Bytes of acknowledged UNSTABLE writes kept until COMMITted, to be written again if
    /// the server restarts (0: write FILE_SYNC instead).
    pub uncommitted: usize,
    /// The version asked for; `None` when the URL names none.
    pub version: Option<NfsVersion>,
}

impl NfsUrl {
    /// True for strings this module parses.
    pub fn is_nfs(s: &str) -> bool {
        // Bytes, not a str slice: the sixth byte may fall inside a character.
        s.as_bytes()
            .get(..6)
            .is_some_and(|p| p.eq_ignore_ascii_case(b"nfs://"))
    }

    /// Refuses a URL as typed that names no export (`nfs://host`, `nfs://host?uid=1`),
    /// which [`NfsUrl::parse`] reads as the export `/`: a user who meant `/` writes it.
    pub fn require_export(url: &str) -> Result<(), String> {
        let rest = url.get("nfs://".len()..).unwrap_or_default();
        if rest
            .trim_start_matches(|c| c != '/' && c != '?')
            .starts_with('/')
        {
            return Ok(());
        }
        Err(format!(
            "no export path in URL {url}: write nfs://host/export (nfs://host/ for a server \
             that exports /)"
        ))
    }

    pub fn parse(url: &str) -> Result<NfsUrl, NfsError> {
        let bad = |reason: String| NfsError::Url {
            url: url.to_string(),
            reason,
        };
        if !Self::is_nfs(url) {
            return Err(bad("it must start with nfs://".into()));
        }
        let rest = &url[6..];
        let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (host, port) = parse_authority(&rest[..auth_end]).map_err(bad)?;
        let (path, query) = split_query(&rest[auth_end..]);
        let path = normalise(&percent_decode(&path).map_err(bad)?).map_err(bad)?;
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut u = NfsUrl {
            host,
            port,
            mount_port: None,
            path,
            uid,
            gid,
            nconnect: 1,
            rsize: None,
            wsize: None,
            timeout: Duration::from_secs(30),
            reconnect: Duration::from_secs(60),
            uncommitted: DEFAULT_UNCOMMITTED,
            version: None,
        };
        let mut uncommitted = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if k == "uncommitted" {
                uncommitted = Some(v);
            }
            u.set_option(k, v).map_err(bad)?;
        }
        // After every option: its lower bound depends on wsize=.
        if let Some(v) = uncommitted {
            u.check_uncommitted(v).map_err(bad)?;
        }
        Ok(u)
    }

    fn set_option(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
            v.parse()
                .map_err(|_| format!("{key}={v} is not a valid number"))
        }
        match key {
            "version" => self.version = Some(NfsVersion::parse(value)?),
            "uid" => self.uid = num(key, value)?,
            "gid" => self.gid = num(key, value)?,
            "port" | "nfsport" => self.port = Some(ranged(key, value, 1, 65535, "")? as u16),
            "mountport" => self.mount_port = Some(ranged(key, value, 1, 65535, "")? as u16),
            "nconnect" => self.nconnect = ranged(key, value, 1, 16, "")? as usize,
            "rsize" => self.rsize = Some(size_opt(key, value)?),
            "wsize" => self.wsize = Some(size_opt(key, value)?),
            "timeout" => {
                self.timeout = Duration::from_secs(ranged(key, value, 1, MAX_SECS, " s")?);
            }
            "reconnect" => {
                self.reconnect = Duration::from_secs(ranged(key, value, 0, MAX_SECS, " s")?);
            }
            "uncommitted" => self.uncommitted = bytes_opt(key, value)?,
            "readahead" if value == "0" => {}
            "readahead" => {
                return Err(
                    "storbench never caches or reads ahead; only readahead=0 is accepted".into(),
                );
            }
            _ => return Err(format!("unknown option {key:?}; known: {KNOWN}")),
        }
        Ok(())
    }

    /// `uncommitted=` keeps nothing (0) or at least four WRITEs, so that one always fits
    /// while the rest waits for a COMMIT.
    fn check_uncommitted(&self, value: &str) -> Result<(), String> {
        let min = 4 * self.wsize.unwrap_or(MAX_WSIZE) as usize;
        if self.uncommitted != 0 && self.uncommitted < min {
            return Err(format!(
                "uncommitted={value} is out of range: 0 (write FILE_SYNC) or at least {} \
                 (4 x wsize)",
                human(min)
            ));
        }
        Ok(())
    }

    /// `host:port` for messages (IPv6 in brackets).
    pub fn host_port(&self, port: u16) -> String {
        if self.host.contains(':') {
            format!("[{}]:{port}", self.host)
        } else {
            format!("{}:{port}", self.host)
        }
    }

    /// The same server and options with `rel` appended to the path (fio's `nfs_url` plus a
    /// file name).
    pub fn join(&self, rel: &str) -> Result<NfsUrl, NfsError> {
        let joined = format!("{}/{}", self.path, rel);
        let path = normalise(&joined).map_err(|reason| NfsError::Url {
            url: joined.clone(),
            reason,
        })?;
        Ok(NfsUrl {
            path,
            ..self.clone()
        })
    }
}

impl fmt::Display for NfsUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(p) => write!(f, "nfs://{}{}", self.host_port(p), self.path),
            None if self.host.contains(':') => write!(f, "nfs://[{}]{}", self.host, self.path),
            None => write!(f, "nfs://{}{}", self.host, self.path),
        }
    }
}

/// Largest `timeout=` / `reconnect=`: a day.
const MAX_SECS: u64 = 86_400;
/// Largest READ/WRITE the client issues (and so the largest `rsize=` / `wsize=`).
pub const MAX_WSIZE: u32 = 1 << 20;

/// A whole number in `min..=max`, or an error naming the option, its value and the range.
fn ranged(key: &str, v: &str, min: u64, max: u64, unit: &str) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{key}={v} is out of range: a whole number from {min} to {max}{unit}"
        )),
    }
}

fn size_opt(key: &str, v: &str) -> Result<u32, String> {
    Ok(ranged(key, v, 4096, u64::from(MAX_WSIZE), " bytes")? as u32)
}

/// `4m`, `512k` or bytes, for messages.
fn human(n: usize) -> String {
    match n {
        n if n % (1 << 20) == 0 => format!("{}m", n >> 20),
        n if n % (1 << 10) == 0 => format!("{}k", n >> 10),
        n => n.to_string(),
    }
}

/// A byte count with an optional binary suffix (`64m`, `1G`, `512k`).
fn bytes_opt(key: &str, v: &str) -> Result<usize, String> {
    let bad = || format!("{key}={v} is not a size (e.g. 64m, 1g, 0)");
    let (digits, shift) = match v.as_bytes().last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&v[..v.len() - 1], 10),
        Some(b'm') => (&v[..v.len() - 1], 20),
        Some(b'g') => (&v[..v.len() - 1], 30),
        _ => (v, 0),
    };
    let n: usize = digits.parse().map_err(|_| bad())?;
    n.checked_mul(1 << shift).ok_or_else(bad)
}

fn parse_authority(a: &str) -> Result<(String, Option<u16>), String> {
    if a.contains('@') {
        return Err("user names in NFS URLs are not supported; use ?uid= and ?gid=".into());
    }
    let (host, port) = if let Some(v6) = a.strip_prefix('[') {
        let end = v6.find(']').ok_or("unclosed [ in IPv6 address")?;
        let after = &v6[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(format!("unexpected {after:?} after the IPv6 address")),
        };
        (&v6[..end], port)
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => {
                return Err(
                    "IPv6 addresses must be written in brackets, e.g. nfs://[::1]/export".into(),
                );
            }
            None => (a, None),
        }
    };
    if host.is_empty() {
        return Err("no server name".into());
    }
    let port = match port {
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or(format!("bad port {p:?}"))?,
        ),
        None => None,
    };
    Ok((host.to_string(), port))
}

/// Splits `/a/b?q=1/c` into (`/a/b/c`, `q=1`); several queries are joined with `&`.
fn split_query(s: &str) -> (String, String) {
    let mut path = String::new();
    let mut query = String::new();
    let mut rest = s;
    while let Some(q) = rest.find('?') {
        path.push_str(&rest[..q]);
        let after = &rest[q + 1..];
        let end = after.find('/').unwrap_or(after.len());
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str(&after[..end]);
        rest = &after[end..];
    }
    path.push_str(rest);
    (path, query)
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(hex.ok_or("bad %-escape in path")?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "path is not valid UTF-8".into())
}

/// Collapses `//` and `.`; refuses `..` (a path must not climb out of what it names).
pub fn normalise(path: &str) -> Result<String, String> {
    let mut out = String::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("\"..\" is not allowed in NFS paths".into()),
            p => {
                out.push('/');
                out.push_str(p);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_export_must_be_named() {
        assert!(NfsUrl::require_export("nfs://h/").is_ok());
        assert!(NfsUrl::require_export("nfs://h:2049/e?uid=1").is_ok());
        let e = NfsUrl::require_export("nfs://h?uid=1").unwrap_err();
        assert!(
            e.starts_with("no export path in URL nfs://h?uid=1: write"),
            "{e}"
        );
        assert!(NfsUrl::require_export("nfs://h").is_err());
    }

    #[test]
    fn full_url() {
        let u = NfsUrl::parse(
            "nfs://server:2050/export/dir/f?version=3&uid=7&gid=8&mountport=635&nconnect=4",
        )
        .unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.mount_port),
            ("server", Some(2050), Some(635))
        );
        assert_eq!(
            (u.path.as_str(), u.uid, u.gid, u.nconnect),
            ("/export/dir/f", 7, 8, 4)
        );
        assert_eq!(u.to_string(), "nfs://server:2050/export/dir/f");
    }

    #[test]
    fn query_in_the_middle_continues_the_path() {
        let u = NfsUrl::parse("nfs://h/export/dir?port=20490/job.0.0").unwrap();
        assert_eq!(
            (u.path.as_str(), u.port),
            ("/export/dir/job.0.0", Some(20490))
        );
        let u = NfsUrl::parse("nfs://h/e?port=1/d?mountport=2/f").unwrap();
        assert_eq!(
            (u.path.as_str(), u.port, u.mount_port),
            ("/e/d/f", Some(1), Some(2))
        );
    }

    #[test]
    fn ipv6_and_escapes() {
        let u = NfsUrl::parse("nfs://[::1]:2049/ex%20port//a/./b/").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", Some(2049), "/ex port/a/b")
        );
        assert_eq!(u.to_string(), "nfs://[::1]:2049/ex port/a/b");
        assert_eq!(NfsUrl::parse("nfs://[fe80::1]").unwrap().path, "/");
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let msg = |u: &str| NfsUrl::parse(u).unwrap_err().to_string();
        assert!(msg("http://h/x").contains("nfs://"));
        assert!(msg("nfs://h/x?version=4.0").contains("4.1 and 4.2"));
        assert!(msg("nfs://h/x?version=5").contains("NFSv3"));
        let v = |u: &str| NfsUrl::parse(u).unwrap().version;
        assert_eq!(v("nfs://h/x"), None);
        assert_eq!(v("nfs://h/x?version=3"), Some(NfsVersion::V3));
        assert_eq!(v("nfs://h/x?version=4"), Some(NfsVersion::V4));
        assert_eq!(v("nfs://h/x?version=4.1"), Some(NfsVersion::V4_1));
        assert_eq!(
            v("nfs://h/x?version=4.2").and_then(NfsVersion::minor),
            Some(2)
        );
        assert!(msg("nfs://h/x?bogus=1").contains("unknown option \"bogus\""));
        assert!(
            msg("nfs://h/x?nconnect=0")
                .contains("nconnect=0 is out of range: a whole number from 1 to 16")
        );
        assert!(msg("nfs://h/x?timeout=0").contains("timeout=0 is out of range"));
        assert!(msg("nfs://h/x?timeout=-1").contains("from 1 to 86400 s"));
        assert!(msg("nfs://h/x?reconnect=99999999").contains("reconnect=99999999 is out of range"));
        assert!(msg("nfs://h/x?mountport=0").contains("mountport=0 is out of range"));
        assert!(msg("nfs://h/x?port=70000").contains("from 1 to 65535"));
        assert!(
            msg("nfs://h/x?rsize=512")
                .contains("rsize=512 is out of range: a whole number from 4096 to 1048576 bytes")
        );
        assert!(msg("nfs://h/x?wsize=4194304").contains("wsize=4194304 is out of range"));
        assert!(msg("nfs://h:0/x").contains("bad port"));
        assert!(msg("nfs://::1/x").contains("brackets"));
        assert!(msg("nfs:///x").contains("no server"));
        assert!(msg("nfs://h/a/../b").contains(".."));
        assert!(msg("nfs://h/x?readahead=65536").contains("never caches"));
        assert!(msg("nfs://u@h/x").contains("uid="));
    }

    #[test]
    fn uncommitted_takes_sizes() {
        let u = |q: &str| NfsUrl::parse(&format!("nfs://h/x?{q}")).map(|u| u.uncommitted);
        assert_eq!(u("").unwrap(), 64 << 20);
        assert_eq!(u("uncommitted=8M").unwrap(), 8 << 20);
        assert_eq!(u("uncommitted=512k&wsize=131072").unwrap(), 512 << 10);
        let err = |q: &str| u(q).unwrap_err().to_string();
        assert!(err("uncommitted=1k").contains(
            "uncommitted=1k is out of range: 0 (write FILE_SYNC) or at least 4m (4 x wsize)"
        ));
        assert!(err("uncommitted=512k").contains("at least 4m"));
        assert!(err("uncommitted=64k&wsize=65536").contains("at least 256k"));
        assert_eq!(u("uncommitted=1g").unwrap(), 1 << 30);
        assert_eq!(u("uncommitted=0").unwrap(), 0);
        assert!(
            u("uncommitted=lots")
                .unwrap_err()
                .to_string()
                .contains("not a size")
        );
    }

    /// Found by fuzzing (fuzz/regressions/url): a multi-byte character within the first six
    /// bytes made the scheme check slice inside it and panic.
    #[test]
    fn non_ascii_near_the_scheme_is_an_error_not_a_panic() {
        assert!(!NfsUrl::is_nfs("nfs:/\u{457}as.local/export"));
        assert!(!NfsUrl::is_nfs("\u{e9}\u{e9}\u{e9}"));
        let e = NfsUrl::parse("nfs:/\u{457}as.local/export").unwrap_err();
        assert!(e.to_string().contains("it must start with nfs://"), "{e}");
        assert!(NfsUrl::is_nfs("NFS://h/\u{457}"));
    }

    #[test]
    fn join_appends_a_file_name() {
        let u = NfsUrl::parse("nfs://h/export?port=5").unwrap();
        let j = u.join("sub/file").unwrap();
        assert_eq!((j.path.as_str(), j.port), ("/export/sub/file", Some(5)));
    }
}
