//! `nfs`: fio's libnfs engine, done in Rust with storbench's own NFS client
//! (`storbench-nfs`): no mount, no root, no kernel client and no page cache. This file is
//! the NFSv3 engine; `nfs/v4.rs` the NFSv4.1/4.2 one, and `nfs/pick.rs` chooses between
//! them when the job first reaches its server (the URL's `version=`, else v3 where the
//! server offers it, else v4.1).
//!
//! Targets are `nfs://host[:port]/export/path?options` URLs (see docs/nfs.md), given as the
//! file name, as the directory of generated names, or as fio's `nfs_url` option with plain
//! file names below it. One engine instance mounts one export; data IOs are pipelined over
//! `nconnect` TCP connections (iodepth = RPCs in flight), split to the server's rtmax/wtmax.
//! Writes are UNSTABLE and made durable by COMMIT at fsync points and on close, or FILE_SYNC
//! when the file is opened for synchronous writes (`sync=1`).

use std::time::Instant;

use storbench_core::{
    Caps, Completion, Engine, EngineError, EngineInfo, ErrorKind, FileId, FileSpec, IoKind, IoUnit,
    MetaOps, NameList, OpenOptions, Queued, RelPath,
};
use storbench_job::JobSpec;
use storbench_job::target::Target;
use storbench_core::space::FsSpace;
use storbench_nfs::{Client, DurabilityStats, Fh, NfsError, NfsStat, NfsUrl, Stable};

use crate::dirtable::DirTable;

mod meta;
mod pick;
mod prepare;
mod v4;

/// Modes of the files and directories storbench creates, before the umask.
const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

/// The modes to send in CREATE and MKDIR: ours less the process umask, which a kernel
/// NFS client applies before it asks the server (so `storbench bonnie`'s umask of 077
/// gives bonnie++'s owner-only files over NFS too).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Modes {
    file: u32,
    dir: u32,
}

impl Modes {
    fn masked(umask: u32) -> Modes {
        Modes {
            file: FILE_MODE & !umask,
            dir: DIR_MODE & !umask,
        }
    }
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "nfs";

/// Before a run: a directory target reached once over the version the run will use.
pub fn prepare(
    target: &Target,
    directory: bool,
    _ask: &dyn storbench_core::ask::Ask,
) -> Result<(), EngineError> {
    prepare::check(target, directory)
}

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let base = job.engine_options.nfs_url.as_ref().map(|b| b.url.clone());
    let v3 = NfsEngine {
        base,
        client: None,
        files: Vec::new(),
        started: None,
        round_trip: None,
        file_sync: false,
        dirs: DirTable::default(),
        sub_path: String::new(),
        roots: Vec::new(),
        meta_path: String::new(),
        link_probe: String::new(),
        listing: NameList::default(),
        spare_rel: String::new(),
        link_source: None,
        link_source_path: String::new(),
        modes: Modes::masked(crate::umask::current()),
    };
    Ok(Box::new(pick::Nfs::new(v3, job.iodepth)))
}

/// A name refused as a `RelPath` below its root, as an engine error.
fn refused(e: String) -> EngineError {
    EngineError::new(ErrorKind::Refused, format!("nfs: {e}"))
}

/// An NFS client error as an engine error: one line naming the server and the operation.
fn to_engine(e: NfsError) -> EngineError {
    let kind = match &e {
        NfsError::Url { .. } | NfsError::Unsupported(_) => ErrorKind::Unsupported,
        NfsError::Resolve { .. }
        | NfsError::Connect { .. }
        | NfsError::Io { .. }
        | NfsError::Timeout { .. }
        | NfsError::Disconnected { .. }
        | NfsError::Stalled { .. }
        | NfsError::GaveUp(_) => ErrorKind::Disconnected,
        _ => ErrorKind::Protocol,
    };
    EngineError {
        kind,
        errno: e.errno(),
        message: format!("nfs: {e}"),
    }
}

/// A name storbench generated that the server holds as something else than a regular
/// file (a link planted there is never followed).
fn not_a_file(shown: &Target, attr: storbench_nfs::Fattr) -> EngineError {
    let what = match attr.is_symlink() {
        true => "a symbolic link",
        false => "not a regular file",
    };
    EngineError::new(
        ErrorKind::Refused,
        format!(
            "nfs: {shown} is {what}; storbench does not follow links at the file names it makes \
             (remove it, or name the target with filename=)"
        ),
    )
}

struct NfsFile {
    fh: Fh,
    /// Path inside the export.
    rel: String,
    /// The transport's label for messages about this file.
    label: u32,
    stable: Stable,
    /// UNSTABLE writes were sent since the last COMMIT.
    dirty: bool,
}

pub struct NfsEngine {
    /// fio's `nfs_url`: the base for plain file names.
    base: Option<NfsUrl>,
    client: Option<Client>,
    files: Vec<Option<NfsFile>>,
    /// When the export was mounted: outages are placed relative to it.
    started: Option<Instant>,
    /// NULL calls' round trip, timed after mounting.
    round_trip: Option<std::time::Duration>,
    /// Some file was opened for FILE_SYNC writes.
    file_sync: bool,
    /// Directories opened with `open_dir`: their handles, by path inside the export.
    dirs: DirTable<Fh>,
    /// A subdirectory's path inside the export, built for a name holding `/` (reused).
    sub_path: String,
    /// Roots metadata calls named and their paths inside the export: resolved once,
    /// then found by comparison (no URL is parsed or mounted again per call).
    roots: Vec<(NfsUrl, String)>,
    /// The path inside the export of the current metadata call (reused).
    meta_path: String,
    /// The path inside the export of a link source, built to compare with the kept one
    /// (reused).
    link_probe: String,
    /// The batch `unlink_listed` lists into (reused).
    listing: NameList,
    /// A closed file's path, reused by the next file opened by name so that opening files
    /// does not allocate per file.
    spare_rel: String,
    /// The handle of the file `link` or `link_in` last made links to, so that bonnie's
    /// `-n N:-1` links cost one LINK each. Forgotten on any removal (a new file may then
    /// take the path).
    link_source: Option<Fh>,
    /// That file's path as given (kept when the handle is forgotten, so that looking up
    /// the source again does not allocate).
    link_source_path: String,
    modes: Modes,
}

impl NfsEngine {
    /// Mounts on first use and returns the path inside the export that a file the runner
    /// opens names: its URL as the plan parsed it, or a plain name below `nfs_url` or the
    /// root of the export already mounted (a `RelPath`; an absolute name is a path on the
    /// server, made relative to that root when it lies inside it: `RelPath::under`).
    fn target_typed(
        &mut self,
        path: &str,
        typed: Option<&NfsUrl>,
    ) -> Result<String, EngineError> {
        let url = if let Some(url) = typed {
            Some(url.clone())
        } else if let Some(base) = &self.base {
            let rel = RelPath::under(&base.path, path).map_err(refused)?;
            Some(base.join(rel.as_str()).map_err(to_engine)?)
        } else {
            None
        };
        match (url, &self.client) {
            (Some(url), None) => {
                let mut client = Client::mount(&url).map_err(to_engine)?;
                client
                    .transport()
                    .set_abort(storbench_core::stop::requested);
                self.round_trip = crate::round_trip::measure(|| client.null().is_ok());
                self.client = Some(client);
                self.started = Some(Instant::now());
                self.relative(&url.path)
            }
            (Some(url), Some(c)) if c.serves(&url) => self.relative(&url.path),
            (Some(url), Some(c)) => Err(EngineError::unsupported(format!(
                "nfs: one job uses one export with one set of options; {url} is not on {}",
                c.url()
            ))),
            // A plain name below the export's root (an absolute one is a path on the
            // server inside the export): checked, never taken apart here.
            (None, Some(c)) => RelPath::under(c.export(), path)
                .map(|rel| rel.as_str().to_string())
                .map_err(refused),
            (None, None) => Err(EngineError::unsupported(format!(
                "nfs: {path} is not an nfs:// URL and no nfs_url= was given"
            ))),
        }
    }

    fn relative(&self, abs: &str) -> Result<String, EngineError> {
        let c = self.client()?;
        c.relative(abs).map(str::to_string).ok_or_else(|| {
            EngineError::unsupported(format!(
                "nfs: {abs} is outside the mounted export {}",
                c.export()
            ))
        })
    }

    fn client(&self) -> Result<&Client, EngineError> {
        self.client
            .as_ref()
            .ok_or_else(|| EngineError::unsupported("nfs: no target opened yet"))
    }

    fn client_mut(&mut self) -> Result<&mut Client, EngineError> {
        self.client.as_mut().ok_or_else(no_target)
    }

    fn file(&mut self, id: FileId) -> Result<&mut NfsFile, EngineError> {
        match self.files.get_mut(id as usize) {
            Some(Some(f)) => Ok(f),
            _ => Err(EngineError::new(
                ErrorKind::Os,
                format!("nfs: file id {id} is not open"),
            )),
        }
    }

    fn add_file(&mut self, fh: Fh, rel: String, open: &OpenOptions) -> Result<FileId, EngineError> {
        let id = self
            .files
            .iter()
            .position(Option::is_none)
            .unwrap_or(self.files.len());
        let client = self.client_mut()?;
        client.label_file(id as u32, &rel);
        // With no room to keep unstable writes for re-sending, only stable writes are safe.
        let sync = open.sync || client.url().uncommitted == 0;
        let stable = if sync {
            Stable::FileSync
        } else {
            Stable::Unstable
        };
        self.file_sync |= sync;
        let file = NfsFile {
            fh,
            rel,
            label: id as u32,
            stable,
            dirty: false,
        };
        if id == self.files.len() {
            self.files.push(Some(file));
        } else {
            self.files[id] = Some(file);
        }
        Ok(id as FileId)
    }

    /// Waits until every call in flight has its reply (their completions stay queued for
    /// `reap`), so a COMMIT covers all writes issued before it.
    fn quiesce(&mut self) -> Result<(), EngineError> {
        let t = self.client_mut()?.transport();
        t.flush().map_err(to_engine)?;
        while t.inflight() > 0 {
            t.drain_one().map_err(to_engine)?;
        }
        Ok(())
    }
}

impl Engine for NfsEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: false,
            has_slat: false,
            trim: false,
            meta: true,
            no_data: false,
        }
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        let typed = match &spec.target {
            Target::Nfs(t) => Some(&t.url),
            _ => None,
        };
        let rel = self.target_typed(&spec.path, typed)?;
        let (o, file_mode) = (&spec.open, self.modes.file);
        let client = self.client_mut()?;
        let found = match o.nofollow {
            true => client.lookup(&rel),
            false => client.lookup_follow(&rel),
        };
        let fh = match found {
            Ok((_, attr)) if o.nofollow && !attr.is_file() => {
                return Err(not_a_file(&spec.target, attr));
            }
            Ok(_) if o.create && o.exclusive => {
                return Err(EngineError {
                    kind: ErrorKind::Refused,
                    errno: Some(libc::EEXIST),
                    message: format!(
                        "nfs: {} already exists; storbench creates only new files",
                        spec.path
                    ),
                });
            }
            Ok((_, attr)) if attr.is_dir() => {
                return Err(to_engine(NfsError::Status {
                    server: client.transport().server().to_string(),
                    op: "open",
                    path: spec.path.clone(),
                    status: NfsStat::ISDIR,
                }));
            }
            Ok((fh, _)) => fh,
            Err(e) if o.create && e.nfs_status() == Some(NfsStat::NOENT) => {
                client.create(&rel, file_mode).map_err(to_engine)?
            }
            Err(e) => return Err(to_engine(e)),
        };
        let client = self.client_mut()?;
        if o.truncate {
            client.set_size(&fh, 0, &rel).map_err(to_engine)?;
        }
        self.add_file(fh, rel, o)
    }

    fn free_space(&mut self, spec: &FileSpec) -> Result<Option<FsSpace>, EngineError> {
        let typed = match &spec.target {
            Target::Nfs(t) => Some(&t.url),
            _ => None,
        };
        self.target_typed(&spec.path, typed)?;
        let st = self.client_mut()?.fsstat().map_err(to_engine)?;
        Ok(Some(FsSpace::capacity(st.tbytes, st.abytes)))
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        let (fh, rel) = {
            let f = self.file(file)?;
            (f.fh, f.rel.clone())
        };
        Ok(self
            .client_mut()?
            .getattr(&fh, &rel)
            .map_err(to_engine)?
            .size)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let f = self.file(io.file)?;
        let (fh, label, stable) = (f.fh, f.label, f.stable);
        match io.kind {
            IoKind::Read | IoKind::Write => {
                if io.kind == IoKind::Write && stable == Stable::Unstable {
                    f.dirty = true;
                }
                let client = self
                    .client
                    .as_mut()
                    .ok_or_else(|| EngineError::unsupported("nfs: no target"))?;
                let (rsize, wsize) = (client.rsize(), client.wsize());
                let t = client.transport();
                let user = u64::from(io.tag);
                // SAFETY: the IoUnit contract: `buf` holds `len` bytes that the worker leaves
                // alone until this tag completes.
                let r = unsafe {
                    if io.kind == IoKind::Read {
                        t.read(&fh, label, io.offset, io.buf.as_ptr(), io.len, rsize, user)
                    } else {
                        t.write(
                            &fh,
                            label,
                            io.offset,
                            io.buf.as_ptr(),
                            io.len,
                            wsize,
                            stable,
                            user,
                        )
                    }
                };
                r.map_err(to_engine)?;
            }
            IoKind::Fsync | IoKind::Fdatasync => {
                f.dirty = false;
                self.quiesce()?;
                self.client_mut()?
                    .transport()
                    .commit(&fh, label, u64::from(io.tag))
                    .map_err(to_engine)?;
            }
            IoKind::Trim => {
                return Err(EngineError::unsupported(
                    "nfs: NFSv3 has no trim (it is NFSv4.2's DEALLOCATE: ask for version=4.2)",
                ));
            }
        }
        Ok(Queued::Pending)
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        match self.client.as_mut() {
            Some(c) => c.transport().flush().map_err(to_engine),
            None => Ok(()),
        }
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let Some(c) = self.client.as_mut() else {
            return Ok(());
        };
        let mut push = |tag: u64, bytes: u64| {
            out.push(Completion {
                tag: tag as u32,
                result: bytes as i64,
            })
        };
        c.transport()
            .wait(min, &mut push)
            .map(|_| ())
            .map_err(to_engine)
    }

    /// COMMITs unstable writes, so data written through storbench is durable when a job ends.
    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        let f = self.file(file)?;
        let (dirty, fh, label) = (f.dirty, f.fh, f.label);
        if dirty {
            self.client_mut()?
                .commit_sync(&fh, label)
                .map_err(to_engine)?;
        }
        if let Some(f) = self.files[file as usize].take() {
            self.spare_rel = f.rel;
        }
        Ok(())
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(self)
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.server_addr()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.client_addr()
    }

    fn info(&mut self) -> EngineInfo {
        let Some(c) = self.client.as_mut() else {
            return EngineInfo::default();
        };
        let stable = if self.file_sync {
            "file_sync"
        } else {
            "unstable+commit"
        };
        let fs = *c.fsinfo();
        let dur = c.transport().durability();
        let mut details = vec![
            ("protocol".to_string(), "NFSv3".to_string()),
            ("server".to_string(), c.transport().server().to_string()),
            ("export".to_string(), c.export().to_string()),
            ("rsize".to_string(), c.rsize().to_string()),
            ("wsize".to_string(), c.wsize().to_string()),
            ("server_rtmax".to_string(), fs.rtmax.to_string()),
            ("server_wtmax".to_string(), fs.wtmax.to_string()),
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
        let started = self.started.unwrap_or_else(Instant::now);
        let server = c.transport().server().to_string();
        for o in c.transport().outages() {
            notes.push(format!(
                "NFS connection to {server} lost at {:.1} s ({}); reconnected after {:.1} s, {} request(s) re-sent",
                o.started.saturating_duration_since(started).as_secs_f64(),
                o.reason,
                o.duration.as_secs_f64(),
                o.resent
            ));
        }
        notes.extend(durability_notes(&dur));
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

#[cold]
fn no_target() -> EngineError {
    EngineError::unsupported("nfs: no target opened yet")
}

/// What the result should say about unstable writes: restarts and what was rewritten,
/// data that could not be kept, and writes slowed by the uncommitted-write limit.
fn durability_notes(d: &DurabilityStats) -> Vec<String> {
    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    let mut notes = Vec::new();
    if d.verifier_changes > 0 {
        notes.push(format!(
            "the server's write verifier changed {} time(s) (server restart): {} retained write(s) ({:.1} MiB) were written again with FILE_SYNC in {:.1} s",
            d.verifier_changes,
            d.rewrites,
            mib(d.rewritten_bytes),
            d.pass_time.as_secs_f64()
        ));
    }
    if d.unprotected_bytes > 0 {
        notes.push(format!(
            "{:.1} MiB of UNSTABLE writes were larger than uncommitted= ({:.0} MiB) and not kept: a server restart before their COMMIT could lose them",
            mib(d.unprotected_bytes),
            mib(d.limit as u64)
        ));
    }
    if d.waits > 0 {
        notes.push(format!(
            "{} write(s) waited for a COMMIT because {:.0} MiB of unstable data was outstanding (raise uncommitted= to allow more)",
            d.waits,
            mib(d.limit as u64)
        ));
    }
    notes
}
