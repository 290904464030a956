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
//!
//! One file per concern: making the connection (`connect`), credits and MessageIds
//! (`credits`), synchronous calls (`call`), data requests (`submit`), receiving and filing
//! replies (`receive`), collecting completions (`reap`), signatures (`signing`), lease
//! breaks (`breaks`), bytes on the socket (`socket`) and errors (`errors`). Recovering a
//! lost connection is not this type's: [`crate::session`] makes a new one.

use std::collections::VecDeque;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::crypto::Signer;
use crate::error::NtStatus;
use crate::seal::Sealer;

mod breaks;
mod call;
mod connect;
mod credits;
mod errors;
mod reap;
mod receive;
mod signing;
mod socket;
mod submit;

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
    /// awaited for [`STOP_GRACE`], then the wait ends with
    /// [`SmbError::Aborted`](crate::error::SmbError::Aborted).
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
