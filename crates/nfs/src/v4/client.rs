//! An NFSv4.1/4.2 client for one directory tree: session set-up and teardown, COMPOUNDs
//! headed by SEQUENCE, retries of NFS4ERR_DELAY/GRACE, and a new session (with opens
//! reclaimed) when the server lost the old one. The operations take paths relative to the
//! directory the URL names and start at the kept handle of the directory holding the name
//! (`dirs.rs`); data requests can also be pipelined (`pipe.rs`).

use std::time::{Duration, Instant};

use crate::client::uncommitted_limit;
use crate::error::{NfsError, Result};
use crate::mount::{machine_name, resolve, with_port};
use crate::rpc::{Auth, PROG_NFS};
use crate::transport::{Transport, TransportConfig};
use crate::url::{MAX_WSIZE, NfsUrl};

use super::decode::{OpenRes, Reply, V4Error, V4Result, WriteRes};
use super::dirs::Dirs;
use super::kept::Kept;
use super::retry::{Limits, Retries};
use super::session::Slots;
use super::stat::Nfs4Stat;
use super::types::{Attrs4, Fh4, SessionId, Stateid, Verifier};
use super::wire::{
    self, Claim, Compound, Content, Create, FILE_ATTRS, LEASE_ATTRS, NFS_V4, PROC_COMPOUND,
    SPACE_ATTRS, Stable4, op,
};

/// The NFSv4 port: v4 has no portmapper or MOUNT.
pub const NFS4_PORT: u16 = 2049;
/// Session re-establishments one call may go through before it fails.
const RECOVERIES_PER_CALL: u32 = 2;
/// Bytes of a COMPOUND beyond the data of its READ or WRITE.
const COMPOUND_OVERHEAD: u32 = 4096;
/// Operations a path walk may hold beyond its LOOKUPs.
const WALK_EXTRA: u32 = 4;
/// READDIR reply size asked for.
const READDIR_MAX: u32 = 64 << 10;
/// The open owner of every open this client makes (scoped by its client id).
const OPEN_OWNER: &[u8] = b"storbench";

/// A file opened through [`Client4::open`], addressed by its index (the file label).
#[derive(Clone, Debug)]
pub(crate) struct OpenFile {
    pub(crate) fh: Fh4,
    pub(crate) stateid: Stateid,
    pub(crate) access: u32,
    pub(crate) path: String,
    pub(crate) open: bool,
    /// Bytes written UNSTABLE since the last COMMIT, and the verifier they were written under.
    pub(crate) unstable: u64,
    pub(crate) verf: Option<Verifier>,
    /// Of those, bytes the retained-write ring had no room for.
    pub(crate) unkept: u64,
}

impl OpenFile {
    /// Keeps what COMMIT's verifier check needs from a WRITE's reply.
    pub(crate) fn note_write(&mut self, w: &WriteRes) {
        if w.committed != Stable4::Unstable as u32 {
            return;
        }
        self.verf = match self.verf {
            // Written under two verifiers: some of it was lost already.
            Some(v) if v != w.verf => Some(Verifier([0xff; 8])),
            _ => Some(w.verf),
        };
        self.unstable += u64::from(w.count);
    }
}

/// A v4.1 or v4.2 session with one server.
pub struct Client4 {
    pub(crate) url: NfsUrl,
    pub(crate) minor: u32,
    pub(crate) nfs: Transport,
    /// Client owner: stable across re-establishments within this run.
    owner: Vec<u8>,
    owner_verf: Verifier,
    clientid: u64,
    pub(crate) sid: SessionId,
    pub(crate) slots: Slots,
    depth: u32,
    lease: Duration,
    /// How long NFS4ERR_DELAY and NFS4ERR_GRACE are retried (`retry.rs`).
    pub(crate) limits: Limits,
    pub(crate) last_sent: Instant,
    /// Sessions established so far (a request sent under an older one is re-sent).
    pub(crate) generation: u32,
    root: Fh4,
    rsize: u32,
    wsize: u32,
    max_ops: u32,
    pub(crate) files: Vec<OpenFile>,
    pub(crate) args: Vec<u8>,
    pub(crate) pending: Vec<super::pipe::Pending>,
    /// Directory handles by path (`dirs.rs`).
    pub(crate) dirs: Dirs,
    /// Operations sent in COMPOUNDs, SEQUENCE included.
    pub(crate) ops_sent: u64,
    /// Copies of UNSTABLE writes until a COMMIT with their verifier (`kept.rs`).
    pub(crate) kept: Kept,
    /// Session re-establishments, for the run's notes.
    recoveries: u32,
    /// Opens had again after those: reclaimed in a grace period, and opened again by handle.
    reclaimed: u32,
    reopened: u32,
    closed: bool,
}

/// Builds the operations after SEQUENCE.
pub(crate) type Build<'b> = &'b mut dyn FnMut(&mut Compound<'_>, &[OpenFile]);

impl Client4 {
    /// Sets up a session for `url`'s version: 4.1 or 4.2 as asked, otherwise (`version=4`
    /// or none) 4.2 if the server serves it, else 4.1.
    pub fn connect_url(url: &NfsUrl, depth: u32) -> Result<Client4> {
        const MINOR_VERS_MISMATCH: u32 = 10021;
        if let Some(minor) = url.version.and_then(crate::url::NfsVersion::minor) {
            return Client4::connect(url, minor, depth);
        }
        match Client4::connect(url, 2, depth) {
            Err(NfsError::Status4 { status, .. }) if status.0 == MINOR_VERS_MISMATCH => {
                Client4::connect(url, 1, depth)
            }
            other => other,
        }
    }

    /// Sets up a session of `depth` slots with the server of `url` (minor version 1 or 2)
    /// and finds the directory the URL names.
    pub fn connect(url: &NfsUrl, minor: u32, depth: u32) -> Result<Client4> {
        let addrs = resolve(url)?;
        let port = url.port.unwrap_or(NFS4_PORT);
        let cfg = TransportConfig {
            server: url.host_port(port),
            addrs: with_port(&addrs, port),
            connections: url.nconnect,
            timeout: url.timeout,
            reconnect_window: url.reconnect,
            recv_capacity: 256 << 10,
        };
        let auth = Auth::sys(&machine_name(), url.uid, url.gid);
        let nfs = Transport::connect(cfg, auth, "NFSv4")?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let owner = format!(
            "storbench/{}/{}/{nanos}",
            machine_name(),
            std::process::id()
        );
        let mut c = Client4 {
            url: url.clone(),
            minor,
            nfs,
            owner: owner.into_bytes(),
            owner_verf: Verifier(nanos.to_be_bytes()),
            clientid: 0,
            sid: SessionId::default(),
            slots: Slots::new(1),
            depth: depth.max(1),
            lease: Duration::from_secs(90),
            limits: Limits::of(url),
            last_sent: Instant::now(),
            generation: 0,
            root: Fh4::new(&[]).map_err(|d| garbage_err(url, "PUTROOTFH", d))?,
            rsize: 0,
            wsize: 0,
            max_ops: 8,
            files: Vec::new(),
            args: Vec::with_capacity(64 << 10),
            pending: Vec::new(),
            dirs: Dirs::default(),
            ops_sent: 0,
            kept: Kept::new(0),
            recoveries: 0,
            reclaimed: 0,
            reopened: 0,
            closed: false,
        };
        c.establish()?;
        c.kept = Kept::new(uncommitted_limit(url.uncommitted, c.wsize));
        c.reclaim_complete()?;
        c.find_root()?;
        Ok(c)
    }

    /// EXCHANGE_ID and CREATE_SESSION (the latter with the sequence id the former gave).
    fn establish(&mut self) -> Result<()> {
        let (owner, verf) = (std::mem::take(&mut self.owner), self.owner_verf);
        let ex = self.bare(
            "EXCHANGE_ID",
            &mut |c, _f| c.exchange_id(&verf, &owner),
            &mut |r| r.exchange_id(),
        );
        self.owner = owner;
        let ex = ex?;
        self.clientid = ex.clientid;
        let want = self.depth;
        let max_msg = MAX_WSIZE + COMPOUND_OVERHEAD;
        let s = self.bare(
            "CREATE_SESSION",
            &mut |c, _f| c.create_session(ex.clientid, ex.sequence, want, max_msg),
            &mut |r| r.create_session(),
        )?;
        self.sid = s.id;
        self.slots = Slots::new(s.fore.slots.min(want));
        self.max_ops = s.fore.max_ops.max(2);
        let fit = |server: u32, user: Option<u32>| {
            let v = server.saturating_sub(COMPOUND_OVERHEAD).min(MAX_WSIZE) & !4095;
            user.map_or(v, |u| u.min(v)).max(4096)
        };
        self.rsize = fit(s.fore.max_response, self.url.rsize);
        self.wsize = fit(s.fore.max_request, self.url.wsize);
        self.generation += 1;
        Ok(())
    }

    fn reclaim_complete(&mut self) -> Result<()> {
        const COMPLETE_ALREADY: u32 = 10054;
        match self.try_run(
            "RECLAIM_COMPLETE",
            &mut |c, _f| c.reclaim_complete(),
            &mut |r| r.status_only(op::RECLAIM_COMPLETE, "RECLAIM_COMPLETE"),
        )? {
            Ok(()) => Ok(()),
            Err(V4Error::Status { status, .. }) if status.0 == COMPLETE_ALREADY => Ok(()),
            Err(e) => Err(self.error("RECLAIM_COMPLETE", "", e)),
        }
    }

    /// The lease time and the handle of the URL's directory, found from the pseudo-root.
    fn find_root(&mut self) -> Result<()> {
        let lease = self.run(
            "GETATTR",
            "/",
            &mut |c, _f| {
                c.putrootfh();
                c.getattr(LEASE_ATTRS);
            },
            &mut |r| {
                r.status_only(op::PUTROOTFH, "PUTROOTFH")?;
                r.getattr()
            },
        )?;
        self.lease = Duration::from_secs(u64::from(lease.lease_time.max(1)));
        let path = self.url.path.clone();
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        self.check_ops(parts.len(), &path)?;
        let (fh, attrs) = self.run(
            "LOOKUP",
            &path,
            &mut |c, _f| {
                c.putrootfh();
                parts.iter().for_each(|p| c.lookup(p));
                c.getfh();
                c.getattr(FILE_ATTRS);
            },
            &mut |r| {
                r.status_only(op::PUTROOTFH, "PUTROOTFH")?;
                for _ in &parts {
                    r.status_only(op::LOOKUP, "LOOKUP")?;
                }
                Ok((r.getfh()?, r.getattr()?))
            },
        )?;
        if !attrs.is_dir() {
            return Err(self.error("LOOKUP", "", status_err("LOOKUP", Nfs4Stat::NOTDIR)));
        }
        self.root = fh;
        Ok(())
    }

    pub fn url(&self) -> &NfsUrl {
        &self.url
    }

    pub fn minor_version(&self) -> u32 {
        self.minor
    }

    pub fn server(&self) -> &str {
        self.nfs.server()
    }

    /// Slots the server granted (at most the depth asked for).
    pub fn slots(&self) -> u32 {
        self.slots.width()
    }

    pub fn rsize(&self) -> u32 {
        self.rsize
    }

    pub fn wsize(&self) -> u32 {
        self.wsize
    }

    /// The lease time the server stated.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    pub fn root(&self) -> &Fh4 {
        &self.root
    }

    pub fn session_id(&self) -> SessionId {
        self.sid
    }

    /// Sessions set up again after the server lost one.
    pub fn recoveries(&self) -> u32 {
        self.recoveries
    }

    /// Opens had again after lost sessions: reclaimed with CLAIM_PREVIOUS in the server's
    /// grace period, and opened again by handle (no grace period, or it had ended).
    pub fn reclaims(&self) -> (u32, u32) {
        (self.reclaimed, self.reopened)
    }

    pub fn transport(&mut self) -> &mut Transport {
        &mut self.nfs
    }

    /// Session slots free for another request.
    pub fn free_slots(&self) -> u32 {
        self.slots.free()
    }

    /// The server's address as the connection reached it.
    pub fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.nfs.peer_addr()
    }

    /// This end of that connection.
    pub fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.nfs.local_addr()
    }

    /// The server path of `rel`, for messages.
    pub(crate) fn full(&self, rel: &str) -> String {
        let base = self.url.path.trim_end_matches('/');
        match rel.trim_start_matches('/') {
            "" => self.url.path.clone(),
            r => format!("{base}/{r}"),
        }
    }

    #[cold]
    pub(crate) fn error(&self, op: &'static str, rel: &str, e: V4Error) -> NfsError {
        match e {
            V4Error::Decode(detail) => NfsError::Garbage {
                server: self.server().to_string(),
                op,
                detail,
            },
            V4Error::Status { op, status } => NfsError::Status4 {
                server: self.server().to_string(),
                op,
                path: self.full(rel),
                status,
            },
        }
    }

    pub(crate) fn check_ops(&self, lookups: usize, path: &str) -> Result<()> {
        if lookups as u32 + WALK_EXTRA > self.max_ops {
            return Err(NfsError::Unsupported(format!(
                "{}: {path} is {lookups} levels deep; the session allows {} operations per request",
                self.server(),
                self.max_ops
            )));
        }
        Ok(())
    }

    /// A COMPOUND outside a session (EXCHANGE_ID, CREATE_SESSION, DESTROY_*).
    fn bare<T>(
        &mut self,
        name: &'static str,
        build: Build<'_>,
        decode: &mut dyn for<'r> FnMut(&mut Reply<'r>) -> V4Result<T>,
    ) -> Result<T> {
        let mut args = std::mem::take(&mut self.args);
        args.clear();
        build(&mut Compound::new(&mut args, self.minor), &self.files);
        let got = self
            .nfs
            .call_with(name, PROG_NFS, NFS_V4, PROC_COMPOUND, &args, |body| {
                Reply::parse(body)
                    .map_err(V4Error::from)
                    .and_then(|mut r| decode(&mut r))
            });
        self.args = args;
        self.last_sent = Instant::now();
        got?.map_err(|e| self.error(name, "", e))
    }

    /// One COMPOUND headed by SEQUENCE on a free slot: the transport's error, or what the
    /// operations after SEQUENCE gave.
    fn once<T>(
        &mut self,
        name: &'static str,
        build: Build<'_>,
        decode: &mut dyn for<'r> FnMut(&mut Reply<'r>) -> V4Result<T>,
    ) -> Result<V4Result<T>> {
        let Some((slot, seq)) = self.slots.take() else {
            return Err(NfsError::Unsupported(format!(
                "{}: all {} session slots are in use",
                self.server(),
                self.slots.width()
            )));
        };
        let mut args = std::mem::take(&mut self.args);
        args.clear();
        let mut c = Compound::new(&mut args, self.minor);
        c.sequence(&self.sid, seq, slot, self.slots.highest());
        build(&mut c, &self.files);
        self.ops_sent += u64::from(c.ops());
        let sid = self.sid;
        let got = self
            .nfs
            .call_with(name, PROG_NFS, NFS_V4, PROC_COMPOUND, &args, |body| {
                let mut r = match Reply::parse(body) {
                    Ok(r) => r,
                    Err(e) => return (false, Err(e.into())),
                };
                match r.sequence(Some(&sid)) {
                    Ok(_) => (true, decode(&mut r)),
                    Err(e) => (false, Err(e)),
                }
            });
        self.args = args;
        self.last_sent = Instant::now();
        let (done, res) = match got {
            Ok(v) => v,
            Err(e) => {
                // The transport gave up, and every later call fails at once with its
                // message: the slot goes back as it was.
                self.slots.put(slot, false);
                return Err(e);
            }
        };
        self.slots.put(slot, done);
        Ok(res)
    }

    /// [`once`](Self::once) with DELAY/GRACE retried within their limits (`retry.rs`) and
    /// a new session when the server lost ours. A DELAY or GRACE still answered at its
    /// limit is an error ([`NfsError::Busy4`], its path named by the caller).
    pub(crate) fn try_run<T>(
        &mut self,
        name: &'static str,
        build: Build<'_>,
        decode: &mut dyn for<'r> FnMut(&mut Reply<'r>) -> V4Result<T>,
    ) -> Result<V4Result<T>> {
        let mut retries = Retries::default();
        let mut recoveries = 0;
        loop {
            match self.once(name, build, decode)? {
                Err(V4Error::Status { status, .. }) if retries.again(status, &self.limits) => {}
                Err(V4Error::Status { status, .. })
                    if status.session_lost() && recoveries < RECOVERIES_PER_CALL =>
                {
                    recoveries += 1;
                    self.recover()?;
                }
                Err(V4Error::Status { op, status }) if status.retry_later() => {
                    return Err(self.busy(op, "", status, &retries));
                }
                other => return Ok(other),
            }
        }
    }

    /// [`try_run`](Self::try_run) with failures as errors naming `rel`.
    pub(crate) fn run<T>(
        &mut self,
        name: &'static str,
        rel: &str,
        build: Build<'_>,
        decode: &mut dyn for<'r> FnMut(&mut Reply<'r>) -> V4Result<T>,
    ) -> Result<T> {
        let got = self.try_run(name, build, decode);
        self.naming(rel, got)?.map_err(|e| self.error(name, rel, e))
    }

    /// A DELAY or GRACE of `op` on `rel` answered past its retries' limit, in one line.
    #[cold]
    pub(crate) fn busy(
        &self,
        op: &'static str,
        rel: &str,
        status: Nfs4Stat,
        retries: &Retries,
    ) -> NfsError {
        NfsError::Busy4 {
            server: self.server().to_string(),
            op,
            path: self.full(rel),
            status,
            tries: retries.tries(),
            secs: retries.waited().as_secs_f64(),
            limit: self.limits.stated(status),
        }
    }

    /// A new session after the server lost ours, then the opens reclaimed: CLAIM_PREVIOUS
    /// while the server is in its grace period, otherwise opened again by handle. Fails
    /// with one line naming the files whose opens could not be had again.
    pub(crate) fn recover(&mut self) -> Result<()> {
        self.recoveries += 1;
        self.establish()?;
        let mut again = Vec::new();
        for i in 0..self.files.len() {
            if !self.files[i].open {
                continue;
            }
            match self.reopen(i, Claim::Previous)? {
                Ok(()) => self.reclaimed += 1,
                Err(V4Error::Status { status, .. }) if status == Nfs4Stat::NO_GRACE => {
                    again.push(i);
                }
                Err(e) => return Err(self.lost(i, e)),
            }
        }
        self.reclaim_complete()?;
        for i in again {
            let mut retries = Retries::default();
            loop {
                match self.reopen(i, Claim::Fh)? {
                    Ok(()) => {
                        self.reopened += 1;
                        break;
                    }
                    Err(V4Error::Status { status, .. }) if retries.again(status, &self.limits) => {}
                    Err(e) => return Err(self.lost(i, e)),
                }
            }
        }
        Ok(())
    }

    #[cold]
    fn lost(&self, i: usize, e: V4Error) -> NfsError {
        let why = match e {
            V4Error::Status { status, .. } => status.to_string(),
            V4Error::Decode(d) => d.to_string(),
        };
        NfsError::GaveUp(format!(
            "{}: the server lost its state (restart or expired lease) and the open of {} could not be reclaimed: {why}",
            self.server(),
            self.files[i].path
        ))
    }

    fn reopen(&mut self, i: usize, claim: Claim<'static>) -> Result<V4Result<()>> {
        let (fh, access, cid) = (self.files[i].fh, self.files[i].access, self.clientid);
        let got = self.once(
            "OPEN",
            &mut |c, _f| {
                c.putfh(&fh);
                c.open(access, cid, OPEN_OWNER, None, claim);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.open()
            },
        )?;
        Ok(got.map(|o| {
            self.files[i].stateid = o.stateid;
        }))
    }

    /// A SEQUENCE-only COMPOUND: renews the lease, and is the protocol's round trip.
    pub fn ping(&mut self) -> Result<()> {
        self.run("SEQUENCE", "", &mut |_, _| {}, &mut |_| Ok(()))
    }

    /// Renews the lease if nothing was sent for a third of it (call while idle).
    pub fn renew_if_idle(&mut self) -> Result<()> {
        if self.last_sent.elapsed() >= self.lease / 3 {
            self.ping()?;
        }
        Ok(())
    }

    /// Handle and attributes of `rel` (no symbolic link followed): LOOKUP of its last
    /// component in its directory's kept handle.
    pub fn lookup(&mut self, rel: &str) -> Result<(Fh4, Attrs4)> {
        self.fresh("LOOKUP", rel, |me| {
            let (dir, name) = me.parent(rel)?;
            me.try_run(
                "LOOKUP",
                &mut |c, _f| {
                    c.putfh(&dir);
                    if !name.is_empty() {
                        c.lookup(name);
                    }
                    c.getfh();
                    c.getattr(FILE_ATTRS);
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    if !name.is_empty() {
                        r.status_only(op::LOOKUP, "LOOKUP")?;
                    }
                    Ok((r.getfh()?, r.getattr()?))
                },
            )
        })
    }

    pub fn getattr(&mut self, fh: &Fh4) -> Result<Attrs4> {
        let fh = *fh;
        self.run(
            "GETATTR",
            "",
            &mut |c, _f| {
                c.putfh(&fh);
                c.getattr(FILE_ATTRS);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.getattr()
            },
        )
    }

    /// Bytes available to us, free, and in total on the file system of the URL's directory.
    pub fn free_space(&mut self) -> Result<(u64, u64, u64)> {
        let root = self.root;
        self.free_space_of(&root)
    }

    /// [`free_space`](Self::free_space) of the file system holding `fh`.
    pub fn free_space_of(&mut self, fh: &Fh4) -> Result<(u64, u64, u64)> {
        let root = *fh;
        let a = self.run(
            "GETATTR",
            "",
            &mut |c, _f| {
                c.putfh(&root);
                c.getattr(SPACE_ATTRS);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.getattr()
            },
        )?;
        Ok((a.space_avail, a.space_free, a.space_total))
    }

    /// OPEN of `rel` for `access` (`wire::SHARE_ACCESS_*`), creating it as `create` says;
    /// returns the file's label for reads, writes and CLOSE.
    pub fn open(&mut self, rel: &str, access: u32, create: Option<Create>) -> Result<u32> {
        let cid = self.clientid;
        let (res, fh): (OpenRes, Fh4) = self.fresh("OPEN", rel, |me| {
            let (dir, name) = me.parent(rel)?;
            me.try_run(
                "OPEN",
                &mut |c, _f| {
                    c.putfh(&dir);
                    c.open(access, cid, OPEN_OWNER, create, Claim::Name(name));
                    c.getfh();
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    let o = r.open()?;
                    Ok((o, r.getfh()?))
                },
            )
        })?;
        if let Some(deleg) = res.delegation {
            self.run(
                "DELEGRETURN",
                rel,
                &mut |c, _f| {
                    c.putfh(&fh);
                    c.delegreturn(&deleg);
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.status_only(op::DELEGRETURN, "DELEGRETURN")
                },
            )?;
        }
        let file = OpenFile {
            fh,
            stateid: res.stateid,
            access,
            path: self.full(rel),
            open: true,
            unstable: 0,
            verf: None,
            unkept: 0,
        };
        match self.files.iter().position(|f| !f.open) {
            Some(i) => {
                self.files[i] = file;
                Ok(i as u32)
            }
            None => {
                self.files.push(file);
                Ok(self.files.len() as u32 - 1)
            }
        }
    }

    pub(crate) fn file(&self, label: u32) -> Result<&OpenFile> {
        self.files
            .get(label as usize)
            .filter(|f| f.open)
            .ok_or_else(|| NfsError::Unsupported(format!("file label {label} is not open")))
    }

    /// The handle of an open file.
    pub fn file_handle(&self, label: u32) -> Result<Fh4> {
        Ok(self.file(label)?.fh)
    }

    /// CLOSE of an open file (its label may be reused afterwards).
    pub fn close(&mut self, label: u32) -> Result<()> {
        let rel = self.file(label)?.path.clone();
        let i = label as usize;
        let got = self.run(
            "CLOSE",
            &rel,
            &mut |c, _f| {
                let f = &_f[i];
                c.putfh(&f.fh);
                c.close(&f.stateid);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.close()
            },
        );
        self.files[i].open = false;
        got.map(|_| ())
    }

    /// One READ of at most `buf.len()` bytes; returns the count and end of file.
    pub fn read(&mut self, label: u32, offset: u64, buf: &mut [u8]) -> Result<(usize, bool)> {
        let count = buf.len().min(self.rsize as usize) as u32;
        let (fh, _, path) = self.ids(label)?;
        self.run(
            "READ",
            &path,
            &mut |c, _f| {
                c.putfh(&fh);
                c.read(&_f[label as usize].stateid, offset, count);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                let (eof, data) = r.read()?;
                let n = data.len().min(buf.len());
                buf[..n].copy_from_slice(&data[..n]);
                Ok((n, eof))
            },
        )
    }

    /// One WRITE of `data` (at most wsize bytes).
    pub fn write(
        &mut self,
        label: u32,
        offset: u64,
        data: &[u8],
        stable: Stable4,
    ) -> Result<WriteRes> {
        let (fh, _, path) = self.ids(label)?;
        let data = &data[..data.len().min(self.wsize as usize)];
        let i = label as usize;
        let w = self.run(
            "WRITE",
            &path,
            &mut |c, _f| {
                c.putfh(&fh);
                c.write(&_f[i].stateid, offset, stable, data);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.write()
            },
        )?;
        self.acked(label, offset, data, &w);
        Ok(w)
    }

    /// COMMIT of the whole file. If the server restarted since UNSTABLE data was written
    /// (its verifier changed), the kept copies are written again (`kept.rs`); fails,
    /// naming the bytes, if some of that data was not kept.
    pub fn commit(&mut self, label: u32) -> Result<()> {
        let (fh, _, path) = self.ids(label)?;
        let verf = self.run(
            "COMMIT",
            &path,
            &mut |c, _f| {
                c.putfh(&fh);
                c.commit(0, 0);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.commit()
            },
        )?;
        self.committed(label, verf.0, &path)
    }

    fn ids(&self, label: u32) -> Result<(Fh4, Stateid, String)> {
        let f = self.file(label)?;
        Ok((f.fh, f.stateid, f.path.clone()))
    }

    /// SETATTR of an open file's size.
    pub fn truncate(&mut self, label: u32, size: u64) -> Result<()> {
        let (fh, _, path) = self.ids(label)?;
        let i = label as usize;
        self.run(
            "SETATTR",
            &path,
            &mut |c, _f| {
                c.putfh(&fh);
                c.set_size(&_f[i].stateid, size);
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.setattr()
            },
        )
    }

    /// 4.2 ALLOCATE or DEALLOCATE of a range; NFS4ERR_NOTSUPP reads "not supported by the
    /// server".
    pub fn allocate(&mut self, label: u32, offset: u64, len: u64, punch: bool) -> Result<()> {
        let (fh, _, path) = self.ids(label)?;
        let name = if punch { "DEALLOCATE" } else { "ALLOCATE" };
        let num = if punch { op::DEALLOCATE } else { op::ALLOCATE };
        let i = label as usize;
        self.run(
            name,
            &path,
            &mut |c, _f| {
                c.putfh(&fh);
                let sid = &_f[i].stateid;
                match punch {
                    true => c.deallocate(sid, offset, len),
                    false => c.allocate(sid, offset, len),
                }
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                r.status_only(num, name)
            },
        )
    }

    /// 4.2 SEEK for data or a hole from `offset`: the offset found, `None` at end of file.
    pub fn seek(&mut self, label: u32, offset: u64, what: Content) -> Result<Option<u64>> {
        let (fh, _, path) = self.ids(label)?;
        let i = label as usize;
        const NXIO: u32 = 6;
        let got = self
            .try_run(
                "SEEK",
                &mut |c, _f| {
                    c.putfh(&fh);
                    c.seek(&_f[i].stateid, offset, what);
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.seek()
                },
            )
            .map_err(|e| e.with_path(path.clone()))?;
        match got {
            Ok((true, _)) => Ok(None),
            Ok((false, at)) => Ok(Some(at)),
            Err(V4Error::Status { status, .. }) if status.0 == NXIO => Ok(None),
            Err(e) => Err(self.error("SEEK", &path, e)),
        }
    }

    /// REMOVE of a file, link or empty directory (a kept handle of it is forgotten).
    pub fn remove(&mut self, rel: &str) -> Result<()> {
        self.dirs.forget(rel.trim_matches('/'));
        self.fresh("REMOVE", rel, |me| {
            let (dir, name) = me.parent(rel)?;
            me.try_run(
                "REMOVE",
                &mut |c, _f| {
                    c.putfh(&dir);
                    c.remove(name);
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.remove()
                },
            )
        })
    }

    /// CREATE of a directory; returns its handle, which is kept.
    pub fn mkdir(&mut self, rel: &str, mode: u32) -> Result<Fh4> {
        let fh = self.fresh("CREATE", rel, |me| {
            let (dir, name) = me.parent(rel)?;
            me.try_run(
                "CREATE",
                &mut |c, _f| {
                    c.putfh(&dir);
                    c.mkdir(name, mode);
                    c.getfh();
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.create("CREATE")?;
                    r.getfh()
                },
            )
        })?;
        self.dirs.insert(rel.trim_matches('/'), fh);
        Ok(fh)
    }

    /// CREATE of a symbolic link at `rel` holding `target`.
    pub fn symlink(&mut self, rel: &str, target: &str) -> Result<()> {
        self.fresh("CREATE", rel, |me| {
            let (dir, name) = me.parent(rel)?;
            me.try_run(
                "CREATE",
                &mut |c, _f| {
                    c.putfh(&dir);
                    c.symlink(name, target);
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.create("CREATE")
                },
            )
        })
    }

    /// READLINK of the symbolic link at `rel`.
    pub fn readlink(&mut self, rel: &str) -> Result<String> {
        let (fh, _) = self.lookup(rel)?;
        self.run(
            "READLINK",
            rel,
            &mut |c, _f| {
                c.putfh(&fh);
                c.readlink();
            },
            &mut |r| {
                r.status_only(op::PUTFH, "PUTFH")?;
                Ok(String::from_utf8_lossy(r.readlink()?).into_owned())
            },
        )
    }

    /// LINK: a new name `to` for the file at `from`.
    pub fn link(&mut self, from: &str, to: &str) -> Result<()> {
        let (fh, _) = self.lookup(from)?;
        self.fresh("LINK", to, |me| {
            let (dir, name) = me.parent(to)?;
            me.try_run(
                "LINK",
                &mut |c, _f| {
                    c.putfh(&fh);
                    c.savefh();
                    c.putfh(&dir);
                    c.link(name);
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.status_only(op::SAVEFH, "SAVEFH")?;
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.link()
                },
            )
        })
    }

    /// RENAME of `from` to `to` (both relative to the URL's directory); kept handles at
    /// or below either are forgotten.
    pub fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        self.dirs.forget(from.trim_matches('/'));
        self.dirs.forget(to.trim_matches('/'));
        self.fresh("RENAME", from, |me| {
            let (old_dir, old) = me.parent(from)?;
            let (new_dir, new) = me.parent(to)?;
            me.try_run(
                "RENAME",
                &mut |c, _f| {
                    c.putfh(&old_dir);
                    c.savefh();
                    c.putfh(&new_dir);
                    c.rename(old, new);
                },
                &mut |r| {
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.status_only(op::SAVEFH, "SAVEFH")?;
                    r.status_only(op::PUTFH, "PUTFH")?;
                    r.rename()
                },
            )
        })
    }

    /// The names in the directory `rel` with their attributes (READDIR until eof, by the
    /// directory's kept handle).
    pub fn readdir(&mut self, rel: &str) -> Result<Vec<(String, Attrs4)>> {
        let mut out = Vec::new();
        self.fresh("READDIR", rel, |me| {
            out.clear();
            let dir = me.dir(rel, rel)?;
            let (mut cookie, mut verf) = (0u64, Verifier::default());
            loop {
                let before = out.len();
                let (start, sent_verf) = (cookie, verf);
                let page = me.try_run(
                    "READDIR",
                    &mut |c, _f| {
                        c.putfh(&dir);
                        c.readdir(start, &sent_verf, READDIR_MAX, FILE_ATTRS);
                    },
                    &mut |r| {
                        out.truncate(before);
                        r.status_only(op::PUTFH, "PUTFH")?;
                        r.readdir(|ck, name, a| {
                            cookie = ck;
                            out.push((String::from_utf8_lossy(name).into_owned(), a));
                        })
                    },
                )?;
                let (v, eof) = match page {
                    Ok(p) => p,
                    Err(e) => return Ok(Err(e)),
                };
                verf = v;
                if eof || out.len() == before {
                    return Ok(Ok(()));
                }
            }
        })?;
        Ok(out)
    }

    /// DESTROY_SESSION and DESTROY_CLIENTID (after closing what is open). Best effort on
    /// drop; called explicitly, its errors are returned.
    pub fn shutdown(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        for i in 0..self.files.len() {
            if self.files[i].open {
                self.close(i as u32)?;
            }
        }
        let (sid, cid) = (self.sid, self.clientid);
        self.bare(
            "DESTROY_SESSION",
            &mut |c, _f| c.destroy_session(&sid),
            &mut |r| r.status_only(op::DESTROY_SESSION, "DESTROY_SESSION"),
        )?;
        self.bare(
            "DESTROY_CLIENTID",
            &mut |c, _f| c.destroy_clientid(cid),
            &mut |r| r.status_only(op::DESTROY_CLIENTID, "DESTROY_CLIENTID"),
        )
    }
}

// SAFETY: the only non-Send parts are the buffer pointers of pipelined requests; their
// submitter guarantees those buffers stay valid until completion, wherever the client
// (used by one thread at a time, as `&mut`) moves.
unsafe impl Send for Client4 {}

impl Drop for Client4 {
    fn drop(&mut self) {
        if !self.closed && self.pending.is_empty() {
            let _ = self.shutdown();
        }
    }
}

/// `dir/name` split at the last `/` (`""` for a name in the URL's directory).
pub(crate) fn split(rel: &str) -> (&str, &str) {
    let rel = rel.trim_matches('/');
    rel.rsplit_once('/').unwrap_or(("", rel))
}

fn status_err(op: &'static str, status: Nfs4Stat) -> V4Error {
    V4Error::Status { op, status }
}

fn garbage_err(url: &NfsUrl, op: &'static str, detail: crate::DecodeError) -> NfsError {
    NfsError::Garbage {
        server: url.host.clone(),
        op,
        detail,
    }
}

pub use wire::{SHARE_ACCESS_BOTH, SHARE_ACCESS_READ, SHARE_ACCESS_WRITE};
