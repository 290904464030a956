//! An NFSv3 client for one export: finds the ports (PORTMAP), mounts the export (MOUNT),
//! learns the transfer sizes (FSINFO), and offers the metadata operations by path. Data
//! requests go through [`Client::transport`], pipelined.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use crate::error::{NfsError, Result};
use crate::proto::{self, Fattr, Fh, FsInfo, NfsResult, NfsStat, Verf, nfsproc};
use crate::rpc::{Auth, PROG_MOUNT, PROG_NFS, PROG_PORTMAP};
use crate::transport::{Transport, TransportConfig};
use crate::url::NfsUrl;

/// Largest READ/WRITE we issue even if the server allows more.
const MAX_TRANSFER: u32 = 1 << 20;
/// Reply size asked for in READDIRPLUS.
const READDIR_MAX: u32 = 64 * 1024;
/// How long the best-effort UMNT at the end may take.
const UMNT_TIMEOUT: Duration = Duration::from_secs(2);

/// A mounted export.
pub struct Client {
    url: NfsUrl,
    auth: Auth,
    addrs: Vec<SocketAddr>,
    mount_port: u16,
    /// The exported path that was mounted (e.g. `/export`).
    export: String,
    root: Fh,
    fsinfo: FsInfo,
    rsize: u32,
    wsize: u32,
    nfs: Transport,
    /// Directory handles by path relative to the export (not file data: that is never cached).
    dirs: HashMap<String, Fh>,
}

fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "storbench".into())
}

fn resolve(url: &NfsUrl) -> Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = (url.host.as_str(), 0)
        .to_socket_addrs()
        .map_err(|source| NfsError::Resolve {
            host: url.host.clone(),
            source,
        })?
        .collect();
    if addrs.is_empty() {
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
        return Err(NfsError::Resolve {
            host: url.host.clone(),
            source,
        });
    }
    Ok(addrs)
}

fn with_port(addrs: &[SocketAddr], port: u16) -> Vec<SocketAddr> {
    addrs
        .iter()
        .map(|a| SocketAddr::new(a.ip(), port))
        .collect()
}

/// A single-connection transport that gives up at the first loss (PORTMAP, MOUNT).
fn one_shot(
    url: &NfsUrl,
    addrs: &[SocketAddr],
    port: u16,
    auth: &Auth,
    op: &'static str,
    timeout: Duration,
) -> Result<Transport> {
    let cfg = TransportConfig {
        server: url.host_port(port),
        addrs: with_port(addrs, port),
        connections: 1,
        timeout,
        reconnect_window: Duration::ZERO,
        recv_capacity: 64 * 1024,
    };
    Transport::connect(cfg, auth.clone(), op)
}

fn garbage(t: &Transport, op: &'static str) -> impl Fn(crate::DecodeError) -> NfsError + use<> {
    let server = t.server().to_string();
    move |detail| NfsError::Garbage {
        server: server.clone(),
        op,
        detail,
    }
}

/// Asks the portmapper on port 111 for a program's TCP port.
fn getport(
    url: &NfsUrl,
    addrs: &[SocketAddr],
    auth: &Auth,
    prog: u32,
    vers: u32,
    what: &str,
) -> Result<u16> {
    let op = "PORTMAP GETPORT";
    let mut t = one_shot(url, addrs, 111, auth, op, url.timeout).map_err(|e| match e {
        NfsError::Connect { server, source, .. } => NfsError::Connect {
            server,
            op: "PORTMAP GETPORT (give ?port= and ?mountport= to skip the portmapper)",
            source,
        },
        e => e,
    })?;
    let mut args = Vec::new();
    proto::args_getport(&mut args, prog, vers);
    let body = t.call(
        op,
        PROG_PORTMAP,
        proto::PORTMAP_V2,
        proto::PMAPPROC_GETPORT,
        &args,
    )?;
    let port = proto::res_getport(&body).map_err(garbage(&t, op))?;
    match u16::try_from(port) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(NfsError::Rpc {
            server: t.server().to_string(),
            op,
            reason: format!("{what} v{vers} over TCP is not registered with the portmapper"),
        }),
    }
}

impl Client {
    /// Mounts the export that contains `url.path`. See docs/nfs.md for the rule that splits
    /// a path into export and path inside it.
    pub fn mount(url: &NfsUrl) -> Result<Client> {
        let auth = Auth::sys(&machine_name(), url.uid, url.gid);
        let addrs = resolve(url)?;
        let mount_port = match url.mount_port {
            Some(p) => p,
            None => getport(url, &addrs, &auth, PROG_MOUNT, proto::MOUNT_V3, "MOUNT")?,
        };
        let (export, root) = mount_export(url, &addrs, mount_port, &auth)?;
        let nfs_port = match url.port {
            Some(p) => p,
            None => getport(url, &addrs, &auth, PROG_NFS, proto::NFS_V3, "NFS")?,
        };
        let cfg = TransportConfig {
            server: url.host_port(nfs_port),
            addrs: with_port(&addrs, nfs_port),
            connections: url.nconnect,
            timeout: url.timeout,
            reconnect_window: url.reconnect,
            // Large READ payloads bypass this buffer; it grows for other large replies.
            recv_capacity: 256 << 10,
        };
        let mut nfs = Transport::connect(cfg, auth.clone(), "NFS")?;
        let mut args = Vec::new();
        proto::args_fh(&mut args, &root);
        let body = nfs.call("FSINFO", PROG_NFS, 3, nfsproc::FSINFO, &args)?;
        let fsinfo = match proto::res_fsinfo(&body).map_err(garbage(&nfs, "FSINFO"))? {
            Ok(i) => i,
            Err(status) => {
                return Err(NfsError::Status {
                    server: nfs.server().to_string(),
                    op: "FSINFO",
                    path: export,
                    status,
                });
            }
        };
        let cap = |server_max: u32, user: Option<u32>| {
            let v = server_max.clamp(4096, MAX_TRANSFER);
            user.map_or(v, |u| u.min(v))
        };
        let (rsize, wsize) = (cap(fsinfo.rtmax, url.rsize), cap(fsinfo.wtmax, url.wsize));
        nfs.set_uncommitted_limit(uncommitted_limit(url.uncommitted, wsize));
        Ok(Client {
            rsize,
            wsize,
            url: url.clone(),
            auth,
            addrs,
            mount_port,
            export,
            root,
            fsinfo,
            nfs,
            dirs: HashMap::new(),
        })
    }

    pub fn url(&self) -> &NfsUrl {
        &self.url
    }

    pub fn export(&self) -> &str {
        &self.export
    }

    pub fn root(&self) -> &Fh {
        &self.root
    }

    pub fn fsinfo(&self) -> &FsInfo {
        &self.fsinfo
    }

    pub fn rsize(&self) -> u32 {
        self.rsize
    }

    pub fn wsize(&self) -> u32 {
        self.wsize
    }

    pub fn transport(&mut self) -> &mut Transport {
        &mut self.nfs
    }

    /// Whether `url` is served by this mount (same server, options and export).
    pub fn serves(&self, url: &NfsUrl) -> bool {
        let same = NfsUrl {
            path: String::new(),
            ..url.clone()
        } == NfsUrl {
            path: String::new(),
            ..self.url.clone()
        };
        same && self.relative(&url.path).is_some()
    }

    /// The part of an absolute path inside the export (`""` for the export itself).
    pub fn relative<'a>(&self, path: &'a str) -> Option<&'a str> {
        let rest = path.strip_prefix(self.export.as_str())?;
        if self.export == "/" {
            return Some(rest.trim_start_matches('/'));
        }
        match rest.strip_prefix('/') {
            Some(r) => Some(r),
            None if rest.is_empty() => Some(""),
            None => None,
        }
    }

    fn full(&self, rel: &str) -> String {
        match (self.export.as_str(), rel) {
            (e, "") => e.to_string(),
            ("/", r) => format!("/{r}"),
            (e, r) => format!("{e}/{r}"),
        }
    }

    /// One metadata call whose result decodes with `dec`; status failures become errors
    /// naming `path` (relative to the export).
    fn meta<T>(
        &mut self,
        op: &'static str,
        proc_: u32,
        args: &[u8],
        rel: &str,
        dec: fn(&[u8]) -> NfsResult<T>,
    ) -> Result<T> {
        let body = self.nfs.call(op, PROG_NFS, 3, proc_, args)?;
        match dec(&body).map_err(garbage(&self.nfs, op))? {
            Ok(v) => Ok(v),
            Err(status) => {
                if status == NfsStat::STALE || status == NfsStat::BADHANDLE {
                    self.dirs.clear();
                }
                Err(NfsError::Status {
                    server: self.nfs.server().to_string(),
                    op,
                    path: self.full(rel),
                    status,
                })
            }
        }
    }

    pub fn getattr(&mut self, fh: &Fh, rel: &str) -> Result<Fattr> {
        let mut args = Vec::new();
        proto::args_fh(&mut args, fh);
        self.meta("GETATTR", nfsproc::GETATTR, &args, rel, proto::res_getattr)
    }

    /// LOOKUP of one name in a directory.
    pub fn lookup_in(&mut self, dir: &Fh, name: &str, rel: &str) -> Result<(Fh, Fattr)> {
        let mut args = Vec::new();
        proto::args_dirop(&mut args, dir, name);
        let (fh, attr) = self.meta("LOOKUP", nfsproc::LOOKUP, &args, rel, proto::res_lookup)?;
        let attr = match attr {
            Some(a) => a,
            None => self.getattr(&fh, rel)?,
        };
        Ok((fh, attr))
    }

    /// The handle of a directory (relative path), through the directory cache.
    pub fn dir(&mut self, rel: &str) -> Result<Fh> {
        if rel.is_empty() {
            return Ok(self.root);
        }
        if let Some(fh) = self.dirs.get(rel) {
            return Ok(*fh);
        }
        let (parent, name) = split_parent(rel);
        let pfh = self.dir(parent)?;
        let (fh, attr) = self.lookup_in(&pfh, name, rel)?;
        if !attr.is_dir() {
            let server = self.nfs.server().to_string();
            return Err(NfsError::Status {
                server,
                op: "LOOKUP",
                path: self.full(rel),
                status: NfsStat::NOTDIR,
            });
        }
        self.dirs.insert(rel.to_string(), fh);
        Ok(fh)
    }

    /// LOOKUP by relative path.
    pub fn lookup(&mut self, rel: &str) -> Result<(Fh, Fattr)> {
        if rel.is_empty() {
            let root = self.root;
            return Ok((root, self.getattr(&root, rel)?));
        }
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        self.lookup_in(&dir, name, rel)
    }

    /// CREATE in GUARDED mode: never takes over an existing file.
    pub fn create(&mut self, rel: &str, mode: u32) -> Result<Fh> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        let mut args = Vec::new();
        proto::args_create_guarded(&mut args, &dir, name, mode);
        match self.meta("CREATE", nfsproc::CREATE, &args, rel, proto::res_create)? {
            (Some(fh), _) => Ok(fh),
            (None, _) => Ok(self.lookup_in(&dir, name, rel)?.0),
        }
    }

    pub fn mkdir(&mut self, rel: &str, mode: u32) -> Result<Fh> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        let mut args = Vec::new();
        proto::args_mkdir(&mut args, &dir, name, mode);
        let fh = match self.meta("MKDIR", nfsproc::MKDIR, &args, rel, proto::res_create)? {
            (Some(fh), _) => fh,
            (None, _) => self.lookup_in(&dir, name, rel)?.0,
        };
        self.dirs.insert(rel.to_string(), fh);
        Ok(fh)
    }

    pub fn remove(&mut self, rel: &str) -> Result<()> {
        self.dirop("REMOVE", nfsproc::REMOVE, rel)
    }

    pub fn rmdir(&mut self, rel: &str) -> Result<()> {
        self.dirs
            .retain(|k, _| k != rel && !k.starts_with(&format!("{rel}/")));
        self.dirop("RMDIR", nfsproc::RMDIR, rel)
    }

    fn dirop(&mut self, op: &'static str, proc_: u32, rel: &str) -> Result<()> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        let mut args = Vec::new();
        proto::args_dirop(&mut args, &dir, name);
        self.meta(op, proc_, &args, rel, proto::res_wcc)
    }

    pub fn set_size(&mut self, fh: &Fh, size: u64, rel: &str) -> Result<()> {
        let mut args = Vec::new();
        proto::args_setattr_size(&mut args, fh, size);
        self.meta("SETATTR", nfsproc::SETATTR, &args, rel, proto::res_wcc)
    }

    /// Names in a directory (READDIRPLUS, all pages), without `.` and `..`.
    pub fn readdir(&mut self, rel: &str) -> Result<Vec<String>> {
        let (mut cookie, mut verf, mut names) = (0u64, [0u8; 8], Vec::new());
        while !self.readdir_next(rel, &mut cookie, &mut verf, |n| names.push(n.to_owned()))? {}
        Ok(names)
    }

    /// The next READDIRPLUS page of a directory after `cookie` (0 at the start): hands
    /// each name but `.` and `..` to `each`, moves `cookie` and `verf` on, and returns
    /// whether the listing has ended.
    pub fn readdir_next(
        &mut self,
        rel: &str,
        cookie: &mut u64,
        verf: &mut Verf,
        mut each: impl FnMut(&str),
    ) -> Result<bool> {
        let dir = self.dir(rel)?;
        let mut args = Vec::new();
        proto::args_readdirplus(&mut args, &dir, *cookie, verf, READDIR_MAX);
        let page = self.meta(
            "READDIRPLUS",
            nfsproc::READDIRPLUS,
            &args,
            rel,
            proto::res_readdirplus,
        )?;
        *verf = page.verf;
        for (name, next) in &page.entries {
            if name != "." && name != ".." {
                each(name);
            }
            *cookie = *next;
        }
        Ok(page.eof || page.entries.is_empty())
    }

    /// A COMMIT of a whole file that returns when it is done: everything written to it
    /// before is on stable storage (written again first if the server restarted). `label`
    /// is the transport's label for the file, as in data requests.
    pub fn commit_sync(&mut self, fh: &Fh, label: u32) -> Result<()> {
        self.nfs.flush()?;
        while self.nfs.inflight() > 0 {
            self.nfs.drain_one()?;
        }
        self.nfs.commit_wait(fh, label)
    }

    /// NULL procedure: a round trip with no work (reachability checks).
    pub fn null(&mut self) -> Result<()> {
        self.nfs
            .call("NULL", PROG_NFS, 3, nfsproc::NULL, &[])
            .map(|_| ())
    }
}

impl Drop for Client {
    /// Tells the server the export is no longer mounted (best effort, short timeout).
    fn drop(&mut self) {
        let Ok(mut t) = one_shot(
            &self.url,
            &self.addrs,
            self.mount_port,
            &self.auth,
            "UMNT",
            UMNT_TIMEOUT,
        ) else {
            return;
        };
        let mut args = Vec::new();
        proto::args_string(&mut args, &self.export);
        let _ = t.call(
            "MOUNT UMNT",
            PROG_MOUNT,
            proto::MOUNT_V3,
            proto::MOUNTPROC_UMNT,
            &args,
        );
    }
}

/// The retained-write ring's size: what the URL asks for, but at least four WRITEs' worth
/// so that one RPC always fits while the rest waits for a COMMIT (0 stays 0: nothing kept).
pub fn uncommitted_limit(asked: usize, wsize: u32) -> usize {
    match asked {
        0 => 0,
        n => n.max(4 * wsize as usize),
    }
}

/// `a/b/c` → (`a/b`, `c`); `c` → (``, `c`).
fn split_parent(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// Picks the export for `path` and mounts it. Exports listed by the server that prefix the
/// path are tried longest first; then, for servers that list nothing useful, each shorter
/// prefix of the path. The first successful MNT wins; a refusal other than "no such
/// export" (e.g. MNT3ERR_ACCES) ends the search with that error.
fn mount_export(
    url: &NfsUrl,
    addrs: &[SocketAddr],
    port: u16,
    auth: &Auth,
) -> Result<(String, Fh)> {
    let mut t = one_shot(url, addrs, port, auth, "MOUNT", url.timeout)?;
    // A server may refuse to list its exports (PROC_UNAVAIL, …); then prefixes are tried.
    let listed = match t.call(
        "MOUNT EXPORT",
        PROG_MOUNT,
        proto::MOUNT_V3,
        proto::MOUNTPROC_EXPORT,
        &[],
    ) {
        Ok(body) => proto::res_export(&body).map_err(garbage(&t, "MOUNT EXPORT"))?,
        Err(NfsError::Rpc { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut candidates: Vec<String> = listed
        .iter()
        .filter(|e| is_prefix(e, &url.path))
        .cloned()
        .collect();
    candidates.sort_by_key(|e| std::cmp::Reverse(e.len()));
    let mut prefix = url.path.clone();
    loop {
        if !candidates.contains(&prefix) {
            candidates.push(prefix.clone());
        }
        match prefix.rfind('/') {
            Some(0) if prefix != "/" => prefix = "/".into(),
            Some(i) if i > 0 => prefix.truncate(i),
            _ => break,
        }
    }
    for export in candidates {
        let mut args = Vec::new();
        proto::args_string(&mut args, &export);
        let body = t.call(
            "MOUNT MNT",
            PROG_MOUNT,
            proto::MOUNT_V3,
            proto::MOUNTPROC_MNT,
            &args,
        )?;
        match proto::res_mnt(&body).map_err(garbage(&t, "MOUNT MNT"))? {
            Ok(fh) => return Ok((export, fh)),
            // Not an export: try the next prefix. Any other refusal is the answer.
            Err(st) if st.0 == 2 || st.0 == 20 => {}
            Err(status) => {
                return Err(NfsError::Mount {
                    server: t.server().to_string(),
                    export,
                    status,
                });
            }
        }
    }
    Err(NfsError::NoExport {
        server: t.server().to_string(),
        path: url.path.clone(),
        exports: if listed.is_empty() {
            "none listed".into()
        } else {
            listed.join(", ")
        },
    })
}

fn is_prefix(export: &str, path: &str) -> bool {
    export == "/"
        || path == export
        || path
            .strip_prefix(export)
            .is_some_and(|r| r.starts_with('/'))
}
