//! NBD URIs as fio's nbd engine (through libnbd) takes them, following the NBD project's
//! `doc/uri.md`: `nbd://host[:port][/export]` over TCP (port 10809 by default) and
//! `nbd+unix:///[export]?socket=PATH` over a Unix-domain socket. The export name is the path
//! without its first `/`, percent-decoded (`nbd://h/` and `nbd://h` both name the default
//! export ""). TLS (`nbds://`) and vsock are refused with a clear message rather than
//! connecting in the clear.

use std::fmt;

use crate::error::NbdError;

/// IANA's NBD port.
pub const DEFAULT_PORT: u16 = 10809;
/// The protocol's limit on an export name.
pub const MAX_EXPORT_NAME: usize = 4096;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix { socket: String },
}

/// A parsed NBD URI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NbdUrl {
    pub endpoint: Endpoint,
    pub export: String,
}

impl NbdUrl {
    /// Parses `text`; errors are one line quoting it.
    pub fn parse(text: &str) -> Result<NbdUrl, NbdError> {
        let bad = |reason: String| NbdError::Url {
            uri: text.to_string(),
            reason,
        };
        let Some((scheme, rest)) = text.split_once("://") else {
            return Err(bad(
                "expected nbd://host[:port][/export] or nbd+unix:///export?socket=PATH".into(),
            ));
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        if rest.contains('#') || query.is_some_and(|q| q.contains('#')) {
            return Err(bad("a fragment (#...) has no meaning in an NBD URI".into()));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let export = decode(path).map_err(bad)?;
        if export.len() > MAX_EXPORT_NAME {
            return Err(bad(format!(
                "export name of {} bytes is over the protocol's {MAX_EXPORT_NAME}",
                export.len()
            )));
        }
        if export.contains('\0') {
            return Err(bad("export name contains a NUL byte".into()));
        }
        let socket = parse_query(query).map_err(bad)?;
        let endpoint = match scheme.to_ascii_lowercase().as_str() {
            "nbd" => {
                if socket.is_some() {
                    return Err(bad("socket= belongs to nbd+unix:// URIs".into()));
                }
                let (host, port) = parse_authority(authority).map_err(bad)?;
                Endpoint::Tcp { host, port }
            }
            "nbd+unix" => {
                if !authority.is_empty() {
                    return Err(bad(format!(
                        "nbd+unix:// takes no host ({authority:?}): write nbd+unix:///export?socket=PATH"
                    )));
                }
                let Some(socket) = socket.filter(|s| !s.is_empty()) else {
                    return Err(bad("nbd+unix:// needs ?socket=PATH".into()));
                };
                Endpoint::Unix { socket }
            }
            s if s.starts_with("nbds") => {
                return Err(bad(format!(
                    "{s}:// asks for TLS, which storbench's NBD client does not do; use nbd:// to a server that allows plain connections"
                )));
            }
            s => {
                return Err(bad(format!(
                    "unsupported scheme {s:?}: use nbd:// or nbd+unix://"
                )));
            }
        };
        Ok(NbdUrl { endpoint, export })
    }

    /// `host:port` or the socket path, for messages.
    pub fn server(&self) -> String {
        match &self.endpoint {
            Endpoint::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            Endpoint::Tcp { host, port } => format!("{host}:{port}"),
            Endpoint::Unix { socket } => socket.clone(),
        }
    }
}

impl fmt::Display for NbdUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let export = encode(&self.export);
        match &self.endpoint {
            Endpoint::Tcp { .. } => write!(f, "nbd://{}/{export}", self.server()),
            Endpoint::Unix { socket } => {
                write!(f, "nbd+unix:///{export}?socket={}", encode(socket))
            }
        }
    }
}

fn parse_authority(authority: &str) -> Result<(String, u16), String> {
    if authority.contains('@') {
        return Err("user names are not part of NBD URIs".into());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else {
            return Err("unclosed '[' in the host".into());
        };
        match after {
            "" => (h, None),
            p if p.starts_with(':') => (h, Some(&p[1..])),
            _ => return Err(format!("unexpected {after:?} after the IPv6 address")),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("no host: write nbd://host[:port][/export]".into());
    }
    let host_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '%');
    if !host.chars().all(host_ok) {
        return Err(format!("invalid host {host:?}"));
    }
    let port = match port {
        None | Some("") => DEFAULT_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("invalid port {p:?}")),
        },
    };
    Ok((host.to_string(), port))
}

/// The value of `socket=`; any other key is refused so that a misspelling is not ignored.
fn parse_query(query: Option<&str>) -> Result<Option<String>, String> {
    let mut socket = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "socket" => socket = Some(decode(v)?),
            k if k.starts_with("tls") => {
                return Err(format!("{k}= asks for TLS, which is not supported"));
            }
            _ => return Err(format!("unknown query parameter {k:?} (only socket=)")),
        }
    }
    Ok(socket)
}

/// Percent-decoding into UTF-8.
fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(v) = hex else {
                return Err(format!("bad percent escape at byte {i} of {s:?}"));
            };
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} does not decode to UTF-8"))
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16, export: &str) -> NbdUrl {
        NbdUrl {
            endpoint: Endpoint::Tcp {
                host: host.into(),
                port,
            },
            export: export.into(),
        }
    }

    #[test]
    fn tcp_forms() {
        assert_eq!(NbdUrl::parse("nbd://h").unwrap(), tcp("h", 10809, ""));
        assert_eq!(NbdUrl::parse("nbd://h/").unwrap(), tcp("h", 10809, ""));
        assert_eq!(
            NbdUrl::parse("nbd://127.0.0.1:21200/disk").unwrap(),
            tcp("127.0.0.1", 21200, "disk")
        );
        assert_eq!(
            NbdUrl::parse("nbd://[::1]:99//a%20b").unwrap(),
            tcp("::1", 99, "/a b")
        );
        assert_eq!(
            NbdUrl::parse("nbd://[::1]:99/x").unwrap().to_string(),
            "nbd://[::1]:99/x"
        );
    }

    #[test]
    fn unix_form() {
        let u = NbdUrl::parse("nbd+unix:///exp?socket=/tmp/s%2Esock").unwrap();
        assert_eq!(
            u.endpoint,
            Endpoint::Unix {
                socket: "/tmp/s.sock".into()
            }
        );
        assert_eq!(u.export, "exp");
        assert_eq!(NbdUrl::parse(&u.to_string()).unwrap(), u);
    }

    #[test]
    fn bad_ones_are_one_line_errors() {
        for (text, says) in [
            ("nbd:/h", "expected nbd://"),
            ("nbd://", "no host"),
            ("nbd://h:0/x", "invalid port"),
            ("nbd://h:70000", "invalid port"),
            ("nbd://h:x", "invalid port"),
            ("nbd://u@h/x", "user names"),
            ("nbds://h/x", "TLS"),
            ("nbd+vsock://1/x", "unsupported scheme"),
            ("nbd+unix:///x", "needs ?socket"),
            ("nbd+unix://h/x?socket=/s", "takes no host"),
            ("nbd://h/x?socket=/s", "belongs to nbd+unix"),
            ("nbd://h/x?tls-certificates=/c", "TLS"),
            ("nbd://h/x?sockte=/s", "unknown query"),
            ("nbd://h/%zz", "percent escape"),
            ("nbd://h/%00", "NUL"),
            ("nbd://h/%ff", "UTF-8"),
            ("nbd://[::1/x", "unclosed"),
            ("nbd://h h/x", "invalid host"),
        ] {
            let e = NbdUrl::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let long = format!("nbd://h/{}", "a".repeat(MAX_EXPORT_NAME + 1));
        assert!(NbdUrl::parse(&long).is_err());
    }
}
