//! Recovering a lost SMB connection: log in again, reopen the open files by name, send the
//! IOs that were in flight again, and note the outage. Bounded by the URL's `reconnect=`
//! (time without a completed IO, however many logins succeed meanwhile) and by Ctrl-C.

use std::time::{Duration, Instant};

use storbench_core::{EngineError, ErrorKind};
use storbench_smb::{Client, SmbError, Submit};

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
    pub reopened: usize,
    pub reason: String,
}

impl SmbEngine {
    /// Makes the connection again within `reconnect=` and sends what was in flight again.
    pub(super) fn recover(&mut self, cause: SmbError) -> Result<(), EngineError> {
        self.given_up()?;
        let (Some(url), Some(_)) = (self.url.as_ref(), self.cfg.as_ref()) else {
            return Err(super::to_engine(cause));
        };
        let budget = url.reconnect;
        let server = url.server();
        if budget.is_zero() {
            return Err(self.give_up(format!(
                "smb: {cause}; not reconnecting (reconnect=0)"
            )));
        }
        let started = Instant::now();
        let lost = *self.lost_since.get_or_insert(started);
        if started.duration_since(lost) >= budget {
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
        self.listing = None;
        let mut pause = Duration::from_millis(100);
        loop {
            if storbench_core::stop::requested() {
                return Err(self.give_up(format!("smb: {cause}; stopped while reconnecting")));
            }
            match self.reconnect_once() {
                Ok((reopened, resent)) => {
                    let at = self
                        .connected_at
                        .map_or(Duration::ZERO, |c| started.duration_since(c));
                    self.outages.push(Outage {
                        at,
                        lasted: started.elapsed(),
                        resent,
                        reopened,
                        reason: cause.to_string(),
                    });
                    return Ok(());
                }
                Err(e) if lost.elapsed() >= budget || !transient(&e) => {
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

    /// One attempt: a new login, the files reopened, the IOs in flight queued again.
    fn reconnect_once(&mut self) -> Result<(usize, usize), SmbError> {
        let Some(cfg) = self.cfg.as_ref() else {
            return Err(SmbError::Protocol {
                server: String::from("smb"),
                op: "reconnect",
                reason: "no target opened".into(),
            });
        };
        let mut client = Client::connect(cfg)?;
        let mut reopened = 0;
        for f in self.files.iter_mut().flatten() {
            let mut o = f.open.clone();
            // The file exists now (this run opened or created it): open it as it is.
            (o.create, o.exclusive, o.truncate) = (false, false, false);
            f.id = open_with(&mut client, &f.rel, &o)?;
            reopened += 1;
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
        Ok((reopened, resent))
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
            format!(
                "SMB connection to {server} lost at {:.1} s ({}); reconnected after {:.1} s, \
                 {} file(s) reopened (no durable handles), {} IO(s) sent again",
                o.at.as_secs_f64(),
                o.reason,
                o.lasted.as_secs_f64(),
                o.reopened,
                o.resent
            )
        })
    }
}

/// Whether another login may work: a lost or refused connection, a timeout; not a refused
/// password or a share that is gone.
fn transient(e: &SmbError) -> bool {
    e.is_disconnect() || matches!(e, SmbError::Connect { .. } | SmbError::Resolve { .. })
}
