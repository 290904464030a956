//! fio's verify of trims (`trim_percentage`, `trim_backlog`, `trim_backlog_batch`): some of
//! the writes logged for verification are chosen to be trimmed later; once the logged
//! writes reach a multiple of `trim_backlog`, the oldest chosen ones are trimmed in place
//! of the job's next IOs. A trimmed block stays in the verify log and must read back as
//! zeros (`trim_verify_zero`), or leaves the log when that is off.
//!
//! The choice uses fio's own generator and seed slot (`trim_state`), so the same writes
//! are chosen as in fio and the trim counts match. The queue is reserved at set-up with
//! the log, so choosing and trimming allocate nothing per IO.

use std::collections::VecDeque;

use storbench_job::TrimVerify;

use super::{Slot, VerifyState, Worker};
use crate::error::EngineError;
use storbench_model::rng::FioRand;

/// fio's seed slot of `trim_state` (`FIO_RAND_TRIM_OFF`).
const FIO_RAND_TRIM_OFF: u32 = 8;

pub(super) struct TrimBacklog {
    rand: FioRand,
    /// A draw at or below this chooses the write (fio's `io_u_should_trim`).
    threshold: u32,
    /// fio's `trim_backlog` (0: nothing is ever trimmed) and `trim_batch`.
    backlog: u64,
    batch_opt: u64,
    /// Trims left of the batch under way (fio's `td->trim_batch`).
    batch: u64,
    /// Log indices of the chosen writes not yet trimmed or checked, oldest first; an
    /// index whose piece left the list (it was checked) is skipped when reached.
    queue: VecDeque<u32>,
    /// How many in `queue` are still live (fio's `trim_entries`).
    entries: u64,
    /// `trim_verify_zero`.
    pub zero: bool,
}

impl TrimBacklog {
    /// None when no write is ever chosen (`trim_percentage` 0).
    pub(super) fn new(t: &TrimVerify, seed: u64, capacity: usize) -> Option<TrimBacklog> {
        (t.percentage > 0).then(|| TrimBacklog {
            rand: FioRand::seeded(seed),
            threshold: (u32::MAX / 100) * t.percentage.min(100),
            backlog: t.backlog,
            batch_opt: match t.batch {
                0 => t.backlog,
                n => u64::from(n),
            },
            batch: 0,
            queue: VecDeque::with_capacity(capacity),
            entries: 0,
            zero: t.zero,
        })
    }

    /// fio's seed of `trim_state` for a repeatable run of thread `thread` (from 1).
    pub(super) fn seed(randseed: u64, thread: u32) -> u64 {
        FioRand::seed_for(randseed, thread, FIO_RAND_TRIM_OFF)
    }

    /// A write was logged at `index`: chosen for a trim or not, by one draw as in fio.
    #[inline]
    pub(super) fn logged(&mut self, index: usize) -> bool {
        if self.rand.next_u32() > self.threshold {
            return false;
        }
        self.queue.push_back(index as u32);
        self.entries += 1;
        true
    }

    /// fio's `check_get_trim`: whether a trim of a chosen block takes the place of the
    /// next IO, with `logged` blocks in the verify list and `last_read` whether the last
    /// IO completed was a read. The batch counts down even when nothing is left to trim.
    pub(super) fn due(&mut self, logged: u64, last_read: bool) -> bool {
        if self.backlog == 0 || self.entries == 0 {
            return false;
        }
        if self.batch > 0 {
            self.batch -= 1;
            return true;
        }
        if logged.is_multiple_of(self.backlog) && !last_read {
            self.batch = self.batch_opt;
            return true;
        }
        false
    }

    /// The oldest chosen block still waiting (fio's `get_next_trim`), off the queue;
    /// `live` says whether a log index still waits for its trim.
    pub(super) fn take(&mut self, live: impl Fn(u32) -> bool) -> Option<u32> {
        while let Some(i) = self.queue.pop_front() {
            if live(i) {
                self.entries -= 1;
                return Some(i);
            }
        }
        None
    }

    /// The engine was busy: block `index` waits at the queue's front again, and the batch
    /// gets its trim back.
    pub(super) fn untake(&mut self, index: u32) {
        self.queue.push_front(index);
        self.entries += 1;
        self.batch += 1;
    }

    /// Whether chosen blocks wait for their trim.
    pub(super) fn waiting(&self) -> bool {
        self.entries > 0
    }

    /// A chosen block was checked before its trim came (fio's `remove_trim_entry`).
    #[inline]
    pub(super) fn dropped(&mut self) {
        self.entries = self.entries.saturating_sub(1);
    }

    /// The log dropped its first `n` entries (all checked): the queue follows.
    pub(super) fn shift(&mut self, n: usize) {
        let n = n as u32;
        while self.queue.front().is_some_and(|&i| i < n) {
            self.queue.pop_front();
        }
        for i in &mut self.queue {
            *i -= n;
        }
    }
}

impl VerifyState {
    /// A trim the engine did not take: the block waits for it again.
    fn untrim(&mut self, i: usize) {
        let p = &mut self.log[i];
        if std::mem::take(&mut p.dropped) {
            self.dropped_waiting -= 1;
        }
        p.trimmed = false;
        p.on_trim = true;
        if let Some(t) = self.trims.as_mut() {
            t.untake(i as u32);
        }
    }

    /// fio's `check_get_trim`: a logged block to trim in place of the next IO.
    fn trim_due(&mut self) -> Option<usize> {
        let waiting = self.waiting();
        let t = self.trims.as_mut()?;
        if !t.due(waiting, self.last_read) {
            return None;
        }
        let log = &self.log;
        let i = t.take(|i| log.get(i as usize).is_some_and(|p| p.on_trim))? as usize;
        let zero = t.zero;
        let p = &mut self.log[i];
        p.on_trim = false;
        if zero {
            p.trimmed = true;
        } else {
            p.dropped = true;
            self.dropped_waiting += 1;
        }
        Some(i)
    }

    /// Whether chosen blocks still wait for their trim.
    fn trims_waiting(&self) -> bool {
        self.trims.as_ref().is_some_and(TrimBacklog::waiting)
    }
}

impl Worker<'_> {
    /// fio's trim backlog: when a trim is due, `slot` trims the oldest logged block
    /// chosen for it instead of the next IO. False when none is due.
    pub(in crate::worker) fn backlog_trim(&mut self, slot: u32) -> Result<bool, EngineError> {
        let Some(piece) = self.verify.as_mut().and_then(|v| v.trim_due()) else {
            return Ok(false);
        };
        let p = self.verify.as_ref().map(|v| v.log[piece]);
        let Some(p) = p else { return Ok(false) };
        self.slots[slot as usize] = Slot {
            ddir: 2,
            len: p.len,
            file: p.file,
            offset: p.offset,
            ..Slot::default()
        };
        if !self.issue(slot)?
            && let Some(v) = self.verify.as_mut()
        {
            v.untrim(piece);
        }
        Ok(true)
    }

    /// fio's loop goes on past the job's budget while written blocks wait for their
    /// trim: the trims still due are issued (the next IO after them would be past the
    /// region, which ends fio's loop).
    pub(in crate::worker) fn trailing_trims(&mut self) -> Result<(), EngineError> {
        while self.verify.as_ref().is_some_and(|v| v.trims_waiting()) && !crate::stop::requested() {
            let Some(slot) = self.free.pop() else {
                self.reap(1)?;
                continue;
            };
            if !self.backlog_trim(slot)? {
                self.free.push(slot);
                break;
            }
            self.commit()?;
            if self.free.is_empty() {
                self.reap(1)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backlog(percentage: u32, backlog: u64, batch: u32) -> TrimBacklog {
        let t = TrimVerify {
            percentage,
            backlog,
            batch,
            zero: true,
        };
        TrimBacklog::new(&t, TrimBacklog::seed(0x89, 1), 64).unwrap()
    }

    #[test]
    fn the_percentage_chooses_about_that_share() {
        let mut t = backlog(30, 4, 0);
        let chosen = (0..10_000).filter(|&i| t.logged(i)).count();
        assert!((2_800..3_200).contains(&chosen), "{chosen}");
        let mut all = backlog(100, 4, 0);
        assert!((0..100).all(|i| all.logged(i)));
    }

    #[test]
    fn a_batch_trims_one_more_than_its_size_as_fio_does() {
        let mut t = backlog(100, 4, 2);
        for i in 0..8 {
            t.logged(i);
        }
        // Not at a multiple of the backlog, or after a read: nothing due.
        assert!(!t.due(3, false));
        assert!(!t.due(4, true));
        let mut trims = 0;
        while t.due(4, false) || t.batch > 0 {
            assert!(t.take(|_| true).is_some());
            trims += 1;
            if t.batch == 0 {
                break;
            }
        }
        assert_eq!(
            trims, 3,
            "fio's first trim of a batch does not count it down"
        );
    }

    #[test]
    fn checked_blocks_are_skipped_and_the_queue_follows_the_log() {
        let mut t = backlog(100, 2, 0);
        for i in 0..6 {
            t.logged(i);
        }
        t.dropped();
        assert_eq!(t.take(|i| i != 0), Some(1));
        t.shift(3);
        assert_eq!(t.take(|_| true), Some(0), "log index 3 is now 0");
        assert!(TrimBacklog::new(&TrimVerify::default(), 1, 4).is_none());
    }
}
