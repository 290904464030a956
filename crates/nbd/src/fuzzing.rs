//! The body of the cargo-fuzz target in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through it on a stable toolchain (`tests/fuzz_corpus.rs`). Not
//! an API: it panics when the property it checks does not hold.

use crate::proto::{self, CMD_FLUSH, CMD_READ, CMD_WRITE};
use crate::reply::{Decoder, InFlight, Requests};

/// A fixed set of requests in flight, with guarded buffers: READs of several sizes and
/// offsets, a WRITE and a FLUSH.
pub struct Table {
    pub reqs: Vec<(u64, InFlight, bool)>,
    pub bufs: Vec<Vec<u8>>,
    pub covered: Vec<u64>,
    pub errors: Vec<u32>,
    pub finished: Vec<u64>,
}

/// Bytes kept after each READ buffer, which a decoder must never touch.
pub const GUARD: usize = 64;

impl Table {
    pub fn new(reqs: &[(u64, u16, u64, u32)]) -> Table {
        let mut bufs: Vec<Vec<u8>> = reqs
            .iter()
            .map(|r| vec![0xAA; r.3 as usize + GUARD])
            .collect();
        let reqs = reqs
            .iter()
            .zip(bufs.iter_mut())
            .map(|(&(cookie, cmd, offset, len), b)| {
                let req = InFlight {
                    cmd,
                    offset,
                    len,
                    buf: b.as_mut_ptr(),
                };
                (cookie, req, true)
            })
            .collect();
        Table {
            covered: vec![0; bufs.len()],
            errors: vec![0; bufs.len()],
            reqs,
            bufs,
            finished: Vec::new(),
        }
    }

    fn idx(&self, cookie: u64) -> Option<usize> {
        self.reqs.iter().position(|r| r.0 == cookie && r.2)
    }

    /// Whether the guard bytes after each buffer are untouched.
    pub fn guards_intact(&self) -> bool {
        self.reqs
            .iter()
            .zip(&self.bufs)
            .all(|(r, b)| b[r.1.len as usize..].iter().all(|&x| x == 0xAA))
    }
}

impl Requests for Table {
    fn find(&mut self, cookie: u64) -> Option<InFlight> {
        self.idx(cookie).map(|i| self.reqs[i].1)
    }
    fn covered(&mut self, cookie: u64, bytes: u32) {
        if let Some(i) = self.idx(cookie) {
            self.covered[i] += u64::from(bytes);
        }
    }
    fn failed(&mut self, cookie: u64, errno: u32) {
        if let Some(i) = self.idx(cookie) {
            self.errors[i] = errno;
        }
    }
    fn done(&mut self, cookie: u64) -> Result<(), String> {
        let i = self.idx(cookie).ok_or("not in flight")?;
        let r = self.reqs[i].1;
        if self.errors[i] == 0 && r.cmd == CMD_READ && self.covered[i] != u64::from(r.len) {
            return Err("short READ".into());
        }
        self.reqs[i].2 = false;
        self.finished.push(cookie);
        Ok(())
    }
}

/// Everything a server sends in transmission, in read splits of the first byte's size
/// (its top bit says whether structured replies were agreed), then the option-reply
/// decoders over the same bytes. Nothing may panic, write outside a request's buffer, or
/// complete a request twice.
pub fn replies(data: &[u8]) {
    let Some((&first, stream)) = data.split_first() else {
        return;
    };
    let structured = first & 0x80 != 0;
    let chunk = usize::from(first & 0x7f).max(1);
    let mut table = Table::new(&[
        (1, CMD_READ, 0, 4096),
        (2, CMD_READ, 4096, 512),
        (3, CMD_READ, 1 << 20, 65536),
        (4, CMD_WRITE, 0, 4096),
        (5, CMD_FLUSH, 0, 0),
        (0x1_0000_0006, CMD_READ, 8192, 0),
    ]);
    let mut dec = Decoder::new(structured);
    for piece in stream.chunks(chunk) {
        match dec.feed(piece, &mut table) {
            Ok(n) => assert_eq!(n, piece.len(), "input left unconsumed"),
            Err(e) => {
                assert!(!e.contains('\n'), "multi-line error: {e}");
                break;
            }
        }
    }
    assert!(table.guards_intact(), "a decoder wrote past a READ buffer");
    let mut seen = table.finished.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen.len(),
        table.finished.len(),
        "a request completed twice"
    );

    let _ = proto::parse_info(stream);
    if let Ok(head) = <&[u8; 20]>::try_from(stream.get(..20).unwrap_or(&[])) {
        let _ = proto::parse_opt_reply(head);
    }
}

/// Any text as an NBD URI: a value that prints and parses back to itself, or one error line.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match crate::NbdUrl::parse(text) {
        Ok(u) => {
            let again = crate::NbdUrl::parse(&u.to_string())
                .unwrap_or_else(|e| panic!("{u} does not parse back: {e}"));
            assert_eq!(again, u);
        }
        Err(e) => {
            if !text.chars().any(char::is_control) {
                assert!(!e.to_string().contains('\n'));
            }
        }
    }
}
