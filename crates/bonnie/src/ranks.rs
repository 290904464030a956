//! The suite's agreements with the other ranks of a multi-host run (docs/multihost.md):
//! once after every rank's checks, before anything is written; before each test, once
//! every copy has prepared, so the test starts on all hosts together; and once after the
//! last test, so a failure in it still reaches the others at an agreement. Without a
//! coordinator (every single-host run) each is a no-op.
//!
//! A rank that fails tells the others "not ready" at the agreement they wait at next,
//! exactly once: every agreement is the same collective whatever its point, so all ranks
//! end there together, clean up and hand their results (or errors) on, and no rank waits
//! for one that will not come. The coordinator bounds each wait by its timeout.

use std::cell::Cell;

use storbench_core::coord::{self, Point};
use storbench_model::result::BonnieTestId;

use crate::error::{BonnieError, Result};

/// Where this rank stands with the others.
#[derive(Default)]
pub(crate) struct Ranks {
    /// The others know this run ends (this rank said so, or an agreement failed).
    settled: Cell<bool>,
}

impl Ranks {
    /// Agrees at `at` that this rank is `ready` (a no-op alone).
    pub fn agree(&self, at: &'static str, ready: bool) -> Result<()> {
        if !coord::active() || self.settled.get() {
            return Ok(());
        }
        let agreed = coord::agree(Point::Named(at), ready);
        if agreed.is_err() || !ready {
            self.settled.set(true);
        }
        agreed.map_err(|e| BonnieError::Check(e.message))
    }

    /// After a failure the others have not heard of: "not ready" at their next agreement.
    pub fn fail(&self) {
        let _ = self.agree("a failure on this rank", false);
    }
}

/// The agreement before a test, for messages (`rank 2 could not go on at …`).
pub(crate) fn before(id: BonnieTestId) -> &'static str {
    use BonnieTestId::*;
    match id {
        Putc => "the start of bonnie's per-char write",
        PutBlock => "the start of bonnie's block write",
        Rewrite => "the start of bonnie's rewrite",
        Getc => "the start of bonnie's per-char read",
        GetBlock => "the start of bonnie's block read",
        Seeks => "the start of bonnie's seeks",
        SeqCreate => "the start of bonnie's sequential create",
        SeqStat => "the start of bonnie's sequential stat",
        SeqDel => "the start of bonnie's sequential delete",
        RanCreate => "the start of bonnie's random create",
        RanStat => "the start of bonnie's random stat",
        RanDel => "the start of bonnie's random delete",
    }
}

/// After every rank's checks, before any rank writes.
pub(crate) const CHECKS: &str = "the checks before bonnie's suite";
/// After the last test.
pub(crate) const END: &str = "the end of bonnie's suite";
