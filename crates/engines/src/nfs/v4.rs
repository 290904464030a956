//! The `nfs` engine over NFSv4.1/4.2: one session (`storbench_nfs::v4::Client4`) with a
//! slot per request in flight, opened at the server's pseudo-root so that every path the
//! job names on that server is reached from one handle. Data IOs are pipelined READ and
//! WRITE COMPOUNDs (an IO larger than the session's rsize/wsize goes as several, and
//! completes when all have); COMMIT serves fsync, DEALLOCATE (4.2) trim. Files are
//! OPENed with a share reservation and CLOSEd when the job closes them. UNSTABLE writes
//! are kept by the client until a COMMIT with their verifier; when half of `uncommitted=`
//! is kept, the next write waits for what is in flight and COMMITs first. While the worker
//! waits (`idle`) the lease is renewed.

use std::time::{Duration, Instant};

use storbench_core::space::FsSpace;
use storbench_core::{
    Caps, Completion, Engine, EngineError, MetaOps, EngineInfo, ErrorKind, FileId, FileSpec, IoKind, IoUnit,
    OpenOptions, Queued, RelPath, Reserved,
};
use storbench_job::target::Target;
use storbench_nfs::v4::{
    Client4, Content, Create, Nfs4Stat, SHARE_ACCESS_BOTH, SHARE_ACCESS_READ, SHARE_ACCESS_WRITE, Stable4,
};
use storbench_nfs::{NfsError, NfsUrl};

use super::{Modes, refused, to_engine};

mod meta;

/// An open file: its label in the client and how it is written.
struct File4 {
    label: u32,
    stable: Stable4,
    /// UNSTABLE writes were sent since the last COMMIT.
    dirty: bool,
}

/// The parts of one IO in flight (an IO larger than one READ or WRITE).
#[derive(Clone, Copy, Default)]
struct Parts {
    left: u32,
    bytes: u64,
}

pub(super) struct Nfs4Engine {
    client: Client4,
    /// The URL the session was set up for, its path `/` and its version the one used:
    /// another URL is served when it differs only in its path (and names no version).
    at: NfsUrl,
    /// fio's `nfs_url`: the base for plain file names.
    base: Option<NfsUrl>,
    files: Vec<Option<File4>>,
    /// By the worker's tag: parts of the IO still in flight and bytes done.
    parts: Vec<Parts>,
    /// Completions found while waiting for everything in flight (before a COMMIT, a
    /// DEALLOCATE), handed out by the next `reap`.
    ready: Vec<Completion>,
    started: Instant,
    round_trip: Option<Duration>,
    file_sync: bool,
    modes: Modes,
    /// Paths built per metadata call (reused).
    path: String,
    link_from: String,
}

/// Session slots asked for: one per request the job keeps in flight, with room for IOs
/// split into several (up to 4 MiB at 1 MiB transfers).
pub(super) fn slots_for(depth: u32) -> u32 {
    depth.max(1).saturating_mul(4).min(1024)
}

impl Nfs4Engine {
    /// Sets up a session with the server of `url`, at its pseudo-root.
    pub(super) fn connect(
        url: &NfsUrl,
        base: Option<NfsUrl>,
        depth: u32,
        modes: Modes,
    ) -> Result<Nfs4Engine, EngineError> {
        let at = NfsUrl {
            path: "/".into(),
            ..url.clone()
        };
        let mut client = Client4::connect_url(&at, slots_for(depth)).map_err(to_engine)?;
        client
            .transport()
            .set_abort(storbench_core::stop::requested);
        let round_trip = crate::round_trip::measure(|| client.ping().is_ok());
        Ok(Nfs4Engine {
            client,
            at,
            base,
            files: Vec::new(),
            parts: Vec::new(),
            ready: Vec::new(),
            started: Instant::now(),
            round_trip,
            file_sync: false,
            modes,
            path: String::new(),
            link_from: String::new(),
        })
    }

    /// The protocol as the result names it: `NFSv4.1` or `NFSv4.2`.
    pub(super) fn protocol(&self) -> &'static str {
        match self.client.minor_version() {
            2 => "NFSv4.2",
            _ => "NFSv4.1",
        }
    }

    /// The path below the pseudo-root of a URL on this server.
    fn rel_of<'u>(&self, url: &'u NfsUrl) -> Result<&'u str, EngineError> {
        // The version was chosen already: a URL naming none is served as well.
        let same = NfsUrl {
            path: "/".into(),
            version: url.version.or(self.at.version),
            ..url.clone()
        } == self.at;
        if !same {
            return Err(EngineError::unsupported(format!(
                "nfs: one job uses one server with one set of options; {url} is not on {}",
                self.at
            )));
        }
        Ok(url.path.trim_start_matches('/'))
    }

    /// The path below the pseudo-root a file the runner opens names: its typed URL, or a
    /// plain name below `nfs_url` (an absolute one a path on the server).
    fn target_rel(&self, spec: &FileSpec, out: &mut String) -> Result<(), EngineError> {
        out.clear();
        match (&spec.target, &self.base) {
            (Target::Nfs(t), _) => out.push_str(self.rel_of(&t.url)?),
            (_, Some(base)) => {
                let rel = RelPath::under(&base.path, &spec.path).map_err(refused)?;
                out.push_str(self.rel_of(base)?);
                storbench_job::relpath::push_below(out, rel.as_str());
            }
            (_, None) if spec.path.starts_with('/') => {
                out.push_str(spec.path.trim_start_matches('/'));
            }
            (_, None) => {
                return Err(EngineError::unsupported(format!(
                    "nfs: {} is not an nfs:// URL and no nfs_url= was given",
                    spec.target
                )));
            }
        }
        Ok(())
    }

    fn file(&self, id: FileId) -> Result<&File4, EngineError> {
        match self.files.get(id as usize) {
            Some(Some(f)) => Ok(f),
            _ => Err(EngineError::new(
                ErrorKind::Os,
                format!("nfs: file id {id} is not open"),
            )),
        }
    }

    /// OPEN of `rel` as `o` asks: an existing file (a link at a name storbench made is
    /// refused), or a new one created GUARDED.
    fn open_rel(&mut self, rel: &str, o: &OpenOptions, shown: &dyn std::fmt::Display) -> Result<FileId, EngineError> {
        let access = match (o.read, o.write) {
            (true, true) | (false, false) => SHARE_ACCESS_BOTH,
            (false, true) => SHARE_ACCESS_WRITE,
            (true, false) => SHARE_ACCESS_READ,
        };
        let create = match self.client.lookup(rel) {
            Ok((_, a)) if o.nofollow && a.is_symlink() => {
                return Err(EngineError::new(
                    ErrorKind::Refused,
                    format!(
                        "nfs: {shown} is a symbolic link; storbench does not follow links at the file names it makes (remove it, or name the target with filename=)"
                    ),
                ));
            }
            Ok(_) if o.create && o.exclusive => {
                return Err(EngineError {
                    kind: ErrorKind::Refused,
                    errno: Some(libc::EEXIST),
                    message: format!(
                        "nfs: {shown} already exists; storbench creates only new files"
                    ),
                });
            }
            Ok((_, a)) if a.is_dir() => {
                return Err(EngineError {
                    kind: ErrorKind::Refused,
                    errno: Some(libc::EISDIR),
                    message: format!("nfs: {shown} is a directory"),
                });
            }
            Ok(_) => None,
            Err(e) if o.create && status(&e) == Some(Nfs4Stat::NOENT) => Some(Create::Guarded {
                mode: self.modes.file,
            }),
            Err(e) => return Err(to_engine(e)),
        };
        let new = create.is_some();
        let label = self.client.open(rel, access, create).map_err(to_engine)?;
        if o.truncate && !new {
            self.client.truncate(label, 0).map_err(to_engine)?;
        }
        Ok(self.add_file(label, o))
    }

    fn add_file(&mut self, label: u32, o: &OpenOptions) -> FileId {
        // uncommitted=0 keeps no copy to write again after a restart: FILE_SYNC, as v3.
        let sync = o.sync || self.client.durability().limit == 0;
        let stable = match sync {
            true => Stable4::FileSync,
            false => Stable4::Unstable,
        };
        self.file_sync |= sync;
        let file = File4 {
            label,
            stable,
            dirty: false,
        };
        match self.files.iter().position(Option::is_none) {
            Some(i) => {
                self.files[i] = Some(file);
                i as FileId
            }
            None => {
                self.files.push(Some(file));
                (self.files.len() - 1) as FileId
            }
        }
    }

    /// Waits for every request in flight; their completions wait in `ready`.
    fn quiesce(&mut self) -> Result<(), EngineError> {
        let (parts, ready) = (&mut self.parts, &mut self.ready);
        while self.client.in_flight() > 0 {
            self.client
                .reap(1, &mut |user, bytes| done_part(parts, ready, user, bytes))
                .map_err(to_engine)?;
        }
        Ok(())
    }

    /// Queues the READs or WRITEs of one IO, or `Busy` while too few slots are free.
    fn submit(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let read = io.kind == IoKind::Read;
        if !read && self.client.wants_commit() {
            self.quiesce()?;
            self.client.commit_kept().map_err(to_engine)?;
        }
        let f = self.file(io.file)?;
        let (label, stable) = (f.label, f.stable);
        let max = if read {
            self.client.rsize()
        } else {
            self.client.wsize()
        };
        let n = io.len.div_ceil(max).max(1);
        if n > self.client.free_slots() {
            if self.client.in_flight() > 0 {
                return Ok(Queued::Busy);
            }
            return Err(EngineError::unsupported(format!(
                "nfs: an IO of {} bytes needs {n} requests of at most {max}; the session has {} slots",
                io.len,
                self.client.slots()
            )));
        }
        let tag = io.tag as usize;
        if self.parts.len() <= tag {
            self.parts.resize(tag + 1, Parts::default());
        }
        self.parts[tag] = Parts { left: n, bytes: 0 };
        let user = u64::from(io.tag);
        for i in 0..n {
            let at = i * max;
            let len = (io.len - at).min(max);
            // SAFETY: the IoUnit contract: `buf` holds `len` bytes that the worker leaves
            // alone until this tag completes, which is after its last part completes.
            let r = unsafe {
                let p = io.buf.as_ptr().add(at as usize);
                match read {
                    true => self
                        .client
                        .submit_read(label, io.offset + u64::from(at), p, len, user),
                    false => self.client.submit_write(
                        label,
                        io.offset + u64::from(at),
                        p,
                        len,
                        stable,
                        user,
                    ),
                }
            };
            r.map_err(to_engine)?;
        }
        if !read
            && stable == Stable4::Unstable
            && let Some(Some(f)) = self.files.get_mut(io.file as usize)
        {
            f.dirty = true;
        }
        Ok(Queued::Pending)
    }
}

/// One part of an IO done: the IO completes with its last part.
fn done_part(parts: &mut [Parts], out: &mut Vec<Completion>, user: u64, bytes: u64) {
    let tag = user as u32;
    let Some(p) = parts.get_mut(tag as usize) else {
        return;
    };
    p.bytes += bytes;
    p.left = p.left.saturating_sub(1);
    if p.left == 0 {
        out.push(Completion {
            tag,
            result: p.bytes as i64,
        });
    }
}

/// The server does not have the operation (NFS4ERR_NOTSUPP, or an operation a 4.1-only
/// server does not know).
fn unsupported(e: &NfsError) -> bool {
    const OP_ILLEGAL: u32 = 10044;
    const UNION_NOTSUPP: u32 = 10090;
    matches!(status(e), Some(s) if s == Nfs4Stat::NOTSUPP || s.0 == OP_ILLEGAL || s.0 == UNION_NOTSUPP)
}

/// An NFSv4 status of an error, if it is one.
fn status(e: &NfsError) -> Option<Nfs4Stat> {
    match e {
        NfsError::Status4 { status, .. } => Some(*status),
        _ => None,
    }
}

impl Engine for Nfs4Engine {
    fn name(&self) -> &'static str {
        super::NAME
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: false,
            has_slat: false,
            trim: self.client.minor_version() >= 2,
            meta: true,
            no_data: false,
        }
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(self)
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        let mut rel = std::mem::take(&mut self.path);
        let r = self
            .target_rel(spec, &mut rel)
            .and_then(|()| self.open_rel(&rel, &spec.open, &spec.target));
        self.path = rel;
        r
    }

    /// 4.2's ALLOCATE of `[0, size)`; NFSv4.1, and a server that has no ALLOCATE, answer
    /// `Unsupported`. ALLOCATE has no keep-size form: the lay-out sets the size after it
    /// either way.
    fn preallocate(
        &mut self,
        file: FileId,
        _target: &Target,
        size: u64,
        _keep_size: bool,
    ) -> Result<Reserved, EngineError> {
        let label = self.file(file)?.label;
        if self.client.minor_version() < 2 {
            return Ok(Reserved::Unsupported(
                "NFSv4.1 cannot reserve blocks (ALLOCATE is NFSv4.2's; ask for version=4.2)"
                    .into(),
            ));
        }
        self.quiesce()?;
        match self.client.allocate(label, 0, size, false) {
            Ok(()) => Ok(Reserved::Yes),
            Err(e) if unsupported(&e) => Ok(Reserved::Unsupported(
                "the NFSv4.2 server has no ALLOCATE".into(),
            )),
            Err(e) => Err(to_engine(e)),
        }
    }

    /// 4.2's SEEK for data, then for the hole after it, over the region up to the file's
    /// size, as `holes.rs` does locally with SEEK_DATA/SEEK_HOLE.
    fn hole_bytes(&mut self, file: FileId, start: u64, end: u64) -> Option<u64> {
        if self.client.minor_version() < 2 {
            return None;
        }
        let label = self.file(file).ok()?.label;
        self.quiesce().ok()?;
        let end = end.min(self.size(file).ok()?);
        let (mut at, mut holes) = (start, 0u64);
        while at < end {
            let Some(data) = self.client.seek(label, at, Content::Data).ok()? else {
                // No data from here to the end of the file.
                return Some(holes + (end - at));
            };
            let data = data.min(end);
            holes += data.saturating_sub(at);
            if data >= end {
                break;
            }
            // The end of the file counts as a hole: past it, the region ends.
            let hole = self.client.seek(label, data, Content::Hole).ok()?;
            at = match hole {
                Some(h) if h > data => h,
                _ => end,
            };
        }
        Some(holes)
    }

    fn free_space(&mut self, spec: &FileSpec) -> Result<Option<FsSpace>, EngineError> {
        // The file system of the directory the file is (or will be) in: the pseudo-root's
        // is not the export's.
        let mut rel = std::mem::take(&mut self.path);
        let found = self.target_rel(spec, &mut rel).and_then(|()| {
            let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
            let (fh, _) = self.client.lookup(dir).map_err(to_engine)?;
            self.client.free_space_of(&fh).map_err(to_engine)
        });
        self.path = rel;
        let (avail, _free, total) = found?;
        Ok(Some(FsSpace::capacity(total, avail)))
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        let label = self.file(file)?.label;
        let fh = self.client.file_handle(label).map_err(to_engine)?;
        Ok(self.client.getattr(&fh).map_err(to_engine)?.size)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        match io.kind {
            IoKind::Read | IoKind::Write => self.submit(io),
            IoKind::Fsync | IoKind::Fdatasync => {
                let label = self.file(io.file)?.label;
                self.quiesce()?;
                self.client.commit(label).map_err(to_engine)?;
                if let Some(Some(f)) = self.files.get_mut(io.file as usize) {
                    f.dirty = false;
                }
                self.ready.push(Completion {
                    tag: io.tag,
                    result: 0,
                });
                Ok(Queued::Pending)
            }
            IoKind::Trim => {
                let label = self.file(io.file)?.label;
                if self.client.minor_version() < 2 {
                    return Err(EngineError::unsupported(
                        "nfs: trim is NFSv4.2's DEALLOCATE; this server speaks NFSv4.1 (ask for version=4.2)",
                    ));
                }
                self.quiesce()?;
                self.client
                    .allocate(label, io.offset, u64::from(io.len), true)
                    .map_err(to_engine)?;
                self.ready.push(Completion {
                    tag: io.tag,
                    result: i64::from(io.len),
                });
                Ok(Queued::Pending)
            }
        }
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        self.client.flush().map_err(to_engine)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let before = out.len();
        out.append(&mut self.ready);
        let parts = &mut self.parts;
        self.client
            .reap(0, &mut |user, bytes| done_part(parts, out, user, bytes))
            .map_err(to_engine)?;
        while out.len() - before < min && self.client.in_flight() > 0 {
            let parts = &mut self.parts;
            self.client
                .reap(1, &mut |user, bytes| done_part(parts, out, user, bytes))
                .map_err(to_engine)?;
        }
        Ok(())
    }

    /// COMMITs unstable writes, then CLOSE.
    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        let (label, dirty) = {
            let f = self.file(file)?;
            (f.label, f.dirty)
        };
        if dirty {
            self.quiesce()?;
            self.client.commit(label).map_err(to_engine)?;
        }
        self.files[file as usize] = None;
        self.client.close(label).map_err(to_engine)
    }

    fn idle(&mut self) -> Result<(), EngineError> {
        if self.client.in_flight() == 0 {
            self.client.renew_if_idle().map_err(to_engine)?;
        }
        Ok(())
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.server_addr()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.client_addr()
    }

    fn info(&mut self) -> EngineInfo {
        let protocol = self.protocol();
        let c = &mut self.client;
        let stable = match self.file_sync {
            true => "file_sync",
            false => "unstable+commit",
        };
        let server = c.server().to_string();
        let dur = c.durability();
        let mut details = vec![
            ("protocol".to_string(), protocol.to_string()),
            ("server".to_string(), server.clone()),
            ("rsize".to_string(), c.rsize().to_string()),
            ("wsize".to_string(), c.wsize().to_string()),
            ("session slots".to_string(), c.slots().to_string()),
            (
                "nconnect".to_string(),
                c.transport().connections().to_string(),
            ),
            ("stable".to_string(), stable.to_string()),
            ("uncommitted_max".to_string(), dur.limit.to_string()),
            ("auto_commits".to_string(), dur.auto_commits.to_string()),
            ("uid".to_string(), c.url().uid.to_string()),
        ];
        details.extend(self.round_trip.map(crate::round_trip::detail));
        let mut notes = Vec::new();
        for o in c.transport().outages() {
            notes.push(format!(
                "NFS connection to {server} lost at {:.1} s ({}); reconnected after {:.1} s, {} request(s) re-sent",
                o.started.saturating_duration_since(self.started).as_secs_f64(),
                o.reason,
                o.duration.as_secs_f64(),
                o.resent
            ));
        }
        notes.extend(super::durability_notes(&dur));
        if c.recoveries() > 0 {
            let (reclaimed, reopened) = c.reclaims();
            notes.push(format!(
                "the NFSv4 server lost the session {} time(s) (restart or expired lease); a new one was set up and the open files had again ({reclaimed} reclaimed in its grace period, {reopened} opened again by handle)",
                c.recoveries()
            ));
        }
        let interface = c
            .transport()
            .local_addr()
            .and_then(|a| storbench_core::nic::interface_of(a.ip()));
        EngineInfo {
            details,
            notes,
            interface,
        }
    }
}
