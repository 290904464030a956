//! What a job reads and writes: a local path, a local block device, or a URL of a protocol
//! in the catalogue. Parsed where input is read (fio's `filename`/`directory`, quick's and
//! bonnie's target, `iscsi discover`, `smb shares`); everything after asks its
//! [`TargetCaps`], never its spelling.
//!
//! A URL is parsed here, once, by its protocol crate's parser (`storbench_nfs::NfsUrl`,
//! `storbench_iscsi::Url`, `storbench_smb::SmbUrl`, `storbench_nbd::NbdUrl`), and travels
//! typed: the plan hands it to the runner in each `FileSpec`, and the engine connects with
//! the parsed value instead of parsing the text again. The text as typed is kept beside it
//! (file names are joined to it, results show it), in a [`SecretUrl`]: a URL may carry a
//! CHAP or SMB password, so [`Target`], [`TypedUrl`] and [`SecretUrl`] print it masked, in
//! `Display` and `Debug` alike; only [`SecretUrl::expose`] gives the secret, for the engine.

use std::fmt;
use std::path::Path;

use crate::catalogue::{self, EngineInfo, Protocol};
use crate::relpath::RelPath;
use storbench_model::redact;

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

/// A protocol's URL, parsed by its client crate, with the text it was parsed from.
#[derive(Clone, PartialEq, Eq)]
pub struct TypedUrl<U> {
    /// What the engine connects with.
    pub url: U,
    /// The URL as typed.
    pub text: SecretUrl,
}

impl<U> fmt::Display for TypedUrl<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.text, f)
    }
}

impl<U> fmt::Debug for TypedUrl<U> {
    /// The masked text only: the parsed value may hold a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.text, f)
    }
}

/// One target.
#[derive(Clone, PartialEq, Eq)]
pub enum Target {
    /// A local file or directory, or a character device (/dev/null).
    Path(String),
    /// A local block device.
    Device(String),
    /// An NFSv3 export, a directory or a file in it.
    Nfs(TypedUrl<storbench_nfs::NfsUrl>),
    /// An iSCSI portal, target or LUN.
    Iscsi(TypedUrl<storbench_iscsi::Url>),
    /// An SMB share, a directory or a file in it.
    Smb(TypedUrl<storbench_smb::SmbUrl>),
    /// An NBD export.
    Nbd(TypedUrl<storbench_nbd::NbdUrl>),
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

/// A local file or directory.
const LOCAL_CAPS: TargetCaps = TargetCaps {
    device_like: false,
    page_cache: true,
    network: false,
    metadata: true,
};

impl Target {
    /// A target as typed: a URL of a known protocol, or a local path (a block device
    /// when it is one). A URL of a scheme storbench does not reach is refused, unless a
    /// local path of that name exists (a directory named `foo:`).
    /// A URL of a known scheme is parsed by its protocol's parser here, so a malformed
    /// one is one line where it was typed.
    pub fn parse(text: &str) -> Result<Target, String> {
        if let Some(p) = url_protocol(text) {
            return parse_url(p, text);
        }
        let target = Target::classify(text);
        if let Target::Path(_) = target
            && !Path::new(text).exists()
        {
            if let Some(url) = network_form(text) {
                return Err(format!(
                    "{text} is no path on this machine; did you mean {url}? storbench reaches \
                     a NAS by URL, without a mount"
                ));
            }
            if let Some(scheme) = foreign_scheme(text) {
                let forms: Vec<&str> = catalogue::protocols().map(|p| p.form).collect();
                return Err(format!(
                    "unsupported URL scheme {scheme:?} in {text}: use a path, {}",
                    forms.join(" or ")
                ));
            }
        }
        Ok(target)
    }

    /// The target `text` names, for text already checked by [`Target::parse`] (a file
    /// name the plan joined to a checked directory); a URL of an unknown scheme, or one
    /// its protocol refuses, is taken for a path.
    pub fn classify(text: &str) -> Target {
        if let Some(p) = url_protocol(text)
            && let Ok(t) = parse_url(p, text)
        {
            return t;
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
            Target::Path(_) | Target::Device(_) => None,
            Target::Nfs(_) => Some(&catalogue::NFS),
            Target::Iscsi(_) => Some(&catalogue::ISCSI),
            Target::Smb(_) => Some(&catalogue::SMB),
            Target::Nbd(_) => Some(&catalogue::NBD),
        }
    }

    /// The engine a URL target needs; `None` for local targets (any local engine).
    pub fn engine(&self) -> Option<&'static EngineInfo> {
        self.protocol().and_then(catalogue::engine_for)
    }

    pub fn caps(&self) -> TargetCaps {
        match self {
            Target::Path(_) => LOCAL_CAPS,
            Target::Device(_) => TargetCaps {
                device_like: true,
                page_cache: true,
                network: false,
                metadata: false,
            },
            url => url.protocol().map_or(LOCAL_CAPS, |p| TargetCaps {
                device_like: p.device_like,
                page_cache: false,
                network: true,
                metadata: p.metadata,
            }),
        }
    }

    /// The URL as typed, for a URL target.
    pub fn url_text(&self) -> Option<&SecretUrl> {
        match self {
            Target::Path(_) | Target::Device(_) => None,
            Target::Nfs(u) => Some(&u.text),
            Target::Iscsi(u) => Some(&u.text),
            Target::Smb(u) => Some(&u.text),
            Target::Nbd(u) => Some(&u.text),
        }
    }

    /// The path a file name is measured against on the target's server, for a target
    /// that holds files: an NFS URL's path (the export and the path inside it), an SMB
    /// URL's path inside its share (`""` at the share's root, as smbclient names the
    /// share's root `/`). `None` for local targets (fio joins their names as written)
    /// and for targets without files.
    pub fn server_path(&self) -> Option<&str> {
        match self {
            Target::Nfs(u) => Some(&u.url.path),
            Target::Smb(u) => Some(&u.url.path),
            Target::Path(_) | Target::Device(_) | Target::Iscsi(_) | Target::Nbd(_) => None,
        }
    }

    /// `name`, a file's name under this target (a directory, an export, a share), as a
    /// [`RelPath`] below it: a relative name is checked; an absolute one is a path on the
    /// server ([`Target::server_path`]) and is made relative to this target's path when it
    /// lies inside it (then checked: `..` cannot climb out), else refused. The error is
    /// one line. A local target takes relative names only (fio's absolute names are not
    /// joined to a local directory at all).
    pub fn rel_name<'n>(&self, name: &'n str) -> Result<&'n RelPath, String> {
        match self.server_path() {
            Some(root) => RelPath::under(root, name),
            None => RelPath::new(name),
        }
    }

    /// This target (a directory, an export or a share) with `name` below it: a local
    /// path joined with `/` (a block device when the result is one); a URL with the name
    /// at the end of its path, its query kept, through its protocol crate's URL type, the
    /// parsed value and the text alike. A target that holds no files (an iSCSI LUN, an NBD
    /// export) has nothing below it: one line.
    pub fn join(&self, name: &RelPath) -> Result<Target, String> {
        fn below<U, E: fmt::Display>(
            u: &TypedUrl<U>,
            join: impl FnOnce(&U) -> Result<U, E>,
            name: &RelPath,
        ) -> Result<TypedUrl<U>, String> {
            let url = join(&u.url).map_err(|e| redact::text(&e.to_string()).into_owned())?;
            let text = SecretUrl(join_url_text(u.text.expose(), name.as_str()));
            Ok(TypedUrl { url, text })
        }
        match self {
            Target::Path(dir) | Target::Device(dir) => Ok(Target::local_join(dir, name.as_str())),
            Target::Nfs(u) => below(u, |url| url.join(name.as_str()), name).map(Target::Nfs),
            Target::Smb(u) => below(u, |url| url.join(name.as_str()), name).map(Target::Smb),
            Target::Iscsi(_) | Target::Nbd(_) => Err(format!(
                "{name:?} cannot name a file under {self}: it holds no files"
            )),
        }
    }

    /// A local directory `dir` and `name` joined as fio joins them, as written (`name`
    /// may be absolute or hold `..`: fio's rule for local directories), classified.
    pub fn local_join(dir: &str, name: &str) -> Target {
        let sep = if dir.ends_with('/') { "" } else { "/" };
        Target::classify(&format!("{dir}{sep}{name}"))
    }

    /// The server a network target reaches, as its typed URL names it: the host (IPv6
    /// in brackets) with the port when it is not the protocol's default (NBD over a Unix
    /// socket: the socket's path). Never the URL's user or secret. `None` locally.
    pub fn server(&self) -> Option<String> {
        fn host_port(host: &str, port: Option<u16>) -> String {
            let host = if host.contains(':') {
                format!("[{host}]")
            } else {
                host.to_string()
            };
            match port {
                Some(p) => format!("{host}:{p}"),
                None => host,
            }
        }
        let not = |port: u16, default: u16| (port != default).then_some(port);
        Some(match self {
            Target::Path(_) | Target::Device(_) => return None,
            Target::Nfs(u) => host_port(&u.url.host, u.url.port),
            Target::Iscsi(u) => host_port(
                &u.url.host,
                not(u.url.port, storbench_iscsi::url::DEFAULT_PORT),
            ),
            Target::Smb(u) => host_port(
                &u.url.host,
                not(u.url.port, storbench_smb::url::DEFAULT_PORT),
            ),
            Target::Nbd(u) => match &u.url.endpoint {
                storbench_nbd::url::Endpoint::Tcp { host, port } => {
                    host_port(host, not(*port, storbench_nbd::url::DEFAULT_PORT))
                }
                storbench_nbd::url::Endpoint::Unix { socket } => socket.clone(),
            },
        })
    }

    /// The target as typed, secrets included: for engines and file names only.
    pub fn expose(&self) -> &str {
        match self {
            Target::Path(p) | Target::Device(p) => p,
            url => url.url_text().map_or("", SecretUrl::expose),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.url_text() {
            Some(u) => fmt::Display::fmt(u, f),
            None => f.write_str(self.expose()),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Path(p) => write!(f, "Path({p:?})"),
            Target::Device(p) => write!(f, "Device({p:?})"),
            url => {
                let scheme = url.protocol().map_or("", |p| p.scheme);
                write!(f, "Url({scheme}, {:?})", url.url_text())
            }
        }
    }
}

/// `text`, a URL of `protocol`, parsed by that protocol's client crate: the one place a
/// URL's text becomes its typed value. An error is one line quoting the URL masked.
fn parse_url(protocol: &'static Protocol, text: &str) -> Result<Target, String> {
    fn typed<U, E: fmt::Display>(text: &str, r: Result<U, E>) -> Result<TypedUrl<U>, String> {
        r.map(|url| TypedUrl {
            url,
            text: SecretUrl(text.to_string()),
        })
        .map_err(|e| redact::text(&e.to_string()).into_owned())
    }
    if *protocol == catalogue::NFS {
        let url = typed(text, storbench_nfs::NfsUrl::parse(text))?;
        // `nfs://host` parses as the export `/`: a user who means `/` writes it.
        storbench_nfs::NfsUrl::require_export(text).map_err(|e| redact::text(&e).into_owned())?;
        Ok(Target::Nfs(url))
    } else if *protocol == catalogue::ISCSI {
        typed(text, storbench_iscsi::Url::parse(text)).map(Target::Iscsi)
    } else if *protocol == catalogue::SMB {
        typed(text, storbench_smb::SmbUrl::parse(text)).map(Target::Smb)
    } else if *protocol == catalogue::NBD {
        typed(text, storbench_nbd::NbdUrl::parse(text)).map(Target::Nbd)
    } else {
        Err(format!(
            "{}: no parser for its protocol",
            redact::text(text)
        ))
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

/// The URL a missing path written as a network share means: `nas:/export/dir` as `mount`
/// and scp write it (NFS), `//nas/share/dir` or `\\nas\share\dir` as Windows and
/// `mount.cifs` write it (SMB); `None` for other text, or when the host part is a local
/// directory.
fn network_form(text: &str) -> Option<String> {
    let host_like = |h: &str| {
        !h.is_empty()
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    };
    let unc = text
        .strip_prefix("//")
        .map(str::to_string)
        .or_else(|| text.strip_prefix("\\\\").map(|r| r.replace('\\', "/")));
    if let Some(rest) = unc {
        let (host, share) = rest.split_once('/')?;
        let on_disk = Path::new("/").join(host).exists();
        return (host_like(host) && !share.is_empty() && !on_disk)
            .then(|| format!("{}://{host}/{share}", catalogue::SMB.scheme));
    }
    let (host, path) = text.split_once(':')?;
    let scp = path.starts_with('/') && !path.starts_with("//");
    let scheme = catalogue::protocol(&host.to_ascii_lowercase()).is_some();
    (scp && !scheme && host_like(host) && !Path::new(host).exists())
        .then(|| format!("{}://{host}{path}", catalogue::NFS.scheme))
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

/// `text`, a URL as typed, with `name` (a relative, `/`-separated name) added at the end of
/// its path: before a query that ends the URL, which so stays at the end as typed, or after
/// a query the path continues beyond (`nfs://h/e?port=1/d`). `%` and `?` in the name are
/// escaped. The same for every protocol with files:
/// `a_name_joins_a_url_text_before_a_query_that_ends_it` shows that these texts parse back
/// to each protocol's own `join` of the parsed URL.
fn join_url_text(text: &str, name: &str) -> String {
    let (head, query) = match text.rfind('?') {
        Some(i) if !text[i..].contains('/') => text.split_at(i),
        _ => (text, ""),
    };
    let sep = if head.ends_with('/') { "" } else { "/" };
    let name = name.replace('%', "%25").replace('?', "%3F");
    format!("{head}{sep}{name}{query}")
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

    /// Each protocol's URL is parsed once, here, into its client's type; what is shown of
    /// it, in `Display` and `Debug` of the target and of the typed URL, never holds a
    /// password.
    #[test]
    fn each_protocol_has_its_typed_variant_and_never_shows_a_secret() {
        let Target::Iscsi(i) =
            Target::parse("iscsi://u%pw1@h:3261/iqn.x:d/2?target_user=t&target_password=pw2")
                .unwrap()
        else {
            panic!("not iSCSI")
        };
        assert_eq!(
            (i.url.host.as_str(), i.url.port, i.url.lun),
            ("h", 3261, Some(2))
        );
        let Target::Nfs(n) = Target::parse("nfs://h:2049/export/d?uid=7").unwrap() else {
            panic!("not NFS")
        };
        assert_eq!((n.url.path.as_str(), n.url.uid), ("/export/d", 7));
        let s = Target::parse("smb://dom;al:pw3@h/share/dir?seal=1").unwrap();
        let Target::Smb(u) = &s else {
            panic!("not SMB")
        };
        assert_eq!(
            (u.url.share.as_str(), u.url.path.as_str()),
            ("share", "dir")
        );
        let Target::Nbd(b) = Target::parse("nbd://h:10810/exp").unwrap() else {
            panic!("not NBD")
        };
        assert_eq!(b.url.export, "exp");
        let iscsi = Target::Iscsi(i.clone());
        for shown in [
            format!("{iscsi} {iscsi:?} {i} {i:?} {:?} {}", i.text, i.text),
            format!("{s} {s:?} {u} {u:?}"),
        ] {
            for secret in ["pw1", "pw2", "pw3"] {
                assert!(!shown.contains(secret), "{secret} in {shown}");
            }
            assert!(shown.contains(storbench_model::redact::MASK), "{shown}");
        }
        assert!(iscsi.expose().contains("u%pw1@") && s.expose().contains(":pw3@"));
    }

    #[test]
    fn a_malformed_url_is_one_line_where_it_is_typed() {
        for bad in [
            "iscsi://h:99999/iqn.x/1",
            "nfs://h/e?nosuch=1",
            "smb://h",
            "nbd://u@h/e",
            "iscsi://u%secret@h:x/iqn/1",
        ] {
            let e = Target::parse(bad).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{bad}: {e}");
            assert!(!e.contains("secret@"), "{e}");
            // Already-checked text never fails: a URL its protocol refuses is a path.
            assert!(matches!(Target::classify(bad), Target::Path(_)), "{bad}");
        }
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

    #[test]
    fn shares_written_as_mount_and_windows_write_them_get_their_url() {
        for (text, url) in [
            ("nas:/export/dir", "nfs://nas/export/dir"),
            ("nas.lan:/volume1/data", "nfs://nas.lan/volume1/data"),
            ("//nas/share/dir", "smb://nas/share/dir"),
            ("\\\\nas\\share", "smb://nas/share"),
        ] {
            let e = Target::parse(text).unwrap_err();
            assert!(
                e.starts_with(&format!(
                    "{text} is no path on this machine; did you mean {url}?"
                )),
                "{e}"
            );
        }
        // A scheme with one slash is a mistyped URL, not a host; `//` alone names no share;
        // a host part that is a local directory is a path.
        assert!(
            Target::parse("nfs:/h/e")
                .unwrap_err()
                .starts_with("unsupported URL scheme")
        );
        assert!(Target::parse("//nas").is_ok());
        assert!(Target::parse("//etc/hostname").is_ok());
    }

    #[test]
    fn a_name_joins_a_url_text_before_a_query_that_ends_it() {
        // Each joined text is the typed join's text, and parses back to the same value:
        // the protocol's own `join` of the parsed URL.
        for (dir, name, joined) in [
            (
                "nfs://h/export/d?version=3",
                "f.0.0",
                "nfs://h/export/d/f.0.0?version=3",
            ),
            ("nfs://h/e/", "a/b", "nfs://h/e/a/b"),
            ("nfs://h/e?port=1/d", "f", "nfs://h/e?port=1/d/f"),
            ("nfs://h/e", "50%?x", "nfs://h/e/50%25%3Fx"),
            (
                "smb://u:pw@h/s/d?seal=1",
                "f.0.0",
                "smb://u:pw@h/s/d/f.0.0?seal=1",
            ),
            ("smb://h/s/", "a/b", "smb://h/s/a/b"),
            ("smb://h/s?seal=1/d", "f", "smb://h/s?seal=1/d/f"),
            ("smb://h/s", "50%?x", "smb://h/s/50%25%3Fx"),
        ] {
            assert_eq!(join_url_text(dir, name), joined);
            let rel = RelPath::new(name).unwrap();
            let typed = Target::parse(dir).unwrap().join(rel).unwrap();
            assert_eq!(typed.expose(), joined);
            assert_eq!(Target::parse(joined).unwrap(), typed, "{joined}");
        }
    }
}
