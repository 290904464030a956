//! One TCP connection: MessageId-pipelined requests with credits as the window.
//!
//! Every request takes `credit_charge` credits (one per started 64 KiB with large MTU) and
//! as many consecutive MessageIds; its reply is found by its first MessageId, which indexes
//! a pre-allocated slot, so matching a reply neither searches nor allocates. A request that
//! finds too few credits, or its slot still in use, is refused as busy and the caller reaps
//! first: the credits the server grants are the real queue depth, as the CmdSN window is for
//! iSCSI. Each request asks for enough credits to keep [`ConnConfig::credits`] in hand.
//!
//! Data requests belong to an *op* (one caller IO, split into as many READ/WRITE requests as
//! MaxRead/MaxWrite require) that completes when its last request does. A WRITE's payload is
//! sent from where it lies (`writev` of the staged headers and the caller's buffers at
//! `commit`) and a READ's payload is received straight into the caller's buffer; signatures
//! are computed and checked over the pieces where they lie. Encrypted sessions must copy
//! (AES-CCM/GCM seals a contiguous message), into one reusable buffer.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::crypto::Signer;
use crate::error::{DecodeError, NtStatus, Result, SmbError};
use crate::header::{
    self, Command, FLAG_ASYNC, FLAG_RELATED, FLAG_RESPONSE, FLAG_SIGNED, HEADER_LEN, Header,
    TRANSFORM_ID,
};
use crate::proto::{self, FileId, READ_BODY_LEN, READ_RESP_LEN, WRITE_BODY_LEN};
use crate::seal::Sealer;

/// Slots for outstanding requests, indexed by MessageId modulo this.
const SLOTS: usize = 8192;
/// Most credits the client ever asks to hold.
pub const MAX_CREDITS: u16 = 2048;
/// Credits are charged per started 64 KiB of a large-MTU request.
const CREDIT_UNIT: usize = 65536;

/// Where to connect and how patient to be.
#[derive(Clone, Debug)]
pub struct ConnConfig {
    /// `host:port`, as shown in messages.
    pub server: String,
    pub addrs: Vec<SocketAddr>,
    /// Connecting, and every reply: no byte for this long with requests outstanding fails.
    pub timeout: Duration,
    /// Credits the client asks to hold (its pipelining window).
    pub credits: u16,
    /// Asked while waiting for the server: once it answers yes (Ctrl-C), replies are still
    /// awaited for [`STOP_GRACE`], then the wait ends with [`SmbError::Aborted`].
    pub abort: fn() -> bool,
}

/// Never abort (the default for [`ConnConfig::abort`]).
pub fn never() -> bool {
    false
}

/// How long replies may still arrive after a stop request: a server that is there answers
/// within milliseconds, so IOs in flight and the clean-up after them complete; a silent one
/// holds the stop up no longer than this.
pub const STOP_GRACE: Duration = Duration::from_secs(3);
/// How often a blocked read wakes to look at [`ConnConfig::abort`].
const POLL: Duration = Duration::from_millis(200);

/// A finished caller IO: its `user` tag and bytes moved, or the status that failed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub user: u64,
    pub result: std::result::Result<u64, NtStatus>,
}

/// What `submit_*` did with an IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    Queued,
    /// Not enough credits or slots right now: reap completions, then try again.
    Busy,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    Sent,
    /// A synchronous call's reply is in `Conn::reply`.
    Answered,
}

/// What a wait for IO replies waits for, as its errors name it ("no reply to the requests
/// in flight within 30 s").
const IN_FLIGHT: &str = "the requests in flight";

#[derive(Clone, Copy)]
enum Req {
    Read {
        buf: *mut u8,
        len: u32,
    },
    Write {
        len: u32,
    },
    Call,
    /// The `n`th request of a compounded call ([`Conn::call_chain`]).
    Chain(u8),
    /// A lease break acknowledgment: its reply is only counted.
    Ack,
}

#[derive(Clone, Copy)]
struct Slot {
    state: SlotState,
    mid: u64,
    charge: u16,
    op: u32,
    req: Req,
}

#[derive(Clone, Copy, Default)]
struct Op {
    busy: bool,
    user: u64,
    pending: u32,
    bytes: u64,
    failed: Option<NtStatus>,
}

/// A staged data request: its header and body in `stage`, its payload in the caller's
/// buffer (WRITE).
#[derive(Clone, Copy)]
struct Staged {
    at: usize,
    len: usize,
    payload: *const u8,
    payload_len: usize,
}

/// One SMB connection with its session and tree ids and its keys.
pub struct Conn {
    cfg: ConnConfig,
    sock: TcpStream,
    next_mid: u64,
    /// Credits granted and not yet spent.
    credits: u32,
    /// Credits charged by requests outstanding.
    in_flight: u32,
    /// Whether requests carry a credit charge (2.1 and later; 2.0.2 spends one each).
    pub(crate) large_mtu: bool,
    pub(crate) session_id: u64,
    pub(crate) tree_id: u32,
    pub(crate) signer: Option<Signer>,
    /// Sign every request (server or user asked); replies to signed requests must be signed.
    pub(crate) sign_all: bool,
    pub(crate) sealer: Option<Sealer>,
    slots: Vec<Slot>,
    ops: Vec<Op>,
    free_ops: Vec<u32>,
    done: VecDeque<Completion>,
    stage: Vec<u8>,
    staged: Vec<Staged>,
    iov: Vec<libc::iovec>,
    /// The last synchronous reply (whole message, header first).
    reply: Vec<u8>,
    /// Scratch for whole replies and for sealing.
    scratch: Vec<u8>,
    /// The last synchronous request as sent (for the 3.1.1 pre-authentication hash).
    pub(crate) last_request: Vec<u8>,
    /// Highest number of credits held at once, for the result.
    pub(crate) max_granted: u32,
    /// Times a request waited for credits while the caller had IOs to send.
    pub(crate) credit_waits: u64,
    /// When a wait first saw a stop request.
    stopping: Option<Instant>,
    /// The replies of a compounded call, in request order.
    chain_replies: Vec<Vec<u8>>,
    /// Messages sent (a compounded message or one `writev` of staged requests counts
    /// once): the round trips synchronous calls cost.
    frames_sent: u64,
    /// Time spent signing, checking signatures, sealing and opening sealed messages on the
    /// data path (one clock read before and after each; no other cost per IO).
    pub(crate) crypto_ns: u64,
    /// Lease breaks to acknowledge (key, state kept), sent as soon as credits allow.
    acks_due: Vec<([u8; 16], u32)>,
    /// Leases that lost handle caching in a break: their opens are no longer durable.
    lost_handle: Vec<[u8; 16]>,
    /// Lease breaks received and acknowledgments sent, for tests and results.
    pub(crate) lease_breaks: u64,
    pub(crate) lease_acks: u64,
    /// CREATE requests sent on this connection (compounded ones included).
    pub(crate) creates_sent: u64,
}

// SAFETY: the raw pointers in slots and staged requests point into the caller's buffers,
// which the engine contract keeps valid until their IO completes; a Conn is used by one
// thread at a time.
unsafe impl Send for Conn {}

impl Conn {
    /// Connects (within the timeout) to the first address that answers.
    pub fn connect(cfg: ConnConfig) -> Result<Conn> {
        let mut last = None;
        let mut sock = None;
        for a in &cfg.addrs {
            match TcpStream::connect_timeout(a, cfg.timeout) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(sock) = sock else {
            return Err(SmbError::Connect {
                server: cfg.server.clone(),
                source: last.unwrap_or_else(|| io::Error::other("no address")),
            });
        };
        let io = |e| SmbError::Io {
            server: cfg.server.clone(),
            op: "socket set-up",
            source: e,
        };
        sock.set_nodelay(true).map_err(io)?;
        // Reads wake every POLL to honour a stop request; `read_exact` counts the timeout.
        sock.set_read_timeout(Some(cfg.timeout.min(POLL)))
            .map_err(io)?;
        sock.set_write_timeout(Some(cfg.timeout)).map_err(io)?;
        Ok(Conn {
            sock,
            next_mid: 0,
            credits: 1,
            in_flight: 0,
            large_mtu: false,
            session_id: 0,
            tree_id: 0,
            signer: None,
            sign_all: false,
            sealer: None,
            slots: vec![
                Slot {
                    state: SlotState::Free,
                    mid: 0,
                    charge: 0,
                    op: 0,
                    req: Req::Call,
                };
                SLOTS
            ],
            ops: Vec::with_capacity(256),
            free_ops: Vec::with_capacity(256),
            done: VecDeque::with_capacity(256),
            stage: Vec::with_capacity(64 * 1024),
            staged: Vec::with_capacity(512),
            iov: Vec::with_capacity(1024),
            reply: Vec::with_capacity(64 * 1024),
            scratch: Vec::with_capacity(64 * 1024),
            last_request: Vec::new(),
            max_granted: 1,
            credit_waits: 0,
            stopping: None,
            crypto_ns: 0,
            chain_replies: Vec::new(),
            frames_sent: 0,
            acks_due: Vec::new(),
            lost_handle: Vec::new(),
            lease_breaks: 0,
            lease_acks: 0,
            creates_sent: 0,
            cfg,
        })
    }

    pub fn server(&self) -> &str {
        &self.cfg.server
    }

    pub fn peer(&self) -> Option<SocketAddr> {
        self.sock.peer_addr().ok()
    }

    pub fn local(&self) -> Option<SocketAddr> {
        self.sock.local_addr().ok()
    }

    /// Credits granted and unspent plus those charged by requests outstanding.
    pub fn credits_held(&self) -> u32 {
        self.credits + self.in_flight
    }

    /// Messages sent so far (see the field).
    pub fn frames_sent(&self) -> u64 {
        self.frames_sent
    }

    /// CREATE requests sent on this connection so far.
    pub fn creates_sent(&self) -> u64 {
        self.creates_sent
    }

    /// Lease breaks received and acknowledged so far.
    pub fn lease_breaks(&self) -> (u64, u64) {
        (self.lease_breaks, self.lease_acks)
    }

    /// False once a break took handle caching from the lease `key` (its open is then no
    /// longer durable).
    pub fn handle_lease_kept(&self, key: &[u8; 16]) -> bool {
        !self.lost_handle.contains(key)
    }

    /// Nanoseconds spent in signing and encryption so far (see the field).
    pub fn crypto_ns(&self) -> u64 {
        self.crypto_ns
    }

    /// IOs submitted and not yet reaped.
    pub fn ops_outstanding(&self) -> usize {
        self.ops.len() - self.free_ops.len()
    }

    fn charge_for(&self, bytes: usize) -> u16 {
        if self.large_mtu {
            bytes.max(1).div_ceil(CREDIT_UNIT) as u16
        } else {
            1
        }
    }

    /// Credits to ask for in a request charging `charge`: enough to refill the window.
    fn credit_request(&self, charge: u16) -> u16 {
        let held = self.credits_held();
        let want = u32::from(self.cfg.credits.min(MAX_CREDITS));
        (u32::from(charge) + want.saturating_sub(held)).min(u32::from(MAX_CREDITS)) as u16
    }

    /// Takes `charge` credits and MessageIds for a request, or `None` if there are too few
    /// credits or its slot is still busy.
    fn take_mid(&mut self, charge: u16) -> Option<u64> {
        let spend = u32::from(charge.max(1));
        if self.credits < spend {
            return None;
        }
        let mid = self.next_mid;
        if self.slots[mid as usize % SLOTS].state != SlotState::Free {
            return None;
        }
        self.credits -= spend;
        self.in_flight += spend;
        self.next_mid += u64::from(spend);
        Some(mid)
    }

    fn header(&self, cmd: Command, mid: u64, charge: u16) -> Header {
        let mut h = Header::request(cmd, mid, self.session_id, self.tree_id);
        if self.large_mtu {
            h.credit_charge = charge;
        }
        h.credits = self.credit_request(charge);
        h
    }

    // ---- synchronous calls (set-up and metadata) ----

    /// Sends one request and waits for its reply; returns the reply's header. The whole
    /// reply is then in [`Conn::reply`]. Data completions arriving meanwhile are kept.
    /// `sign` forces a signature (TREE_CONNECT on 3.1.1) when a key exists.
    pub fn call(&mut self, cmd: Command, body: &[u8], sign: bool) -> Result<Header> {
        self.call_charged(cmd, body, 1, sign)
    }

    pub fn call_charged(
        &mut self,
        cmd: Command,
        body: &[u8],
        charge: u16,
        sign: bool,
    ) -> Result<Header> {
        self.commit()?;
        let mid = loop {
            if let Some(mid) = self.take_mid(charge) {
                break mid;
            }
            if self.in_flight == 0 {
                return Err(self.protocol(cmd.name(), "the server granted no credits"));
            }
            self.receive(cmd.name())?;
        };
        let msg = self.request(cmd, mid, charge, body, sign);
        if cmd == Command::Create {
            self.creates_sent += 1;
        }
        self.slots[mid as usize % SLOTS] = Slot {
            state: SlotState::Sent,
            mid,
            charge: charge.max(1),
            op: 0,
            req: Req::Call,
        };
        self.send_message(&msg, &[], cmd.name())?;
        self.last_request = msg;
        loop {
            if self.slots[mid as usize % SLOTS].state == SlotState::Answered {
                self.slots[mid as usize % SLOTS].state = SlotState::Free;
                return Header::decode(&self.reply).map_err(|e| self.garbage(cmd.name(), e));
            }
            self.receive(cmd.name())?;
        }
    }

    /// One request message (header first), signed where the session signs or `sign`.
    fn request(&self, cmd: Command, mid: u64, charge: u16, body: &[u8], sign: bool) -> Vec<u8> {
        let mut h = self.header(cmd, mid, charge);
        let mut msg = vec![0u8; HEADER_LEN];
        msg.extend_from_slice(body);
        let signed = self.signer.is_some() && (self.sign_all || sign) && self.sealer.is_none();
        if signed {
            h.flags |= FLAG_SIGNED;
        }
        h.encode(&mut msg);
        if signed && let Some(s) = &self.signer {
            let sig = s.sign(mid, false, &msg);
            msg[header::SIGNATURE_AT..header::SIGNATURE_AT + 16].copy_from_slice(&sig);
        }
        msg
    }

    /// Acknowledges the lease breaks that wait for it, as far as credits allow (the rest
    /// go when credits come back). Sent whole, between the staged data requests' sends.
    fn send_acks(&mut self, op: &'static str) -> Result<()> {
        while let Some(&(key, state)) = self.acks_due.last() {
            let Some(mid) = self.take_mid(1) else {
                return Ok(());
            };
            self.acks_due.pop();
            let body = crate::lease::break_ack_body(&key, state);
            let msg = self.request(Command::OplockBreak, mid, 1, &body, false);
            self.slots[mid as usize % SLOTS] = Slot {
                state: SlotState::Sent,
                mid,
                charge: 1,
                op: 0,
                req: Req::Ack,
            };
            self.send_message(&msg, &[], op)?;
            self.lease_acks += 1;
        }
        Ok(())
    }

    /// A break notification: remembered when handle caching went, acknowledged when the
    /// server waits for it (with the state it offers: nothing is cached, so nothing is
    /// written back first).
    fn lease_break(&mut self, msg: &[u8], op: &'static str) -> Result<()> {
        let Some(b) = crate::lease::parse_break(msg).map_err(|e| self.garbage(op, e))? else {
            return Ok(()); // an oplock break: none are asked for
        };
        self.lease_breaks += 1;
        if b.new_state & crate::lease::HANDLE == 0 && !self.lost_handle.contains(&b.key) {
            self.lost_handle.push(b.key);
        }
        if b.ack_required {
            self.acks_due.push((b.key, b.new_state));
        }
        Ok(())
    }

    /// Sends `reqs` as one compounded message, each after the first related to the one
    /// before it (same session and tree; a FileId of all ones names the file the first
    /// opened), and waits for every reply: one round trip instead of one per request.
    /// Returns the replies (header first) in request order.
    pub fn call_chain(&mut self, reqs: &[(Command, &[u8])]) -> Result<Vec<Vec<u8>>> {
        self.commit()?;
        let op = reqs.first().map_or("compound", |(c, _)| c.name());
        let signed = self.signer.is_some() && self.sign_all && self.sealer.is_none();
        let mut mids = Vec::with_capacity(reqs.len());
        for (cmd, _) in reqs {
            if *cmd == Command::Create {
                self.creates_sent += 1;
            }
            let mid = loop {
                if let Some(mid) = self.take_mid(1) {
                    break mid;
                }
                if self.in_flight == 0 {
                    return Err(self.protocol(op, "the server granted no credits"));
                }
                self.receive(op)?;
            };
            mids.push(mid);
        }
        let mut msg = Vec::with_capacity(512);
        for (i, ((cmd, body), &mid)) in reqs.iter().zip(&mids).enumerate() {
            let start = msg.len();
            let last = i + 1 == reqs.len();
            let len = HEADER_LEN + body.len();
            let padded = if last { len } else { len.next_multiple_of(8) };
            let mut h = self.header(*cmd, mid, 1);
            if i > 0 {
                h.flags |= FLAG_RELATED;
            }
            if signed {
                h.flags |= FLAG_SIGNED;
            }
            if !last {
                h.next_command = padded as u32;
            }
            msg.resize(start + HEADER_LEN, 0);
            h.encode(&mut msg[start..]);
            msg.extend_from_slice(body);
            msg.resize(start + padded, 0);
            // Each request of a chain is signed on its own, padding included.
            if signed && let Some(sg) = &self.signer {
                let sig = sg.sign(mid, false, &msg[start..]);
                let at = start + header::SIGNATURE_AT;
                msg[at..at + 16].copy_from_slice(&sig);
            }
            self.slots[mid as usize % SLOTS] = Slot {
                state: SlotState::Sent,
                mid,
                charge: 1,
                op: 0,
                req: Req::Chain(i as u8),
            };
        }
        self.chain_replies = vec![Vec::new(); reqs.len()];
        self.send_message(&msg, &[], op)?;
        while mids
            .iter()
            .any(|&m| self.slots[m as usize % SLOTS].state != SlotState::Answered)
        {
            self.receive(op)?;
        }
        for &m in &mids {
            self.slots[m as usize % SLOTS].state = SlotState::Free;
        }
        Ok(std::mem::take(&mut self.chain_replies))
    }

    /// The last synchronous reply, header first.
    pub fn reply(&self) -> &[u8] {
        &self.reply
    }

    // ---- the data path ----

    fn new_op(&mut self, user: u64, parts: u32) -> u32 {
        let op = Op {
            busy: true,
            user,
            pending: parts,
            bytes: 0,
            failed: None,
        };
        if let Some(i) = self.free_ops.pop() {
            self.ops[i as usize] = op;
            i
        } else {
            self.ops.push(op);
            (self.ops.len() - 1) as u32
        }
    }

    /// Queues a READ of `len` bytes at `offset` into `buf` as `max`-byte requests.
    ///
    /// # Safety
    /// `buf` must stay valid and unaliased for `len` bytes until the IO is reaped.
    pub unsafe fn submit_read(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *mut u8,
        len: u32,
        max: u32,
        user: u64,
    ) -> Result<Submit> {
        self.submit(id, offset, buf, len, max, user, false)
    }

    /// Queues a WRITE of `len` bytes from `buf` at `offset` as `max`-byte requests.
    ///
    /// # Safety
    /// `buf` must stay valid for `len` bytes until the IO is reaped.
    pub unsafe fn submit_write(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *const u8,
        len: u32,
        max: u32,
        user: u64,
    ) -> Result<Submit> {
        self.submit(id, offset, buf.cast_mut(), len, max, user, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn submit(
        &mut self,
        id: FileId,
        offset: u64,
        buf: *mut u8,
        len: u32,
        max: u32,
        user: u64,
        write: bool,
    ) -> Result<Submit> {
        let max = max.max(1);
        let parts = len.div_ceil(max).max(1);
        // All parts or none: an IO never waits half-sent.
        let need: u32 = (0..parts)
            .map(|p| {
                let l = (len - p * max).min(max) as usize;
                u32::from(self.charge_for(l).max(1))
            })
            .sum();
        if self.credits < need {
            if self.ops_outstanding() == 0 && self.staged.is_empty() {
                return Err(self.protocol(
                    if write { "WRITE" } else { "READ" },
                    &format!(
                        "the server grants {} credits, the IO needs {need}",
                        self.credits
                    ),
                ));
            }
            self.credit_waits += 1;
            return Ok(Submit::Busy);
        }
        let op = self.new_op(user, parts);
        for p in 0..parts {
            let at = p * max;
            let l = (len - at).min(max);
            let charge = self.charge_for(l as usize);
            let Some(mid) = self.take_mid(charge) else {
                // A slot still busy (credits were checked): count the rest as busy parts
                // of a failed op would be wrong; this only happens with a stuck request.
                return Err(self.protocol("submit", "MessageId slot still in use"));
            };
            // SAFETY: within the caller's buffer of `len` bytes.
            let ptr = unsafe { buf.add(at as usize) };
            self.stage_data(id, offset + u64::from(at), ptr, l, charge, mid, write)?;
            self.slots[mid as usize % SLOTS] = Slot {
                state: SlotState::Sent,
                mid,
                charge: charge.max(1),
                op,
                req: if write {
                    Req::Write { len: l }
                } else {
                    Req::Read { buf: ptr, len: l }
                },
            };
        }
        Ok(Submit::Queued)
    }

    #[allow(clippy::too_many_arguments)]
    fn stage_data(
        &mut self,
        id: FileId,
        offset: u64,
        ptr: *mut u8,
        len: u32,
        charge: u16,
        mid: u64,
        write: bool,
    ) -> Result<()> {
        let cmd = if write { Command::Write } else { Command::Read };
        let mut h = self.header(cmd, mid, charge);
        let body_len = if write { WRITE_BODY_LEN } else { READ_BODY_LEN };
        let payload: &[u8] = if write {
            // SAFETY: the caller's buffer of `len` bytes, valid until completion.
            unsafe { std::slice::from_raw_parts(ptr, len as usize) }
        } else {
            &[]
        };
        let mut head = [0u8; HEADER_LEN + READ_BODY_LEN];
        let signed = self.sign_all && self.signer.is_some() && self.sealer.is_none();
        if signed {
            h.flags |= FLAG_SIGNED;
        }
        h.encode(&mut head);
        if write {
            let b: &mut [u8; WRITE_BODY_LEN] = (&mut head[HEADER_LEN..HEADER_LEN + WRITE_BODY_LEN])
                .try_into()
                .unwrap();
            proto::write_body(b, id, offset, len);
        } else {
            let b: &mut [u8; READ_BODY_LEN] = (&mut head[HEADER_LEN..]).try_into().unwrap();
            proto::read_body(b, id, offset, len);
        }
        let head = &mut head[..HEADER_LEN + body_len];
        if let Some(sealer) = &mut self.sealer {
            // Sealed: the whole message is encrypted into the scratch buffer and sent now.
            let mut out = std::mem::take(&mut self.scratch);
            out.clear();
            let t = Instant::now();
            sealer.seal(self.session_id, head, payload, &mut out);
            self.crypto_ns += t.elapsed().as_nanos() as u64;
            let r = self.send_framed(&out, cmd.name());
            self.scratch = out;
            return r;
        }
        let at = self.stage.len();
        self.stage
            .extend_from_slice(&header::frame_len(head.len() + payload.len()));
        let hdr_at = self.stage.len();
        self.stage.extend_from_slice(head);
        if signed && let Some(s) = &self.signer {
            let t = Instant::now();
            let mut m = s.start(mid, false, false);
            m.update(&self.stage[hdr_at..]);
            m.update(payload);
            let sig = m.finish();
            let sat = hdr_at + header::SIGNATURE_AT;
            self.stage[sat..sat + 16].copy_from_slice(&sig);
            self.crypto_ns += t.elapsed().as_nanos() as u64;
        }
        self.staged.push(Staged {
            at,
            len: self.stage.len() - at,
            payload: ptr,
            payload_len: payload.len(),
        });
        Ok(())
    }

    /// Sends every staged request in as few `writev` calls as the kernel allows.
    pub fn commit(&mut self) -> Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        self.iov.clear();
        for s in &self.staged {
            self.iov.push(libc::iovec {
                // SAFETY: within `stage`, which is not touched until the send ends.
                iov_base: unsafe { self.stage.as_ptr().add(s.at) } as *mut libc::c_void,
                iov_len: s.len,
            });
            if s.payload_len > 0 {
                self.iov.push(libc::iovec {
                    iov_base: s.payload as *mut libc::c_void,
                    iov_len: s.payload_len,
                });
            }
        }
        let r = self.writev_all("send");
        self.frames_sent += 1;
        self.staged.clear();
        self.stage.clear();
        r
    }

    fn writev_all(&mut self, op: &'static str) -> Result<()> {
        let fd = self.sock.as_raw_fd();
        let mut first = 0usize;
        while first < self.iov.len() {
            let n = (self.iov.len() - first).min(1024);
            // SAFETY: the iovecs describe live buffers (see `commit`).
            let w = unsafe { libc::writev(fd, self.iov[first..].as_ptr(), n as i32) };
            if w < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.io_err(op, e));
            }
            let mut w = w as usize;
            while w > 0 && first < self.iov.len() {
                let v = &mut self.iov[first];
                if w >= v.iov_len {
                    w -= v.iov_len;
                    first += 1;
                } else {
                    // SAFETY: advancing within the same buffer.
                    v.iov_base = unsafe { (v.iov_base as *mut u8).add(w) }.cast();
                    v.iov_len -= w;
                    w = 0;
                }
            }
            while first < self.iov.len() && self.iov[first].iov_len == 0 {
                first += 1;
            }
        }
        Ok(())
    }

    /// Sends what is staged and waits until every request has its reply (completions stay
    /// queued for `reap`): a FLUSH after it covers every write issued before it.
    pub fn quiesce(&mut self) -> Result<()> {
        self.commit()?;
        while self.in_flight > 0 {
            self.receive(IN_FLIGHT)?;
        }
        Ok(())
    }

    /// Collects at least `min` completions into `out` (fewer only at an error).
    pub fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<()> {
        self.commit()?;
        let mut got = 0;
        loop {
            while let Some(c) = self.done.pop_front() {
                out.push(c);
                got += 1;
            }
            if got >= min {
                // Take what already arrived, never more: a reply only partly here would
                // hold the caller until its last byte, with nothing new sent meanwhile
                // (a stream of 1 MiB READ replies kept the socket readable until every
                // request in flight had its reply, and the link went idle each round).
                if !self.whole_reply_buffered() {
                    return Ok(());
                }
                self.receive(IN_FLIGHT)?;
                if self.done.is_empty() {
                    return Ok(());
                }
                continue;
            }
            if self.in_flight == 0 {
                return Err(self.protocol("reap", "waiting for IOs that were never sent"));
            }
            self.receive(IN_FLIGHT)?;
        }
    }

    /// True when the socket's buffer holds at least one whole message (its 4-byte length
    /// peeked, the bytes waiting counted), so receiving it cannot block.
    fn whole_reply_buffered(&self) -> bool {
        let fd = self.sock.as_raw_fd();
        let mut waiting: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, the bytes waiting on our own socket.
        if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut waiting) } < 0 || waiting < 4 {
            return false;
        }
        let mut nb = [0u8; 4];
        // SAFETY: peeks at most 4 bytes into `nb`, without waiting or consuming them.
        let n = unsafe {
            libc::recv(
                fd,
                nb.as_mut_ptr().cast(),
                4,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n == 4 && waiting as u64 >= 4 + u64::from(u32::from_be_bytes(nb))
    }

    // ---- receiving ----

    /// Receives one message (blocking up to the timeout), accounts its credits and files it:
    /// a data reply completes its part, a call's reply is kept in `reply`; then sends the
    /// lease break acknowledgments that are due.
    fn receive(&mut self, op: &'static str) -> Result<()> {
        self.receive_one(op)?;
        if self.acks_due.is_empty() {
            return Ok(());
        }
        self.send_acks(op)
    }

    fn receive_one(&mut self, op: &'static str) -> Result<()> {
        let mut nb = [0u8; 4];
        self.read_exact(&mut nb, op)?;
        if nb[0] != 0 {
            return Err(self.garbage(
                op,
                DecodeError::BadValue {
                    what: "Direct TCP header",
                    value: nb[0].into(),
                },
            ));
        }
        let len = u32::from_be_bytes(nb) as usize;
        if len < HEADER_LEN.min(52) {
            return Err(self.garbage(
                op,
                DecodeError::Truncated {
                    at: len,
                    need: 64 - len,
                },
            ));
        }
        let mut first = [0u8; HEADER_LEN];
        let head = HEADER_LEN.min(len);
        self.read_exact(&mut first[..head], op)?;
        if first[..4] == TRANSFORM_ID {
            return self.receive_sealed(&first[..head], len, op);
        }
        if len < HEADER_LEN {
            return Err(self.garbage(
                op,
                DecodeError::Truncated {
                    at: len,
                    need: 64 - len,
                },
            ));
        }
        let h = Header::decode(&first).map_err(|e| self.garbage(op, e))?;
        if h.flags & FLAG_RESPONSE == 0 {
            return Err(self.garbage(op, DecodeError::Invalid("a request from the server")));
        }
        let slot = self.slots[h.message_id as usize % SLOTS];
        if let Req::Read { buf, len: want } = slot.req
            && slot.state == SlotState::Sent
            && slot.mid == h.message_id
            && h.status == 0
            && h.next_command == 0
        {
            return self.receive_read_data(&first, &h, len, buf, want, op);
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&first);
        self.scratch.resize(len, 0);
        let mut rest = std::mem::take(&mut self.scratch);
        let r = self.read_exact(&mut rest[HEADER_LEN..], op);
        self.scratch = rest;
        r?;
        let msg = std::mem::take(&mut self.scratch);
        let r = self.file_chain(&msg, true, op);
        self.scratch = msg;
        r
    }

    /// Files each reply of a (possibly compounded) plain message, checking each one's
    /// signature where `check` (not for a message that was sealed as a whole).
    fn file_chain(&mut self, msg: &[u8], check: bool, op: &'static str) -> Result<()> {
        let mut at = 0;
        loop {
            let (h, end, last) = header::chain_part(msg, at).map_err(|e| self.garbage(op, e))?;
            let part = &msg[at..end];
            if check {
                self.check_signature(&h, part, op)?;
            }
            self.file_reply(&h, part, op)?;
            if last {
                return Ok(());
            }
            at = end;
        }
    }

    /// A reply in plain form (after unsealing or reading whole): credits, then its slot.
    fn file_reply(&mut self, h: &Header, msg: &[u8], op: &'static str) -> Result<()> {
        self.grant(h.credits);
        if h.message_id == u64::MAX {
            return self.lease_break(msg, op);
        }
        if h.status == NtStatus::PENDING.0 && h.flags & FLAG_ASYNC != 0 {
            return Ok(()); // interim: the final reply comes later
        }
        let idx = h.message_id as usize % SLOTS;
        let slot = self.slots[idx];
        if slot.state != SlotState::Sent || slot.mid != h.message_id {
            return Err(self.garbage(
                op,
                DecodeError::BadValue {
                    what: "MessageId (no such request outstanding)",
                    value: h.message_id,
                },
            ));
        }
        self.in_flight -= u32::from(slot.charge);
        match slot.req {
            Req::Call => {
                self.reply.clear();
                self.reply.extend_from_slice(msg);
                self.slots[idx].state = SlotState::Answered;
            }
            Req::Ack => self.slots[idx].state = SlotState::Free,
            Req::Chain(n) => {
                if let Some(r) = self.chain_replies.get_mut(n as usize) {
                    r.clear();
                    r.extend_from_slice(msg);
                }
                self.slots[idx].state = SlotState::Answered;
            }
            Req::Read { buf, len } => {
                self.slots[idx].state = SlotState::Free;
                let res = if h.status == 0 {
                    let fixed = msg.get(HEADER_LEN..).unwrap_or(&[]);
                    let (off, n) =
                        proto::parse_read_fixed(fixed).map_err(|e| self.garbage(op, e))?;
                    if n > len as usize {
                        return Err(
                            self.garbage(op, DecodeError::Invalid("READ returned more than asked"))
                        );
                    }
                    let data = crate::wire::slice(msg, off, n).map_err(|e| self.garbage(op, e))?;
                    // SAFETY: the caller's buffer holds `len` ≥ n bytes (checked above).
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, n) };
                    Ok(n as u64)
                } else if h.status == NtStatus::END_OF_FILE.0 {
                    Ok(0)
                } else {
                    Err(NtStatus(h.status))
                };
                self.part_done(slot.op, res);
            }
            Req::Write { len } => {
                self.slots[idx].state = SlotState::Free;
                let res = if h.status == 0 {
                    let n = proto::parse_write(msg).map_err(|e| self.garbage(op, e))?;
                    if n > len {
                        return Err(
                            self.garbage(op, DecodeError::Invalid("WRITE wrote more than sent"))
                        );
                    }
                    Ok(u64::from(n))
                } else {
                    Err(NtStatus(h.status))
                };
                self.part_done(slot.op, res);
            }
        }
        Ok(())
    }

    fn grant(&mut self, credits: u16) {
        self.credits += u32::from(credits);
        self.max_granted = self.max_granted.max(self.credits_held());
    }

    fn part_done(&mut self, op: u32, res: std::result::Result<u64, NtStatus>) {
        let o = &mut self.ops[op as usize];
        match res {
            Ok(n) => o.bytes += n,
            Err(s) => {
                o.failed.get_or_insert(s);
            }
        }
        o.pending -= 1;
        if o.pending == 0 {
            o.busy = false;
            let c = Completion {
                user: o.user,
                result: match o.failed {
                    Some(s) => Err(s),
                    None => Ok(o.bytes),
                },
            };
            self.done.push_back(c);
            self.free_ops.push(op);
        }
    }

    /// A successful READ reply: its data goes straight into the caller's buffer.
    fn receive_read_data(
        &mut self,
        first: &[u8; HEADER_LEN],
        h: &Header,
        len: usize,
        buf: *mut u8,
        want: u32,
        op: &'static str,
    ) -> Result<()> {
        let mut fixed = [0u8; READ_RESP_LEN];
        if len < HEADER_LEN + READ_RESP_LEN {
            return Err(self.garbage(
                op,
                DecodeError::Truncated {
                    at: len,
                    need: 80 - len,
                },
            ));
        }
        self.read_exact(&mut fixed, op)?;
        let (off, n) = proto::parse_read_fixed(&fixed).map_err(|e| self.garbage(op, e))?;
        let data_at = HEADER_LEN + READ_RESP_LEN;
        if n > want as usize || off < data_at || off.saturating_add(n) > len {
            return Err(self.garbage(op, DecodeError::Invalid("READ data outside the reply")));
        }
        let mut pad = [0u8; 64];
        let pad_len = off - data_at;
        if pad_len > pad.len() {
            return Err(self.garbage(op, DecodeError::Invalid("READ data offset too far")));
        }
        self.read_exact(&mut pad[..pad_len], op)?;
        // SAFETY: the caller's buffer holds `want` ≥ n bytes until completion.
        let data = unsafe { std::slice::from_raw_parts_mut(buf, n) };
        self.read_exact(data, op)?;
        let mut tail = len - off - n;
        let mut sink = [0u8; 256];
        let signer = self.signer.clone();
        let t = Instant::now();
        let mut mac = match &signer {
            Some(s) if h.flags & FLAG_SIGNED != 0 => {
                let mut hz = *first;
                header::zero_signature(&mut hz);
                let mut m = s.start(h.message_id, true, false);
                m.update(&hz);
                m.update(&fixed);
                m.update(&pad[..pad_len]);
                m.update(data);
                Some(m)
            }
            _ => None,
        };
        while tail > 0 {
            let k = tail.min(sink.len());
            self.read_exact(&mut sink[..k], op)?;
            if let Some(m) = &mut mac {
                m.update(&sink[..k]);
            }
            tail -= k;
        }
        let checked = mac.map(|m| m.finish() == h.signature);
        if checked.is_some() {
            self.crypto_ns += t.elapsed().as_nanos() as u64;
        }
        match checked {
            Some(false) => {
                return Err(self.protocol(op, "READ reply with a bad signature"));
            }
            Some(true) => {}
            None if self.sign_all && self.signer.is_some() && self.sealer.is_none() => {
                return Err(self.protocol(op, "unsigned READ reply on a signed session"));
            }
            None => {}
        }
        self.grant(h.credits);
        let idx = h.message_id as usize % SLOTS;
        let slot = self.slots[idx];
        self.in_flight -= u32::from(slot.charge);
        self.slots[idx].state = SlotState::Free;
        self.part_done(slot.op, Ok(n as u64));
        Ok(())
    }

    /// Checks the signature of one reply (`msg`, header first) where the session signs.
    fn check_signature(&mut self, h: &Header, msg: &[u8], op: &'static str) -> Result<()> {
        let Some(s) = &self.signer else {
            return Ok(());
        };
        if h.flags & FLAG_SIGNED == 0 {
            let interim = h.status == NtStatus::PENDING.0 && h.flags & FLAG_ASYNC != 0;
            // Break notifications (MessageId all ones) are sent unsigned ([MS-SMB2] 3.3.4.7).
            let notice = h.message_id == u64::MAX;
            if self.sign_all && self.sealer.is_none() && !interim && !notice && h.session_id != 0 {
                return Err(self.protocol(op, "unsigned reply on a signed session"));
            }
            return Ok(());
        }
        let t = Instant::now();
        let mut m = s.start(h.message_id, true, false);
        let mut hz = [0u8; HEADER_LEN];
        hz.copy_from_slice(&msg[..HEADER_LEN]);
        header::zero_signature(&mut hz);
        m.update(&hz);
        m.update(&msg[HEADER_LEN..]);
        let good = m.finish() == h.signature;
        self.crypto_ns += t.elapsed().as_nanos() as u64;
        if !good {
            return Err(self.protocol(op, "reply with a bad signature"));
        }
        Ok(())
    }

    /// A TRANSFORM_HEADER message: read whole, decrypted, then filed as a plain reply.
    fn receive_sealed(&mut self, first: &[u8], len: usize, op: &'static str) -> Result<()> {
        let mut msg = std::mem::take(&mut self.scratch);
        msg.clear();
        msg.extend_from_slice(first);
        msg.resize(len, 0);
        let got = first.len();
        let r = self.read_exact(&mut msg[got..], op);
        if let Err(e) = r {
            self.scratch = msg;
            return Err(e);
        }
        let t = Instant::now();
        let plain = match &self.sealer {
            Some(s) => s.open(&mut msg),
            None => Err(DecodeError::Invalid(
                "encrypted reply on a session without keys",
            )),
        };
        self.crypto_ns += t.elapsed().as_nanos() as u64;
        let res = match plain {
            Ok(range) => self.file_chain(&msg[range], false, op),
            Err(e) => Err(self.garbage(op, e)),
        };
        self.scratch = msg;
        res
    }

    // ---- sending and receiving bytes ----

    /// Sends one whole message (header first), sealed when the session encrypts.
    fn send_message(&mut self, msg: &[u8], payload: &[u8], op: &'static str) -> Result<()> {
        if let Some(sealer) = &mut self.sealer {
            let mut out = std::mem::take(&mut self.scratch);
            out.clear();
            sealer.seal(self.session_id, msg, payload, &mut out);
            let r = self.send_framed(&out, op);
            self.scratch = out;
            return r;
        }
        let mut framed = Vec::with_capacity(4 + msg.len() + payload.len());
        framed.extend_from_slice(&header::frame_len(msg.len() + payload.len()));
        framed.extend_from_slice(msg);
        framed.extend_from_slice(payload);
        self.frames_sent += 1;
        self.sock.write_all(&framed).map_err(|e| self.io_err(op, e))
    }

    /// Sends a message that is already complete (a TRANSFORM_HEADER message), framed.
    fn send_framed(&mut self, msg: &[u8], op: &'static str) -> Result<()> {
        let fl = header::frame_len(msg.len());
        self.frames_sent += 1;
        self.iov.clear();
        self.iov.push(libc::iovec {
            iov_base: fl.as_ptr() as *mut libc::c_void,
            iov_len: 4,
        });
        self.iov.push(libc::iovec {
            iov_base: msg.as_ptr() as *mut libc::c_void,
            iov_len: msg.len(),
        });
        let r = self.writev_all(op);
        self.iov.clear();
        r
    }

    /// Fills `buf`. No byte for `timeout` is a [`SmbError::Timeout`]; after a stop request,
    /// waiting goes on for [`STOP_GRACE`] at most.
    fn read_exact(&mut self, buf: &mut [u8], op: &'static str) -> Result<()> {
        let mut last_byte = Instant::now();
        let mut got = 0;
        while got < buf.len() {
            match self.sock.read(&mut buf[got..]) {
                Ok(0) => {
                    return Err(SmbError::Closed {
                        server: self.cfg.server.clone(),
                        op,
                    });
                }
                Ok(n) => {
                    got += n;
                    last_byte = Instant::now();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.check_stop(op)?,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    self.check_stop(op)?;
                    if last_byte.elapsed() >= self.cfg.timeout {
                        return Err(SmbError::Timeout {
                            server: self.cfg.server.clone(),
                            op,
                            secs: self.cfg.timeout.as_secs().max(1),
                        });
                    }
                }
                Err(e) => return Err(self.io_err(op, e)),
            }
        }
        Ok(())
    }

    /// Fails the wait once a stop was requested [`STOP_GRACE`] ago.
    fn check_stop(&mut self, op: &'static str) -> Result<()> {
        if !(self.cfg.abort)() {
            return Ok(());
        }
        let since = *self.stopping.get_or_insert_with(Instant::now);
        if since.elapsed() >= STOP_GRACE {
            return Err(SmbError::Aborted {
                server: self.cfg.server.clone(),
                op,
            });
        }
        Ok(())
    }

    /// Moves the completions received and not yet reaped into `out` (before this
    /// connection is given up for a new one).
    pub fn take_done(&mut self, out: &mut Vec<Completion>) {
        out.extend(self.done.drain(..));
    }

    pub(crate) fn io_err(&self, op: &'static str, source: io::Error) -> SmbError {
        SmbError::Io {
            server: self.cfg.server.clone(),
            op,
            source,
        }
    }

    pub(crate) fn garbage(&self, op: &'static str, detail: DecodeError) -> SmbError {
        SmbError::Garbage {
            server: self.cfg.server.clone(),
            op,
            detail,
        }
    }

    pub(crate) fn protocol(&self, op: &'static str, reason: &str) -> SmbError {
        SmbError::Protocol {
            server: self.cfg.server.clone(),
            op,
            reason: reason.to_string(),
        }
    }

    pub(crate) fn status_err(&self, op: &'static str, what: &str, status: u32) -> SmbError {
        SmbError::Status {
            server: self.cfg.server.clone(),
            op,
            what: what.to_string(),
            status: NtStatus(status),
        }
    }
}
