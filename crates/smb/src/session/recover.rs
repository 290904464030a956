//! Recovering a lost connection: log in again, reclaim the files' durable handles (or
//! reopen them by name where there are none), restart a directory listing under way, send
//! the IOs that were in flight again, and keep the outage. Bounded by `reconnect=` (time
//! without a completed IO, however many logins succeed meanwhile) and by the
//! configuration's `abort` (Ctrl-C). A server given up on is recorded in
//! [`crate::reconnect`]: every later login to it in this process, and any other session
//! still reconnecting to it, fails at once.

use std::time::{Duration, Instant};

use super::Session;
use crate::client::Client;
use crate::error::{NtStatus, Result, SmbError};
use crate::lease::Durable;
use crate::proto::FileId;
use crate::reconnect::{self, transient};

/// One connection loss and how it was recovered.
#[derive(Clone, Debug)]
pub struct Outage {
    /// Since the first connection.
    pub at: Duration,
    pub lasted: Duration,
    /// IOs sent again on the new connection.
    pub resent: usize,
    /// The session's first login, to a server that had answered earlier in the process.
    pub first: bool,
    pub files: Files,
    /// A directory listing was under way and was restarted.
    pub listing: bool,
    pub reason: String,
}

/// How the open files came back on a new connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Files {
    /// By their durable handles (the same opens, no new CREATE by name).
    pub reclaimed: usize,
    /// Opened again by name.
    pub reopened: usize,
    /// Why the first of those was not reclaimed.
    pub why: Option<String>,
}

impl Files {
    /// `2 file(s) reclaimed by durable handle`, `1 file(s) reopened (no durable handle
    /// granted)`, or both.
    pub fn describe(&self) -> String {
        let reopened = match &self.why {
            Some(why) => format!("{} file(s) reopened ({why})", self.reopened),
            None => format!("{} file(s) reopened", self.reopened),
        };
        match (self.reclaimed, self.reopened) {
            (0, _) => reopened,
            (n, 0) => format!("{n} file(s) reclaimed by durable handle"),
            (n, _) => format!("{n} file(s) reclaimed by durable handle, {reopened}"),
        }
    }
}

/// How long a reclaim is tried again: the server lets go of an open only when it has
/// noticed the old connection is gone, which can come a moment after the client has.
const RECLAIM_PATIENCE: Duration = Duration::from_secs(2);

impl Session {
    /// Makes the connection again within `reconnect=` and sends what was in flight again.
    pub(super) fn recover(&mut self, cause: SmbError) -> Result<()> {
        self.given_up()?;
        let budget = self.window;
        let server = self.cfg.conn.server.clone();
        if budget.is_zero() {
            return Err(self.give_up(format!("{cause}; not reconnecting (reconnect=0)")));
        }
        let started = Instant::now();
        let lost = *self.lost_since.get_or_insert(started);
        if started.duration_since(lost) >= budget {
            reconnect::give_up(&server, budget);
            return Err(self.give_up(format!(
                "{cause}; no IO completed for {} s since the connection to {server} was \
                 first lost, though logging in again worked (reconnect={} s)",
                lost.elapsed().as_secs(),
                budget.as_secs()
            )));
        }
        // What already arrived on the lost connection completes as it is.
        self.salvage();
        let mut pause = Duration::from_millis(100);
        loop {
            if (self.cfg.conn.abort)() {
                return Err(self.give_up(format!("{cause}; stopped while reconnecting")));
            }
            // Another session of this process gave the server up meanwhile.
            if let Some(e) = reconnect::lost(&server) {
                return Err(self.give_up(format!("{cause}; {e}")));
            }
            match self.reconnect_once() {
                Ok((files, resent)) => {
                    self.outages.push(Outage {
                        at: started.duration_since(self.connected_at),
                        lasted: started.elapsed(),
                        resent,
                        first: false,
                        files,
                        listing: self.listing.is_some(),
                        reason: cause.to_string(),
                    });
                    return Ok(());
                }
                Err(e) if lost.elapsed() >= budget || !transient(&e) => {
                    if transient(&e) {
                        reconnect::give_up(&server, budget);
                    }
                    return Err(self.give_up(format!(
                        "{cause}; no new login to {server} within {} s (last attempt: {e})",
                        budget.as_secs()
                    )));
                }
                Err(_) => {
                    let until = Instant::now() + pause;
                    while Instant::now() < until && !(self.cfg.conn.abort)() {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// One attempt: a new login, the files reclaimed or reopened, the listing's directory
    /// opened again, the IOs in flight sent again.
    fn reconnect_once(&mut self) -> Result<(Files, usize)> {
        let mut client = Client::connect(&self.cfg)?;
        let files = self.reopen_files(&mut client)?;
        if let Some(l) = self.listing.as_mut() {
            l.id = client.open_dir(&l.rel)?;
            (l.skip, l.taken, l.restart) = (l.taken, 0, true);
        }
        let old = std::mem::replace(&mut self.client, client);
        self.crypto_before_ns += old.conn().crypto_ns();
        let resent = self.resend()?;
        Ok((files, resent))
    }

    /// The open files on `client`: reclaimed by their durable handles, or opened again by
    /// name where there are none or the server no longer has them.
    fn reopen_files(&mut self, client: &mut Client) -> Result<Files> {
        let mut files = Files::default();
        let patience = Instant::now() + RECLAIM_PATIENCE;
        let old = &self.client;
        for f in self.files.iter_mut().flatten() {
            // Durable unless a lease break took handle caching on the lost connection.
            let kept = |d: &Durable| old.conn().handle_lease_kept(&d.lease_key);
            let why = match f.durable.filter(kept) {
                Some(d) => match reclaim(client, &f.rel, &d, patience)? {
                    Ok(id) => {
                        f.id = id;
                        f.durable = client.durable(id);
                        files.reclaimed += 1;
                        continue;
                    }
                    Err(status) => format!("durable handle reclaim refused: {status}"),
                },
                None if f.durable.is_some() => "the lease lost handle caching".to_string(),
                None => "no durable handle granted".to_string(),
            };
            f.id = f
                .mode
                .existing()
                .open(client, &f.rel, f.durable.is_some())?
                .0;
            f.durable = client.durable(f.id);
            files.reopened += 1;
            files.why.get_or_insert(why);
        }
        Ok(files)
    }
}

/// Reclaims `d` under `rel`, trying again on a refusal until `patience` (the server may
/// not have let go of the lost connection's open yet). The outer error is a lost
/// connection; the inner one the status that refused the reclaim.
fn reclaim(
    client: &mut Client,
    rel: &str,
    d: &Durable,
    patience: Instant,
) -> Result<std::result::Result<FileId, NtStatus>> {
    loop {
        match client.reclaim(rel, d) {
            Ok(id) => return Ok(Ok(id)),
            Err(e) => match e.status() {
                Some(st) if Instant::now() >= patience => return Ok(Err(st)),
                Some(_) => std::thread::sleep(Duration::from_millis(100)),
                None => return Err(e),
            },
        }
    }
}
