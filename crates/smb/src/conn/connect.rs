//! Making the connection (the socket's options, the pre-allocated slots and buffers) and
//! what it reports about itself: its peer, its counters, the IOs outstanding.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpStream};

use super::{Conn, ConnConfig, POLL, Req, SLOTS, Slot, SlotState};
use crate::error::{Result, SmbError};

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

    /// Messages sent so far (see the field).
    pub fn frames_sent(&self) -> u64 {
        self.frames_sent
    }

    /// CREATE requests sent on this connection so far.
    pub fn creates_sent(&self) -> u64 {
        self.creates_sent
    }

    /// Nanoseconds spent in signing and encryption so far (see the field).
    pub fn crypto_ns(&self) -> u64 {
        self.crypto_ns
    }

    /// IOs submitted and not yet reaped.
    pub fn ops_outstanding(&self) -> usize {
        self.ops.len() - self.free_ops.len()
    }
}
