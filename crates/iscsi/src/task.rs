//! The table of SCSI tasks in flight, indexed by Initiator Task Tag.
//!
//! An ITT is the slot index in the low 16 bits and a per-slot generation in bits 16..31
//! (high bit clear), so a late reply to a re-issued or finished task never matches a new
//! one. ITTs with the high bit set belong to session-level exchanges (pings, text, logout).

use std::time::Instant;

use crate::error::ScsiFailure;
use crate::scsi::Cdb;

/// Data direction of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    None,
    Read,
    Write,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Free,
    /// Accepted, waiting for the CmdSN window (or a retry delay) before it is sent.
    Waiting,
    /// Sent; a response is due.
    Sent,
}

/// One SCSI task.
#[derive(Clone, Copy, Debug)]
pub struct Task {
    pub state: State,
    pub itt: u32,
    pub generation: u16,
    /// The caller's tag, echoed in the completion.
    pub tag: u64,
    pub cdb: Cdb,
    pub dir: Dir,
    /// Read destination or write source; valid until completion (caller's contract).
    pub buf: *mut u8,
    pub len: u32,
    /// Data-In bytes received so far (reads).
    pub received: u32,
    pub unit_attention_retries: u8,
    pub busy_retries: u16,
    /// Not to be sent before this instant (BUSY / TASK SET FULL back-off).
    pub not_before: Option<Instant>,
    /// When it was last sent (for the stuck-task timeout).
    pub sent_at: Option<Instant>,
}

impl Task {
    const FREE: Task = Task {
        state: State::Free,
        itt: 0,
        generation: 0,
        tag: 0,
        cdb: [0; 16],
        dir: Dir::None,
        buf: std::ptr::null_mut(),
        len: 0,
        received: 0,
        unit_attention_retries: 0,
        busy_retries: 0,
        not_before: None,
        sent_at: None,
    };
}

/// How a task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Bytes transferred.
    Done(u32),
    Failed {
        cdb: Cdb,
        failure: ScsiFailure,
    },
}

/// A finished task as handed back to the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    pub tag: u64,
    pub outcome: Outcome,
}

/// Fixed-size task table with a free list.
pub struct Tasks {
    slots: Vec<Task>,
    free: Vec<u16>,
}

impl Tasks {
    pub fn new(capacity: usize) -> Tasks {
        let capacity = capacity.clamp(1, 0x7fff);
        Tasks {
            slots: vec![Task::FREE; capacity],
            free: (0..capacity as u16).rev().collect(),
        }
    }

    pub fn in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// Takes a free slot and gives it a fresh ITT.
    pub fn alloc(&mut self) -> Option<u16> {
        let idx = self.free.pop()?;
        let t = &mut self.slots[idx as usize];
        t.generation = t.generation.wrapping_add(1) & 0x7fff;
        t.itt = ((t.generation as u32) << 16) | idx as u32;
        Some(idx)
    }

    /// Gives a slot a new ITT (before re-sending it), so late replies to the old one miss.
    pub fn renew_itt(&mut self, idx: u16) {
        let t = &mut self.slots[idx as usize];
        t.generation = t.generation.wrapping_add(1) & 0x7fff;
        t.itt = ((t.generation as u32) << 16) | idx as u32;
    }

    pub fn release(&mut self, idx: u16) {
        let t = &mut self.slots[idx as usize];
        if t.state != State::Free {
            t.state = State::Free;
            t.buf = std::ptr::null_mut();
            self.free.push(idx);
        }
    }

    /// The slot of a live task with this ITT.
    #[inline]
    pub fn find(&self, itt: u32) -> Option<u16> {
        if itt & 0x8000_0000 != 0 {
            return None;
        }
        let idx = (itt & 0xffff) as usize;
        let t = self.slots.get(idx)?;
        (t.state == State::Sent && t.itt == itt).then_some(idx as u16)
    }

    #[inline]
    pub fn get(&self, idx: u16) -> &Task {
        &self.slots[idx as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, idx: u16) -> &mut Task {
        &mut self.slots[idx as usize]
    }

    /// Slots of live (waiting or sent) tasks.
    pub fn live(&self) -> impl Iterator<Item = u16> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state != State::Free)
            .map(|(i, _)| i as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itts_are_unique_and_never_reserved() {
        let mut t = Tasks::new(4);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let i = t.alloc().unwrap();
            let itt = t.get(i).itt;
            assert_ne!(itt, crate::pdu::RESERVED_TAG);
            assert_eq!(itt & 0x8000_0000, 0);
            t.get_mut(i).state = State::Sent;
            assert_eq!(t.find(itt), Some(i));
            seen.insert(itt);
            t.release(i);
            assert_eq!(t.find(itt), None);
        }
        // LIFO reuse of one slot walks through all 2^15 generations before repeating.
        assert_eq!(seen.len(), 0x8000);
    }

    #[test]
    fn table_fills_up() {
        let mut t = Tasks::new(2);
        let a = t.alloc().unwrap();
        t.get_mut(a).state = State::Sent;
        let b = t.alloc().unwrap();
        t.get_mut(b).state = State::Waiting;
        assert!(t.alloc().is_none());
        assert_eq!(t.live().count(), 2);
        t.release(a);
        assert_eq!(t.in_use(), 1);
    }
}
