//! Keeping UNSTABLE writes safe across a server restart (RFC 8881 §18.32.3: a WRITE or
//! COMMIT reply's verifier changes when the server restarts, and data acknowledged UNSTABLE
//! under the old one may be lost; the client must still hold it to write it again).
//!
//! As over NFSv3 (`transport/durable.rs`), the bytes of each WRITE acknowledged UNSTABLE
//! are copied into the retained-write ring of `uncommitted=` bytes before the caller gets
//! the completion (writes acknowledged stable are copied too while older data of the file
//! is kept, so a rewrite never puts older data over newer). A COMMIT whose verifier matches
//! makes the file's entries durable; one whose verifier differs writes every entry of the
//! file again with FILE_SYNC, oldest first, then completes. Unlike v3 this is synchronous:
//! the engine sends the COMMIT once nothing is in flight, and sends one of every file with
//! kept data when half the ring is in use ([`Client4::wants_commit`]). Acknowledged bytes
//! that found no room are counted; a verifier change then ends the COMMIT with an error
//! naming them.

use std::time::Instant;

use crate::error::{NfsError, Result};
use crate::transport::DurabilityStats;
use crate::transport::retain::{Retained, State};

use super::client::Client4;
use super::decode::WriteRes;
use super::wire::Stable4;

/// The retained-write ring of a v4 client and what it did (files are addressed by label).
pub(crate) struct Kept {
    pub(crate) ring: Retained<()>,
    pub(crate) stats: DurabilityStats,
}

impl Kept {
    pub(crate) fn new(limit: usize) -> Kept {
        Kept {
            ring: Retained::new(limit),
            stats: DurabilityStats {
                limit,
                ..DurabilityStats::default()
            },
        }
    }
}

impl Client4 {
    /// Records a WRITE reply for `data` (what was sent) at `offset` of file `label`: its
    /// verifier for COMMIT's check, and a copy of the bytes it acknowledged when they may
    /// have to be written again.
    pub(crate) fn acked(&mut self, label: u32, offset: u64, data: &[u8], w: &WriteRes) {
        let i = label as usize;
        self.files[i].note_write(w);
        let unstable = w.committed == Stable4::Unstable as u32;
        if !unstable && !self.kept.ring.has_live(label) {
            return;
        }
        let data = &data[..(w.count as usize).min(data.len())];
        if self
            .kept
            .ring
            .keep(&(), label, offset, data, w.verf.0)
            .is_none()
            && unstable
        {
            self.files[i].unkept += data.len() as u64;
            self.kept.stats.unprotected_bytes += data.len() as u64;
        }
    }

    /// Half the ring holds data not yet committed: the caller should let what is in flight
    /// complete and call [`commit_kept`](Self::commit_kept) before the next write.
    #[inline]
    pub fn wants_commit(&self) -> bool {
        let r = &self.kept.ring;
        r.capacity() > 0 && r.used() >= r.capacity() / 2
    }

    /// COMMIT of every open file with kept data (nothing may be in flight).
    pub fn commit_kept(&mut self) -> Result<()> {
        self.kept.stats.auto_commits += 1;
        for label in 0..self.files.len() as u32 {
            if self.files[label as usize].open && self.kept.ring.has_live(label) {
                self.commit(label)?;
            }
        }
        Ok(())
    }

    /// What was done to keep unstable writes safe, for the run's details and notes.
    pub fn durability(&self) -> DurabilityStats {
        self.kept.stats
    }

    /// A COMMIT of `label` answered with `verf`: the kept entries it covers become durable,
    /// and those acknowledged under another verifier are written again with FILE_SYNC. An
    /// error names the bytes acknowledged under the old verifier that were not kept.
    pub(crate) fn committed(&mut self, label: u32, verf: [u8; 8], path: &str) -> Result<()> {
        let f = &mut self.files[label as usize];
        let changed = f.verf.is_some_and(|v| v.0 != verf);
        let unkept = f.unkept;
        f.verf = None;
        f.unstable = 0;
        f.unkept = 0;
        let mark = self.kept.ring.next_seq();
        let stale = self.kept.ring.committed(label, mark, &verf);
        if changed && unkept > 0 {
            return Err(NfsError::GaveUp(format!(
                "{}: {unkept} bytes written UNSTABLE to {path} since the last COMMIT may be lost: the server restarted before committing them (its write verifier changed) and they did not fit in uncommitted= to be written again",
                self.server()
            )));
        }
        if stale > 0 {
            self.rewrite(label, mark)?;
        }
        Ok(())
    }

    /// Writes every kept entry of `label` below `mark` that is not durable again with
    /// FILE_SYNC, oldest first.
    fn rewrite(&mut self, label: u32, mark: u64) -> Result<()> {
        let started = Instant::now();
        let mut ring = std::mem::replace(&mut self.kept.ring, Retained::new(0));
        let mut got = Ok(());
        let (mut n, mut bytes) = (0u64, 0u64);
        for seq in ring.first_seq()..mark {
            let Some(e) = ring.get(seq).copied() else {
                continue;
            };
            if e.label != label || e.state != State::Acked {
                continue;
            }
            let Some(p) = ring.data(seq) else { continue };
            // SAFETY: `data` points at the entry's `len` bytes in the ring, which is not
            // changed until the entry is marked durable below.
            let data = unsafe { std::slice::from_raw_parts(p, e.len as usize) };
            got = self.write_all_sync(label, e.offset, data);
            if got.is_err() {
                break;
            }
            ring.set_state(seq, State::Durable);
            n += 1;
            bytes += u64::from(e.len);
        }
        ring.trim();
        self.kept.ring = ring;
        let s = &mut self.kept.stats;
        s.verifier_changes += 1;
        s.passes += 1;
        s.rewrites += n;
        s.rewritten_bytes += bytes;
        s.pass_time += started.elapsed();
        got
    }

    fn write_all_sync(&mut self, label: u32, offset: u64, data: &[u8]) -> Result<()> {
        let mut done = 0;
        while done < data.len() {
            let w = self.write(
                label,
                offset + done as u64,
                &data[done..],
                Stable4::FileSync,
            )?;
            if w.count == 0 {
                return Err(NfsError::GaveUp(format!(
                    "{}: a WRITE of kept data wrote nothing",
                    self.server()
                )));
            }
            done += w.count as usize;
        }
        Ok(())
    }
}
