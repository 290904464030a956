//! A blocking SNMP client (v2c with a community, v3 with a USM user) over UDP: one request in flight, each answered within a
//! timeout or sent again a bounded number of times, so no call can hang.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use crate::Error;
use crate::ber::{Oid, Value};
use crate::message::{self, GET, GET_BULK, Request};
use crate::url::SnmpUrl;
use crate::v3::{self, Credentials, Outcome};

/// Rows asked for per GETBULK.
const BULK: u32 = 32;
/// A walk stops with an error past this many rows (a table of runaway size).
const MAX_ROWS: usize = 4096;
/// The largest datagram read.
const MAX_REPLY: usize = 65_535;

/// How requests are vouched for.
enum Security {
    Community(Vec<u8>),
    Usm(Box<v3::Session>),
}

/// The secrets a URL does not carry, from the environment or files (never argv).
#[derive(Default)]
pub struct Secrets {
    /// v2c: the community when the URL has none (else `public`).
    pub community: Option<Vec<u8>>,
    /// v3: the authentication and privacy passwords.
    pub auth: Option<Vec<u8>>,
    pub privacy: Option<Vec<u8>>,
}

pub struct Client {
    sock: UdpSocket,
    peer: SocketAddr,
    security: Security,
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
        let secrets = Secrets {
            community,
            ..Secrets::default()
        };
        Client::open_with(url, secrets, timeout, tries)
    }

    /// As [`Client::open`], for v2c or v3: a v3 URL's security level follows the
    /// passwords given (both: authPriv; authentication only: authNoPriv; none:
    /// noAuthNoPriv).
    pub fn open_with(
        url: &SnmpUrl,
        secrets: Secrets,
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
        let security = match &url.v3 {
            Some(v) => Security::Usm(Box::new(v3::Session::new(
                Credentials {
                    user: v.user.clone().into_bytes(),
                    auth: secrets.auth.map(|p| (v.auth, p)),
                    privacy: secrets.privacy.map(|p| (v.privacy, p)),
                },
                (u64::from(seed) << 20) ^ u64::from(std::process::id()),
            )?)),
            None => Security::Community(
                url.community
                    .clone()
                    .or(secrets.community)
                    .unwrap_or_else(|| b"public".to_vec()),
            ),
        };
        Ok(Client {
            sock,
            peer,
            security,
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
        // v3: the engine's discovery and a clock re-sync each cost one more exchange.
        for _ in 0..3 {
            self.next_id = self.next_id.wrapping_add(1) & 0x7fff_ffff;
            let id = self.next_id;
            let req = Request {
                kind,
                request_id: id,
                oids,
                max_repetitions: reps,
            };
            let msg = match &mut self.security {
                Security::Community(c) => message::encode_v2c(c, &req),
                Security::Usm(s) => s.encode(id, |out| message::put_pdu(out, &req)),
            };
            let r = match self.exchange(&msg, id)? {
                Outcome::Response(r) => r,
                Outcome::Retry => continue,
            };
            if r.error_status != 0 {
                // net-snmp answers a v3 user below the level its access rule asks for
                // (`rouser NAME priv`) with authorizationError, not a Report.
                let hint = match &self.security {
                    Security::Usm(s) if r.error_status == 16 => format!(
                        ": the agent's access rules refuse this user at {} (a privacy or \
                         authentication password missing?)",
                        s.level()
                    ),
                    _ => String::new(),
                };
                return Err(Error::Agent(format!(
                    "error-status {} ({}) at binding {}{hint}",
                    r.error_status,
                    error_name(r.error_status),
                    r.error_index
                )));
            }
            return Ok(r.bindings);
        }
        Err(Error::Agent(
            "the agent kept asking for discovery or a clock re-sync".into(),
        ))
    }

    /// Sends `msg` until its reply comes (or the tries run out) and reads it.
    fn exchange(&mut self, msg: &[u8], id: i32) -> Result<Outcome, Error> {
        for _ in 0..self.tries {
            self.sock
                .send(msg)
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
                let reply = &self.buf[..n];
                let got = match &mut self.security {
                    Security::Community(_) => {
                        let r = message::decode_v2c(reply)?;
                        (r.request_id == id).then_some(Outcome::Response(r))
                    }
                    Security::Usm(s) => s.decode(id, reply)?,
                };
                if let Some(o) = got {
                    return Ok(o);
                }
            }
        }
        let why = match &self.security {
            Security::Community(_) => "no agent there, or the community is wrong",
            Security::Usm(_) => "no agent there, or it dropped our SNMPv3 request",
        };
        Err(Error::Timeout(format!(
            "no answer from {} within {} ms ({} tries): {why}",
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
