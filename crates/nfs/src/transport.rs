//! XID-pipelined ONC RPC calls over one or more TCP connections.
//!
//! Calls are encoded under an XID whose low 16 bits index a pre-allocated slot, so a reply
//! finds its call without searching or allocating. Data requests (READ, WRITE, COMMIT)
//! belong to an *op*: one caller IO, split into as many RPCs as rsize/wsize require,
//! completing when its last RPC does (`submit`). WRITE payloads are sent from where they
//! lie and READ payloads land in the caller's buffer (`conn`, `receive`). When a connection
//! drops or stops answering, it is re-made and every call outstanding on it is sent again
//! (`recovery`); acknowledged UNSTABLE writes are kept until committed and written again
//! if the server restarted (`durable`, `retain`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::conn::{self, Conn};
use crate::error::{NfsError, Result};
use crate::proto::{Fh, Stable, Verf};
use crate::rpc::Auth;

mod durable;
mod receive;
mod recovery;
pub(crate) mod retain;
mod submit;

use durable::Durability;
pub use durable::DurabilityStats;

pub(crate) const SLOT_BITS: u32 = 16;
pub(crate) const MAX_SLOTS: usize = 1 << SLOT_BITS;
pub(crate) const NO_OP: u32 = u32::MAX;
pub(crate) const NO_ENTRY: u64 = u64::MAX;
/// How long a JUKEBOX ("busy, try later") reply delays the retry.
pub(crate) const JUKEBOX_DELAY: Duration = Duration::from_millis(100);

/// How long calls may still be answered after a stop request (Ctrl-C) before waiting for
/// them is given up. A server that is there answers within milliseconds, so an interrupted
/// job's IOs in flight complete instead of failing it, and the clean-up after it (COMMIT at
/// close, REMOVE of the test file) is done rather than cut off after its request went out
/// (the file was gone, yet reported left behind) or before (it stayed). A silent server
/// holds the stop up no longer than this.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(3);

/// Where to connect and how patient to be.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// `host:port`, as shown in messages.
    pub server: String,
    pub addrs: Vec<SocketAddr>,
    pub connections: usize,
    /// A connection with calls outstanding and no reply byte for this long counts as lost
    /// (and is re-made); calls outstanding with no complete reply for this long (replies
    /// trickling in, or JUKEBOX after JUKEBOX) mean the server is lost too.
    pub timeout: Duration,
    /// How long the server may stay lost (see `timeout`) before the transport gives up for
    /// good, counted from the loss however many reconnects succeed meanwhile; only a
    /// complete reply ends a loss. Zero means fail at the first loss.
    pub reconnect_window: Duration,
    /// Initial size of each connection's receive buffer.
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

/// What happened since the last progress (a complete reply other than JUKEBOX) while calls
/// were outstanding; reset by progress and when calls start after an idle spell.
#[derive(Default)]
pub(crate) struct Stall {
    /// Since when calls have been outstanding without progress (set by a wait that found
    /// nothing).
    pub(crate) waiting_since: Option<Instant>,
    /// When the server was found lost: the reconnect window counts from here.
    pub(crate) lost_since: Option<Instant>,
    /// Connections re-made, JUKEBOX replies, and whether reply bytes arrived, for the
    /// message when giving up.
    pub(crate) reconnects: u32,
    pub(crate) jukeboxes: u32,
    pub(crate) trickled: bool,
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
    /// COMMIT of a whole file, covering the retained writes below sequence `mark`.
    Commit { fh: Fh, mark: u64 },
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

/// Where a slot's call stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotState {
    Free,
    /// Encoded on connection `conn`, waiting for its reply.
    Sent,
    /// To be sent again at a set time (JUKEBOX).
    Delayed,
    /// Submitted while a rewrite pass runs; sent when it ends.
    Held,
    /// A WRITE acknowledged UNSTABLE, waiting for room in the retained-write ring.
    Parked,
    /// A synchronous call's reply is in `reply`.
    Answered,
}

/// What a WRITE reply said.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct WriteAck {
    pub(crate) count: u32,
    pub(crate) committed: u32,
    pub(crate) verf: Verf,
}

pub(crate) struct Slot {
    pub(crate) xid: u32,
    pub(crate) state: SlotState,
    pub(crate) conn: usize,
    pub(crate) op: u32,
    /// The file label of a data request (for messages and retained writes).
    pub(crate) file: u32,
    pub(crate) req: Req,
    /// For a rewrite of retained data: the entry's sequence number.
    pub(crate) entry: u64,
    /// The acknowledgement of a parked WRITE.
    pub(crate) ack: WriteAck,
    /// Position in its connection's byte stream where the call ends.
    pub(crate) sent_end: u64,
    /// Arguments of a `Call` (kept for re-sending), then its reply body.
    pub(crate) args: Vec<u8>,
    pub(crate) reply: Vec<u8>,
    /// Where a `Call`'s bulk data goes instead of `reply` (see [`Sink`]), and how many bytes
    /// went there.
    pub(crate) sink: Option<Sink>,
    pub(crate) placed: Option<u32>,
}

/// A caller's buffer for the bulk data of a call's reply (an NFSv4 READ's): `locate` finds
/// the data in the reply body (offset and length); data that fits is copied to `dst` and
/// the reply keeps only the bytes before it. Anything else is kept whole.
#[derive(Clone, Copy)]
pub struct Sink {
    pub dst: *mut u8,
    pub cap: u32,
    pub locate: fn(&[u8]) -> Option<(usize, usize)>,
}

#[derive(Clone, Copy, Default)]
pub(crate) struct Op {
    pub(crate) busy: bool,
    /// Completes without being handed to `wait` (COMMIT on close).
    pub(crate) internal: bool,
    pub(crate) user: u64,
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
    done: VecDeque<(u64, u64)>,
    /// JUKEBOX retries and when they are due.
    delayed: Vec<(u32, Instant)>,
    next_conn: usize,
    generation: u32,
    pollfds: Vec<libc::pollfd>,
    /// File names for messages, indexed by the `file` label of data requests.
    paths: Vec<String>,
    fatal: Option<NfsError>,
    dur: Durability,
    outages: Vec<Outage>,
    abort: fn() -> bool,
    /// When `abort` first answered yes: waits end [`STOP_GRACE`] after it.
    stopping: Option<Instant>,
    /// A complete reply (other than JUKEBOX) arrived since `pump` last looked.
    progress: bool,
    stall: Stall,
    /// Why the transport gave up: every later call fails at once with this, rather than
    /// waiting out another reconnect window (COMMIT at close, clean-up).
    gave_up: Option<String>,
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
            done: VecDeque::new(),
            delayed: Vec::new(),
            next_conn: 0,
            generation: seed >> SLOT_BITS,
            paths: Vec::new(),
            fatal: None,
            dur: Durability::new(0),
            outages: Vec::new(),
            abort: never,
            stopping: None,
            progress: false,
            stall: Stall::default(),
            gave_up: None,
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

    /// The server's address as the first connection reached it (its port being the NFS
    /// service's, whatever the URL named).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.conns.first()?.sock.as_ref()?.peer_addr().ok()
    }

    /// A check polled while waiting, so a stop request ends long waits: at once while
    /// reconnecting, after [`STOP_GRACE`] while calls are outstanding.
    pub fn set_abort(&mut self, abort: fn() -> bool) {
        self.abort = abort;
    }

    pub fn outages(&self) -> &[Outage] {
        &self.outages
    }

    /// Names the file that data requests with `label` refer to, for messages.
    pub fn set_path(&mut self, label: u32, path: &str) {
        self.set_path_parts(label, &[path]);
    }

    /// [`set_path`](Self::set_path) with the path in parts, written into the label's
    /// previous path so that relabelling allocates nothing once warmed up.
    pub fn set_path_parts(&mut self, label: u32, parts: &[&str]) {
        let i = label as usize;
        if self.paths.len() <= i {
            self.paths.resize(i + 1, String::new());
        }
        let path = &mut self.paths[i];
        path.clear();
        parts.iter().for_each(|p| path.push_str(p));
    }

    /// Calls in flight or waiting (data RPCs and metadata calls).
    pub fn inflight(&self) -> usize {
        self.slots.len() - self.free_slots.len()
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

    /// One synchronous call (MOUNT, PORTMAP, set-up): returns a copy of the result body.
    pub fn call(
        &mut self,
        name: &'static str,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[u8],
    ) -> Result<Vec<u8>> {
        self.call_with(name, prog, vers, proc_, args, <[u8]>::to_vec)
    }

    /// One synchronous call whose result body `decode` reads where it arrived: the slot
    /// keeps its reply buffer, so repeated calls (metadata in a timed loop) allocate nothing.
    pub fn call_with<T>(
        &mut self,
        name: &'static str,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[u8],
        decode: impl FnOnce(&[u8]) -> T,
    ) -> Result<T> {
        let req = Req::Call {
            prog,
            vers,
            proc_,
            name,
        };
        let idx = self.alloc_slot(NO_OP, 0, req)?;
        let slot = &mut self.slots[idx as usize];
        slot.args.clear();
        slot.args.extend_from_slice(args);
        self.send_slot(idx);
        let result = self.flush().and_then(|()| {
            while self.slots[idx as usize].state != SlotState::Answered {
                if let Some(e) = self.fatal.take() {
                    return Err(e);
                }
                self.pump(true)?;
            }
            Ok(decode(&self.slots[idx as usize].reply))
        });
        self.release_call(idx);
        result
    }

    /// Queues a call without waiting for it (a pipelined NFSv4 COMPOUND): returns a ticket
    /// for [`answered`](Self::answered), [`reply`](Self::reply) and
    /// [`release`](Self::release). The arguments are copied into the slot, whose buffers
    /// are reused, so a warmed-up call allocates nothing.
    pub fn start_call(
        &mut self,
        name: &'static str,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[u8],
    ) -> Result<u32> {
        // SAFETY: no sink.
        unsafe { self.start_call_into(name, prog, vers, proc_, args, None) }
    }

    /// [`start_call`](Self::start_call) whose bulk reply data goes to `sink`.
    ///
    /// # Safety
    /// The sink's buffer must be valid for writes of `cap` bytes until the ticket is
    /// released.
    pub unsafe fn start_call_into(
        &mut self,
        name: &'static str,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: &[u8],
        sink: Option<Sink>,
    ) -> Result<u32> {
        let req = Req::Call {
            prog,
            vers,
            proc_,
            name,
        };
        let idx = self.alloc_slot(NO_OP, 0, req)?;
        let slot = &mut self.slots[idx as usize];
        slot.args.clear();
        slot.args.extend_from_slice(args);
        slot.sink = sink;
        slot.placed = None;
        self.send_slot(idx);
        Ok(idx)
    }

    /// How many bytes of an answered ticket's reply went to its sink (`None`: the whole
    /// reply is in [`reply`](Self::reply)).
    pub fn placed(&self, ticket: u32) -> Option<u32> {
        self.slots.get(ticket as usize)?.placed
    }

    /// Whether the call of a [`start_call`](Self::start_call) ticket has its reply.
    pub fn answered(&self, ticket: u32) -> bool {
        self.slots
            .get(ticket as usize)
            .is_some_and(|s| s.state == SlotState::Answered)
    }

    /// The reply body of an answered ticket (empty before).
    pub fn reply(&self, ticket: u32) -> &[u8] {
        match self.slots.get(ticket as usize) {
            Some(s) if s.state == SlotState::Answered => &s.reply,
            _ => &[],
        }
    }

    /// Gives a ticket's slot back (answered or abandoned).
    pub fn release(&mut self, ticket: u32) {
        if (ticket as usize) < self.slots.len()
            && self.slots[ticket as usize].state != SlotState::Free
        {
            self.release_call(ticket);
        }
    }

    fn release_call(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.state == SlotState::Sent {
            // Abandoned before its reply: no longer counted as waiting on the connection.
            self.conns[s.conn].inflight = self.conns[s.conn].inflight.saturating_sub(1);
        }
        s.state = SlotState::Free;
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
            if min > 0 && self.inflight() == 0 && self.done.is_empty() {
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
            progressed |= self.receive(c);
        }
        if let Some(e) = self.fatal.take() {
            return Err(e);
        }
        if self.progress {
            self.progress = false;
            self.stall = Stall::default();
        } else if progressed {
            self.stall.trickled = true;
        }
        self.after_replies();
        self.recover()?;
        self.send_due();
        if progressed || !block {
            return Ok(progressed);
        }
        if self.stop_grace_over() {
            return Err(NfsError::Aborted {
                server: self.cfg.server.clone(),
                op: self.oldest_op_name(),
            });
        }
        self.poll_sockets(Duration::from_millis(200))?;
        self.check_timeouts()?;
        self.recover()?;
        Ok(false)
    }

    /// Whether a stop was requested at least [`STOP_GRACE`] ago (counted from when this
    /// transport first saw it).
    fn stop_grace_over(&mut self) -> bool {
        if !(self.abort)() {
            return false;
        }
        let since = *self.stopping.get_or_insert_with(Instant::now);
        since.elapsed() >= STOP_GRACE
    }

    fn oldest_op_name(&self) -> &'static str {
        self.slots
            .iter()
            .find(|s| s.state != SlotState::Free)
            .map_or("RPC", |s| s.req.name())
    }

    /// Records the first fatal error; `wait` or `call` returns it.
    pub(crate) fn fail(&mut self, e: NfsError) {
        if self.fatal.is_none() {
            self.fatal = Some(e);
        }
    }

    /// Frees a data slot whose RPC is done, adding `bytes` to its op; completes the op with
    /// its last RPC.
    pub(crate) fn finish_slot(&mut self, idx: u32, bytes: u64) {
        let s = &mut self.slots[idx as usize];
        s.state = SlotState::Free;
        let op_idx = s.op;
        if matches!(s.req, Req::Write { .. }) && s.entry == NO_ENTRY {
            self.dur.writes_out -= 1;
        }
        self.free_slots.push(idx);
        if op_idx != NO_OP {
            self.op_progress(op_idx, bytes);
        }
    }

    /// One RPC (or a rewrite it waited for) of an op is done.
    pub(crate) fn op_progress(&mut self, op_idx: u32, bytes: u64) {
        let op = &mut self.ops[op_idx as usize];
        op.bytes += bytes;
        op.pending -= 1;
        if op.pending == 0 {
            op.busy = false;
            if !op.internal {
                self.done.push_back((op.user, op.bytes));
            }
            self.free_ops.push(op_idx);
        }
    }

    pub(crate) fn delay(&mut self, idx: u32, by: Duration) {
        self.slots[idx as usize].state = SlotState::Delayed;
        self.delayed.push((idx, Instant::now() + by));
    }

    fn send_due(&mut self) {
        if self.delayed.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut i = 0;
        while i < self.delayed.len() {
            let (idx, at) = self.delayed[i];
            if at <= now {
                self.delayed.swap_remove(i);
                self.send_slot(idx);
            } else {
                i += 1;
            }
        }
    }
}
