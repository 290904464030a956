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
//! A lost connection (closed, reset, or no reply within `timeout=`) is made again within
//! the URL's `reconnect=` seconds: a new login, the open files reopened by name, and every
//! IO that was in flight sent again; the outage is noted in the result. A server not back
//! within the window is given up on for the rest of the process: the steps after it fail at
//! once instead of waiting a window each. Data files are
//! opened with a durable handle where the server grants one (with a read+handle lease that
//! caches nothing), and a new connection reclaims it instead of opening the file again by
//! name; where none was granted, or the server no longer has it, the file is reopened. A
//! directory listing under way is restarted on the new connection and the entries it had
//! returned are skipped.

use std::time::Instant;

use storbench_core::space::FsSpace;
use storbench_core::{
    Attr, Caps, Completion, DirCursor, DirRef, Engine, EngineError, EngineInfo, EntryKind,
    ErrorKind, FileId, FileSpec, IoKind, IoUnit, MetaOps, MetaPath, NameList, OpenOptions, Queued,
    RelPath, checked_name, refuse_create_in_open,
};
use storbench_job::JobSpec;
use storbench_job::relpath::{join_into, push_below};
use storbench_job::target::Target;
use storbench_smb::url::PASSWORD_ENV;
use storbench_smb::{Client, ClientConfig, DirEntry, SmbError, SmbUrl, Submit};

use crate::dirtable::DirTable;

mod prepare;
mod recover;
pub use prepare::password;
use recover::{InFlight, Outage};

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
        SmbError::Resolve { .. } | SmbError::Connect { .. } | SmbError::Lost { .. } => {
            ErrorKind::Disconnected
        }
        _ => ErrorKind::Protocol,
    };
    EngineError {
        kind,
        errno: e.status().map(|s| s.errno()),
        message: format!("smb: {e}"),
    }
}

struct SmbFile {
    id: storbench_smb::FileId,
    /// Path inside the share.
    rel: String,
    /// How it was opened (to reopen it on a new connection).
    open: OpenOptions,
    /// Its durable handle, when the server granted one (to reclaim it instead).
    durable: Option<storbench_smb::Durable>,
}

/// The directory `read_dir` is listing: its handle, and how far the listing got, so that
/// on a new connection it is restarted and what was returned is skipped.
#[derive(Clone)]
struct Listing {
    rel: String,
    id: storbench_smb::FileId,
    /// Entries (`.` and `..` included) taken from this enumeration so far.
    taken: u64,
    /// Entries to pass over before returning names again (after a restart).
    skip: u64,
    /// The next QUERY_DIRECTORY starts the enumeration again.
    restart: bool,
}

#[derive(Default)]
pub struct SmbEngine {
    url: Option<SmbUrl>,
    /// How the client logged in (to log in again after a loss).
    cfg: Option<ClientConfig>,
    client: Option<Client>,
    /// When the first connection was made (outages are reported from it).
    connected_at: Option<Instant>,
    /// The least of a few ECHOs, timed at the first login.
    round_trip: Option<std::time::Duration>,
    /// The data IOs in flight by tag, to send again on a new connection.
    in_flight: Vec<Option<InFlight>>,
    /// Completions received on a connection that was then lost, for the next `reap`.
    salvaged: Vec<storbench_smb::Completion>,
    outages: Vec<Outage>,
    /// Why reconnecting was given up: later calls fail at once with it.
    gave_up: Option<String>,
    /// When the connection was first lost with no IO completed since (`reconnect=` bounds
    /// the time without progress, not each attempt).
    lost_since: Option<Instant>,
    files: Vec<Option<SmbFile>>,
    /// The directory being listed by `read_dir`.
    listing: Option<Listing>,
    entries: Vec<DirEntry>,
    /// The client's completions of one `reap` (reused).
    entries_done: Vec<storbench_smb::Completion>,
    /// IOs that could not be queued for want of credits.
    credit_waits: u64,
    /// The job's iodepth (for the credit-starvation note).
    depth: u32,
    /// Most IOs in flight at once.
    peak_in_flight: usize,
    /// IOs in flight just after each IO was queued, summed, and the IOs queued: their
    /// mean is the queue depth the server's credits allowed.
    in_flight_sum: u64,
    queued: u64,
    /// This thread's CPU when the first connection was made.
    cpu_at_connect: storbench_core::cpu::Usage,
    /// Signing and encryption time of connections that were replaced.
    crypto_before_ns: u64,
    /// Directories opened with `open_dir`: their paths inside the share, by slot, so the
    /// name-relative calls join a checked name to one instead of resolving a URL.
    dirs: DirTable<()>,
    /// The path inside the share of the last name-relative call (reused: no allocation
    /// per file).
    name_rel: String,
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
        let url = url.clone();
        match (&self.client, &self.url) {
            (Some(_), Some(have)) if same_share(have, &url) => Ok(url.path),
            (Some(_), Some(have)) => Err(EngineError::unsupported(format!(
                "smb: one job uses one share with one set of options; {} is not on {}",
                url.display(),
                have.display()
            ))),
            _ => {
                let pw = storbench_smb::url::password_from_env();
                let mut cfg = ClientConfig::from_url(&url, pw).map_err(to_engine)?;
                cfg.conn.abort = storbench_core::stop::requested;
                let mut client = self.first_login(&cfg, url.reconnect)?;
                self.round_trip = crate::round_trip::measure(|| client.echo().is_ok());
                self.client = Some(client);
                self.cfg = Some(cfg);
                self.connected_at = Some(Instant::now());
                self.cpu_at_connect = storbench_core::cpu::Usage::thread();
                let rel = url.path.clone();
                self.url = Some(url);
                Ok(rel)
            }
        }
    }

    /// A name below the share's root (an absolute one as smbclient takes it, from the
    /// share's root), once a share is logged in to: checked, never taken apart here.
    fn below_root(&self, path: &str) -> Result<String, EngineError> {
        if self.client.is_none() {
            return Err(EngineError::unsupported(format!(
                "smb: {path} is not an smb:// URL"
            )));
        }
        RelPath::under("", path)
            .map(|rel| rel.as_str().to_string())
            .map_err(|e| EngineError::new(ErrorKind::Refused, format!("smb: {e}")))
    }

    fn client(&mut self) -> Result<&mut Client, EngineError> {
        self.client
            .as_mut()
            .ok_or_else(|| EngineError::unsupported("smb: no target opened yet"))
    }

    fn file(&self, id: FileId) -> Result<&SmbFile, EngineError> {
        match self.files.get(id as usize) {
            Some(Some(f)) => Ok(f),
            _ => Err(EngineError::new(
                ErrorKind::Os,
                format!("smb: file id {id} is not open"),
            )),
        }
    }

    fn add_file(&mut self, id: storbench_smb::FileId, rel: String, open: OpenOptions) -> FileId {
        let durable = self.client.as_ref().and_then(|c| c.durable(id));
        let f = SmbFile {
            id,
            rel,
            open,
            durable,
        };
        match self.files.iter().position(Option::is_none) {
            Some(i) => {
                self.files[i] = Some(f);
                i as FileId
            }
            None => {
                self.files.push(Some(f));
                (self.files.len() - 1) as FileId
            }
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
        let (id, info) = self.retry_map(|c| open_with_info(c, rel, o, durable), exists)?;
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
        Ok(self.add_file(id, rel.to_string(), o.clone()))
    }

    /// A name on this engine's share, as [`own_names`] holds it.
    fn own_key(&self, rel: &str) -> String {
        match &self.url {
            Some(u) => format!("{}:{}/{}/{rel}", u.host, u.port, u.share),
            None => rel.to_owned(),
        }
    }

    /// Runs a synchronous call; a lost connection is recovered and the call made once
    /// more on the new one.
    fn retry<T>(
        &mut self,
        f: impl FnMut(&mut Client) -> Result<T, SmbError>,
    ) -> Result<T, EngineError> {
        self.retry_map(f, to_engine)
    }

    /// As [`SmbEngine::retry`], with the final error mapped by `map`.
    fn retry_map<T>(
        &mut self,
        mut f: impl FnMut(&mut Client) -> Result<T, SmbError>,
        map: impl Fn(SmbError) -> EngineError,
    ) -> Result<T, EngineError> {
        self.given_up()?;
        match f(self.client()?) {
            Err(e) if e.is_disconnect() => {
                self.recover(e)?;
                f(self.client()?).map_err(map)
            }
            r => r.map_err(map),
        }
    }

    /// The current handle of an engine file (it changes when the file is reopened).
    fn handle(&self, file: FileId) -> Result<storbench_smb::FileId, EngineError> {
        Ok(self.file(file)?.id)
    }

    /// As [`SmbEngine::retry`] for a call on an open file, with its handle on the
    /// connection the call is made on.
    fn retry_file<T>(
        &mut self,
        file: FileId,
        mut f: impl FnMut(&mut Client, storbench_smb::FileId) -> Result<T, SmbError>,
    ) -> Result<T, EngineError> {
        self.given_up()?;
        let id = self.handle(file)?;
        match f(self.client()?, id) {
            Err(e) if e.is_disconnect() => {
                self.recover(e)?;
                let id = self.handle(file)?;
                f(self.client()?, id).map_err(to_engine)
            }
            r => r.map_err(to_engine),
        }
    }

    /// Queues one data IO on the current connection.
    fn submit(&mut self, r: &InFlight, user: u64) -> Result<Submit, SmbError> {
        let id = match self.files.get(r.file as usize) {
            Some(Some(f)) => f.id,
            _ => {
                return Err(SmbError::Protocol {
                    server: String::from("smb"),
                    op: "submit",
                    reason: format!("file id {} is not open", r.file),
                });
            }
        };
        let Some(c) = self.client.as_mut() else {
            return Err(SmbError::Protocol {
                server: String::from("smb"),
                op: "submit",
                reason: "no target opened yet".into(),
            });
        };
        let buf = r.buf as *mut u8;
        // SAFETY: the IoUnit contract: `buf` holds `len` bytes that the worker leaves alone
        // until this tag completes (also while it is sent again after a reconnect).
        unsafe {
            if r.write {
                c.submit_write(id, r.offset, buf, r.len, user)
            } else {
                c.submit_read(id, r.offset, buf, r.len, user)
            }
        }
    }

    /// Hands completions to the worker, forgetting their IOs.
    fn deliver(&mut self, done: &[storbench_smb::Completion], out: &mut Vec<Completion>) {
        for d in done {
            if let Some(slot) = self.in_flight.get_mut(d.user as usize) {
                *slot = None;
            }
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
            "smb: {shown} already exists; over SMB storbench uses only files it creates at the              names it makes, since the server follows links without showing them (remove it,              or name the file with filename=)"
        ),
    }
}

/// Opens `rel` as `o` asks (see `open_with_info`).
fn open_with(
    c: &mut Client,
    rel: &str,
    o: &OpenOptions,
    durable: bool,
) -> Result<storbench_smb::FileId, SmbError> {
    open_with_info(c, rel, o, durable).map(|(id, _)| id)
}

/// Opens `rel` as `o` asks: write-through for `sync=1`, read-only when only reading.
fn open_with_info(
    c: &mut Client,
    rel: &str,
    o: &OpenOptions,
    durable: bool,
) -> Result<(storbench_smb::FileId, storbench_smb::FileInfo), SmbError> {
    c.set_durable_opens(durable);
    if o.sync {
        c.open_write_through(rel, o.create, o.exclusive)
    } else if o.write || o.create {
        c.open(rel, o.create, o.exclusive)
    } else {
        c.open_read(rel)
    }
}

/// The credit-starvation note: IOs had to wait for credits, and the mean number in flight
/// stayed below 90% of `iodepth` (a moment at full depth does not hide it).
fn starvation(waits: u64, mean: f64, depth: u32, granted: u32) -> Option<String> {
    if waits == 0 || mean >= 0.9 * f64::from(depth) {
        return None;
    }
    Some(format!(
        "credit starvation: the SMB server's credits kept {mean:.1} IO(s) in flight on average, fewer than iodepth={depth} (IOs waited for credits {waits} time(s); at most {granted} credits held): the server, not the queue depth, set the concurrency"
    ))
}

/// Where the client thread's time went since it connected, for the crypto note.
#[derive(Clone, Copy, Debug)]
struct CryptoCost {
    /// In signing, checking, sealing and opening messages: wall time (a clock read on each
    /// side, cheap enough per IO), so it includes any wait for a CPU in the middle; it is
    /// set against the thread's CPU plus its waits for a CPU, which include the same.
    crypto_ns: u64,
    /// The thread's CPU (user + system).
    cpu_ns: u64,
    /// Ready to run, waiting for a CPU.
    wait_ns: u64,
    wall_ns: u64,
}

/// Signing or encryption is named the limit when it took at least this share of the client
/// thread's busy time (running or waiting for a CPU)...
const CRYPTO_SHARE: f64 = 0.5;
/// ...and the thread was running or waiting to run at least this share of the time (it
/// had no time to spare for the server).
const THREAD_BUSY: f64 = 0.8;

impl CryptoCost {
    /// The note naming `what` (`signing (AES-128-CMAC)`) as the limit, with its figures.
    fn note(&self, what: &str) -> Option<String> {
        if self.cpu_ns == 0 || self.wall_ns == 0 {
            return None;
        }
        let busy_ns = self.cpu_ns + self.wait_ns;
        let share = self.crypto_ns as f64 / busy_ns as f64;
        let busy = busy_ns as f64 / self.wall_ns as f64;
        if share < CRYPTO_SHARE || busy < THREAD_BUSY {
            return None;
        }
        Some(format!(
            "{what} is the client's limit: it took {:.0}% of the client thread's busy time ({:.2} s of {:.2} s; {:.2} s per second of the run), and the thread was busy {:.0}% of the time",
            share.min(1.0) * 100.0,
            self.crypto_ns as f64 / 1e9,
            busy_ns as f64 / 1e9,
            self.crypto_ns as f64 / self.wall_ns as f64,
            busy.min(1.0) * 100.0
        ))
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
        let slots = setup.slots.max(setup.iodepth).max(1) as usize;
        self.in_flight = vec![None; slots];
        Ok(())
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        let rel = self.file(file)?.rel.clone();
        Ok(self.retry(|c| c.stat(&rel))?.size)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        self.given_up()?;
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
        let r = InFlight {
            file: io.file,
            write,
            offset: io.offset,
            buf: io.buf.as_ptr() as usize,
            len: io.len,
        };
        let tag = io.tag as usize;
        if tag >= self.in_flight.len() {
            // Only without `setup` (engine tests): grown once per new tag, not per IO.
            self.in_flight.resize(tag + 1, None);
        }
        match self.submit(&r, u64::from(io.tag)) {
            Ok(Submit::Queued) => {
                self.in_flight[tag] = Some(r);
                if let Some(c) = self.client.as_ref() {
                    let n = c.outstanding();
                    self.peak_in_flight = self.peak_in_flight.max(n);
                    self.in_flight_sum += n as u64;
                    self.queued += 1;
                }
                Ok(Queued::Pending)
            }
            Ok(Submit::Busy) => {
                self.credit_waits += 1;
                Ok(Queued::Busy)
            }
            Err(e) if e.is_disconnect() => {
                // Sent again with the others in flight once the connection is back.
                self.in_flight[tag] = Some(r);
                self.recover(e)?;
                Ok(Queued::Pending)
            }
            Err(e) => Err(to_engine(e)),
        }
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        self.given_up()?;
        let Some(c) = self.client.as_mut() else {
            return Ok(());
        };
        match c.commit() {
            Err(e) if e.is_disconnect() => self.recover(e),
            r => r.map_err(to_engine),
        }
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        self.given_up()?;
        let before = out.len();
        // The client's completions, moved into the worker's list without allocating: the
        // client's own list is kept in a reused vector.
        let mut got = std::mem::take(&mut self.entries_done);
        let r = loop {
            got.clear();
            std::mem::swap(&mut got, &mut self.salvaged);
            self.deliver(&got, out);
            got.clear();
            let need = min.saturating_sub(out.len() - before);
            let Some(c) = self.client.as_mut() else {
                break Ok(());
            };
            let r = c.reap(need, &mut got);
            self.deliver(&got, out);
            match r {
                Err(e) if e.is_disconnect() => {
                    if let Err(e) = self.recover(e) {
                        break Err(e);
                    }
                }
                r => break r.map_err(to_engine),
            }
        };
        self.entries_done = got;
        if out.len() > before {
            self.lost_since = None; // progress: the next loss starts a new window
        }
        r
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        self.file(file)?;
        if self.gave_up.is_some() {
            // The server is gone: there is no handle left to close.
            self.files[file as usize] = None;
            return Ok(());
        }
        let r = self.retry_file(file, |c, id| c.close(id));
        self.files[file as usize] = None;
        r
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(self)
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.conn().peer()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.conn().local()
    }

    fn info(&mut self) -> EngineInfo {
        let Some(c) = self.client.as_ref() else {
            return EngineInfo::default();
        };
        let i = c.info();
        let details = vec![
            ("protocol".to_string(), "SMB".to_string()),
            ("dialect".to_string(), i.dialect_name().to_string()),
            ("server".to_string(), c.server().to_string()),
            ("share".to_string(), c.share().to_string()),
            (
                "signing".to_string(),
                i.signing.unwrap_or("off").to_string(),
            ),
            (
                "encryption".to_string(),
                i.cipher.unwrap_or("off").to_string(),
            ),
            ("max_read".to_string(), i.max_read.to_string()),
            ("max_write".to_string(), i.max_write.to_string()),
            (
                "credits_granted".to_string(),
                c.credits_granted().to_string(),
            ),
            (
                "login".to_string(),
                if i.guest { "guest" } else { "user" }.to_string(),
            ),
        ];
        let mut details = details;
        let mut notes: Vec<String> = self.outage_notes(c.server()).collect();
        let mean = self.in_flight_sum as f64 / self.queued.max(1) as f64;
        let (reclaimed, reopened) = self.outages.iter().fold((0, 0), |(a, b), o| {
            (a + o.files.reclaimed, b + o.files.reopened)
        });
        details.push(("files_reclaimed".into(), reclaimed.to_string()));
        details.push(("files_reopened".into(), reopened.to_string()));
        details.push(("max_in_flight".into(), self.peak_in_flight.to_string()));
        details.push(("mean_in_flight".into(), format!("{mean:.1}")));
        details.extend(self.round_trip.map(crate::round_trip::detail));
        if let Some(note) = starvation(self.credit_waits, mean, self.depth, c.credits_granted()) {
            notes.push(note);
        }
        let what = match (i.cipher, i.signing) {
            (Some(cipher), _) => Some(format!("encryption ({cipher})")),
            (None, Some(alg)) => Some(format!("signing ({alg})")),
            _ => None,
        };
        if let (Some(what), Some(at)) = (what, self.connected_at) {
            let now = storbench_core::cpu::Usage::thread();
            let cost = CryptoCost {
                crypto_ns: self.crypto_before_ns + c.conn().crypto_ns(),
                cpu_ns: (now.usr_ns + now.sys_ns)
                    .saturating_sub(self.cpu_at_connect.usr_ns + self.cpu_at_connect.sys_ns),
                wait_ns: now.wait_ns.saturating_sub(self.cpu_at_connect.wait_ns),
                wall_ns: at.elapsed().as_nanos() as u64,
            };
            details.push(("crypto_ms".into(), (cost.crypto_ns / 1_000_000).to_string()));
            details.push((
                "client_cpu_ms".into(),
                (cost.cpu_ns / 1_000_000).to_string(),
            ));
            details.push((
                "client_busy_ms".into(),
                ((cost.cpu_ns + cost.wait_ns) / 1_000_000).to_string(),
            ));
            notes.extend(cost.note(&what));
        }
        if self.url.as_ref().is_some_and(SmbUrl::password_in_url) {
            notes.push(format!(
                "the SMB password was given in the URL (visible to other users in the process list); use {PASSWORD_ENV}"
            ));
        }
        let interface = c
            .conn()
            .local()
            .and_then(|a| storbench_core::nic::interface_of(a.ip()));
        EngineInfo {
            details,
            notes,
            interface,
        }
    }
}

impl SmbEngine {
    /// One QUERY_DIRECTORY batch of the listing into `entries`; a lost connection is
    /// recovered (which reopens the directory) and the batch asked for again.
    fn dir_batch(
        &mut self,
        path: MetaPath<'_>,
        entries: &mut Vec<DirEntry>,
    ) -> Result<bool, EngineError> {
        loop {
            self.given_up()?;
            let Some(l) = self.listing.as_ref() else {
                return Err(EngineError::new(
                    ErrorKind::Os,
                    format!("smb: listing of {path} was not started"),
                ));
            };
            let (id, restart) = (l.id, l.restart);
            entries.clear();
            match self.client()?.read_dir(id, restart, entries) {
                Err(e) if e.is_disconnect() => self.recover(e)?,
                r => {
                    if let Some(l) = self.listing.as_mut() {
                        l.restart = false;
                    }
                    return r.map_err(to_engine);
                }
            }
        }
    }
}

impl SmbEngine {
    /// The path inside the share of `name` in `dir`, written into `name_rel`: the
    /// directory's path as `open_dir` resolved it, `/`, and the name checked as a
    /// `RelPath` (so it cannot climb out of the directory).
    fn rel_in(&mut self, dir: &DirRef, name: &str) -> Result<String, EngineError> {
        let name = checked_name(dir, name)?;
        let (_, dir_rel) = self.dirs.get(dir.slot, name.as_str())?;
        let mut rel = std::mem::take(&mut self.name_rel);
        join_into(dir_rel, name.as_str(), &mut rel);
        Ok(rel)
    }

    /// `call` on the path inside the share of `name` in `dir`; the path's memory is kept
    /// for the next call.
    fn with_rel_in<T>(
        &mut self,
        dir: &DirRef,
        name: &str,
        call: impl FnOnce(&mut Self, &str) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let rel = self.rel_in(dir, name)?;
        let r = call(self, &rel);
        self.name_rel = rel;
        r
    }
}

impl SmbEngine {
    /// Writes into `out` the path inside the share that `path` names: its root's (an
    /// `smb://` target on the share logged in to, or a plain name below the share's root,
    /// checked as a `RelPath`, an absolute one from the share's root as smbclient takes
    /// it) and its name's components after it, joined with `/`, which
    /// the client sends as `\\`. The root's URL was parsed where it was read; logging in
    /// happens on first use only.
    fn locate(&mut self, path: MetaPath<'_>, out: &mut String) -> Result<(), EngineError> {
        out.clear();
        match path.root {
            Target::Smb(u) => {
                let on_share = self.client.is_some()
                    && matches!(&self.url, Some(have) if same_share(have, &u.url));
                if !on_share {
                    self.target_typed(path.root)?;
                }
                out.push_str(&u.url.path);
            }
            Target::Path(name) => {
                let name = RelPath::under("", name)
                    .map_err(|e| EngineError::new(ErrorKind::Refused, format!("smb: {e}")))?;
                if self.client.is_none() {
                    return Err(EngineError::unsupported(format!(
                        "smb: {name} is not an smb:// URL"
                    )));
                }
                out.push_str(name.as_str());
            }
            other => {
                return Err(EngineError::unsupported(format!(
                    "smb: {other} is not an smb:// target"
                )));
            }
        }
        if let Some(rel) = path.rel {
            push_below(out, rel.as_str());
        }
        Ok(())
    }

    /// `call` on the path inside the share that `path` names, built in a reused buffer.
    fn with_path<T>(
        &mut self,
        path: MetaPath<'_>,
        call: impl FnOnce(&mut Self, &str) -> Result<T, EngineError>,
    ) -> Result<T, EngineError> {
        let mut rel = std::mem::take(&mut self.name_rel);
        let r = self.locate(path, &mut rel).and_then(|()| call(self, &rel));
        self.name_rel = rel;
        r
    }
}

/// An SMB name collision as storbench's refusal to take over a file it did not create.
fn exists_error(dir: &DirRef, name: &str, e: SmbError) -> EngineError {
    match e.status() {
        Some(s) if s == storbench_smb::NtStatus::OBJECT_NAME_COLLISION => EngineError {
            kind: ErrorKind::Refused,
            errno: Some(libc::EEXIST),
            message: format!(
                "smb: {} already exists; storbench creates only new files",
                dir.join(name)
            ),
        },
        _ => to_engine(e),
    }
}

impl MetaOps for SmbEngine {
    fn mkdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| e.retry(|c| c.mkdir(rel)))
    }

    fn rmdir(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| {
            e.dirs.forget(rel);
            e.retry(|c| c.rmdir(rel))
        })
    }

    fn create(&mut self, path: MetaPath<'_>, open: &OpenOptions) -> Result<FileId, EngineError> {
        let o = OpenOptions {
            create: true,
            exclusive: true,
            ..open.clone()
        };
        self.with_path(path, |e, rel| e.open_rel(rel, &path, &o, false))
    }

    fn stat(&mut self, path: MetaPath<'_>) -> Result<Attr, EngineError> {
        let i = self.with_path(path, |e, rel| e.retry(|c| c.stat(rel)))?;
        Ok(Attr {
            size: i.size,
            is_dir: i.is_dir(),
        })
    }

    fn unlink(&mut self, path: MetaPath<'_>) -> Result<(), EngineError> {
        self.with_path(path, |e, rel| {
            e.retry(|c| c.unlink(rel))?;
            // A name removed is no longer this process's file: whatever appears there next
            // (between two rounds of a repeated run) is created anew or refused.
            let mut own = own_names();
            if !own.is_empty() {
                own.remove(&e.own_key(rel));
            }
            Ok(())
        })
    }

    /// The attributes of an open with OPEN_REPARSE_POINT (as every open of the client): a
    /// link the server shows as a reparse point is not followed. Samba follows links for
    /// its clients and shows what a link inside the share leads to.
    fn kind_nofollow(&mut self, path: MetaPath<'_>) -> Result<EntryKind, EngineError> {
        let i = self.with_path(path, |e, rel| e.retry(|c| c.stat(rel)))?;
        let reparse = i.attributes & storbench_smb::proto::FILE_ATTRIBUTE_REPARSE_POINT != 0;
        Ok(match (reparse, i.is_dir()) {
            (true, _) => EntryKind::Other,
            (_, true) => EntryKind::Dir,
            _ => EntryKind::File,
        })
    }

    fn read_dir(
        &mut self,
        path: MetaPath<'_>,
        cursor: &mut DirCursor,
        names: &mut NameList,
    ) -> Result<(), EngineError> {
        if cursor.offset == 0 {
            let mut rel = String::new();
            self.locate(path, &mut rel)?;
            if let Some(old) = self.listing.take() {
                let _ = self.client()?.close(old.id);
            }
            let id = self.retry(|c| c.open_dir(&rel))?;
            self.listing = Some(Listing {
                rel,
                id,
                taken: 0,
                skip: 0,
                restart: true,
            });
        }
        let mut entries = std::mem::take(&mut self.entries);
        let more = self.dir_batch(path, &mut entries);
        if let (Ok(_), Some(l)) = (&more, self.listing.as_mut()) {
            for e in &entries {
                l.taken += 1;
                if l.skip > 0 {
                    l.skip -= 1;
                } else if e.name != "." && e.name != ".." {
                    names.push(&e.name);
                }
            }
        }
        self.entries = entries;
        cursor.offset += 1;
        match more {
            Ok(true) => Ok(()),
            Ok(false) | Err(_) => {
                cursor.done = true;
                let l = self.listing.take();
                let c = match l {
                    Some(l) if self.gave_up.is_none() => {
                        self.client()?.close(l.id).map_err(to_engine)
                    }
                    _ => Ok(()),
                };
                more?;
                c
            }
        }
    }

    fn set_size(&mut self, file: FileId, size: u64) -> Result<(), EngineError> {
        self.retry_file(file, |c, id| c.set_size(id, size))
    }

    fn sync_dir(&mut self, _path: MetaPath<'_>) -> Result<(), EngineError> {
        Ok(())
    }

    /// The directory's path inside the share, resolved once and kept in a slot until
    /// `close_dir` or its removal.
    fn open_dir(&mut self, path: MetaPath<'_>) -> Result<DirRef, EngineError> {
        let slot = self.with_path(path, |e, rel| Ok(e.dirs.insert((), rel)))?;
        Ok(DirRef::of(slot, path))
    }

    fn close_dir(&mut self, dir: DirRef) {
        self.dirs.close(dir.slot);
    }

    fn open_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        refuse_create_in_open(open, dir, name)?;
        self.with_rel_in(dir, name, |e, rel| {
            e.open_rel(rel, &dir.join(name), open, false)
        })
    }

    fn create_in(
        &mut self,
        dir: &DirRef,
        name: &str,
        open: &OpenOptions,
    ) -> Result<FileId, EngineError> {
        let o = OpenOptions {
            create: true,
            exclusive: true,
            ..open.clone()
        };
        self.with_rel_in(dir, name, |e, rel| {
            e.open_rel(rel, &dir.join(name), &o, false)
        })
    }

    /// CREATE and CLOSE in one round trip.
    fn create_empty_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.with_rel_in(dir, name, |e, rel| {
            e.retry_map(|c| c.create_empty(rel), |err| exists_error(dir, name, err))
        })
    }

    fn stat_in(&mut self, dir: &DirRef, name: &str) -> Result<Attr, EngineError> {
        self.with_rel_in(dir, name, |e, rel| {
            let i = e.retry(|c| c.stat(rel))?;
            Ok(Attr {
                size: i.size,
                is_dir: i.is_dir(),
            })
        })
    }

    fn unlink_in(&mut self, dir: &DirRef, name: &str) -> Result<(), EngineError> {
        self.with_rel_in(dir, name, |e, rel| e.retry(|c| c.unlink(rel)))
    }
}

#[cfg(test)]
mod tests {
    use super::CryptoCost;

    fn cost(crypto_ms: u64, cpu_ms: u64, wait_ms: u64, wall_ms: u64) -> CryptoCost {
        CryptoCost {
            crypto_ns: crypto_ms * 1_000_000,
            cpu_ns: cpu_ms * 1_000_000,
            wait_ns: wait_ms * 1_000_000,
            wall_ns: wall_ms * 1_000_000,
        }
    }

    #[test]
    fn starvation_is_named_when_the_mean_depth_stays_below_iodepth() {
        let n = super::starvation(120, 16.3, 64, 80).expect("named");
        assert!(
            n.starts_with("credit starvation: the SMB server's credits kept 16.3 IO(s) in flight on average, fewer than iodepth=64 (IOs waited for credits 120 time(s); at most 80 credits held)"),
            "{n}"
        );
        assert!(super::starvation(0, 16.3, 64, 80).is_none(), "no waits");
        assert!(
            super::starvation(5, 60.0, 64, 80).is_none(),
            "near full depth"
        );
    }

    #[test]
    fn crypto_is_named_only_when_it_dominates_a_busy_client_thread() {
        let n = cost(600, 900, 100, 1000)
            .note("signing (AES-128-CMAC)")
            .expect("named");
        assert!(
            n.starts_with("signing (AES-128-CMAC) is the client's limit: it took 60% of the client thread's busy time (0.60 s of 1.00 s; 0.60 s per second of the run)"),
            "{n}"
        );
        assert!(n.ends_with("busy 100% of the time"), "{n}");
        // Most of the busy time in crypto, but the thread mostly waited for the server.
        assert!(cost(300, 400, 0, 1000).note("x").is_none());
        // A busy thread spending its time elsewhere.
        assert!(cost(300, 850, 100, 1000).note("x").is_none());
        assert!(cost(0, 0, 0, 0).note("x").is_none());
    }
}
