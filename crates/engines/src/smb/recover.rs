//! Recovering a lost SMB connection: log in again, reclaim the files' durable handles (or
//! reopen them by name where there are none), restart a directory listing under way, send
//! the IOs that were in flight again, and note the outage. Bounded by the URL's `reconnect=`
//! (time without a completed IO, however many logins succeed meanwhile) and by Ctrl-C. A
//! server given up on is recorded in `storbench_smb::reconnect`: every later login to it in
//! this process, and any other clone still reconnecting to it, fails at once.

use std::time::{Duration, Instant};

use storbench_core::{EngineError, ErrorKind};
use storbench_smb::reconnect::{self, transient};
use storbench_smb::{Client, ClientConfig, Durable, SmbError, Submit};

use super::{SmbEngine, open_with};

/// A data IO in flight, as it is needed to send it again.
#[derive(Clone, Copy)]
pub(super) struct InFlight {
    pub file: storbench_core::FileId,
    pub write: bool,
    pub offset: u64,
    /// The worker's buffer (an address: the engine must stay `Send`).
    pub buf: usize,
    pub len: u32,
}

/// One connection loss and how it was recovered.
pub(super) struct Outage {
    /// Since the first connection.
    pub at: Duration,
    pub lasted: Duration,
    pub resent: usize,
    /// The job's first login, to a server that had answered earlier in the run.
    pub first: bool,
    pub files: Files,
    /// A directory listing was under way and was restarted.
    pub listing: bool,
    pub reason: String,
}

/// How the open files came back on a new connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Files {
    /// By their durable handles (the same opens, no new CREATE by name).
    pub reclaimed: usize,
    /// Opened again by name.
    pub reopened: usize,
    /// Why the first of those was not reclaimed.
    pub why: Option<String>,
}

/// How long a reclaim is tried again: the server lets go of an open only when it has
/// noticed the old connection is gone, which can come a moment after the client has.
const RECLAIM_PATIENCE: Duration = Duration::from_secs(2);

impl SmbEngine {
    /// The job's first login. A server that answered earlier in this run and does not now
    /// is waited for within `budget`, as a lost connection is, and the wait noted; one
    /// given up on earlier fails at once (`storbench_smb::reconnect`).
    pub(super) fn first_login(
        &mut self,
        cfg: &ClientConfig,
        budget: Duration,
    ) -> Result<Client, EngineError> {
        let (client, waited) = reconnect::connect_within(cfg, budget).map_err(super::to_engine)?;
        if let Some(w) = waited {
            self.outages.push(Outage {
                at: Duration::ZERO,
                lasted: w.lasted,
                resent: 0,
                first: true,
                files: Files::default(),
                listing: false,
                reason: w.reason,
            });
        }
        Ok(client)
    }

    /// Makes the connection again within `reconnect=` and sends what was in flight again.
    pub(super) fn recover(&mut self, cause: SmbError) -> Result<(), EngineError> {
        self.given_up()?;
        let (Some(url), Some(_)) = (self.url.as_ref(), self.cfg.as_ref()) else {
            return Err(super::to_engine(cause));
        };
        let budget = url.reconnect;
        let server = url.server();
        if budget.is_zero() {
            return Err(self.give_up(format!("smb: {cause}; not reconnecting (reconnect=0)")));
        }
        let started = Instant::now();
        let lost = *self.lost_since.get_or_insert(started);
        if started.duration_since(lost) >= budget {
            reconnect::give_up(&server, budget);
            return Err(self.give_up(format!(
                "smb: {cause}; no IO completed for {} s since the connection to {server} was \
                 first lost, though logging in again worked (reconnect={} s)",
                lost.elapsed().as_secs(),
                budget.as_secs()
            )));
        }
        // What already arrived on the lost connection completes as it is.
        if let Some(old) = self.client.as_mut() {
            let mut done = std::mem::take(&mut self.salvaged);
            old.take_done(&mut done);
            for d in &done {
                if let Some(slot) = self.in_flight.get_mut(d.user as usize) {
                    *slot = None;
                }
            }
            self.salvaged = done;
        }
        let mut pause = Duration::from_millis(100);
        loop {
            if storbench_core::stop::requested() {
                return Err(self.give_up(format!("smb: {cause}; stopped while reconnecting")));
            }
            // Another job or clone of this run gave the server up meanwhile.
            if let Some(e) = reconnect::lost(&server) {
                return Err(self.give_up(format!("smb: {cause}; {e}")));
            }
            match self.reconnect_once() {
                Ok((files, resent)) => {
                    let at = self
                        .connected_at
                        .map_or(Duration::ZERO, |c| started.duration_since(c));
                    self.outages.push(Outage {
                        at,
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
                        "smb: {cause}; no new login to {server} within {} s (last attempt: {e})",
                        budget.as_secs()
                    )));
                }
                Err(_) => {
                    let until = Instant::now() + pause;
                    while Instant::now() < until && !storbench_core::stop::requested() {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// One attempt: a new login, the files reclaimed or reopened, the listing's directory
    /// opened again, the IOs in flight queued again.
    fn reconnect_once(&mut self) -> Result<(Files, usize), SmbError> {
        let Some(cfg) = self.cfg.as_ref() else {
            return Err(SmbError::Protocol {
                server: String::from("smb"),
                op: "reconnect",
                reason: "no target opened".into(),
            });
        };
        let mut client = Client::connect(cfg)?;
        let mut files = Files::default();
        let patience = Instant::now() + RECLAIM_PATIENCE;
        for f in self.files.iter_mut().flatten() {
            // Durable unless a lease break took handle caching on the lost connection.
            let kept = |d: &Durable| {
                self.client
                    .as_ref()
                    .is_none_or(|c| c.conn().handle_lease_kept(&d.lease_key))
            };
            let why = match f.durable.filter(kept) {
                Some(d) => match reclaim(&mut client, &f.rel, &d, patience)? {
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
            let mut o = f.open.clone();
            // The file exists now (this run opened or created it): open it as it is.
            (o.create, o.exclusive, o.truncate) = (false, false, false);
            f.id = open_with(&mut client, &f.rel, &o, f.durable.is_some())?;
            f.durable = client.durable(f.id);
            files.reopened += 1;
            files.why.get_or_insert(why);
        }
        if let Some(l) = self.listing.as_mut() {
            l.id = client.open_dir(&l.rel)?;
            (l.skip, l.taken, l.restart) = (l.taken, 0, true);
        }
        if let Some(old) = self.client.replace(client) {
            self.crypto_before_ns += old.conn().crypto_ns();
        }
        let mut resent = 0;
        for tag in 0..self.in_flight.len() {
            let Some(io) = self.in_flight[tag] else {
                continue;
            };
            loop {
                match self.submit(&io, tag as u64)? {
                    Submit::Queued => break,
                    Submit::Busy => {
                        // Fewer credits on the new connection so far: make room first.
                        let Some(c) = self.client.as_mut() else {
                            break;
                        };
                        let mut done = std::mem::take(&mut self.salvaged);
                        let r = c.reap(1, &mut done);
                        for d in &done {
                            if let Some(slot) = self.in_flight.get_mut(d.user as usize) {
                                *slot = None;
                            }
                        }
                        self.salvaged = done;
                        r?;
                    }
                }
            }
            resent += 1;
        }
        if let Some(c) = self.client.as_mut() {
            c.commit()?;
        }
        Ok((files, resent))
    }

    /// Once reconnecting was given up, every later call fails at once with the same reason.
    pub(super) fn given_up(&self) -> Result<(), EngineError> {
        match &self.gave_up {
            Some(why) => Err(EngineError::new(ErrorKind::Disconnected, why.clone())),
            None => Ok(()),
        }
    }

    fn give_up(&mut self, why: String) -> EngineError {
        self.gave_up = Some(why.clone());
        EngineError::new(ErrorKind::Disconnected, why)
    }

    /// One note per outage, for the result.
    pub(super) fn outage_notes(&self, server: &str) -> impl Iterator<Item = String> + '_ {
        let server = server.to_string();
        self.outages.iter().map(move |o| {
            if o.first {
                return format!(
                    "SMB server {server} did not answer when the job started ({}), though it \
                     had earlier in the run; logged in after {:.1} s",
                    o.reason,
                    o.lasted.as_secs_f64()
                );
            }
            format!(
                "SMB connection to {server} lost at {:.1} s ({}); reconnected after {:.1} s, \
                 {}{}, {} IO(s) sent again",
                o.at.as_secs_f64(),
                o.reason,
                o.lasted.as_secs_f64(),
                o.files.describe(),
                if o.listing {
                    ", the directory listing restarted (entries returned before skipped)"
                } else {
                    ""
                },
                o.resent
            )
        })
    }
}

impl Files {
    /// `2 file(s) reclaimed by durable handle`, `1 file(s) reopened (no durable handle
    /// granted)`, or both.
    pub(super) fn describe(&self) -> String {
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

/// Reclaims `d` under `rel`, trying again on a refusal until `patience` (the server may
/// not have let go of the lost connection's open yet). The outer error is a lost
/// connection; the inner one the status that refused the reclaim.
fn reclaim(
    client: &mut Client,
    rel: &str,
    d: &Durable,
    patience: Instant,
) -> Result<Result<storbench_smb::FileId, storbench_smb::NtStatus>, SmbError> {
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
