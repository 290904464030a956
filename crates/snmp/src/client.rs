//! A blocking SNMPv2c client over UDP: one request in flight, each answered within a
//! timeout or sent again a bounded number of times, so no call can hang.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use crate::Error;
use crate::ber::{Oid, Value};
use crate::message::{self, GET, GET_BULK, Request};
use crate::url::SnmpUrl;

/// Rows asked for per GETBULK.
const BULK: u32 = 32;
/// A walk stops with an error past this many rows (a table of runaway size).
const MAX_ROWS: usize = 4096;
/// The largest datagram read.
const MAX_REPLY: usize = 65_535;

pub struct Client {
    sock: UdpSocket,
    peer: SocketAddr,
    community: Vec<u8>,
    timeout: Duration,
    tries: u32,
    next_id: i32,
    buf: Vec<u8>,
}

impl Client {
    /// Resolves the agent and opens a socket to it; sends nothing. The community is the
    /// URL's, else `community` (from the environment), else `public`.
    pub fn open(
        url: &SnmpUrl,
        community: Option<Vec<u8>>,
        timeout: Duration,
        tries: u32,
    ) -> Result<Client, Error> {
        let peer = storbench_resolve::resolve(&url.host, url.port)
            .map_err(|e| Error::Io(format!("{}: {e}", url.host)))?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Io(format!("{}: no address", url.host)))?;
        let local: SocketAddr = if peer.is_ipv4() {
            "0.0.0.0:0".parse().expect("address")
        } else {
            "[::]:0".parse().expect("address")
        };
        let sock = UdpSocket::bind(local).map_err(|e| Error::Io(format!("UDP socket: {e}")))?;
        sock.connect(peer)
            .map_err(|e| Error::Io(format!("{peer}: {e}")))?;
        sock.set_read_timeout(Some(timeout))
            .map_err(|e| Error::Io(e.to_string()))?;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.subsec_nanos());
        Ok(Client {
            sock,
            peer,
            community: url
                .community
                .clone()
                .or(community)
                .unwrap_or_else(|| b"public".to_vec()),
            timeout,
            tries: tries.max(1),
            next_id: (seed & 0x3fff_ffff) as i32,
            buf: vec![0; MAX_REPLY],
        })
    }

    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The values of `oids` (a missing one as [`Value::Missing`]).
    pub fn get(&mut self, oids: &[Oid]) -> Result<Vec<(Oid, Value)>, Error> {
        self.request(GET, oids, 0)
    }

    /// Every variable below `prefix`, in order (GETBULK until the agent leaves it).
    pub fn walk(&mut self, prefix: &Oid) -> Result<Vec<(Oid, Value)>, Error> {
        let mut out: Vec<(Oid, Value)> = Vec::new();
        let mut from = prefix.clone();
        loop {
            let rows = self.request(GET_BULK, std::slice::from_ref(&from), BULK)?;
            if rows.is_empty() {
                return Ok(out);
            }
            for (oid, value) in rows {
                if !oid.starts_with(prefix) || matches!(value, Value::EndOfMib) {
                    return Ok(out);
                }
                if oid <= from {
                    return Err(Error::Protocol(format!(
                        "the agent's walk of {prefix} does not advance at {oid}"
                    )));
                }
                from = oid.clone();
                out.push((oid, value));
                if out.len() > MAX_ROWS {
                    return Err(Error::Protocol(format!(
                        "{prefix} has more than {MAX_ROWS} rows"
                    )));
                }
            }
        }
    }

    fn request(&mut self, kind: u8, oids: &[Oid], reps: u32) -> Result<Vec<(Oid, Value)>, Error> {
        self.next_id = self.next_id.wrapping_add(1) & 0x7fff_ffff;
        let id = self.next_id;
        let msg = message::encode_v2c(
            &self.community,
            &Request {
                kind,
                request_id: id,
                oids,
                max_repetitions: reps,
            },
        );
        for _ in 0..self.tries {
            self.sock
                .send(&msg)
                .map_err(|e| Error::Io(format!("{}: {e}", self.peer)))?;
            // Replies to earlier (timed-out) requests are read and dropped.
            loop {
                let n = match self.sock.recv(&mut self.buf) {
                    Ok(n) => n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        break;
                    }
                    // An ICMP port unreachable: nothing listens there.
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        return Err(Error::Timeout(format!(
                            "no answer from {}: nothing listens on that port (port unreachable)",
                            self.peer
                        )));
                    }
                    Err(e) => return Err(Error::Io(format!("{}: {e}", self.peer))),
                };
                let r = message::decode_v2c(&self.buf[..n])?;
                if r.request_id != id {
                    continue;
                }
                if r.error_status != 0 {
                    return Err(Error::Agent(format!(
                        "error-status {} ({}) at binding {}",
                        r.error_status,
                        error_name(r.error_status),
                        r.error_index
                    )));
                }
                return Ok(r.bindings);
            }
        }
        Err(Error::Timeout(format!(
            "no answer from {} within {} ms ({} tries): no agent there, or the community is wrong",
            self.peer,
            self.timeout.as_millis(),
            self.tries
        )))
    }
}

fn error_name(status: i64) -> &'static str {
    match status {
        1 => "tooBig",
        2 => "noSuchName",
        5 => "genErr",
        6 => "noAccess",
        16 => "authorizationError",
        _ => "see RFC 3416",
    }
}
