//! fio 3.33's data verification: every written block carries, at the start of each verify
//! interval, fio's 40-byte `verify_header` and the checksum of the interval's remaining
//! bytes; reads check them. The layout is fio's so that either tool verifies the other's
//! data (`verify.h`, `verify.c` of fio 3.33):
//!
//! | bytes | field |
//! |---|---|
//! | 0..2 | magic 0xacca (little-endian) |
//! | 2..4 | verify type (fio's number) |
//! | 4..8 | interval length |
//! | 8..16 | random seed of the block's data |
//! | 16..24 | offset of the interval in the file |
//! | 24..32 | time of the write (s, ns) |
//! | 32..34 | thread number |
//! | 34..36 | sequence number of the write in its job, modulo 65536 |
//! | 36..40 | fio's crc32c of bytes 0..36 |
//! | 40.. | checksum (`digest.rs`), then data |
//!
//! Nothing here allocates: buffers are checked and filled in place.

mod digest;
pub mod state;

pub use digest::fio_crc32c;

use storbench_job::{VerifyKind, VerifySpec};

const MAGIC: u16 = 0xacca;
const HDR: usize = 40;
const CRC_AT: usize = 36;

/// What a read block must say about itself.
#[derive(Clone, Copy, Debug)]
pub struct Expect {
    /// Offset of the IO in its file.
    pub offset: u64,
    /// Sequence number of the write that put it there, when known for certain.
    pub numberio: Option<u64>,
    /// The seed written into its headers, when known.
    pub seed: Option<u64>,
}

/// One job clone's verification: fills write buffers and checks read ones.
#[derive(Clone, Debug)]
pub struct Verifier {
    kind: VerifyKind,
    interval: usize,
    swap: usize,
    pattern: Vec<u8>,
    pattern_offsets: Vec<usize>,
    thread: u16,
    /// The interval the last failed check stopped at, and whether its header was bad.
    failed: Option<(usize, bool)>,
    /// A block's data is fio's random data from the seed in its headers (`fio_random_fill`),
    /// so `verify_dump` can rebuild the block expected: set for `verify_dump` when fio's
    /// data would be random all through (no `buffer_compress_percentage`).
    seeded_data: bool,
}

impl Verifier {
    /// None when the job does not verify.
    pub fn new(spec: &VerifySpec, thread: u16) -> Option<Verifier> {
        spec.active().then(|| Verifier {
            kind: spec.kind,
            interval: spec.interval as usize,
            swap: spec.offset as usize,
            pattern: spec.pattern.clone(),
            pattern_offsets: spec.pattern_offsets.clone(),
            thread,
            failed: None,
            seeded_data: false,
        })
    }

    /// Writes fio's random data from each block's seed, and rebuilds the block expected
    /// on a failure, when `on` (see `seeded_data`).
    pub fn with_seeded_data(mut self, on: bool) -> Verifier {
        self.seeded_data = on && self.kind.has_header() && self.pattern.is_empty();
        self
    }

    /// Bytes one header covers in an IO of `len` bytes (fio's `get_hdr_inc`).
    fn step(&self, len: usize) -> usize {
        if self.interval > 0 && self.interval <= len {
            self.interval
        } else {
            len
        }
    }

    /// fio's `%o`: the IO's offset pasted into the pattern.
    fn paste_offset(&mut self, offset: u64) {
        let bytes = offset.to_le_bytes();
        for &at in &self.pattern_offsets {
            let n = (self.pattern.len() - at).min(8);
            self.pattern[at..at + n].copy_from_slice(&bytes[..n]);
        }
    }

    /// Makes `buf`, about to be written at `offset`, a verifiable block: the pattern (when
    /// given) over the data, then each interval's header and checksum.
    pub fn fill(&mut self, buf: &mut [u8], offset: u64, numberio: u64, seed: u64, now: (u32, u32)) {
        if self.seeded_data {
            fio_random_fill(buf, seed);
        }
        if !self.pattern.is_empty() {
            self.paste_offset(offset);
            for chunk in buf.chunks_mut(self.pattern.len()) {
                chunk.copy_from_slice(&self.pattern[..chunk.len()]);
            }
        }
        if !self.kind.has_header() {
            return;
        }
        let step = self.step(buf.len());
        let hlen = self.kind.header_len();
        for (n, chunk) in buf.chunks_mut(step).enumerate() {
            let hdr_offset = offset + (n * self.interval) as u64;
            chunk[0..2].copy_from_slice(&MAGIC.to_le_bytes());
            chunk[2..4].copy_from_slice(&u16::from(self.kind as u8).to_le_bytes());
            chunk[4..8].copy_from_slice(&(step as u32).to_le_bytes());
            chunk[8..16].copy_from_slice(&seed.to_le_bytes());
            chunk[16..24].copy_from_slice(&hdr_offset.to_le_bytes());
            chunk[24..28].copy_from_slice(&now.0.to_le_bytes());
            chunk[28..32].copy_from_slice(&now.1.to_le_bytes());
            chunk[32..34].copy_from_slice(&self.thread.to_le_bytes());
            chunk[34..36].copy_from_slice(&(numberio as u16).to_le_bytes());
            let crc = fio_crc32c(&chunk[..CRC_AT]);
            chunk[CRC_AT..HDR].copy_from_slice(&crc.to_le_bytes());
            let (head, data) = chunk.split_at_mut(hlen);
            digest::digest(self.kind, data, &mut head[HDR..]);
            if self.swap > 0 {
                swap_header(chunk, self.swap, hlen);
            }
        }
    }

    /// Checks `buf`, just read at `e.offset` from `file`. The error is fio's message, on
    /// one line.
    pub fn check(&mut self, buf: &mut [u8], e: &Expect, file: &str) -> Result<(), String> {
        let step = self.step(buf.len());
        let hlen = self.kind.header_len();
        if !self.pattern.is_empty() {
            self.paste_offset(e.offset);
        }
        let io_len = buf.len();
        for (n, chunk) in buf.chunks_mut(step).enumerate() {
            if self.swap > 0 && hlen > 0 {
                swap_header(chunk, self.swap, hlen);
            }
            let where_ = Where {
                file,
                req_offset: e.offset,
                req_len: io_len,
                n,
                step,
            };
            let media = if self.kind.has_header() {
                self.check_header(chunk, e, &where_).inspect_err(|_| {
                    self.failed = Some((n, true));
                })?
            } else {
                self.kind
            };
            let result = match self.kind {
                VerifyKind::Meta if self.pattern.is_empty() => Ok(()),
                VerifyKind::Meta | VerifyKind::PatternHdr | VerifyKind::Pattern => {
                    self.check_pattern(chunk, n, step, &where_)
                }
                kind => check_digest(kind, media, chunk, &where_),
            };
            if let Err(msg) = result {
                self.failed = Some((n, false));
                if media != self.kind {
                    return Err(format!(
                        "{msg}; fio: verify type mismatch ({} media, {} given)",
                        media as u8, self.kind as u8
                    ));
                }
                return Err(msg);
            }
        }
        Ok(())
    }

    /// fio's `verify_header`: magic, length, seed, offset, sequence number, header crc.
    /// Returns the type the block says it was written with.
    fn check_header(&self, h: &[u8], e: &Expect, w: &Where) -> Result<VerifyKind, String> {
        let magic = u16::from_le_bytes([h[0], h[1]]);
        let len = u32::from_le_bytes(h[4..8].try_into().unwrap_or_default());
        let seed = u64::from_le_bytes(h[8..16].try_into().unwrap_or_default());
        let offset = u64::from_le_bytes(h[16..24].try_into().unwrap_or_default());
        let numberio = u16::from_le_bytes([h[34], h[35]]);
        let crc = u32::from_le_bytes(h[CRC_AT..HDR].try_into().unwrap_or_default());
        let want_offset = e.offset + (w.n * self.interval) as u64;
        let bad = if magic != MAGIC {
            Some(format!(
                "verify: bad magic header {magic:x}, wanted {MAGIC:x}"
            ))
        } else if len as usize != w.step {
            Some(format!(
                "verify: bad header length {len}, wanted {}",
                w.step
            ))
        } else if e.seed.is_some_and(|s| s != seed) {
            Some(format!(
                "verify: bad header rand_seed {seed}, wanted {}",
                e.seed.unwrap_or(0)
            ))
        } else if offset != want_offset {
            Some(format!(
                "verify: bad header offset {offset}, wanted {}",
                e.offset
            ))
        } else if e.numberio.is_some_and(|n| n as u16 != numberio) {
            Some(format!(
                "verify: bad header numberio {numberio}, wanted {}",
                e.numberio.unwrap_or(0) as u16
            ))
        } else {
            let calc = fio_crc32c(&h[..CRC_AT]);
            (calc != crc).then(|| format!("verify: bad header crc {crc:x}, calculated {calc:x}"))
        };
        if let Some(what) = bad {
            return Err(format!(
                "{what} at file {} offset {}, length {} (requested block: offset={}, length={})",
                w.file,
                w.block_offset(),
                w.step,
                w.req_offset,
                w.req_len
            ));
        }
        let media = u16::from_le_bytes([h[2], h[3]]);
        Ok(u8::try_from(media)
            .ok()
            .and_then(VerifyKind::from_id)
            .unwrap_or(self.kind))
    }

    /// fio's `verify_io_u_pattern`: the pattern continues across intervals, after the
    /// header where there is one.
    fn check_pattern(&self, chunk: &[u8], n: usize, step: usize, w: &Where) -> Result<(), String> {
        let hsize = if matches!(self.kind, VerifyKind::Pattern) {
            0
        } else {
            HDR + self.kind.digest_len()
        };
        let p = &self.pattern;
        let mut m = (step * n + hsize) % p.len();
        for (i, &b) in chunk[hsize..].iter().enumerate() {
            if b != p[m] {
                return Err(format!(
                    "fio: got pattern '{b:02x}', wanted '{:02x}'. Bad bits {}; fio: bad pattern \
                     block offset {i}; {}",
                    p[m],
                    (b ^ p[m]).count_ones(),
                    w.failed("pattern")
                ));
            }
            m += 1;
            if m == p.len() {
                m = 0;
            }
        }
        Ok(())
    }
}

/// What fio's rebuilt block takes from the read that failed: its time (s, ns) and
/// sequence number.
#[derive(Clone, Copy, Debug)]
pub struct ReadStamp {
    pub time: (u32, u32),
    pub numberio: u64,
}

/// One file `verify_dump` writes: fio's name for it and its bytes.
pub struct Dump<'a> {
    pub name: String,
    pub bytes: std::borrow::Cow<'a, [u8]>,
}

impl Verifier {
    /// What fio's `verify_dump` writes for the interval the last check of `buf` (read at
    /// `offset` from `file`) failed at: the block received, as `FILE.OFFSET.received`, or
    /// `.hdr_fail` when its header was bad; and the block expected, `.expected`, where the
    /// data can be rebuilt: a pattern without a header, or a block with headers whose
    /// data is fio's random data from the seed in its header (`seeded_data`), rebuilt as
    /// fio rebuilds it: the data from that seed over the whole IO, then each interval's
    /// header as of the read (`read`: its time and sequence number, the logged write's for
    /// a verify read, 0 for a read job's) and its checksum. FILE is the file's base name.
    pub fn dumps<'a>(
        &mut self,
        buf: &'a [u8],
        offset: u64,
        file: &str,
        read: ReadStamp,
    ) -> Vec<Dump<'a>> {
        let Some((n, header)) = self.failed.take() else {
            return Vec::new();
        };
        let step = self.step(buf.len());
        let from = (n * step).min(buf.len());
        let chunk = &buf[from..(from + step).min(buf.len())];
        let base = std::path::Path::new(file)
            .file_name()
            .map_or_else(|| file.to_string(), |b| b.to_string_lossy().into_owned());
        let at = offset + from as u64;
        let name = |kind: &str| format!("{base}.{at}.{kind}");
        if header {
            return vec![Dump {
                name: name("hdr_fail"),
                bytes: chunk.into(),
            }];
        }
        let mut out = vec![Dump {
            name: name("received"),
            bytes: chunk.into(),
        }];
        if matches!(self.kind, VerifyKind::Pattern) && !self.pattern.is_empty() {
            let p = &self.pattern;
            let expected = (0..chunk.len()).map(|i| p[(from + i) % p.len()]).collect();
            out.push(Dump {
                name: name("expected"),
                bytes: std::borrow::Cow::Owned(expected),
            });
        } else if self.seeded_data {
            let seed = u64::from_le_bytes(chunk[8..16].try_into().unwrap_or_default());
            let mut block = vec![0u8; buf.len()];
            let swap = std::mem::take(&mut self.swap);
            self.fill(&mut block, offset, read.numberio, seed, read.time);
            self.swap = swap;
            out.push(Dump {
                name: name("expected"),
                bytes: std::borrow::Cow::Owned(block[from..from + chunk.len()].to_vec()),
            });
        }
        out
    }
}

/// fio 3.33's random data from `seed` (`__fill_random_buf`, lib/rand.c, with its default
/// of 4 seed buckets): 64-bit words from four streams, each word the stream's last one
/// times fio's golden ratio, the first of stream `p` the seed times the `p`-th prime; the
/// words past the last whole group of four from the first stream, a last partial word
/// as its low bytes.
pub fn fio_random_fill(buf: &mut [u8], seed: u64) {
    const BUCKETS: usize = 4;
    const PRIMES: [u64; BUCKETS] = [1, 2, 3, 5];
    const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
    let mut s = PRIMES.map(|p| seed.wrapping_mul(p));
    let whole = buf.len() / 8 / BUCKETS * BUCKETS * 8;
    let (groups, rest) = buf.split_at_mut(whole);
    for group in groups.chunks_exact_mut(8 * BUCKETS) {
        for (word, st) in group.chunks_exact_mut(8).zip(s.iter_mut()) {
            word.copy_from_slice(&st.to_le_bytes());
            *st = st.wrapping_mul(GOLDEN_RATIO_64);
        }
    }
    let mut seed = s[0];
    let mut words = rest.chunks_exact_mut(8);
    for word in &mut words {
        word.copy_from_slice(&seed.to_le_bytes());
        seed = seed.wrapping_mul(GOLDEN_RATIO_64);
    }
    let tail = words.into_remainder();
    tail.copy_from_slice(&seed.to_le_bytes()[..tail.len()]);
}

/// fio's check of a trimmed block (`trim_verify_zero`): it must read back as zeros; else
/// fio's message, naming the first byte that is not.
pub fn check_trimmed(buf: &[u8], offset: u64, file: &str) -> Result<(), String> {
    match buf.iter().position(|&b| b != 0) {
        None => Ok(()),
        Some(at) => Err(format!(
            "trim: verify failed at file {file} offset {offset}, length {}, block offset {at}",
            buf.len()
        )),
    }
}

/// fio's checksum check of one interval: the data after the header of the type the block
/// was written with, against the checksum area.
fn check_digest(
    kind: VerifyKind,
    media: VerifyKind,
    chunk: &[u8],
    w: &Where,
) -> Result<(), String> {
    let start = HDR + media.digest_len();
    let len = kind.digest_len();
    let mut got = [0u8; 128];
    digest::digest(kind, &chunk[start.min(chunk.len())..], &mut got[..len]);
    let stored = &chunk[HDR..HDR + len];
    if stored == &got[..len] {
        return Ok(());
    }
    Err(format!(
        "{}: expected CRC {}, received CRC {}",
        w.failed(name(kind)),
        Hex(stored),
        Hex(&got[..len])
    ))
}

/// fio's name of a type in its messages.
fn name(kind: VerifyKind) -> &'static str {
    VerifyKind::NAMES
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or(
            "pattern",
            |(n, _)| if *n == "crc32c-intel" { "crc32c" } else { n },
        )
}

/// fio's `verify_offset`: the header trades places with the bytes `at` into the interval.
fn swap_header(chunk: &mut [u8], at: usize, len: usize) {
    let (head, rest) = chunk.split_at_mut(at);
    head[..len].swap_with_slice(&mut rest[..len]);
}

/// Where an interval is, for fio's messages.
struct Where<'a> {
    file: &'a str,
    req_offset: u64,
    req_len: usize,
    n: usize,
    step: usize,
}

impl Where<'_> {
    fn block_offset(&self) -> u64 {
        self.req_offset + (self.n * self.step) as u64
    }

    /// fio's `log_verify_failure` line.
    fn failed(&self, name: &str) -> String {
        format!(
            "{name}: verify failed at file {} offset {}, length {} (requested block: offset={}, length={})",
            self.file,
            self.block_offset(),
            self.step,
            self.req_offset,
            self.req_len
        )
    }
}

struct Hex<'a>(&'a [u8]);

impl std::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: VerifyKind, interval: u64, offset: u64) -> VerifySpec {
        VerifySpec {
            kind,
            interval,
            offset,
            ..VerifySpec::default()
        }
    }

    #[test]
    fn a_trimmed_block_must_be_zeros_and_names_its_first_other_byte() {
        let mut buf = vec![0u8; 4096];
        assert!(check_trimmed(&buf, 8192, "f").is_ok());
        buf[100] = 7;
        assert_eq!(
            check_trimmed(&buf, 8192, "f").unwrap_err(),
            "trim: verify failed at file f offset 8192, length 4096, block offset 100"
        );
    }

    fn block(v: &mut Verifier, at: u64) -> Vec<u8> {
        let mut buf: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
        v.fill(&mut buf, at, 5, 0x1234, (1, 2));
        buf
    }

    #[test]
    fn every_kind_fills_what_it_checks_and_finds_a_flipped_byte() {
        let expect = Expect {
            offset: 65536,
            numberio: Some(5),
            seed: Some(0x1234),
        };
        for (_, kind) in VerifyKind::NAMES.iter().filter(|(_, k)| k.has_header()) {
            let mut v = Verifier::new(&spec(*kind, 4096, 0), 1).unwrap();
            let mut buf = block(&mut v, 65536);
            assert_eq!(&buf[0..2], &[0xca, 0xac], "{kind:?}");
            assert_eq!(
                u64::from_le_bytes(buf[4096 + 16..4096 + 24].try_into().unwrap()),
                69632
            );
            let mut good = block(&mut v, 65536);
            v.check(&mut good, &expect, "f").unwrap();
            buf[4096 + 30] ^= 1;
            let err = v.check(&mut buf, &expect, "f").unwrap_err();
            assert!(
                err.contains("bad header crc") && err.contains("offset 69632"),
                "{err}"
            );
            if *kind != VerifyKind::Meta && *kind != VerifyKind::Sha512 {
                let mut buf = block(&mut v, 65536);
                buf[5000] ^= 0x80;
                let err = v.check(&mut buf, &expect, "f").unwrap_err();
                assert!(
                    err.contains("verify failed at file f offset 69632, length 4096"),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn wrong_offset_sequence_and_swapped_headers() {
        let mut v = Verifier::new(&spec(VerifyKind::Crc32c, 0, 1024), 1).unwrap();
        let mut buf = block(&mut v, 0);
        assert_ne!(&buf[0..2], &[0xca, 0xac], "the header moved to 1024");
        assert_eq!(&buf[1024..1026], &[0xca, 0xac]);
        let ok = Expect {
            offset: 0,
            numberio: Some(5),
            seed: None,
        };
        v.check(&mut buf.clone(), &ok, "f").unwrap();
        let moved = Expect { offset: 8192, ..ok };
        let err = v.check(&mut buf.clone(), &moved, "f").unwrap_err();
        assert!(
            err.starts_with("verify: bad header offset 0, wanted 8192"),
            "{err}"
        );
        let older = Expect {
            numberio: Some(4),
            ..ok
        };
        let err = v.check(&mut buf, &older, "f").unwrap_err();
        assert!(
            err.starts_with("verify: bad header numberio 5, wanted 4"),
            "{err}"
        );
    }

    #[test]
    fn fios_random_data_takes_four_streams_then_the_first_for_the_rest() {
        const G: u64 = 0x61C8_8646_80B5_83EB;
        let mut buf = vec![0u8; 32 + 8 + 3];
        fio_random_fill(&mut buf, 7);
        let word = |i: usize| u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!([word(0), word(1), word(2), word(3)], [7, 14, 21, 35]);
        assert_eq!(word(4), 7u64.wrapping_mul(G), "the first stream goes on");
        let last = 7u64.wrapping_mul(G).wrapping_mul(G).to_le_bytes();
        assert_eq!(&buf[40..], &last[..3]);
    }

    #[test]
    fn patterns_with_and_without_header() {
        let mut s = spec(VerifyKind::Pattern, 4096, 0);
        s.pattern = vec![1, 2, 3];
        let mut v = Verifier::new(&s, 1).unwrap();
        let mut buf = block(&mut v, 0);
        assert_eq!(&buf[..6], &[1, 2, 3, 1, 2, 3]);
        let e = Expect {
            offset: 0,
            numberio: None,
            seed: None,
        };
        v.check(&mut buf.clone(), &e, "f").unwrap();
        buf[4097] = 9;
        let err = v.check(&mut buf, &e, "f").unwrap_err();
        assert!(
            err.contains("got pattern '09', wanted '03'") && err.contains("offset 4096"),
            "{err}"
        );
    }
}
