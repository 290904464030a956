//! A directory listing under way, in QUERY_DIRECTORY batches: on a new connection the
//! directory is opened again and the enumeration restarted, and the entries it had
//! returned are skipped, so no name is repeated or lost.

use super::Session;
use crate::error::Result;
use crate::proto::{DirEntry, FileId};

/// The directory being listed: its handle, and how far the listing got.
pub(super) struct Listing {
    pub(super) rel: String,
    pub(super) id: FileId,
    /// Entries (`.` and `..` included) taken from this enumeration so far.
    pub(super) taken: u64,
    /// Entries to pass over before returning names again (after a restart).
    pub(super) skip: u64,
    /// The next QUERY_DIRECTORY starts the enumeration again.
    pub(super) restart: bool,
}

/// One batch of a listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// False when the listing has ended.
    pub more: bool,
    /// The batch's entries from this index on are new; the ones before it were returned
    /// before the connection was lost.
    pub new_from: usize,
}

impl Session {
    /// Opens directory `rel` for listing, closing a listing left unfinished.
    pub fn start_listing(&mut self, rel: String) -> Result<()> {
        if let Some(old) = self.listing.take() {
            let _ = self.client.close(old.id);
        }
        let id = self.call(|c| c.open_dir(&rel))?;
        self.listing = Some(Listing {
            rel,
            id,
            taken: 0,
            skip: 0,
            restart: true,
        });
        Ok(())
    }

    /// The next batch of the listing into `entries`; a lost connection is recovered
    /// (which reopens the directory) and the batch asked for again. `None` when no listing
    /// was started.
    pub fn list_batch(&mut self, entries: &mut Vec<DirEntry>) -> Result<Option<Batch>> {
        let more = loop {
            self.given_up()?;
            let Some(l) = self.listing.as_ref() else {
                return Ok(None);
            };
            let (id, restart) = (l.id, l.restart);
            entries.clear();
            match self.client.read_dir(id, restart, entries) {
                Err(e) if e.is_disconnect() => self.recover(e)?,
                r => {
                    if let Some(l) = self.listing.as_mut() {
                        l.restart = false;
                    }
                    break r?;
                }
            }
        };
        let Some(l) = self.listing.as_mut() else {
            return Ok(None);
        };
        let n = entries.len() as u64;
        let skipped = l.skip.min(n);
        l.skip -= skipped;
        l.taken += n;
        Ok(Some(Batch {
            more,
            new_from: skipped as usize,
        }))
    }

    /// Ends the listing: its directory is closed, unless the server was given up on.
    pub fn end_listing(&mut self) -> Result<()> {
        match self.listing.take() {
            Some(l) if self.gave_up.is_none() => self.client.close(l.id),
            _ => Ok(()),
        }
    }
}
