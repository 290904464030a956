//! Reassembly of record-marked RPC messages (RFC 5531 §11) from a byte stream, in one
//! reusable buffer. Fragments of a multi-fragment record are joined in place by removing
//! the marks between them, so a decoded record is always one contiguous slice.

use std::io::{self, Read};
use std::ops::Range;

use crate::rpc::LAST_FRAGMENT;

/// Framing violations: the stream cannot be trusted after one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("record of more than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("empty non-final record fragment")]
    EmptyFragment,
}

/// Incremental record reader over a fixed-capacity buffer that grows only for records
/// larger than any seen before (up to `limit`).
pub struct RecordReader {
    buf: Vec<u8>,
    /// Start of the record being assembled (after its first mark).
    start: usize,
    /// End of the payload gathered so far for that record.
    payload_end: usize,
    /// End of the bytes received.
    end: usize,
    /// Payload bytes still to come in the current fragment.
    frag_left: usize,
    /// The current fragment is the record's last.
    last: bool,
    /// Inside a record (a mark was read and the record is not complete yet).
    in_record: bool,
    limit: usize,
}

impl RecordReader {
    pub fn new(capacity: usize, limit: usize) -> Self {
        RecordReader {
            buf: vec![0; capacity.max(64)],
            start: 0,
            payload_end: 0,
            end: 0,
            frag_left: 0,
            last: false,
            in_record: false,
            limit,
        }
    }

    /// Forgets everything buffered (after a reconnect).
    pub fn reset(&mut self) {
        self.start = 0;
        self.payload_end = 0;
        self.end = 0;
        self.frag_left = 0;
        self.last = false;
        self.in_record = false;
    }

    /// Reads once from `src` into free space. `Ok(0)` means end of stream.
    pub fn fill(&mut self, src: &mut impl Read) -> io::Result<usize> {
        self.fill_at_most(src, usize::MAX)
    }

    /// Like [`RecordReader::fill`], asking for at most `max` bytes.
    pub fn fill_at_most(&mut self, src: &mut impl Read, max: usize) -> io::Result<usize> {
        self.make_room();
        if self.end == self.buf.len() {
            return Err(io::Error::other("RPC record buffer full"));
        }
        let stop = self.buf.len().min(self.end.saturating_add(max));
        let n = src.read(&mut self.buf[self.end..stop])?;
        self.end += n;
        Ok(n)
    }

    /// The start of a record still being received, if it is the record's only fragment:
    /// its bytes so far and how many more the fragment holds. (Call after `next_record`
    /// returned `None`.)
    pub fn partial(&self) -> Option<(&[u8], usize)> {
        let single = self.in_record && self.last && self.payload_end == self.end;
        // A record whose earlier fragments were joined has its first mark further back.
        let first = self.start >= 4
            && u32::from_be_bytes(self.buf[self.start - 4..self.start].try_into().ok()?)
                & LAST_FRAGMENT
                != 0;
        (single && first && self.frag_left > 0)
            .then(|| (&self.buf[self.start..self.end], self.frag_left))
    }

    /// Forgets the partial record: its remaining bytes are taken from the stream by the
    /// caller, and the next byte the reader sees starts a new record mark.
    pub fn drop_partial(&mut self) {
        self.end = self.start - 4;
        self.payload_end = self.end;
        self.start = self.end;
        self.frag_left = 0;
        self.last = false;
        self.in_record = false;
    }

    /// Copies bytes in directly (tests and fuzzing).
    pub fn push(&mut self, data: &[u8]) -> usize {
        self.make_room();
        let n = data.len().min(self.buf.len() - self.end);
        self.buf[self.end..self.end + n].copy_from_slice(&data[..n]);
        self.end += n;
        n
    }

    /// Moves the unfinished tail to the front, and grows for a record that cannot fit.
    fn make_room(&mut self) {
        // An unfinished record keeps its first mark (see `partial`).
        let keep_from = if self.in_record {
            self.start - 4
        } else {
            self.payload_end
        };
        if keep_from > 0 && (self.end == self.buf.len() || keep_from > self.buf.len() / 2) {
            self.buf.copy_within(keep_from..self.end, 0);
            self.start = self.start.saturating_sub(keep_from);
            self.payload_end -= keep_from;
            self.end -= keep_from;
        }
        if self.end == self.buf.len() && self.buf.len() < self.limit + 8 {
            let grown = (self.buf.len() * 2).min(self.limit + 8);
            self.buf.resize(grown, 0);
        }
    }

    /// The next complete record, if one is buffered. The returned range stays valid until
    /// the next `fill`, `push` or `next_record` call.
    pub fn next_record(&mut self) -> Result<Option<Range<usize>>, FrameError> {
        loop {
            if self.frag_left == 0 && !(self.in_record && self.last) {
                if self.end - self.payload_end < 4 {
                    return Ok(None);
                }
                let at = self.payload_end;
                let mark = u32::from_be_bytes(self.buf[at..at + 4].try_into().unwrap_or([0; 4]));
                let len = (mark & !LAST_FRAGMENT) as usize;
                let last = mark & LAST_FRAGMENT != 0;
                if len == 0 && !last {
                    return Err(FrameError::EmptyFragment);
                }
                if self.in_record {
                    // Join: drop the mark between this fragment and the previous one.
                    self.buf.copy_within(at + 4..self.end, at);
                    self.end -= 4;
                } else {
                    self.start = at + 4;
                    self.payload_end = self.start;
                    self.in_record = true;
                }
                if self.payload_end - self.start + len > self.limit {
                    return Err(FrameError::TooLarge { limit: self.limit });
                }
                self.frag_left = len;
                self.last = last;
            }
            let take = self.frag_left.min(self.end - self.payload_end);
            self.payload_end += take;
            self.frag_left -= take;
            if self.frag_left > 0 {
                return Ok(None);
            }
            if self.last {
                self.in_record = false;
                self.last = false;
                return Ok(Some(self.start..self.payload_end));
            }
        }
    }

    pub fn record(&self, range: Range<usize>) -> &[u8] {
        &self.buf[range]
    }

    /// Whether bytes of an unfinished record are buffered.
    pub fn is_mid_record(&self) -> bool {
        self.in_record || self.end > self.payload_end
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(records: &[Vec<Vec<u8>>]) -> Vec<u8> {
        let mut out = Vec::new();
        for frags in records {
            for (i, f) in frags.iter().enumerate() {
                let last = if i + 1 == frags.len() {
                    LAST_FRAGMENT
                } else {
                    0
                };
                out.extend_from_slice(&(last | f.len() as u32).to_be_bytes());
                out.extend_from_slice(f);
            }
        }
        out
    }

    fn drain(r: &mut RecordReader, got: &mut Vec<Vec<u8>>) -> Result<(), FrameError> {
        while let Some(range) = r.next_record()? {
            got.push(r.record(range).to_vec());
        }
        Ok(())
    }

    #[test]
    fn joins_fragments() {
        let stream = frame(&[
            vec![b"abc".to_vec(), b"defg".to_vec()],
            vec![b"xyz".to_vec()],
        ]);
        let mut r = RecordReader::new(64, 1024);
        r.push(&stream);
        let mut got = Vec::new();
        drain(&mut r, &mut got).unwrap();
        assert_eq!(got, vec![b"abcdefg".to_vec(), b"xyz".to_vec()]);
        assert!(!r.is_mid_record());
    }

    #[test]
    fn refuses_oversized_records() {
        let mut r = RecordReader::new(64, 100);
        r.push(&(LAST_FRAGMENT | 5000).to_be_bytes());
        assert_eq!(r.next_record(), Err(FrameError::TooLarge { limit: 100 }));
    }

    #[test]
    fn refuses_empty_middle_fragment() {
        let mut r = RecordReader::new(64, 100);
        r.push(&0u32.to_be_bytes());
        assert_eq!(r.next_record(), Err(FrameError::EmptyFragment));
    }

    proptest! {
        /// Any split of any framed stream yields exactly the records that went in.
        #[test]
        fn reassembles_any_split(
            records in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..300), 1..4), 1..6),
            chunk in 1usize..200,
            cap in 64usize..2048,
        ) {
            let stream = frame(&records);
            let mut r = RecordReader::new(cap, 4096);
            let mut got = Vec::new();
            let mut rest = &stream[..];
            while !rest.is_empty() {
                let n = r.push(&rest[..chunk.min(rest.len())]);
                rest = &rest[n..];
                drain(&mut r, &mut got).unwrap();
            }
            let want: Vec<Vec<u8>> = records.iter().map(|f| f.concat()).collect();
            prop_assert_eq!(got, want);
        }

        /// While a single-fragment record arrives, `partial` shows a prefix of it and how
        /// much is still to come; taking the rest from the stream directly (as a direct
        /// READ does) leaves the reader in step for the record after it.
        #[test]
        fn partial_records_can_be_taken_over(
            first in proptest::collection::vec(any::<u8>(), 1..400),
            second in proptest::collection::vec(any::<u8>(), 1..50),
            cut in 0usize..400,
            cap in 64usize..1024,
        ) {
            let stream = frame(&[vec![first.clone()], vec![second.clone()]]);
            let cut = 4 + cut % first.len();
            let mut r = RecordReader::new(cap, 4096);
            let mut fed = 0;
            while fed < cut {
                fed += r.push(&stream[fed..cut]);
                prop_assert_eq!(r.next_record().unwrap(), None);
            }
            let (head, left) = r.partial().expect("a record is under way");
            prop_assert_eq!(head, &first[..cut - 4]);
            prop_assert_eq!(left, first.len() - (cut - 4));
            r.drop_partial();
            let mut rest = &stream[4 + first.len()..];
            let mut got = Vec::new();
            while !rest.is_empty() {
                let n = r.push(rest);
                rest = &rest[n..];
                drain(&mut r, &mut got).unwrap();
            }
            prop_assert_eq!(got, vec![second]);
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600), chunk in 1usize..100) {
            let mut r = RecordReader::new(64, 256);
            let mut rest = &data[..];
            while !rest.is_empty() {
                let n = r.push(&rest[..chunk.min(rest.len())]);
                if n == 0 { break; }
                rest = &rest[n..];
                let mut got = Vec::new();
                if drain(&mut r, &mut got).is_err() { break; }
            }
        }
    }
}
