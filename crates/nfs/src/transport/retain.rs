//! The client's copy of acknowledged but uncommitted writes (RFC 1813 §3.3.7 and §4.8: a
//! server that restarts may lose UNSTABLE data it acknowledged; the client must still hold
//! it to write it again).
//!
//! A byte ring of fixed capacity with one entry per acknowledged WRITE, in the order the
//! acknowledgements arrived. A COMMIT covers the entries that existed when it was sent (a
//! prefix, remembered as a sequence number); entries become durable when a COMMIT with their
//! verifier answers for them, or when they are written again with FILE_SYNC. Space is
//! reclaimed from the front once the oldest entries are durable. The ring's memory is
//! allocated on first use and never grows. Entries carry the protocol's file handle `H`
//! (NFSv3's `Fh`; NFSv4 addresses files by their open label and keeps `()`).

use std::collections::VecDeque;

use crate::proto::{Fh, Verf};

/// Where one retained write stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Acknowledged under `verf`, not yet known to be on stable storage.
    Acked,
    /// Being written again with FILE_SYNC.
    Rewriting,
    /// On stable storage; its bytes may be reused.
    Durable,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry<H = Fh> {
    pub(crate) fh: H,
    pub(crate) label: u32,
    pub(crate) offset: u64,
    pub(crate) len: u32,
    /// Monotonic byte position of the data in the ring (modulo the capacity).
    pos: u64,
    pub(crate) verf: Verf,
    pub(crate) state: State,
}

pub(crate) struct Retained<H = Fh> {
    buf: Vec<u8>,
    cap: usize,
    /// Next free byte (monotonic).
    head: u64,
    entries: VecDeque<Entry<H>>,
    /// Sequence number of `entries[0]`.
    first_seq: u64,
    /// Entries that are not durable yet, in all and by file label.
    live: usize,
    live_by_label: Vec<u32>,
}

impl<H: Copy> Retained<H> {
    pub(crate) fn new(cap: usize) -> Retained<H> {
        Retained {
            buf: Vec::new(),
            cap,
            head: 0,
            entries: VecDeque::new(),
            first_seq: 0,
            live: 0,
            live_by_label: Vec::new(),
        }
    }

    /// Capacity in bytes (0: nothing is retained).
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes held, including padding skipped at the ring's end.
    pub(crate) fn used(&self) -> usize {
        match self.entries.front() {
            Some(e) => (self.head - e.pos) as usize,
            None => 0,
        }
    }

    /// Entries not yet on stable storage.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Whether an entry of `label` is not yet durable (later writes to the file must then
    /// be retained too, so a rewrite never puts older data over newer).
    pub(crate) fn has_live(&self, label: u32) -> bool {
        self.live_by_label
            .get(label as usize)
            .is_some_and(|&n| n > 0)
    }

    /// Counts `n` entries of `label` as no longer (`up == false`) or again live.
    fn count(&mut self, label: u32, n: u32, up: bool) {
        let i = label as usize;
        if self.live_by_label.len() <= i {
            self.live_by_label.resize(i + 1, 0);
        }
        if up {
            self.live += n as usize;
            self.live_by_label[i] += n;
        } else {
            self.live -= n as usize;
            self.live_by_label[i] -= n;
        }
    }

    /// Sequence number the next entry will get: a COMMIT sent now covers everything below.
    pub(crate) fn next_seq(&self) -> u64 {
        self.first_seq + self.entries.len() as u64
    }

    pub(crate) fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// Copies `data` in as the newest entry; `None` if there is no room now.
    pub(crate) fn keep(
        &mut self,
        fh: &H,
        label: u32,
        offset: u64,
        data: &[u8],
        verf: Verf,
    ) -> Option<u64> {
        let len = data.len();
        if len > self.cap || len > u32::MAX as usize {
            return None;
        }
        let phys = (self.head % self.cap as u64) as usize;
        let skip = if phys + len > self.cap {
            self.cap - phys
        } else {
            0
        };
        if self.used() + skip + len > self.cap {
            return None;
        }
        if self.buf.is_empty() {
            // Zeroed memory comes from the kernel page by page, as it is first touched.
            self.buf = vec![0; self.cap];
        }
        let pos = self.head + skip as u64;
        let at = (pos % self.cap as u64) as usize;
        self.buf[at..at + len].copy_from_slice(data);
        self.head = pos + len as u64;
        self.entries.push_back(Entry {
            fh: *fh,
            label,
            offset,
            len: len as u32,
            pos,
            verf,
            state: State::Acked,
        });
        self.count(label, 1, true);
        Some(self.next_seq() - 1)
    }

    pub(crate) fn get(&self, seq: u64) -> Option<&Entry<H>> {
        let i = seq.checked_sub(self.first_seq)?;
        self.entries.get(usize::try_from(i).ok()?)
    }

    /// Start of an entry's bytes; valid until the entry is durable and trimmed.
    pub(crate) fn data(&self, seq: u64) -> Option<*const u8> {
        let e = self.get(seq)?;
        let at = (e.pos % self.cap as u64) as usize;
        Some(self.buf[at..at + e.len as usize].as_ptr())
    }

    pub(crate) fn set_state(&mut self, seq: u64, state: State) {
        let Some(i) = seq.checked_sub(self.first_seq) else {
            return;
        };
        let Some(e) = usize::try_from(i)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
        else {
            return;
        };
        let (was, label) = (e.state, e.label);
        e.state = state;
        match (was == State::Durable, state == State::Durable) {
            (false, true) => self.count(label, 1, false),
            (true, false) => self.count(label, 1, true),
            _ => {}
        }
    }

    /// Records how a rewrite of `seq` was acknowledged.
    pub(crate) fn settle(&mut self, seq: u64, state: State, verf: Verf) {
        let Some(i) = seq.checked_sub(self.first_seq) else {
            return;
        };
        if let Some(e) = usize::try_from(i)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
        {
            e.verf = verf;
        }
        self.set_state(seq, state);
    }

    /// A COMMIT of `label` sent when `mark` was the next sequence number came back with
    /// `verf`: the entries it covers that were acknowledged under the same verifier are
    /// durable. Returns how many covered entries were acknowledged under another verifier
    /// (the server restarted in between: they must be written again).
    pub(crate) fn committed(&mut self, label: u32, mark: u64, verf: &Verf) -> usize {
        let (mut stale, mut durable) = (0, 0);
        let end = mark
            .saturating_sub(self.first_seq)
            .min(self.entries.len() as u64) as usize;
        for e in self.entries.range_mut(..end) {
            if e.label != label || e.state != State::Acked {
                continue;
            }
            if e.verf == *verf {
                e.state = State::Durable;
                durable += 1;
            } else {
                stale += 1;
            }
        }
        self.count(label, durable, false);
        self.trim();
        stale
    }

    /// Drops durable entries from the front, making their space reusable.
    pub(crate) fn trim(&mut self) {
        while self
            .entries
            .front()
            .is_some_and(|e| e.state == State::Durable)
        {
            self.entries.pop_front();
            self.first_seq += 1;
        }
    }

    /// Labels of files with entries that a COMMIT could make durable (acknowledged, not
    /// being rewritten), each once.
    pub(crate) fn labels_to_commit(&self, out: &mut Vec<(u32, H)>) {
        out.clear();
        for e in &self.entries {
            if e.state == State::Acked && !out.iter().any(|(l, _)| *l == e.label) {
                out.push((e.label, e.fh));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fh() -> Fh {
        Fh::new(&[1, 2, 3]).unwrap()
    }

    fn bytes(seed: u64, len: usize) -> Vec<u8> {
        (0..len).map(|i| (seed as usize * 31 + i) as u8).collect()
    }

    fn read(r: &Retained, seq: u64) -> Vec<u8> {
        let len = r.get(seq).unwrap().len as usize;
        // SAFETY: `data` points at `len` bytes inside the ring.
        unsafe { std::slice::from_raw_parts(r.data(seq).unwrap(), len) }.to_vec()
    }

    #[test]
    fn commit_releases_only_matching_verifiers_of_its_file() {
        let mut r = Retained::new(100);
        let b = r.keep(&fh(), 2, 0, &[2; 30], [1; 8]).unwrap();
        let a = r.keep(&fh(), 1, 0, &[1; 30], [1; 8]).unwrap();
        let mark = r.next_seq();
        let c = r.keep(&fh(), 1, 30, &[3; 30], [1; 8]).unwrap();
        assert!(r.keep(&fh(), 1, 60, &[4; 30], [1; 8]).is_none(), "full");
        assert_eq!(r.committed(1, mark, &[1; 8]), 0);
        // `a` is durable but `b` (another file) still holds the front.
        assert_eq!((r.live(), r.used()), (2, 90));
        assert_eq!(r.get(a).unwrap().state, State::Durable);
        assert_eq!(
            r.committed(2, mark, &[9; 8]),
            1,
            "b was acked under another verifier"
        );
        assert_eq!(r.get(b).unwrap().state, State::Acked);
        r.set_state(b, State::Durable);
        r.trim();
        assert_eq!((r.first_seq(), r.used()), (c, 30));
        assert_eq!(read(&r, c), vec![3; 30]);
    }

    #[test]
    fn wraps_without_splitting_an_entry() {
        let mut r = Retained::new(100);
        let a = r.keep(&fh(), 0, 0, &[1; 60], [0; 8]).unwrap();
        r.set_state(a, State::Durable);
        r.trim();
        // 40 bytes left at the end: a 50-byte entry starts over at the beginning.
        let b = r.keep(&fh(), 0, 0, &[2; 50], [0; 8]).unwrap();
        assert_eq!((read(&r, b), r.used()), (vec![2; 50], 50));
        assert!(r.keep(&fh(), 0, 0, &[3; 60], [0; 8]).is_none());
        assert!(r.keep(&fh(), 0, 0, &[3; 101], [0; 8]).is_none());
    }

    proptest! {
        /// Whatever the order of keeps, commits and rewrites, every entry that is not
        /// durable still holds exactly the bytes it was given, and the ring never holds
        /// more than its capacity.
        #[test]
        fn live_entries_keep_their_bytes(
            ops in proptest::collection::vec((0u8..4, 1usize..70, 0u32..3), 1..200),
            cap in 64usize..400,
        ) {
            let mut r = Retained::new(cap);
            let mut kept: Vec<(u64, u64, usize)> = Vec::new();
            let mut n = 0u64;
            for (op, len, label) in ops {
                match op {
                    0 | 1 => {
                        n += 1;
                        if let Some(seq) = r.keep(&fh(), label, 0, &bytes(n, len), [op; 8]) {
                            kept.push((seq, n, len));
                        }
                    }
                    2 => { r.committed(label, r.next_seq(), &[0; 8]); }
                    _ => {
                        if let Some(&(seq, _, _)) = kept.first() {
                            r.set_state(seq, State::Durable);
                            r.trim();
                        }
                    }
                }
                kept.retain(|&(seq, _, _)| r.get(seq).is_some_and(|e| e.state != State::Durable));
                prop_assert!(r.used() <= cap);
                prop_assert_eq!(r.live(), kept.len());
                for &(seq, seed, len) in &kept {
                    prop_assert_eq!(read(&r, seq), bytes(seed, len));
                }
            }
        }
    }
}
