//! An NFSv3 client for one export: finds the ports (PORTMAP), mounts the export (MOUNT,
//! see `mount.rs`), learns the transfer sizes (FSINFO), and offers the metadata operations
//! by path or by name in a directory handle. Once warmed up, a metadata call allocates
//! nothing unless it fails, as the timed loops of bonnie's file tests need. Data requests
//! go through [`Client::transport`], pipelined.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::error::{NfsError, Result};
use crate::mount::{getport, machine_name, mount_export, one_shot, resolve, with_port};
use crate::proto::{self, Fattr, Fh, FsInfo, FsStat, NfsResult, NfsStat, Verf, nfsproc};
use crate::rpc::{Auth, PROG_MOUNT, PROG_NFS};
use crate::transport::{Transport, TransportConfig};
use crate::url::NfsUrl;

/// Largest READ/WRITE we issue even if the server allows more.
const MAX_TRANSFER: u32 = crate::url::MAX_WSIZE;
/// Reply size asked for in READDIRPLUS.
const READDIR_MAX: u32 = 64 * 1024;
/// Mode asked for symbolic links (as the Linux client asks; most servers ignore it).
const SYMLINK_MODE: u32 = 0o777;
/// Symbolic links followed in one lookup before giving up (Linux's limit).
const MAX_SYMLINKS: usize = 40;
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
    /// Arguments of the metadata call being made (reused: no allocation per call).
    args: Vec<u8>,
    /// A symbolic link's text, and the paths a link being followed leads to (reused).
    link_text: String,
    link_paths: [String; 2],
    /// How many directory links `dir` is following inside one another (see
    /// `follow_dir_link`).
    dir_links_nested: usize,
}

/// Where a metadata operation acts, for its error message; built into a path only when
/// there is an error to report.
#[derive(Clone, Copy, Debug)]
pub enum At<'a> {
    /// A path relative to the export.
    Path(&'a str),
    /// A name (which may hold `/`) in a directory given relative to the export.
    In(&'a str, &'a str),
}

/// What a path inside the export follows on the server: the export without a trailing `/`
/// (so `""` for the root export).
fn export_prefix(export: &str) -> &str {
    export.trim_end_matches('/')
}

/// A malformed reply as an error; the server's name is copied only when there is one.
pub(crate) fn garbage<'t>(
    t: &'t Transport,
    op: &'static str,
) -> impl Fn(crate::DecodeError) -> NfsError + 't {
    move |detail| NfsError::Garbage {
        server: t.server().to_string(),
        op,
        detail,
    }
}

impl Client {
    /// Mounts the export that contains `url.path`. See docs/nfs.md for the rule that splits
    /// a path into export and path inside it.
    pub fn mount(url: &NfsUrl) -> Result<Client> {
        if url.version.is_some_and(crate::url::NfsVersion::is_v4) {
            return Err(NfsError::Unsupported(format!(
                "{url}: this is the NFSv3 client (MOUNT, NFSv3); NFSv4 (version=4, 4.1, 4.2) is spoken by v4::Client4"
            )));
        }
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
            args: Vec::new(),
            link_text: String::new(),
            link_paths: Default::default(),
            dir_links_nested: 0,
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

    /// Names the file `rel` (inside the export) that data requests with `label` refer to,
    /// as the server's path, for messages.
    pub fn label_file(&mut self, label: u32, rel: &str) {
        let export = export_prefix(&self.export);
        self.nfs.set_path_parts(label, &[export, "/", rel]);
    }

    pub fn transport(&mut self) -> &mut Transport {
        &mut self.nfs
    }

    /// The NFS server's address as the connection reached it.
    pub fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.nfs.peer_addr()
    }

    /// This end of the connection [`server_addr`](Self::server_addr) names.
    pub fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.nfs.local_addr()
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

    fn full(&self, at: At<'_>) -> String {
        let rel = match at {
            At::Path(rel) => rel.to_string(),
            At::In("", name) => name.to_string(),
            At::In(dir, name) => format!("{dir}/{name}"),
        };
        match rel.as_str() {
            "" => self.export.clone(),
            r => format!("{}/{r}", export_prefix(&self.export)),
        }
    }

    /// One metadata call: `encode` writes its arguments, `dec` decodes the result where it
    /// arrived. Nothing is allocated unless it fails; status failures become errors naming
    /// `at`.
    fn meta<T>(
        &mut self,
        op: &'static str,
        proc_: u32,
        at: At<'_>,
        encode: impl FnOnce(&mut Vec<u8>),
        dec: impl FnOnce(&[u8]) -> NfsResult<T>,
    ) -> Result<T> {
        let mut args = std::mem::take(&mut self.args);
        args.clear();
        encode(&mut args);
        let reply = self.nfs.call_with(op, PROG_NFS, 3, proc_, &args, dec);
        self.args = args;
        match reply?.map_err(garbage(&self.nfs, op))? {
            Ok(v) => Ok(v),
            Err(status) => Err(self.status_error(op, at, status)),
        }
    }

    /// The error for `status` in answer to `op` on `at`, as the client's own calls report
    /// it (and a stale handle empties the directory cache, as there).
    #[cold]
    pub fn status_error(&mut self, op: &'static str, at: At<'_>, status: NfsStat) -> NfsError {
        if status == NfsStat::STALE || status == NfsStat::BADHANDLE {
            self.dirs.clear();
        }
        NfsError::Status {
            server: self.nfs.server().to_string(),
            op,
            path: self.full(at),
            status,
        }
    }

    pub fn getattr(&mut self, fh: &Fh, rel: &str) -> Result<Fattr> {
        self.getattr_at(fh, At::Path(rel))
    }

    fn getattr_at(&mut self, fh: &Fh, at: At<'_>) -> Result<Fattr> {
        let encode = |a: &mut Vec<u8>| proto::args_fh(a, fh);
        self.meta("GETATTR", nfsproc::GETATTR, at, encode, proto::res_getattr)
    }

    /// LOOKUP of one name in a directory (attributes by GETATTR if the reply has none).
    pub fn lookup_in(&mut self, dir: &Fh, name: &str, at: At<'_>) -> Result<(Fh, Fattr)> {
        let encode = |a: &mut Vec<u8>| proto::args_dirop(a, dir, name);
        let (fh, attr) = self.meta("LOOKUP", nfsproc::LOOKUP, at, encode, proto::res_lookup)?;
        let attr = match attr {
            Some(a) => a,
            None => self.getattr_at(&fh, at)?,
        };
        Ok((fh, attr))
    }

    /// LOOKUP of `name` in `dir` following symbolic links, as stat(2) and open(2) do:
    /// the handle and attributes of what the name finally leads to. A link's text is
    /// resolved against the link's directory (`at`), inside the export only.
    pub fn lookup_follow_in(&mut self, dir: &Fh, name: &str, at: At<'_>) -> Result<(Fh, Fattr)> {
        let found = self.lookup_in(dir, name, at)?;
        match found.1.is_symlink() {
            true => self.follow(&found.0, at),
            false => Ok(found),
        }
    }

    /// LOOKUP by relative path following symbolic links (see `lookup_follow_in`).
    pub fn lookup_follow(&mut self, rel: &str) -> Result<(Fh, Fattr)> {
        let found = self.lookup(rel)?;
        match found.1.is_symlink() {
            true => self.follow(&found.0, At::Path(rel)),
            false => Ok(found),
        }
    }

    /// READLINK: the text of the symbolic link `fh` (at `at`), into `out` (replacing it;
    /// bytes that are not UTF-8 are replaced).
    pub fn readlink(&mut self, fh: &Fh, at: At<'_>, out: &mut String) -> Result<()> {
        out.clear();
        let encode = |a: &mut Vec<u8>| proto::args_fh(a, fh);
        self.meta("READLINK", nfsproc::READLINK, at, encode, |body| {
            Ok(proto::res_readlink(body)?.map(|(start, len)| {
                out.push_str(&String::from_utf8_lossy(&body[start..start + len]));
            }))
        })
    }

    /// Follows the symbolic link `link`, found at `at`, to what is not a link. The
    /// buffers it works in are the client's, so following allocates nothing once warm.
    fn follow(&mut self, link: &Fh, at: At<'_>) -> Result<(Fh, Fattr)> {
        let mut text = std::mem::take(&mut self.link_text);
        let [mut path, mut next] = std::mem::take(&mut self.link_paths);
        path.clear();
        match at {
            At::Path(rel) | At::In("", rel) => path.push_str(rel),
            At::In(dir, name) => {
                path.push_str(dir);
                path.push('/');
                path.push_str(name);
            }
        }
        let mut link = *link;
        let mut found = Err(NfsError::Unsupported(String::new()));
        for _ in 0..MAX_SYMLINKS {
            found = self.follow_one(&link, &mut path, &mut next, &mut text);
            match &found {
                Ok((fh, attr)) if attr.is_symlink() => link = *fh,
                _ => break,
            }
        }
        if let Ok((_, attr)) = &found
            && attr.is_symlink()
        {
            found = Err(NfsError::Unsupported(format!(
                "{}: too many levels of symbolic links",
                self.full(at)
            )));
        }
        self.link_text = text;
        self.link_paths = [path, next];
        found
    }

    /// One step of `follow`: READLINK of the link at `path`, then LOOKUP of where its text
    /// leads, which becomes `path`.
    fn follow_one(
        &mut self,
        link: &Fh,
        path: &mut String,
        next: &mut String,
        text: &mut String,
    ) -> Result<(Fh, Fattr)> {
        self.readlink(link, At::Path(path), text)?;
        if let Err(why) = resolve_link(path, text, next) {
            return Err(NfsError::Unsupported(format!(
                "{}: symbolic link to {text:?} {why}",
                self.full(At::Path(path))
            )));
        }
        std::mem::swap(path, next);
        self.lookup(path)
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
        let (mut fh, mut attr) = self.lookup_in(&pfh, name, At::Path(rel))?;
        if attr.is_symlink() {
            (fh, attr) = self.follow_dir_link(&fh, rel)?;
        }
        if !attr.is_dir() {
            return Err(self.status_error("LOOKUP", At::Path(rel), NfsStat::NOTDIR));
        }
        self.dirs.insert(rel.to_string(), fh);
        Ok(fh)
    }

    /// Follows the symbolic link at `rel`, met as a directory in a longer path, as a path
    /// walk on a mount does. Following one may meet further links in its text's own
    /// directories; the nesting is bounded, so a link into itself (`a` -> `a/b`) fails
    /// as too many levels of symbolic links rather than recursing without end.
    fn follow_dir_link(&mut self, link: &Fh, rel: &str) -> Result<(Fh, Fattr)> {
        if self.dir_links_nested >= MAX_SYMLINKS {
            return Err(NfsError::Unsupported(format!(
                "{}: too many levels of symbolic links",
                self.full(At::Path(rel))
            )));
        }
        self.dir_links_nested += 1;
        let found = self.follow(link, At::Path(rel));
        self.dir_links_nested -= 1;
        found
    }

    /// FSSTAT of the file system holding the export: its size and free bytes.
    pub fn fsstat(&mut self) -> Result<FsStat> {
        let root = self.root;
        let encode = |a: &mut Vec<u8>| proto::args_fh(a, &root);
        self.meta(
            "FSSTAT",
            nfsproc::FSSTAT,
            At::Path(""),
            encode,
            proto::res_fsstat,
        )
    }

    /// LOOKUP by relative path.
    pub fn lookup(&mut self, rel: &str) -> Result<(Fh, Fattr)> {
        if rel.is_empty() {
            let root = self.root;
            return Ok((root, self.getattr(&root, rel)?));
        }
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        self.lookup_in(&dir, name, At::Path(rel))
    }

    /// CREATE in GUARDED mode: never takes over an existing file.
    pub fn create(&mut self, rel: &str, mode: u32) -> Result<Fh> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        self.create_fh_in(&dir, name, mode, At::Path(rel))
    }

    /// CREATE (GUARDED) of `name` in `dir` and the new file's handle, by LOOKUP if the
    /// reply holds none.
    pub fn create_fh_in(&mut self, dir: &Fh, name: &str, mode: u32, at: At<'_>) -> Result<Fh> {
        match self.create_in(dir, name, mode, at)? {
            Some(fh) => Ok(fh),
            None => Ok(self.lookup_in(dir, name, at)?.0),
        }
    }

    /// CREATE (GUARDED) of `name` in `dir`: the new file's handle if the reply holds one.
    pub fn create_in(&mut self, dir: &Fh, name: &str, mode: u32, at: At<'_>) -> Result<Option<Fh>> {
        let encode = |a: &mut Vec<u8>| proto::args_create_guarded(a, dir, name, mode);
        let (fh, _) = self.meta("CREATE", nfsproc::CREATE, at, encode, proto::res_create)?;
        Ok(fh)
    }

    pub fn mkdir(&mut self, rel: &str, mode: u32) -> Result<Fh> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        let encode = |a: &mut Vec<u8>| proto::args_mkdir(a, &dir, name, mode);
        let fh = match self.meta(
            "MKDIR",
            nfsproc::MKDIR,
            At::Path(rel),
            encode,
            proto::res_create,
        )? {
            (Some(fh), _) => fh,
            (None, _) => self.lookup_in(&dir, name, At::Path(rel))?.0,
        };
        self.dirs.insert(rel.to_string(), fh);
        Ok(fh)
    }

    pub fn remove(&mut self, rel: &str) -> Result<()> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        self.remove_in(&dir, name, At::Path(rel))
    }

    /// REMOVE of `name` in `dir`.
    pub fn remove_in(&mut self, dir: &Fh, name: &str, at: At<'_>) -> Result<()> {
        let encode = |a: &mut Vec<u8>| proto::args_dirop(a, dir, name);
        self.meta("REMOVE", nfsproc::REMOVE, at, encode, proto::res_wcc)
    }

    /// LINK: makes `rel` a new name for the file at `existing` (both relative paths; the
    /// file is found by LOOKUP). Returns the file's attributes after the link when the
    /// reply holds them.
    pub fn link(&mut self, existing: &str, rel: &str) -> Result<Option<Fattr>> {
        let (file, _) = self.lookup(existing)?;
        self.link_fh(&file, rel)
    }

    /// LINK: makes `rel` (a relative path) a new name for the file `file`.
    pub fn link_fh(&mut self, file: &Fh, rel: &str) -> Result<Option<Fattr>> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        self.link_in(file, &dir, name, At::Path(rel))
    }

    /// LINK of the file `file` as `name` in `dir`; errors name `at`, the new name.
    pub fn link_in(
        &mut self,
        file: &Fh,
        dir: &Fh,
        name: &str,
        at: At<'_>,
    ) -> Result<Option<Fattr>> {
        let encode = |a: &mut Vec<u8>| proto::args_link(a, file, dir, name);
        self.meta("LINK", nfsproc::LINK, at, encode, proto::res_link)
    }

    /// SYMLINK: makes `rel` (a relative path) a symbolic link holding `target`, which is
    /// stored as given (relative to the link's directory unless it starts with `/`).
    pub fn symlink(&mut self, target: &str, rel: &str) -> Result<Option<Fh>> {
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        self.symlink_in(&dir, name, target, At::Path(rel))
    }

    /// SYMLINK of `name` in `dir` holding `target`: the link's handle if the reply holds
    /// one. Errors name `at`.
    pub fn symlink_in(
        &mut self,
        dir: &Fh,
        name: &str,
        target: &str,
        at: At<'_>,
    ) -> Result<Option<Fh>> {
        let encode = |a: &mut Vec<u8>| proto::args_symlink(a, dir, name, SYMLINK_MODE, target);
        let (fh, _) = self.meta("SYMLINK", nfsproc::SYMLINK, at, encode, proto::res_create)?;
        Ok(fh)
    }

    pub fn rmdir(&mut self, rel: &str) -> Result<()> {
        self.dirs
            .retain(|k, _| k != rel && !k.starts_with(&format!("{rel}/")));
        let (parent, name) = split_parent(rel);
        let dir = self.dir(parent)?;
        let encode = |a: &mut Vec<u8>| proto::args_dirop(a, &dir, name);
        self.meta(
            "RMDIR",
            nfsproc::RMDIR,
            At::Path(rel),
            encode,
            proto::res_wcc,
        )
    }

    pub fn set_size(&mut self, fh: &Fh, size: u64, rel: &str) -> Result<()> {
        let encode = |a: &mut Vec<u8>| proto::args_setattr_size(a, fh, size);
        self.meta(
            "SETATTR",
            nfsproc::SETATTR,
            At::Path(rel),
            encode,
            proto::res_wcc,
        )
    }

    /// Names in a directory (READDIRPLUS, all pages), without `.` and `..`.
    pub fn readdir(&mut self, rel: &str) -> Result<Vec<String>> {
        let (mut cookie, mut verf, mut names) = (0u64, [0u8; 8], Vec::new());
        while !self.readdir_next(rel, &mut cookie, &mut verf, |n| names.push(n.to_owned()))? {}
        Ok(names)
    }

    /// The next READDIRPLUS page of a directory after `cookie` (0 at the start): hands
    /// each name but `.` and `..` to `each` (straight from the reply), moves `cookie` and
    /// `verf` on, and returns whether the listing has ended.
    pub fn readdir_next(
        &mut self,
        rel: &str,
        cookie: &mut u64,
        verf: &mut Verf,
        mut each: impl FnMut(&str),
    ) -> Result<bool> {
        let dir = self.dir(rel)?;
        let (after, v) = (*cookie, *verf);
        let encode = |a: &mut Vec<u8>| proto::args_readdirplus(a, &dir, after, &v, READDIR_MAX);
        let mut last = after;
        let end = self.meta(
            "READDIRPLUS",
            nfsproc::READDIRPLUS,
            At::Path(rel),
            encode,
            |body| {
                proto::res_readdirplus_each(body, &mut |name, next| {
                    last = next;
                    match name {
                        b"." | b".." => {}
                        _ => match std::str::from_utf8(name) {
                            Ok(name) => each(name),
                            Err(_) => each(&String::from_utf8_lossy(name)),
                        },
                    }
                })
            },
        )?;
        *cookie = last;
        *verf = end.verf;
        Ok(end.eof || end.entries == 0)
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

/// Where the symbolic link at `link` (a path inside the export) leads with `text`, into
/// `out`; why not, for an absolute text or one leading out of the export.
fn resolve_link(link: &str, text: &str, out: &mut String) -> Result<(), &'static str> {
    if text.starts_with('/') {
        return Err("is not followed over NFS: an absolute path means the client's file tree");
    }
    out.clear();
    out.push_str(split_parent(link).0);
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." if out.is_empty() => return Err("leads out of the export"),
            ".." => out.truncate(out.rfind('/').unwrap_or(0)),
            part => {
                if !out.is_empty() {
                    out.push('/');
                }
                out.push_str(part);
            }
        }
    }
    Ok(())
}

/// `a/b/c` → (`a/b`, `c`); `c` → (``, `c`).
fn split_parent(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

#[cfg(test)]
mod tests {
    use super::resolve_link;

    #[test]
    fn link_texts_resolve_against_the_links_directory() {
        let mut out = String::new();
        for (link, text, want) in [
            ("d/ln", "first", "d/first"),
            ("d/00/ln", "../first", "d/first"),
            ("ln", "./a//b/", "a/b"),
            ("d/e/ln", "../../x", "x"),
            ("d/ln", "..", ""),
        ] {
            resolve_link(link, text, &mut out).unwrap();
            assert_eq!(out, want, "{link} -> {text}");
        }
        assert!(resolve_link("d/ln", "../../x", &mut out).is_err());
        assert!(resolve_link("d/ln", "/etc/passwd", &mut out).is_err());
    }
}
