//! The session's slot table (RFC 8881 §2.10.6): one sequence id per slot, a slot reused
//! only after its reply, the id bumped when SEQUENCE succeeded on it.

/// Fore-channel slots and their sequence ids.
#[derive(Debug)]
pub(crate) struct Slots {
    seq: Vec<u32>,
    free: Vec<u32>,
}

impl Slots {
    /// `n` slots, each starting at sequence id 1.
    pub(crate) fn new(n: u32) -> Slots {
        let n = n.max(1);
        Slots {
            seq: vec![1; n as usize],
            free: (0..n).rev().collect(),
        }
    }

    pub(crate) fn width(&self) -> u32 {
        self.seq.len() as u32
    }

    pub(crate) fn free(&self) -> u32 {
        self.free.len() as u32
    }

    /// The highest slot id, as SEQUENCE states it.
    pub(crate) fn highest(&self) -> u32 {
        self.width() - 1
    }

    /// A free slot and the sequence id to send on it.
    pub(crate) fn take(&mut self) -> Option<(u32, u32)> {
        let s = self.free.pop()?;
        Some((s, self.seq[s as usize]))
    }

    /// Gives a slot back after its reply; `done` when SEQUENCE succeeded on it.
    pub(crate) fn put(&mut self, slot: u32, done: bool) {
        if done {
            let s = &mut self.seq[slot as usize];
            *s = s.wrapping_add(1);
        }
        self.free.push(slot);
    }

    #[cfg(test)]
    pub(crate) fn busy(&self) -> usize {
        self.seq.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Slots;

    #[test]
    fn a_slot_advances_only_when_its_sequence_succeeded() {
        let mut s = Slots::new(2);
        assert_eq!(s.highest(), 1);
        let (a, seq) = s.take().unwrap();
        assert_eq!((a, seq), (0, 1));
        let (b, _) = s.take().unwrap();
        assert!(s.take().is_none(), "both slots are in use");
        s.put(a, true);
        s.put(b, false);
        assert_eq!(s.take().unwrap(), (b, 1));
        assert_eq!(s.take().unwrap(), (a, 2));
        assert_eq!(s.busy(), 2);
    }
}
