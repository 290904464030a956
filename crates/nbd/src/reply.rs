//! The transmission phase's reply stream, decoded as it arrives in any splits: simple
//! replies (16-byte header, then a READ's data) and structured reply chunks (20-byte header,
//! then a payload: data at an offset, a hole, an error). READ data is written straight into
//! the request's buffer, at the place each chunk names, after checking that the place lies
//! inside the request: a server cannot make the client write elsewhere.
//!
//! The decoder knows nothing of slots or sockets; it asks [`Requests`] what is in flight
//! under a cookie and tells it about chunks and completions, so the fuzz target drives it
//! with a table of its own.

use crate::proto::*;

/// What the client knows about a request in flight.
#[derive(Clone, Copy, Debug)]
pub struct InFlight {
    pub cmd: u16,
    pub offset: u64,
    pub len: u32,
    /// Where a READ's data goes (`len` bytes, valid until the request completes).
    pub buf: *mut u8,
}

/// The client's side of decoding: its table of requests in flight.
pub trait Requests {
    /// The request in flight under `cookie`.
    fn find(&mut self, cookie: u64) -> Option<InFlight>;
    /// A structured READ chunk (data or hole) covered `bytes` of the request.
    fn covered(&mut self, cookie: u64, bytes: u32);
    /// The server reported error `errno` for the request (the first one is kept).
    fn failed(&mut self, cookie: u64, errno: u32);
    /// The request's last reply arrived; `Err` names a protocol violation found then (a
    /// successful READ whose chunks did not cover it).
    fn done(&mut self, cookie: u64) -> Result<(), String>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Collecting a reply header into `head`.
    Head,
    /// Collecting `need` bytes of a chunk payload into `small` (offsets, errors).
    Small { need: usize },
    /// READ data: `left` bytes still go to `dst`.
    Data { dst: *mut u8, left: usize },
    /// Skipping the rest of an error message.
    Skip { left: usize },
}

/// Decodes one connection's replies.
pub struct Decoder {
    structured: bool,
    state: State,
    head: [u8; STRUCTURED_REPLY_LEN],
    have: usize,
    small: [u8; 32],
    have_small: usize,
    /// The chunk being decoded: cookie, type, flags, payload length.
    cookie: u64,
    kind: u16,
    flags: u16,
    len: u32,
    /// The chunk completes its request when its payload ends (a simple reply's data, or a
    /// DONE chunk).
    finishes: bool,
}

// SAFETY: `State::Data` holds a pointer into a caller's buffer, which the caller keeps valid
// while the request is in flight; the decoder is used by one thread at a time.
unsafe impl Send for Decoder {}

impl Decoder {
    /// `structured`: whether `NBD_OPT_STRUCTURED_REPLY` was agreed (else a structured chunk
    /// is a protocol violation).
    pub fn new(structured: bool) -> Decoder {
        Decoder {
            structured,
            state: State::Head,
            head: [0; STRUCTURED_REPLY_LEN],
            have: 0,
            small: [0; 32],
            have_small: 0,
            cookie: 0,
            kind: 0,
            flags: 0,
            len: 0,
            finishes: false,
        }
    }

    /// Whether the decoder is between replies (nothing partly received).
    pub fn idle(&self) -> bool {
        self.state == State::Head && self.have == 0
    }

    /// Where READ data may be received directly, and how much of it is still to come.
    pub fn direct(&self) -> Option<(*mut u8, usize)> {
        match self.state {
            State::Data { dst, left } => Some((dst, left)),
            _ => None,
        }
    }

    /// `n` bytes were received directly into [`Decoder::direct`]'s place.
    pub fn advance_direct(&mut self, n: usize, reqs: &mut dyn Requests) -> Result<(), String> {
        if let State::Data { dst, left } = self.state {
            let n = n.min(left);
            // SAFETY: stays within the `left` bytes the state points at.
            self.state = State::Data {
                dst: unsafe { dst.add(n) },
                left: left - n,
            };
            if n == left {
                self.payload_done(reqs)?;
            }
        }
        Ok(())
    }

    /// Consumes as much of `input` as makes progress; returns how many bytes were used
    /// (all of them unless an error is returned).
    pub fn feed(&mut self, input: &[u8], reqs: &mut dyn Requests) -> Result<usize, String> {
        let mut used = 0;
        while used < input.len() {
            let rest = &input[used..];
            match self.state {
                State::Head => {
                    let want = self.head_len();
                    let n = (want - self.have).min(rest.len());
                    self.head[self.have..self.have + n].copy_from_slice(&rest[..n]);
                    self.have += n;
                    used += n;
                    if self.have == 4 {
                        self.check_magic()?;
                    }
                    if self.have >= 4 && self.have == self.head_len() {
                        self.header(reqs)?;
                    }
                }
                State::Small { need } => {
                    let n = (need - self.have_small).min(rest.len());
                    self.small[self.have_small..self.have_small + n].copy_from_slice(&rest[..n]);
                    self.have_small += n;
                    used += n;
                    if self.have_small == need {
                        self.small_done(reqs)?;
                    }
                }
                State::Data { dst, left } => {
                    let n = left.min(rest.len());
                    // SAFETY: `dst..dst+left` lies in the request's buffer (checked when the
                    // chunk's header arrived) and does not overlap the input.
                    unsafe { std::ptr::copy_nonoverlapping(rest.as_ptr(), dst, n) };
                    used += n;
                    self.advance_direct(n, reqs)?;
                }
                State::Skip { left } => {
                    let n = left.min(rest.len());
                    used += n;
                    self.state = State::Skip { left: left - n };
                    if n == left {
                        self.payload_done(reqs)?;
                    }
                }
            }
        }
        Ok(used)
    }

    /// The header's length, known once its magic is in.
    fn head_len(&self) -> usize {
        if self.have < 4 {
            return 4;
        }
        match be32(&self.head[..4]) {
            STRUCTURED_REPLY_MAGIC => STRUCTURED_REPLY_LEN,
            _ => SIMPLE_REPLY_LEN,
        }
    }

    /// A wrong magic is reported as soon as its 4 bytes are in, not after a header's worth
    /// of garbage.
    fn check_magic(&self) -> Result<(), String> {
        match be32(&self.head[..4]) {
            SIMPLE_REPLY_MAGIC => Ok(()),
            STRUCTURED_REPLY_MAGIC if self.structured => Ok(()),
            STRUCTURED_REPLY_MAGIC => {
                Err("structured reply chunk, though structured replies were not agreed".into())
            }
            m => Err(format!("reply magic {m:#010x}")),
        }
    }

    fn header(&mut self, reqs: &mut dyn Requests) -> Result<(), String> {
        self.have = 0;
        match be32(&self.head[..4]) {
            SIMPLE_REPLY_MAGIC => self.simple(reqs),
            _ => self.chunk(reqs),
        }
    }

    fn find(&self, reqs: &mut dyn Requests) -> Result<InFlight, String> {
        reqs.find(self.cookie).ok_or_else(|| {
            format!(
                "reply for cookie {:#x}, which is not in flight",
                self.cookie
            )
        })
    }

    fn simple(&mut self, reqs: &mut dyn Requests) -> Result<(), String> {
        let error = be32(&self.head[4..8]);
        self.cookie = be64(&self.head[8..16]);
        let req = self.find(reqs)?;
        self.finishes = true;
        if error != 0 {
            reqs.failed(self.cookie, error);
            return self.payload_done(reqs);
        }
        if req.cmd == CMD_READ && req.len > 0 {
            self.state = State::Data {
                dst: req.buf,
                left: req.len as usize,
            };
            // A simple reply's data covers the whole request.
            reqs.covered(self.cookie, req.len);
            return Ok(());
        }
        if req.cmd == CMD_READ {
            reqs.covered(self.cookie, 0);
        }
        self.payload_done(reqs)
    }

    fn chunk(&mut self, reqs: &mut dyn Requests) -> Result<(), String> {
        self.flags = be16(&self.head[4..6]);
        self.kind = be16(&self.head[6..8]);
        self.cookie = be64(&self.head[8..16]);
        self.len = be32(&self.head[16..20]);
        self.finishes = self.flags & REPLY_FLAG_DONE != 0;
        let req = self.find(reqs)?;
        let len = self.len as usize;
        let need = |n: usize, exact: bool| {
            if (exact && len != n) || len < n {
                Err(format!(
                    "reply chunk type {} of {len} bytes (expected {}{n})",
                    self.kind,
                    if exact { "" } else { "at least " }
                ))
            } else {
                Ok(())
            }
        };
        self.have_small = 0;
        match self.kind {
            REPLY_TYPE_NONE => {
                need(0, true)?;
                if !self.finishes {
                    return Err("NBD_REPLY_TYPE_NONE chunk without the DONE flag".into());
                }
                self.payload_done(reqs)
            }
            REPLY_TYPE_OFFSET_DATA | REPLY_TYPE_OFFSET_HOLE => {
                if req.cmd != CMD_READ {
                    return Err(format!("data chunk in the reply to {}", cmd_name(req.cmd)));
                }
                if self.kind == REPLY_TYPE_OFFSET_HOLE {
                    need(12, true)?;
                    self.state = State::Small { need: 12 };
                } else {
                    need(9, false)?;
                    self.state = State::Small { need: 8 };
                }
                Ok(())
            }
            k if k & REPLY_TYPE_ERROR_BIT != 0 => {
                need(6, false)?;
                if len > 6 + MAX_ERROR_MESSAGE + 8 {
                    return Err(format!("error chunk of {len} bytes"));
                }
                self.state = State::Small { need: 6 };
                Ok(())
            }
            k => Err(format!("reply chunk type {k}, which was not asked for")),
        }
    }

    fn small_done(&mut self, reqs: &mut dyn Requests) -> Result<(), String> {
        let req = self.find(reqs)?;
        let len = self.len as usize;
        match self.kind {
            REPLY_TYPE_OFFSET_DATA => {
                let at = be64(&self.small[..8]);
                let n = len - 8;
                let start = self.place(&req, at, n as u64)?;
                reqs.covered(self.cookie, n as u32);
                // SAFETY: `place` checked that `start + n <= req.len`.
                self.state = State::Data {
                    dst: unsafe { req.buf.add(start) },
                    left: n,
                };
                Ok(())
            }
            REPLY_TYPE_OFFSET_HOLE => {
                let at = be64(&self.small[..8]);
                let n = be32(&self.small[8..12]);
                if n == 0 {
                    return Err("hole chunk of length 0".into());
                }
                let start = self.place(&req, at, u64::from(n))?;
                // SAFETY: as above; a hole reads as zeros.
                unsafe { std::ptr::write_bytes(req.buf.add(start), 0, n as usize) };
                reqs.covered(self.cookie, n);
                self.payload_done(reqs)
            }
            _ => {
                let errno = be32(&self.small[..4]);
                let msg_len = usize::from(be16(&self.small[4..6]));
                let extra = if self.kind == REPLY_TYPE_ERROR_OFFSET {
                    8
                } else {
                    0
                };
                if errno == 0 {
                    return Err("error chunk with error number 0".into());
                }
                if self.kind & 0x7fff <= 2 && 6 + msg_len + extra != len {
                    return Err(format!(
                        "error chunk of {len} bytes with a {msg_len}-byte message"
                    ));
                }
                reqs.failed(self.cookie, errno);
                let left = len - 6;
                if left == 0 {
                    return self.payload_done(reqs);
                }
                self.state = State::Skip { left };
                Ok(())
            }
        }
    }

    /// Where a chunk's `n` bytes at device offset `at` go in the request's buffer.
    fn place(&self, req: &InFlight, at: u64, n: u64) -> Result<usize, String> {
        let end = req.offset + u64::from(req.len);
        if at < req.offset || at.checked_add(n).is_none_or(|e| e > end) {
            return Err(format!(
                "chunk of {n} bytes at offset {at} outside the READ of {} bytes at {}",
                req.len, req.offset
            ));
        }
        Ok((at - req.offset) as usize)
    }

    fn payload_done(&mut self, reqs: &mut dyn Requests) -> Result<(), String> {
        self.state = State::Head;
        if self.finishes {
            self.finishes = false;
            reqs.done(self.cookie)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "reply_tests.rs"]
mod tests;
