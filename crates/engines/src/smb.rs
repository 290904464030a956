//! `smb`: an SMB2/3 share from user space with storbench's own client (`storbench-smb`):
//! no mount, no root, no kernel client and no client cache (no oplocks or leases).
//!
//! Targets are `smb://[user[;domain]@]host[:port]/share/path?options` URLs (docs/smb.md);
//! the password comes from `STORBENCH_SMB_PASSWORD` (a password in the URL is accepted and
//! noted, never shown). One engine instance logs in once and connects one share; data IOs
//! are pipelined with the server's credits as the window (iodepth = requests in flight),
//! split to the server's MaxRead/MaxWrite. `fsync` is a FLUSH after every write in flight
//! has its reply; `sync=1` opens files write-through.
//!
//! The share is a `storbench_smb::Session`, which owns the reconnection: a lost connection
//! is made again within the URL's `reconnect=` seconds, the open files are reclaimed by
//! their durable handles or reopened, a listing under way is restarted and every IO that
//! was in flight is sent again (see `storbench_smb::session`). This engine maps the session
//! onto queue/commit/reap, keeps storbench's rules for the names it opens, and notes the
//! outages in the result (`smb/notes.rs`); metadata calls are in `smb/meta.rs`.

use storbench_core::space::FsSpace;
use storbench_core::{
    Caps, Completion, Engine, EngineError, EngineInfo, ErrorKind, FileId, FileSpec, IoKind, IoUnit,
    OpenOptions, Queued, RelPath,
};
use storbench_job::JobSpec;
use storbench_job::target::Target;
use storbench_smb::session::{Io, OpenMode};
use storbench_smb::{Client, ClientConfig, DirEntry, Session, SmbError, SmbUrl, Submit};

use crate::dirtable::DirTable;

mod meta;
mod notes;
mod prepare;
pub use prepare::password;

/// The catalogue entry (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "smb";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(SmbEngine {
        depth: job.iodepth.max(1),
        ..SmbEngine::default()
    }))
}

/// Before a run: the share's password found (see [`password`]), and a directory
/// reachable (one login, tree connect and stat).
pub fn prepare(
    target: &Target,
    directory: bool,
    ask: &dyn storbench_core::ask::Ask,
) -> Result<(), EngineError> {
    prepare::check(target, directory, ask)
}

/// An SMB client error as an engine error: one line naming the server and the operation.
fn to_engine(e: SmbError) -> EngineError {
    let kind = match &e {
        SmbError::Url { .. } => ErrorKind::Unsupported,
        SmbError::Status { .. } => ErrorKind::Os,
        e if e.is_disconnect() => ErrorKind::Disconnected,
        SmbError::Resolve { .. }
        | SmbError::Connect { .. }
        | SmbError::Lost { .. }
        | SmbError::GaveUp(_) => ErrorKind::Disconnected,
        _ => ErrorKind::Protocol,
    };
    EngineError {
        kind,
        errno: e.status().map(|s| s.errno()),
        message: format!("smb: {e}"),
    }
}

#[derive(Default)]
pub struct SmbEngine {
    url: Option<SmbUrl>,
    /// The share, logged in to on first use.
    session: Option<Session>,
    /// The worker's queue slots (from `setup`): the session's table of IOs in flight.
    slots: usize,
    entries: Vec<DirEntry>,
    /// The session's completions of one `reap` (reused).
    entries_done: Vec<storbench_smb::Completion>,
    /// The job's iodepth (for the credit-starvation note).
    depth: u32,
    /// This thread's CPU when the first connection was made.
    cpu_at_connect: storbench_core::cpu::Usage,
    /// Directories opened with `open_dir`: their paths inside the share, by slot, so the
    /// name-relative calls join a checked name to one instead of resolving a URL.
    dirs: DirTable<()>,
    /// The path inside the share of the last name-relative call (reused: no allocation
    /// per file).
    name_rel: String,
    /// The least of a few ECHOs, timed at the first login.
    round_trip: Option<std::time::Duration>,
}

impl SmbEngine {
    /// Logs in on first use and returns the path inside the share that a file the runner
    /// opens names: an `smb://` URL on the same share (parsed where it was read), or a
    /// `RelPath` below its root.
    fn target_typed(&mut self, target: &Target) -> Result<String, EngineError> {
        let url = match target {
            Target::Smb(u) => &u.url,
            Target::Path(path) | Target::Device(path) => return self.below_root(path),
            other => {
                return Err(EngineError::unsupported(format!(
                    "smb: {other} is not an smb:// URL"
                )));
            }
        };
        match (&self.session, &self.url) {
            (Some(_), Some(have)) if same_share(have, url) => Ok(url.path.clone()),
            (Some(_), Some(have)) => Err(EngineError::unsupported(format!(
                "smb: one job uses one share with one set of options; {} is not on {}",
                url.display(),
                have.display()
            ))),
            _ => self.log_in(url.clone()),
        }
    }

    /// The first login to `url`'s share; returns the path inside it that `url` names.
    fn log_in(&mut self, url: SmbUrl) -> Result<String, EngineError> {
        let pw = storbench_smb::url::password_from_env();
        let mut cfg = ClientConfig::from_url(&url, pw).map_err(to_engine)?;
        cfg.conn.abort = storbench_core::stop::requested;
        let mut session = Session::login(cfg, url.reconnect).map_err(to_engine)?;
        session.set_slots(self.slots);
        self.round_trip = crate::round_trip::measure(|| session.call(|c| c.echo()).is_ok());
        self.session = Some(session);
        self.cpu_at_connect = storbench_core::cpu::Usage::thread();
        let rel = url.path.clone();
        self.url = Some(url);
        Ok(rel)
    }

    /// A name below the share's root (an absolute one as smbclient takes it, from the
    /// share's root), once a share is logged in to: checked, never taken apart here.
    fn below_root(&self, path: &str) -> Result<String, EngineError> {
        if self.session.is_none() {
            return Err(EngineError::unsupported(format!(
                "smb: {path} is not an smb:// URL"
            )));
        }
        RelPath::under("", path)
            .map(|rel| rel.as_str().to_string())
            .map_err(|e| EngineError::new(ErrorKind::Refused, format!("smb: {e}")))
    }

    fn session(&mut self) -> Result<&mut Session, EngineError> {
        self.session
            .as_mut()
            .ok_or_else(|| EngineError::unsupported("smb: no target opened yet"))
    }

    /// The path inside the share of an open engine file.
    fn file_rel(&self, id: FileId) -> Result<&str, EngineError> {
        match self.session.as_ref().and_then(|s| s.file(id)) {
            Some(f) => Ok(&f.rel),
            None => Err(EngineError::new(
                ErrorKind::Os,
                format!("smb: file id {id} is not open"),
            )),
        }
    }

    /// Opens `rel`; `durable`: with a durable handle where the server grants one (files a
    /// job keeps open, not the ones metadata tests create and close at once).
    fn open_rel(
        &mut self,
        rel: &str,
        shown: &dyn std::fmt::Display,
        o: &OpenOptions,
        durable: bool,
    ) -> Result<FileId, EngineError> {
        let exists = |e: SmbError| match e.status() {
            Some(s) if s == storbench_smb::NtStatus::OBJECT_NAME_COLLISION => EngineError {
                kind: ErrorKind::Refused,
                errno: Some(libc::EEXIST),
                message: format!("smb: {shown} already exists; storbench creates only new files"),
            },
            _ => to_engine(e),
        };
        let own = o.nofollow.then(|| self.own_key(rel));
        let must_be_new;
        let o = match &own {
            Some(key) if !(o.create && o.exclusive || own_names().contains(key)) => {
                if !o.create {
                    return Err(not_made_here(shown));
                }
                // Created at first open (create_on_open=1): not ours yet, so it must be new.
                must_be_new = OpenOptions {
                    exclusive: true,
                    ..o.clone()
                };
                &must_be_new
            }
            _ => o,
        };
        let mode = open_mode(o);
        let (id, info) = self
            .session()?
            .call(|c| mode.open(c, rel, durable))
            .map_err(exists)?;
        if let Some(key) = own
            && o.create
            && o.exclusive
        {
            own_names().insert(key);
        }
        if o.nofollow && info.attributes & storbench_smb::proto::FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            let _ = self.retry(|c| c.close(id));
            return Err(EngineError::new(
                ErrorKind::Refused,
                format!(
                    "smb: {shown} is a symbolic link (a reparse point); storbench does not \
                     follow links at the file names it makes (remove it, or name the target \
                     with filename=)"
                ),
            ));
        }
        if o.truncate {
            self.retry(|c| c.set_size(id, 0))?;
        }
        Ok(self.session()?.add_file(id, rel.to_string(), mode))
    }

    /// A name on this engine's share, as [`own_names`] holds it.
    fn own_key(&self, rel: &str) -> String {
        match &self.url {
            Some(u) => format!("{}:{}/{}/{rel}", u.host, u.port, u.share),
            None => rel.to_owned(),
        }
    }

    /// Runs a synchronous call on the session, which recovers a lost connection and makes
    /// the call once more on the new one.
    fn retry<T>(
        &mut self,
        f: impl FnMut(&mut Client) -> Result<T, SmbError>,
    ) -> Result<T, EngineError> {
        self.session()?.call(f).map_err(to_engine)
    }

    /// As [`SmbEngine::retry`] for a call on an open file, with its handle on the
    /// connection the call is made on.
    fn retry_file<T>(
        &mut self,
        file: FileId,
        f: impl FnMut(&mut Client, storbench_smb::FileId) -> Result<T, SmbError>,
    ) -> Result<T, EngineError> {
        self.file_rel(file)?;
        self.session()?.call_file(file, f).map_err(to_engine)
    }

    /// Hands completions to the worker.
    fn deliver(done: &[storbench_smb::Completion], out: &mut Vec<Completion>) {
        for d in done {
            out.push(Completion {
                tag: d.user as u32,
                result: match d.result {
                    Ok(n) => n as i64,
                    Err(s) => -i64::from(s.errno()),
                },
            });
        }
    }
}

/// How the client opens a file `o` describes: write-through for `sync=1`, read-only when
/// only reading.
fn open_mode(o: &OpenOptions) -> OpenMode {
    OpenMode {
        write_through: o.sync,
        write: o.write || o.create,
        create: o.create,
        exclusive: o.exclusive,
    }
}

/// The names storbench generates (`nofollow` opens) that this process created with
/// FILE_CREATE, by share. Samba follows symbolic links for its clients without showing
/// them, so an existing object at a generated name cannot be told from a link: only these
/// are opened again (the lay-out's file, by the job's workers).
fn own_names() -> std::sync::MutexGuard<'static, std::collections::HashSet<String>> {
    type Names = std::sync::Mutex<std::collections::HashSet<String>>;
    static NAMES: std::sync::LazyLock<Names> = std::sync::LazyLock::new(Default::default);
    NAMES.lock().unwrap_or_else(|e| e.into_inner())
}

/// An existing object at a generated name this process did not create.
fn not_made_here(shown: &dyn std::fmt::Display) -> EngineError {
    EngineError {
        kind: ErrorKind::Refused,
        errno: Some(libc::EEXIST),
        message: format!(
            "smb: {shown} already exists; over SMB storbench uses only files it creates at the \
             names it makes, since the server follows links without showing them (remove it, \
             or name the file with filename=)"
        ),
    }
}

fn same_share(a: &SmbUrl, b: &SmbUrl) -> bool {
    a.host == b.host
        && a.port == b.port
        && a.share == b.share
        && a.user == b.user
        && a.seal == b.seal
        && a.sign == b.sign
        && a.max_dialect == b.max_dialect
}

impl Engine for SmbEngine {
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
        let rel = self.target_typed(&spec.target)?;
        self.open_rel(&rel, &spec.path, &spec.open, true)
    }

    fn free_space(&mut self, spec: &FileSpec) -> Result<Option<FsSpace>, EngineError> {
        self.target_typed(&spec.target)?;
        let fs = self.retry(|c| c.fs_size())?;
        Ok(Some(FsSpace::capacity(fs.total, fs.caller_available)))
    }

    fn setup(&mut self, setup: &storbench_core::EngineSetup) -> Result<(), EngineError> {
        self.slots = setup.slots.max(setup.iodepth).max(1) as usize;
        if let Some(s) = self.session.as_mut() {
            s.set_slots(self.slots);
        }
        Ok(())
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        let rel = self.file_rel(file)?.to_string();
        Ok(self.retry(|c| c.stat(&rel))?.size)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let write = match io.kind {
            IoKind::Read => false,
            IoKind::Write => true,
            IoKind::Fsync | IoKind::Fdatasync => {
                let file = io.file;
                self.retry(|c| c.quiesce())?;
                self.retry_file(file, |c, id| c.flush(id))?;
                return Ok(Queued::Done(0));
            }
            IoKind::Trim => {
                return Err(EngineError::unsupported(
                    "smb: trim is not supported (no FSCTL_SET_ZERO_DATA yet)",
                ));
            }
        };
        let r = Io {
            file: io.file,
            write,
            offset: io.offset,
            buf: io.buf.as_ptr(),
            len: io.len,
        };
        // SAFETY: the IoUnit contract: `buf` holds `len` bytes that the worker leaves alone
        // until this tag completes (also while it is sent again after a reconnect).
        match unsafe { self.session()?.submit(&r, io.tag) } {
            Ok(Submit::Queued) => Ok(Queued::Pending),
            Ok(Submit::Busy) => Ok(Queued::Busy),
            Err(e) => Err(to_engine(e)),
        }
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        match self.session.as_mut() {
            Some(s) => s.commit().map_err(to_engine),
            None => Ok(()),
        }
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let Some(s) = self.session.as_mut() else {
            return Ok(());
        };
        // The session's completions, moved into the worker's list without allocating: the
        // session's own list is kept in a reused vector.
        let mut got = std::mem::take(&mut self.entries_done);
        got.clear();
        let r = s.reap(min, &mut got);
        Self::deliver(&got, out);
        self.entries_done = got;
        r.map_err(to_engine)
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        self.file_rel(file)?;
        self.session()?.close(file).map_err(to_engine)
    }

    fn meta(&mut self) -> Option<&mut dyn storbench_core::MetaOps> {
        Some(self)
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.session.as_ref()?.client().conn().peer()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.session.as_ref()?.client().conn().local()
    }

    fn info(&mut self) -> EngineInfo {
        self.describe()
    }
}
