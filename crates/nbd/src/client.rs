//! One NBD connection in transmission: requests pipelined by cookie within a bounded
//! window, sent with gathered writes (WRITE payloads from the caller's buffer, never
//! copied), replies decoded as they arrive with READ data landing in the caller's buffer
//! (large payloads read straight into it). Every wait is bounded: with requests in flight
//! and no reply byte for `timeout`, the server counts as lost.
//!
//! Nothing allocates per request once the connection is set up: slots, the send queue, the
//! receive buffer and the completion queue are sized at connect time.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::error::{NbdError, Result};
use crate::handshake::{self, Export};
use crate::proto::*;
use crate::reply::{Decoder, InFlight, Requests};
use crate::sock::Sock;
use crate::url::{Endpoint, NbdUrl};

/// Receive buffer size; READ payloads of at least [`DIRECT_MIN`] still to come are read
/// straight into the caller's buffer instead.
const RX_BUF: usize = 256 << 10;
const DIRECT_MIN: usize = 16 << 10;
const IOV_BATCH: usize = 64;
/// How long requests in flight may still be answered after a stop request.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// How to connect and how patient to be.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Bounds the connect, the handshake, and every wait for a reply.
    pub timeout: Duration,
    /// Requests in flight at most (the job's iodepth).
    pub window: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            timeout: Duration::from_secs(30),
            window: 1,
        }
    }
}

/// A data or control request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    Read,
    Write,
    Flush,
    Trim,
    WriteZeroes,
}

impl Cmd {
    fn wire(self) -> u16 {
        match self {
            Cmd::Read => CMD_READ,
            Cmd::Write => CMD_WRITE,
            Cmd::Flush => CMD_FLUSH,
            Cmd::Trim => CMD_TRIM,
            Cmd::WriteZeroes => CMD_WRITE_ZEROES,
        }
    }
}

#[derive(Clone, Copy)]
struct Slot {
    busy: bool,
    cookie: u64,
    req: InFlight,
    user: u64,
    errno: u32,
    covered: u64,
}

/// The requests in flight and the finished ones not yet handed over.
struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
    done: VecDeque<(u64, i64)>,
    generation: u32,
    /// The first failed request's command and error, for the engine's message.
    first_error: Option<(u16, u64, u32)>,
}

impl Table {
    fn slot(&mut self, cookie: u64) -> Option<&mut Slot> {
        self.slots
            .get_mut((cookie & 0xffff_ffff) as usize)
            .filter(|s| s.busy && s.cookie == cookie)
    }
}

impl Requests for Table {
    fn find(&mut self, cookie: u64) -> Option<InFlight> {
        self.slot(cookie).map(|s| s.req)
    }

    fn covered(&mut self, cookie: u64, bytes: u32) {
        if let Some(s) = self.slot(cookie) {
            s.covered += u64::from(bytes);
        }
    }

    fn failed(&mut self, cookie: u64, errno: u32) {
        if let Some(s) = self.slot(cookie)
            && s.errno == 0
        {
            s.errno = errno;
        }
    }

    fn done(&mut self, cookie: u64) -> std::result::Result<(), String> {
        let Some(s) = self.slot(cookie) else {
            return Err(format!(
                "completion for cookie {cookie:#x}, which is not in flight"
            ));
        };
        let s = *s;
        if s.errno == 0 && s.req.cmd == CMD_READ && s.covered != u64::from(s.req.len) {
            return Err(format!(
                "READ of {} bytes at {} answered with {} bytes",
                s.req.len, s.req.offset, s.covered
            ));
        }
        let result = if s.errno != 0 {
            self.first_error
                .get_or_insert((s.req.cmd, s.req.offset, s.errno));
            -i64::from(s.errno)
        } else if s.req.cmd == CMD_FLUSH {
            0
        } else {
            i64::from(s.req.len)
        };
        let idx = (cookie & 0xffff_ffff) as u32;
        self.slots[idx as usize].busy = false;
        self.free.push(idx);
        self.done.push_back((s.user, result));
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Seg {
    /// A request header at `out[start..start + REQUEST_LEN]`.
    Head(usize),
    /// A WRITE payload the caller keeps valid until the request completes.
    Ext(*const u8, usize),
}

/// A connected NBD client for one export.
pub struct Client {
    sock: Sock,
    url: NbdUrl,
    server: String,
    export: Export,
    cfg: Config,
    table: Table,
    decoder: Decoder,
    out: Vec<u8>,
    segs: Vec<Seg>,
    seg_idx: usize,
    seg_off: usize,
    iov: Vec<libc::iovec>,
    rx: Box<[u8]>,
    rx_start: usize,
    rx_end: usize,
    /// The last time a reply byte arrived (or the window became non-empty).
    last_rx: Instant,
    /// Why the connection is unusable; every later call fails with it.
    dead: Option<String>,
    abort: fn() -> bool,
    stopping: Option<Instant>,
    peak: usize,
}

// SAFETY: the raw pointers are callers' buffers which they keep valid until the requests
// complete; the client is used by one thread at a time.
unsafe impl Send for Client {}

fn never() -> bool {
    false
}

impl Client {
    /// Connects to `url`'s server and negotiates its export.
    pub fn connect(url: &NbdUrl, cfg: Config) -> Result<Client> {
        let server = url.server();
        let addrs = match &url.endpoint {
            Endpoint::Tcp { host, port } => {
                storbench_resolve::resolve(host, *port).map_err(|source| NbdError::Resolve {
                    host: host.clone(),
                    source,
                })?
            }
            Endpoint::Unix { .. } => Vec::new(),
        };
        let sock = Sock::connect(&url.endpoint, &addrs, cfg.timeout).map_err(|source| {
            NbdError::Connect {
                server: server.clone(),
                source,
            }
        })?;
        let export = handshake::negotiate(&sock, &server, &url.export, cfg.timeout)?;
        let window = cfg.window.clamp(1, 1 << 20);
        let slots = vec![
            Slot {
                busy: false,
                cookie: 0,
                req: InFlight {
                    cmd: 0,
                    offset: 0,
                    len: 0,
                    buf: std::ptr::null_mut(),
                },
                user: 0,
                errno: 0,
                covered: 0,
            };
            window
        ];
        Ok(Client {
            decoder: Decoder::new(export.structured),
            sock,
            url: url.clone(),
            server,
            export,
            cfg: Config { window, ..cfg },
            table: Table {
                slots,
                free: (0..window as u32).rev().collect(),
                done: VecDeque::with_capacity(window),
                generation: 0,
                first_error: None,
            },
            out: Vec::with_capacity(window * REQUEST_LEN),
            segs: Vec::with_capacity(window * 2),
            seg_idx: 0,
            seg_off: 0,
            iov: Vec::with_capacity(IOV_BATCH),
            rx: vec![0u8; RX_BUF].into_boxed_slice(),
            rx_start: 0,
            rx_end: 0,
            last_rx: Instant::now(),
            dead: None,
            abort: never,
            stopping: None,
            peak: 0,
        })
    }

    pub fn export(&self) -> &Export {
        &self.export
    }

    pub fn url(&self) -> &NbdUrl {
        &self.url
    }

    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.sock.peer
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.sock.local
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.table.slots.len() - self.table.free.len()
    }

    /// The most requests that were in flight at once.
    pub fn peak_in_flight(&self) -> usize {
        self.peak
    }

    /// A check polled while waiting, so a stop request (Ctrl-C) ends a wait on a silent
    /// server [`STOP_GRACE`] after it.
    pub fn set_abort(&mut self, abort: fn() -> bool) {
        self.abort = abort;
    }

    /// The first request the server failed: command, offset and error number.
    pub fn first_error(&self) -> Option<(&'static str, u64, u32)> {
        self.table
            .first_error
            .map(|(c, off, e)| (cmd_name(c), off, e))
    }

    fn invalid(&self, what: String) -> NbdError {
        NbdError::Invalid {
            server: self.url.to_string(),
            what,
        }
    }

    /// Checks a request against what the export offers, before anything is sent.
    fn check(&self, cmd: Cmd, offset: u64, len: u32, fua: bool) -> Result<()> {
        let e = &self.export;
        let name = cmd_name(cmd.wire());
        let needs = |flag: u16, what: &str| {
            if e.can(flag) {
                Ok(())
            } else {
                Err(self.invalid(format!("the server does not offer {what}")))
            }
        };
        match cmd {
            Cmd::Flush => return needs(TF_SEND_FLUSH, "FLUSH"),
            Cmd::Trim => needs(TF_SEND_TRIM, "TRIM")?,
            Cmd::WriteZeroes => needs(TF_SEND_WRITE_ZEROES, "WRITE_ZEROES")?,
            Cmd::Read | Cmd::Write if len > e.max_payload => {
                return Err(self.invalid(format!(
                    "{name} of {len} bytes is over the server's limit of {} bytes per request",
                    e.max_payload
                )));
            }
            _ => {}
        }
        if cmd != Cmd::Read && e.read_only() {
            return Err(self.invalid(format!("{name} on a read-only export")));
        }
        if fua {
            needs(TF_SEND_FUA, "FUA (forced unit access)")?;
        }
        if offset
            .checked_add(u64::from(len))
            .is_none_or(|end| end > e.size)
        {
            return Err(self.invalid(format!(
                "{name} of {len} bytes at offset {offset} is beyond the export's {} bytes",
                e.size
            )));
        }
        let min = u64::from(e.min_block);
        if !offset.is_multiple_of(min) || !u64::from(len).is_multiple_of(min) {
            return Err(self.invalid(format!(
                "{name} of {len} bytes at offset {offset} is not a multiple of the export's \
                 {min}-byte minimum block size"
            )));
        }
        Ok(())
    }

    /// Queues one request; returns false if the window is full. `buf` is where a READ's
    /// data goes or a WRITE's comes from (`len` bytes; ignored for other commands).
    /// Requests go out at the next [`Client::flush`] or wait.
    ///
    /// # Safety
    /// `buf` must stay valid (and, for a WRITE, unchanged) until the request's completion
    /// is handed back by [`Client::wait`], or the client is dropped.
    pub unsafe fn submit(
        &mut self,
        user: u64,
        cmd: Cmd,
        offset: u64,
        len: u32,
        buf: *mut u8,
        fua: bool,
    ) -> Result<bool> {
        self.alive()?;
        self.check(cmd, offset, len, fua)?;
        let Some(idx) = self.table.free.pop() else {
            return Ok(false);
        };
        if self.in_flight() == 1 {
            // The window was empty: the timeout counts from now, not from the last reply.
            self.last_rx = Instant::now();
        }
        self.peak = self.peak.max(self.in_flight());
        self.table.generation = self.table.generation.wrapping_add(1);
        let cookie = (u64::from(self.table.generation) << 32) | u64::from(idx);
        let len = if cmd == Cmd::Flush { 0 } else { len };
        let wire = cmd.wire();
        self.table.slots[idx as usize] = Slot {
            busy: true,
            cookie,
            req: InFlight {
                cmd: wire,
                offset,
                len,
                buf,
            },
            user,
            errno: 0,
            covered: 0,
        };
        let flags = if fua && matches!(cmd, Cmd::Write | Cmd::WriteZeroes | Cmd::Trim) {
            CMD_FLAG_FUA
        } else {
            0
        };
        let start = self.out.len();
        self.out
            .extend_from_slice(&encode_request(flags, wire, cookie, offset, len));
        self.segs.push(Seg::Head(start));
        if cmd == Cmd::Write && len > 0 {
            self.segs.push(Seg::Ext(buf, len as usize));
        }
        Ok(true)
    }

    fn alive(&self) -> Result<()> {
        match &self.dead {
            Some(why) => Err(NbdError::Protocol {
                server: self.server.clone(),
                during: "transmission",
                what: format!("connection unusable after an earlier error: {why}"),
            }),
            None => Ok(()),
        }
    }

    fn lost(&mut self, e: NbdError) -> NbdError {
        if self.dead.is_none() {
            self.dead = Some(e.to_string());
        }
        e
    }

    fn io_err(&mut self, during: &'static str, source: std::io::Error) -> NbdError {
        let e = NbdError::Io {
            server: self.server.clone(),
            during,
            source,
        };
        self.lost(e)
    }

    /// Writes queued requests to the socket without blocking.
    pub fn flush(&mut self) -> Result<()> {
        self.alive()?;
        while self.seg_idx < self.segs.len() {
            self.iov.clear();
            for (k, seg) in self.segs[self.seg_idx..].iter().take(IOV_BATCH).enumerate() {
                let (ptr, len) = match *seg {
                    Seg::Head(start) => (self.out[start..].as_ptr(), REQUEST_LEN),
                    Seg::Ext(p, l) => (p, l),
                };
                let skip = if k == 0 { self.seg_off } else { 0 };
                self.iov.push(libc::iovec {
                    // SAFETY: within the segment.
                    iov_base: unsafe { ptr.add(skip) } as *mut _,
                    iov_len: len - skip,
                });
            }
            let mut n = match self.sock.writev(&self.iov) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) => return Err(self.io_err("sending requests", e)),
            };
            while n > 0 {
                let len = match self.segs[self.seg_idx] {
                    Seg::Head(_) => REQUEST_LEN,
                    Seg::Ext(_, l) => l,
                } - self.seg_off;
                if n >= len {
                    n -= len;
                    self.seg_idx += 1;
                    self.seg_off = 0;
                } else {
                    self.seg_off += n;
                    n = 0;
                }
            }
        }
        self.segs.clear();
        self.out.clear();
        self.seg_idx = 0;
        self.seg_off = 0;
        Ok(())
    }

    fn has_unsent(&self) -> bool {
        self.seg_idx < self.segs.len()
    }

    /// Reads what the socket has and decodes it; returns whether any byte arrived.
    fn receive(&mut self) -> Result<bool> {
        let mut any = false;
        loop {
            if self.rx_start == self.rx_end {
                self.rx_start = 0;
                self.rx_end = 0;
                if let Some((dst, left)) = self.decoder.direct()
                    && left >= DIRECT_MIN
                {
                    match self.sock.read(dst, left) {
                        Ok(Some(0)) => return Err(self.closed()),
                        Ok(Some(n)) => {
                            any = true;
                            self.decoder
                                .advance_direct(n, &mut self.table)
                                .map_err(|w| self.malformed(w))?;
                            continue;
                        }
                        Ok(None) => break,
                        Err(e) => return Err(self.io_err("receiving replies", e)),
                    }
                }
            }
            let free = &mut self.rx[self.rx_end..];
            let room = free.len();
            if room == 0 {
                break;
            }
            match self.sock.read(free.as_mut_ptr(), room) {
                Ok(Some(0)) => return Err(self.closed()),
                Ok(Some(n)) => {
                    any = true;
                    self.rx_end += n;
                    let used = self
                        .decoder
                        .feed(&self.rx[self.rx_start..self.rx_end], &mut self.table)
                        .map_err(|w| self.malformed(w))?;
                    self.rx_start += used;
                    if n < room {
                        break; // the socket is drained for now
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(self.io_err("receiving replies", e)),
            }
        }
        if any {
            self.last_rx = Instant::now();
        }
        Ok(any)
    }

    fn closed(&mut self) -> NbdError {
        let e = NbdError::Closed {
            server: self.server.clone(),
            during: if self.decoder.idle() {
                "transmission"
            } else {
                "a reply"
            },
        };
        self.lost(e)
    }

    fn malformed(&mut self, what: String) -> NbdError {
        let e = NbdError::Protocol {
            server: self.server.clone(),
            during: "reply",
            what,
        };
        self.lost(e)
    }

    /// Hands finished requests to `on_done(user, result)` (result: bytes moved, or a
    /// negative NBD error number) until at least `min` were handed (0: only what is ready
    /// now). Returns how many were.
    pub fn wait(&mut self, min: usize, on_done: &mut dyn FnMut(u64, i64)) -> Result<usize> {
        let mut handed = 0;
        loop {
            while let Some((user, result)) = self.table.done.pop_front() {
                on_done(user, result);
                handed += 1;
            }
            if handed >= min || self.in_flight() == 0 {
                if min == 0 && handed == 0 && self.in_flight() > 0 {
                    self.flush()?;
                    if self.receive()? && !self.table.done.is_empty() {
                        continue;
                    }
                }
                return Ok(handed);
            }
            self.pump()?;
        }
    }

    /// Sends, receives, and if nothing arrived waits for the socket (bounded).
    fn pump(&mut self) -> Result<()> {
        self.flush()?;
        if self.receive()? {
            return Ok(());
        }
        if (self.abort)() {
            let since = *self.stopping.get_or_insert_with(Instant::now);
            if since.elapsed() >= STOP_GRACE {
                let e = NbdError::Timeout {
                    server: self.server.clone(),
                    during: "replies after a stop request",
                    secs: STOP_GRACE.as_secs(),
                };
                return Err(self.lost(e));
            }
        }
        let idle = self.last_rx.elapsed();
        if idle >= self.cfg.timeout {
            let e = NbdError::Timeout {
                server: self.server.clone(),
                during: "replies",
                secs: self.cfg.timeout.as_secs(),
            };
            return Err(self.lost(e));
        }
        let wait = (self.cfg.timeout - idle).min(Duration::from_millis(200));
        let out = self.has_unsent();
        self.sock
            .poll(out, wait)
            .map_err(|e| self.io_err("waiting for replies", e))?;
        Ok(())
    }

    /// One request, waited for: the result as [`Client::wait`] gives it. For set-up and
    /// tests, not the data path.
    pub fn call(&mut self, cmd: Cmd, offset: u64, buf: &mut [u8], fua: bool) -> Result<i64> {
        self.alive()?;
        if self.in_flight() > 0 {
            return Err(self.invalid("a synchronous call with requests in flight".into()));
        }
        let len =
            u32::try_from(buf.len()).map_err(|_| self.invalid("request over 4 GiB".into()))?;
        // SAFETY: `buf` outlives the wait below, which returns only when the request is
        // done or the connection unusable.
        unsafe { self.submit(u64::MAX, cmd, offset, len, buf.as_mut_ptr(), fua)? };
        let mut result = 0;
        self.wait(1, &mut |_, r| result = r)?;
        Ok(result)
    }

    /// Waits for requests in flight, then says goodbye (`NBD_CMD_DISC`) so the server
    /// finishes cleanly.
    pub fn disconnect(mut self) -> Result<()> {
        self.wait(usize::MAX, &mut |_, _| {})?;
        self.send_disc();
        Ok(())
    }

    fn send_disc(&mut self) {
        if self.dead.is_some() || self.in_flight() > 0 || self.has_unsent() {
            return;
        }
        let head = encode_request(0, CMD_DISC, 0, 0, 0);
        let deadline = Instant::now() + Duration::from_secs(1);
        let _ = self.sock.write_all(&head, deadline);
        self.dead = Some("disconnected".into());
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.send_disc();
    }
}
