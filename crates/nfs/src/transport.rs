//! XID-pipelined ONC RPC calls over one or more TCP connections.
//!
//! Calls are encoded into a connection's send buffer under an XID whose low 16 bits index a
//! pre-allocated slot, so a reply finds its call without searching or allocating. Data
//! requests (READ, WRITE, COMMIT) belong to an *op*: one caller IO, split into as many RPCs
//! as rsize/wsize require, completing when its last RPC does. Replies to READ are copied
//! straight into the caller's buffer. When a connection drops or stops answering, it is
//! re-made and every call outstanding on it is sent again (NFSv3 allows re-sending writes).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::conn::{self, Conn};
use crate::error::{DecodeError, NfsError, Result};
use crate::proto::{self, Fh, Stable, Verf, nfsproc};
use crate::reply::{Ctx, handle_reply};
use crate::rpc::{self, Auth, PROG_NFS};

mod recovery;

pub(crate) const SLOT_BITS: u32 = 16;
pub(crate) const MAX_SLOTS: usize = 1 << SLOT_BITS;
const NO_OP: u32 = u32::MAX;
/// How long a JUKEBOX ("busy, try later") reply delays the retry.
pub(crate) const JUKEBOX_DELAY: Duration = Duration::from_millis(100);

/// Where to connect and how patient to be.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// `host:port`, as shown in messages.
    pub server: String,
    pub addrs: Vec<SocketAddr>,
    pub connections: usize,
    /// A call with no reply byte on its connection for this long counts as lost.
    pub timeout: Duration,
    /// How long to keep trying to reconnect; zero means fail at the first loss.
    pub reconnect_window: Duration,
    /// Initial size of each connection's receive buffer (a bit above rsize).
    pub recv_capacity: usize,
}

/// One connection loss and recovery, for the result's notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outage {
    pub started: Instant,
    pub duration: Duration,
    pub resent: u32,
    pub reason: String,
}

#[derive(Clone, Copy)]
pub(crate) enum Req {
    Read {
        fh: Fh,
        offset: u64,
        len: u32,
        buf: *mut u8,
    },
    Write {
        fh: Fh,
        offset: u64,
        len: u32,
        buf: *const u8,
        stable: Stable,
    },
    Commit {
        fh: Fh,
    },
    Call {
        prog: u32,
        vers: u32,
        proc_: u32,
        name: &'static str,
    },
}

impl Req {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Req::Read { .. } => "READ",
            Req::Write { .. } => "WRITE",
            Req::Commit { .. } => "COMMIT",
            Req::Call { name, .. } => name,
        }
    }
}

pub(crate) struct Slot {
    pub(crate) xid: u32,
    pub(crate) busy: bool,
    pub(crate) conn: usize,
    pub(crate) op: u32,
    pub(crate) req: Req,
    /// Arguments of a `Call` (kept for re-sending), then its reply body.
    pub(crate) args: Vec<u8>,
    pub(crate) reply: Vec<u8>,
    pub(crate) done: bool,
}

#[derive(Clone, Copy, Default)]
pub(crate) struct Op {
    pub(crate) busy: bool,
    pub(crate) user: u64,
    pub(crate) file: u32,
    pub(crate) pending: u32,
    pub(crate) bytes: u64,
}

/// Pipelined RPC transport to one server port.
pub struct Transport {
    cfg: TransportConfig,
    auth: Auth,
    conns: Vec<Conn>,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    ops: Vec<Op>,
    free_ops: Vec<u32>,
    done: std::collections::VecDeque<(u64, u64)>,
    /// Slots to encode again once the current batch of replies is processed.
    resend: Vec<(u32, Option<Instant>)>,
    next_conn: usize,
    generation: u32,
    pollfds: Vec<libc::pollfd>,
    /// File names for messages, indexed by the `file` label of data requests.
    paths: Vec<String>,
    fatal: Option<NfsError>,
    write_verf: Option<Verf>,
    verf_changes: u32,
    outages: Vec<Outage>,
    abort: fn() -> bool,
}

// SAFETY: the only non-Send parts are the raw buffer pointers of data requests; the
// submitter guarantees those buffers stay valid until completion, wherever the transport
// (used by one thread at a time, as `&mut`) moves.
unsafe impl Send for Transport {}

fn never() -> bool {
    false
}

impl Transport {
    pub fn connect(cfg: TransportConfig, auth: Auth, op: &'static str) -> Result<Transport> {
        let mut conns = Vec::with_capacity(cfg.connections.max(1));
        for _ in 0..cfg.connections.max(1) {
            let sock =
                conn::connect(&cfg.addrs, cfg.timeout).map_err(|source| NfsError::Connect {
                    server: cfg.server.clone(),
                    op,
                    source,
                })?;
            conns.push(Conn::new(sock, cfg.recv_capacity));
        }
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.subsec_nanos() ^ d.as_secs() as u32);
        Ok(Transport {
            pollfds: Vec::with_capacity(conns.len()),
            cfg,
            auth,
            conns,
            slots: Vec::new(),
            free_slots: Vec::new(),
            ops: Vec::new(),
            free_ops: Vec::new(),
            done: std::collections::VecDeque::new(),
            resend: Vec::new(),
            next_conn: 0,
            generation: seed >> SLOT_BITS,
            paths: Vec::new(),
            fatal: None,
            write_verf: None,
            verf_changes: 0,
            outages: Vec::new(),
            abort: never,
        })
    }

    pub fn server(&self) -> &str {
        &self.cfg.server
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// The first connection's local address (to name the interface used).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.conns.first()?.sock.as_ref()?.local_addr().ok()
    }

    /// A check polled while waiting, so a stop request ends long waits.
    pub fn set_abort(&mut self, abort: fn() -> bool) {
        self.abort = abort;
    }

    pub fn outages(&self) -> &[Outage] {
        &self.outages
    }

    /// How often the server's write verifier changed (a server restart that may have lost
    /// unstable writes).
    pub fn verifier_changes(&self) -> u32 {
        self.verf_changes
    }

    /// Names the file that data requests with `label` refer to, for messages.
    pub fn set_path(&mut self, label: u32, path: &str) {
        let i = label as usize;
        if self.paths.len() <= i {
            self.paths.resize(i + 1, String::new());
        }
        self.paths[i].clear();
        self.paths[i].push_str(path);
    }

    /// Calls in flight (data RPCs and metadata calls).
    pub fn inflight(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    // ---------- submission ----------

    fn alloc_op(&mut self, user: u64, file: u32) -> u32 {
        let op = Op {
            busy: true,
            user,
            file,
            pending: 0,
            bytes: 0,
        };
        match self.free_ops.pop() {
            Some(i) => {
                self.ops[i as usize] = op;
                i
            }
            None => {
                self.ops.push(op);
                (self.ops.len() - 1) as u32
            }
        }
    }

    fn alloc_slot(&mut self, op: u32, req: Req) -> Result<u32> {
        let idx = match self.free_slots.pop() {
            Some(i) => i,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(Slot {
                    xid: 0,
                    busy: false,
                    conn: 0,
                    op: NO_OP,
                    req,
                    args: Vec::new(),
                    reply: Vec::new(),
                    done: false,
                });
                (self.slots.len() - 1) as u32
            }
            None => {
                return Err(NfsError::Unsupported(format!(
                    "{}: more than {MAX_SLOTS} calls in flight",
                    self.cfg.server
                )));
            }
        };
        let s = &mut self.slots[idx as usize];
        s.busy = true;
        s.done = false;
        s.op = op;
        s.req = req;
        if op != NO_OP {
            self.ops[op as usize].pending += 1;
        }
        Ok(idx)
    }

    /// Gives a slot a fresh XID and appends its call to the next connection's send buffer.
    fn send_slot(&mut self, idx: u32) {
        self.generation = self.generation.wrapping_add(1);
        let xid = (self.generation << SLOT_BITS) | idx;
        let c = self.next_conn % self.conns.len();
        self.next_conn = self.next_conn.wrapping_add(1);
        self.slots[idx as usize].xid = xid;
        self.slots[idx as usize].conn = c;
        self.encode(idx, c);
    }

    fn encode(&mut self, idx: u32, c: usize) {
        let slot = &self.slots[idx as usize];
        let conn = &mut self.conns[c];
        let out = &mut conn.out;
        let (prog, vers, proc_) = match slot.req {
            Req::Read { .. } => (PROG_NFS, 3, nfsproc::READ),
            Req::Write { .. } => (PROG_NFS, 3, nfsproc::WRITE),
            Req::Commit { .. } => (PROG_NFS, 3, nfsproc::COMMIT),
            Req::Call {
                prog, vers, proc_, ..
            } => (prog, vers, proc_),
        };
        let mark = rpc::start_call(out, slot.xid, prog, vers, proc_, &self.auth);
        match slot.req {
            Req::Read {
                fh, offset, len, ..
            } => proto::args_read(out, &fh, offset, len),
            Req::Write {
                fh,
                offset,
                len,
                buf,
                stable,
            } => {
                // SAFETY: the submitter guaranteed `buf` holds `len` bytes until completion.
                let data = unsafe { std::slice::from_raw_parts(buf, len as usize) };
                proto::args_write(out, &fh, offset, stable, data);
            }
            Req::Commit { fh } => proto::args_commit(out, &fh, 0, 0),
            Req::Call { .. } => out.extend_from_slice(&slot.args),
        }
        rpc::finish_record(out, mark);
        if conn.inflight == 0 {
            // The silence timeout counts from the first call after an idle spell.
            conn.last_rx = Instant::now();
        }
        conn.inflight += 1;
    }

    /// Queues a READ of `len` bytes at `offset` into `buf`, split into `chunk`-sized RPCs.
    ///
    /// # Safety
    /// `buf` must be valid for writes of `len` bytes and untouched by the caller until the
    /// completion for `user` is returned by [`Transport::wait`] (or the transport is dropped).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn read(
        &mut self,
        fh: &Fh,
        file: u32,
        offset: u64,
        buf: *mut u8,
        len: u32,
        chunk: u32,
        user: u64,
    ) -> Result<()> {
        let op = self.alloc_op(user, file);
        let mut done = 0u32;
        while done < len || len == 0 {
            let n = (len - done).min(chunk);
            // SAFETY: within the caller's buffer of `len` bytes.
            let p = unsafe { buf.add(done as usize) };
            let idx = self.alloc_slot(
                op,
                Req::Read {
                    fh: *fh,
                    offset: offset + done as u64,
                    len: n,
                    buf: p,
                },
            )?;
            self.send_slot(idx);
            done += n;
            if len == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Queues a WRITE; the same contract as [`Transport::read`] for a buffer that is read.
    ///
    /// # Safety
    /// `buf` must be valid for reads of `len` bytes until the completion for `user`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn write(
        &mut self,
        fh: &Fh,
        file: u32,
        offset: u64,
        buf: *const u8,
        len: u32,
        chunk: u32,
        stable: Stable,
        user: u64,
    ) -> Result<()> {
        let op = self.alloc_op(user, file);
        let mut done = 0u32;
        while done < len || len == 0 {
            let n = (len - done).min(chunk);
            // SAFETY: within the caller's buffer of `len` bytes.
            let p = unsafe { buf.add(done as usize) };
            let req = Req::Write {
                fh: *fh,
                offset: offset + done as u64,
                len: n,
                buf: p,
                stable,
            };
            let idx = self.alloc_slot(op, req)?;
            self.send_slot(idx);
            done += n;
            if len == 0 {
                break;
            }
        }
        Ok(())
    }

    /// Queues a COMMIT of the whole file.
    pub fn commit(&mut self, fh: &Fh, file: u32, user: u64) -> Result<()> {
        let op = self.alloc_op(user, file);
        let idx = self.alloc_slot(op, Req::Commit { fh: *fh })?;
        self.send_slot(idx);
        Ok(())
    }

    /// Writes queued calls to the sockets without blocking.
    pub fn flush(&mut self) -> Result<()> {
        for c in &mut self.conns {
            if c.has_unsent() {
                c.flush();
            }
        }
        self.recover()
    }

    /// One synchronous call (metadata, MOUNT, PORTMAP): returns the result body.
    pub fn call(
        &mut self,
        name: &'static str,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[u8],
    ) -> Result<Vec<u8>> {
        let idx = self.alloc_slot(
            NO_OP,
            Req::Call {
                prog,
                vers,
                proc_,
                name,
            },
        )?;
        let slot = &mut self.slots[idx as usize];
        slot.args.clear();
        slot.args.extend_from_slice(args);
        self.send_slot(idx);
        self.flush()?;
        while !self.slots[idx as usize].done {
            if let Err(e) = self.pump(true) {
                self.release_call(idx);
                return Err(e);
            }
        }
        let reply = std::mem::take(&mut self.slots[idx as usize].reply);
        self.release_call(idx);
        Ok(reply)
    }

    fn release_call(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if !s.done {
            // Abandoned before its reply: no longer counted as waiting on the connection.
            self.conns[s.conn].inflight = self.conns[s.conn].inflight.saturating_sub(1);
        }
        s.busy = false;
        s.done = false;
        self.free_slots.push(idx);
    }

    // ---------- completion ----------

    /// Waits for replies once (completions stay queued for [`Transport::wait`]).
    pub fn drain_one(&mut self) -> Result<()> {
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        self.pump(true).map(|_| ())
    }

    /// Hands completed ops to `on_done(user, bytes)` until at least `min` were handed over
    /// (0: only what is ready now). Returns how many were.
    pub fn wait(&mut self, min: usize, on_done: &mut dyn FnMut(u64, u64)) -> Result<usize> {
        let mut handed = 0;
        loop {
            while let Some((user, bytes)) = self.done.pop_front() {
                on_done(user, bytes);
                handed += 1;
            }
            if let Some(e) = self.fatal.take() {
                return Err(e);
            }
            if handed >= min && (min > 0 || handed > 0) {
                return Ok(handed);
            }
            let progressed = self.pump(min > 0)?;
            if min == 0 && !progressed && self.done.is_empty() {
                return Ok(handed);
            }
            if min > 0 && self.inflight() == 0 && self.done.is_empty() && self.resend.is_empty() {
                return Ok(handed);
            }
        }
    }

    /// One round: send, read what is there, and, if `block` and nothing arrived, wait for
    /// the sockets. Returns whether any reply arrived.
    fn pump(&mut self, block: bool) -> Result<bool> {
        self.flush()?;
        let mut progressed = false;
        for c in 0..self.conns.len() {
            while self.conns[c].read_some() {
                progressed = true;
                self.process(c);
            }
        }
        self.recover()?;
        self.resend_due();
        if progressed || !block {
            return Ok(progressed);
        }
        if (self.abort)() {
            return Err(NfsError::Aborted {
                server: self.cfg.server.clone(),
                op: self.oldest_op_name(),
            });
        }
        self.poll_sockets(Duration::from_millis(200))?;
        self.check_timeouts();
        self.recover()?;
        Ok(false)
    }

    fn oldest_op_name(&self) -> &'static str {
        self.slots
            .iter()
            .find(|s| s.busy)
            .map_or("RPC", |s| s.req.name())
    }

    /// Decodes every complete record buffered on connection `c`.
    fn process(&mut self, c: usize) {
        loop {
            let range = match self.conns[c].reader.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => return,
                Err(e) => {
                    self.fail(NfsError::Garbage {
                        server: self.cfg.server.clone(),
                        op: self.oldest_op_name(),
                        detail: DecodeError::Invalid(match e {
                            crate::framing::FrameError::TooLarge { .. } => "reply record too large",
                            crate::framing::FrameError::EmptyFragment => "empty record fragment",
                        }),
                    });
                    return;
                }
            };
            let conn = &mut self.conns[c];
            let record = conn.reader.record(range);
            if let Err(e) = handle_reply(
                &mut Ctx {
                    slots: &mut self.slots,
                    ops: &mut self.ops,
                    free_slots: &mut self.free_slots,
                    free_ops: &mut self.free_ops,
                    done: &mut self.done,
                    resend: &mut self.resend,
                    write_verf: &mut self.write_verf,
                    verf_changes: &mut self.verf_changes,
                    paths: &self.paths,
                    server: &self.cfg.server,
                    inflight: &mut conn.inflight,
                },
                c,
                record,
            ) {
                self.fail(e);
                return;
            }
        }
    }

    /// Records the first fatal error; `wait` or `call` returns it.
    fn fail(&mut self, e: NfsError) {
        if self.fatal.is_none() {
            self.fatal = Some(e);
        }
    }

    fn resend_due(&mut self) {
        if self.resend.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut i = 0;
        while i < self.resend.len() {
            let (idx, at) = self.resend[i];
            if at.is_none_or(|t| t <= now) {
                self.resend.swap_remove(i);
                self.send_slot(idx);
            } else {
                i += 1;
            }
        }
    }
}
