//! A share worked on across lost connections: the logged-in [`Client`], the files open on
//! it, the data IOs in flight and a directory listing under way. A connection that is
//! closed, reset or silent past `timeout=` is made again within the URL's `reconnect=`
//! seconds (`recover`): a new login, the open files reclaimed by their durable handles (or
//! opened again by name where there are none), the listing restarted with the entries it
//! had returned skipped, and every IO that was in flight sent again; each outage is kept
//! for the result ([`Session::outages`]). A server not back within the window is given up
//! on for the rest of the process ([`crate::reconnect`]): this session's later calls fail
//! at once with [`SmbError::GaveUp`], and other sessions' logins with [`SmbError::Lost`].
//!
//! Synchronous calls go through [`Session::call`] and [`Session::call_file`], which make a
//! call once more on the new connection; data IOs through `submit`, `commit` and `reap`
//! (`data`), which send what was in flight again themselves.

use std::time::{Duration, Instant};

use crate::client::{Client, ClientConfig};
use crate::error::{Result, SmbError};
use crate::lease::Durable;
use crate::proto::{FileId, FileInfo};
use crate::reconnect;

mod data;
mod listing;
mod recover;

pub use data::{Io, QueueStats};
pub use listing::Batch;
pub use recover::{Files, Outage};

/// How a data file is opened, kept with it to open it again on a new connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenMode {
    /// Every write is written through to stable storage before it is acknowledged.
    pub write_through: bool,
    /// Opened for reading and writing; read-only otherwise (shares whose user may not
    /// write).
    pub write: bool,
    /// Created if it does not exist...
    pub create: bool,
    /// ...and refused if it does.
    pub exclusive: bool,
}

impl OpenMode {
    /// Opens `rel` on `c`; `durable`: with a durable handle where the server grants one.
    pub fn open(self, c: &mut Client, rel: &str, durable: bool) -> Result<(FileId, FileInfo)> {
        c.set_durable_opens(durable);
        if self.write_through {
            c.open_write_through(rel, self.create, self.exclusive)
        } else if self.write {
            c.open(rel, self.create, self.exclusive)
        } else {
            c.open_read(rel)
        }
    }

    /// The same access to a file that exists now (this run opened or created it).
    fn existing(self) -> OpenMode {
        OpenMode {
            create: false,
            exclusive: false,
            ..self
        }
    }
}

/// A file open on the session, by the number [`Session::add_file`] gave it.
pub struct OpenFile {
    /// Its handle on the current connection.
    pub id: FileId,
    /// Its path inside the share.
    pub rel: String,
    mode: OpenMode,
    /// Its durable handle, when the server granted one (to reclaim it instead).
    durable: Option<Durable>,
}

pub struct Session {
    cfg: ClientConfig,
    /// `reconnect=`: how long the session may go without a completed IO after a loss.
    window: Duration,
    client: Client,
    /// When the first connection was made (outages are placed from it).
    connected_at: Instant,
    files: Vec<Option<OpenFile>>,
    /// The data IOs in flight by tag, to send again on a new connection.
    in_flight: Vec<Option<data::InFlight>>,
    /// Completions received on a connection that was then lost, for the next `reap`.
    salvaged: Vec<crate::conn::Completion>,
    listing: Option<listing::Listing>,
    outages: Vec<Outage>,
    /// Why reconnecting was given up: later calls fail at once with it.
    gave_up: Option<String>,
    /// When the connection was first lost with no IO completed since (`reconnect=` bounds
    /// the time without progress, not each attempt).
    lost_since: Option<Instant>,
    /// Signing and encryption time of connections that were replaced.
    crypto_before_ns: u64,
    stats: QueueStats,
}

impl Session {
    /// The first login. A server that answered earlier in this process and does not now
    /// is waited for within `window`, as a lost connection is, and the wait kept as an
    /// outage; one given up on earlier fails at once ([`reconnect::connect_within`]).
    pub fn login(cfg: ClientConfig, window: Duration) -> Result<Session> {
        let (client, waited) = reconnect::connect_within(&cfg, window)?;
        let outages = waited
            .map(|w| Outage {
                at: Duration::ZERO,
                lasted: w.lasted,
                resent: 0,
                first: true,
                files: Files::default(),
                listing: false,
                reason: w.reason,
            })
            .into_iter()
            .collect();
        Ok(Session {
            cfg,
            window,
            client,
            connected_at: Instant::now(),
            files: Vec::new(),
            in_flight: Vec::new(),
            salvaged: Vec::new(),
            listing: None,
            outages,
            gave_up: None,
            lost_since: None,
            crypto_before_ns: 0,
            stats: QueueStats::default(),
        })
    }

    /// The client of the current connection.
    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn connected_at(&self) -> Instant {
        self.connected_at
    }

    /// Each connection loss and how it was recovered, and a first login that had to wait.
    pub fn outages(&self) -> &[Outage] {
        &self.outages
    }

    /// Nanoseconds spent signing and encrypting, over every connection of the session.
    pub fn crypto_ns(&self) -> u64 {
        self.crypto_before_ns + self.client.conn().crypto_ns()
    }

    /// True once reconnecting was given up.
    pub fn has_given_up(&self) -> bool {
        self.gave_up.is_some()
    }

    /// Runs a synchronous call; a lost connection is recovered and the call made once
    /// more on the new one.
    pub fn call<T>(&mut self, mut f: impl FnMut(&mut Client) -> Result<T>) -> Result<T> {
        self.given_up()?;
        match f(&mut self.client) {
            Err(e) if e.is_disconnect() => {
                self.recover(e)?;
                f(&mut self.client)
            }
            r => r,
        }
    }

    /// As [`Session::call`] on open file `file`, with its handle on the connection the
    /// call is made on.
    pub fn call_file<T>(
        &mut self,
        file: u32,
        mut f: impl FnMut(&mut Client, FileId) -> Result<T>,
    ) -> Result<T> {
        self.given_up()?;
        let id = self.handle(file)?;
        match f(&mut self.client, id) {
            Err(e) if e.is_disconnect() => {
                self.recover(e)?;
                let id = self.handle(file)?;
                f(&mut self.client, id)
            }
            r => r,
        }
    }

    /// Keeps `id`, opened under `rel` as `mode` asks, to be found by the number returned
    /// and opened again on a new connection.
    pub fn add_file(&mut self, id: FileId, rel: String, mode: OpenMode) -> u32 {
        let f = OpenFile {
            id,
            rel,
            mode,
            durable: self.client.durable(id),
        };
        match self.files.iter().position(Option::is_none) {
            Some(i) => {
                self.files[i] = Some(f);
                i as u32
            }
            None => {
                self.files.push(Some(f));
                (self.files.len() - 1) as u32
            }
        }
    }

    pub fn file(&self, file: u32) -> Option<&OpenFile> {
        self.files.get(file as usize)?.as_ref()
    }

    /// Closes open file `file`; once the server was given up on there is no handle left
    /// to close, and the file is only forgotten.
    pub fn close(&mut self, file: u32) -> Result<()> {
        let r = if self.gave_up.is_some() {
            Ok(())
        } else {
            self.call_file(file, |c, id| c.close(id))
        };
        if let Some(f) = self.files.get_mut(file as usize) {
            *f = None;
        }
        r
    }

    /// The current handle of open file `file` (it changes when the file is reopened).
    fn handle(&self, file: u32) -> Result<FileId> {
        match self.file(file) {
            Some(f) => Ok(f.id),
            None => Err(self.not_open(file)),
        }
    }

    fn not_open(&self, file: u32) -> SmbError {
        SmbError::Protocol {
            server: self.cfg.conn.server.clone(),
            op: "file",
            reason: format!("file {file} is not open"),
        }
    }

    /// Once reconnecting was given up, every later call fails at once with the same reason.
    fn given_up(&self) -> Result<()> {
        match &self.gave_up {
            Some(why) => Err(SmbError::GaveUp(why.clone())),
            None => Ok(()),
        }
    }

    fn give_up(&mut self, why: String) -> SmbError {
        self.gave_up = Some(why.clone());
        SmbError::GaveUp(why)
    }
}
