//! Where the suite runs: a local directory, or a directory on a file server reached from
//! user space (a URL of a catalogue protocol with files: NFS today).

use std::fmt;
use std::path::PathBuf;

use storbench_job::JobSpec;
use storbench_job::catalogue::{self, DEFAULT_ENGINE};
use storbench_job::target::{Target as Typed, url_protocol};

use crate::error::{BonnieError, FlagError};
use storbench_job::relpath::RelPathBuf;

/// The `-d` directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// An existing local directory, made absolute.
    Local(PathBuf),
    /// A local directory that is also the process's working directory (the CLI changes
    /// to it, as bonnie++ does for `-d`): names are short relative paths, so each
    /// metadata operation walks one or two path components instead of the whole path.
    Cwd(PathBuf),
    /// A URL of a protocol with files (`nfs://host[:port]/export[/dir]`), without a
    /// trailing slash (boxed: a parsed URL is much larger than a path).
    Remote(Box<Typed>),
}

impl Target {
    /// Checks a local directory exists; takes URLs of protocols with files as given (the
    /// engine checks them).
    pub fn resolve(dir: &str) -> Result<Target, FlagError> {
        if let Some(p) = url_protocol(dir).filter(|p| p.metadata) {
            if dir.len() <= p.scheme.len() + "://".len() {
                let why = Typed::parse(dir)
                    .err()
                    .unwrap_or_else(|| format!("expected {}", p.form));
                return Err(FlagError::bad("-d", dir, why));
            }
            let (path, query) = dir.split_once('?').unwrap_or((dir, ""));
            // Trailing slashes go, but the one naming the export `/` (`nfs://host/`).
            let trimmed = path.trim_end_matches('/');
            let after_host = trimmed.get(p.scheme.len() + "://".len()..);
            let path = if after_host.is_some_and(|r| r.contains('/')) {
                trimmed
            } else {
                &path[..(trimmed.len() + 1).min(path.len())]
            };
            let url = if query.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{query}")
            };
            // Parsed here, once, by the protocol's parser: a malformed URL is a flag error.
            let typed = Typed::parse(&url).map_err(|e| FlagError::bad("-d", dir, e))?;
            return Ok(Target::Remote(Box::new(typed)));
        }
        // Any other URL (a protocol without files, or a scheme storbench does not reach),
        // told by the one parser rather than by its spelling: no place for files. A share
        // written as a mount writes it, or a URL of a scheme storbench does not reach, is
        // the parser's one line.
        let typed = Typed::parse(dir).map_err(|e| FlagError::bad("-d", dir, e))?;
        if typed.protocol().is_some() {
            let urls: Vec<String> = catalogue::protocols()
                .filter(|p| p.metadata)
                .map(|p| format!("{}://", p.scheme))
                .collect();
            return Err(FlagError::bad(
                "-d",
                dir,
                format!(
                    "only local directories and {} URLs can hold bonnie's files",
                    urls.join(" or ")
                ),
            ));
        }
        crate::config::absolute_dir(dir).map(Target::Local)
    }

    /// True when every operation is a network round trip (no client cache).
    pub fn is_network(&self) -> bool {
        matches!(self, Target::Remote(t) if t.caps().network)
    }

    /// The protocol's name for messages (`NFS`, `SMB`), from the catalogue; `None` locally.
    pub fn protocol_name(&self) -> Option<String> {
        match self {
            Target::Remote(t) => t.protocol().map(|p| p.scheme.to_ascii_uppercase()),
            _ => None,
        }
    }

    /// The path engines take for `name` inside the target directory.
    pub fn join(&self, name: &str) -> String {
        match self {
            Target::Local(dir) => dir.join(name).display().to_string(),
            Target::Cwd(_) => name.to_owned(),
            Target::Remote(t) => match t.expose().split_once('?') {
                Some((path, query)) => format!("{}/{name}?{query}", path.trim_end_matches('/')),
                None => format!("{}/{name}", t.expose().trim_end_matches('/')),
            },
        }
    }

    /// The typed target core asks (is it networked, what compresses it): the directory as
    /// a path, or the URL parsed when the flag was read.
    pub fn typed(&self) -> Typed {
        match self {
            Target::Local(dir) | Target::Cwd(dir) => Typed::Path(dir.display().to_string()),
            Target::Remote(t) => (**t).clone(),
        }
    }

    /// The root of the worker's metadata calls, typed (`.` for the working directory,
    /// so names stay short relative paths), and `name` checked as a `RelPath` below it.
    pub fn meta_root(&self, name: &str) -> Result<(Typed, RelPathBuf), BonnieError> {
        let root = match self {
            Target::Local(dir) => Typed::Path(dir.display().to_string()),
            Target::Cwd(_) => Typed::Path(".".to_owned()),
            Target::Remote(t) => (**t).clone(),
        };
        let name = RelPathBuf::new(name).map_err(BonnieError::Refused)?;
        Ok((root, name))
    }

    /// `name` inside the target directory as a user finds it from anywhere: an absolute
    /// path where [`join`](Self::join) gives one relative to the working directory.
    pub fn shown(&self, name: &str) -> String {
        match self {
            Target::Cwd(dir) => dir.join(name).display().to_string(),
            _ => self.join(name),
        }
    }

    /// The engine job for this target: psync locally, else the engine of the URL's
    /// protocol (given the URL as its base too when it takes one, as the nfs engine's
    /// `nfs_url`).
    pub fn job(&self, direct: bool) -> JobSpec {
        let mut job = JobSpec::new("bonnie");
        job.direct = direct;
        job.iodepth = 1;
        match self {
            Target::Local(dir) | Target::Cwd(dir) => {
                job.ioengine = DEFAULT_ENGINE.into();
                job.directories = vec![Typed::Path(dir.display().to_string())];
            }
            Target::Remote(t) => {
                let engine = t.engine();
                job.ioengine = engine.map_or(DEFAULT_ENGINE, |e| e.name).into();
                job.directories = vec![(**t).clone()];
                if let Typed::Nfs(base) = &**t {
                    job.engine_options.set_nfs_url(base.clone());
                }
            }
        }
        job
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Local(dir) | Target::Cwd(dir) => write!(f, "{}", dir.display()),
            Target::Remote(t) => fmt::Display::fmt(t, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smb_urls_take_the_smb_engine() {
        let t = Target::resolve("smb://127.0.0.1:4455/guest/bench/?seal=1").unwrap();
        assert_eq!(
            t.join("Bonnie.1"),
            "smb://127.0.0.1:4455/guest/bench/Bonnie.1?seal=1"
        );
        assert!(t.is_network());
        assert_eq!(t.job(false).ioengine, "smb");
    }

    #[test]
    fn local_and_nfs() {
        let t = Target::resolve("/").unwrap();
        assert_eq!(t.join("Bonnie.1"), "/Bonnie.1");
        assert!(!t.is_network());
        assert_eq!(Target::Cwd("/x".into()).join("Bonnie.1"), "Bonnie.1");
        assert_eq!(Target::Cwd("/x".into()).shown("Bonnie.1"), "/x/Bonnie.1");
        let n = Target::resolve("nfs://127.0.0.1/export/").unwrap();
        assert_eq!(n.join("Bonnie.1"), "nfs://127.0.0.1/export/Bonnie.1");
        assert!(n.is_network());
        assert_eq!(n.job(false).ioengine, "nfs");
        let q = Target::resolve("nfs://127.0.0.1:2049/export/?mountport=20048").unwrap();
        assert_eq!(
            q.join("Bonnie.1"),
            "nfs://127.0.0.1:2049/export/Bonnie.1?mountport=20048"
        );
        assert!(Target::resolve("iscsi://h/iqn/1").is_err());
        let e = Target::resolve("nbd://h/e").unwrap_err().to_string();
        assert!(e.contains("can hold bonnie's files"), "{e}");
        // Text the parser refuses is its one line.
        for (url, why) in [
            ("http://h/x", "unsupported URL scheme \"http\""),
            ("iscsi://h:0/bad", "iscsi://h:0/bad"),
        ] {
            let e = Target::resolve(url).unwrap_err().to_string();
            assert!(e.contains(why) && !e.contains('\n'), "{url}: {e}");
        }
        assert!(Target::resolve("nfs://").is_err());
        assert!(n.typed().caps().network && !Target::Local("/tmp".into()).typed().caps().network);
    }
}
