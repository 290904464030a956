//! The fixed newstyle handshake: greeting, client flags, `NBD_OPT_STRUCTURED_REPLY`, then
//! `NBD_OPT_GO` with the export name, asking for block-size constraints. A server without
//! `NBD_OPT_GO` (older than 2017) gets `NBD_OPT_EXPORT_NAME`. Oldstyle servers, TLS-only
//! servers and refusals end with one line saying which.

use std::io;
use std::time::{Duration, Instant};

use crate::error::{NbdError, Result};
use crate::proto::*;
use crate::sock::Sock;

/// Largest option reply payload accepted (descriptions and names are far smaller).
const MAX_OPT_REPLY: u32 = 64 << 10;
const DURING: &str = "the handshake";

/// What the server said about the export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    pub name: String,
    pub size: u64,
    /// Transmission flags (`NBD_FLAG_*`).
    pub flags: u16,
    /// Requests' offsets and lengths must be multiples of this.
    pub min_block: u32,
    pub preferred_block: u32,
    /// Largest READ or WRITE payload.
    pub max_payload: u32,
    /// Structured replies were agreed.
    pub structured: bool,
}

impl Export {
    pub fn read_only(&self) -> bool {
        self.flags & TF_READ_ONLY != 0
    }
    pub fn can(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
}

struct Hs<'a> {
    sock: &'a Sock,
    server: &'a str,
    deadline: Instant,
    timeout: Duration,
}

impl Hs<'_> {
    fn io(&self, e: io::Error) -> NbdError {
        match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe => NbdError::Closed {
                server: self.server.into(),
                during: DURING,
            },
            io::ErrorKind::TimedOut => NbdError::Timeout {
                server: self.server.into(),
                during: DURING,
                secs: self.timeout.as_secs(),
            },
            _ => NbdError::Io {
                server: self.server.into(),
                during: DURING,
                source: e,
            },
        }
    }

    fn bad(&self, what: String) -> NbdError {
        NbdError::Protocol {
            server: self.server.into(),
            during: DURING,
            what,
        }
    }

    fn read(&self, buf: &mut [u8]) -> Result<()> {
        self.sock
            .read_exact(buf, self.deadline)
            .map_err(|e| self.io(e))
    }

    fn send(&self, buf: &[u8]) -> Result<()> {
        self.sock
            .write_all(buf, self.deadline)
            .map_err(|e| self.io(e))
    }

    /// One option reply for `option`: its type and payload.
    fn reply(&self, option: u32) -> Result<(u32, Vec<u8>)> {
        let mut head = [0u8; 20];
        self.read(&mut head)?;
        let r = parse_opt_reply(&head).map_err(|e| self.bad(e))?;
        if r.option != option {
            return Err(self.bad(format!(
                "reply to option {} while option {option} was asked",
                r.option
            )));
        }
        if r.len > MAX_OPT_REPLY {
            return Err(self.bad(format!("option reply of {} bytes", r.len)));
        }
        let mut data = vec![0u8; r.len as usize];
        self.read(&mut data)?;
        Ok((r.kind, data))
    }

    fn refused(&self, what: &str, kind: u32, data: &[u8]) -> NbdError {
        let text: String = String::from_utf8_lossy(data)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(200)
            .collect();
        let text = text.trim();
        NbdError::Refused {
            server: self.server.into(),
            what: if text.is_empty() {
                format!("{what}: {}", rep_error_name(kind))
            } else {
                format!("{what}: {} ({text})", rep_error_name(kind))
            },
        }
    }
}

/// Negotiates `export` on a freshly connected socket within `timeout`.
pub(crate) fn negotiate(
    sock: &Sock,
    server: &str,
    export: &str,
    timeout: Duration,
) -> Result<Export> {
    let hs = Hs {
        sock,
        server,
        deadline: Instant::now() + timeout,
        timeout,
    };
    let mut greet = [0u8; 18];
    hs.read(&mut greet[..16])?;
    if be64(&greet[..8]) != NBDMAGIC {
        return Err(hs.bad("greeting without NBDMAGIC (not an NBD server?)".into()));
    }
    match be64(&greet[8..16]) {
        IHAVEOPT => {}
        CLISERV_MAGIC => {
            return Err(hs.bad(
                "the server speaks oldstyle negotiation, which has no export names; \
                 use a newstyle server (nbdkit, qemu-nbd, nbd-server 3.x)"
                    .into(),
            ));
        }
        m => return Err(hs.bad(format!("greeting magic {m:#018x}"))),
    }
    hs.read(&mut greet[16..18])?;
    let hflags = be16(&greet[16..18]);
    if hflags & FLAG_FIXED_NEWSTYLE == 0 {
        return Err(hs.bad("the server does not offer fixed newstyle negotiation".into()));
    }
    let no_zeroes = hflags & FLAG_NO_ZEROES != 0;
    let cflags = FLAG_C_FIXED_NEWSTYLE | if no_zeroes { FLAG_C_NO_ZEROES } else { 0 };
    hs.send(&cflags.to_be_bytes())?;

    hs.send(&encode_option(OPT_STRUCTURED_REPLY, &[]))?;
    let (kind, _) = hs.reply(OPT_STRUCTURED_REPLY)?;
    let structured = match kind {
        REP_ACK => true,
        k if k & REP_FLAG_ERROR != 0 => false,
        k => return Err(hs.bad(format!("reply type {k} to NBD_OPT_STRUCTURED_REPLY"))),
    };

    hs.send(&encode_option(OPT_GO, &go_data(export)))?;
    let mut e = Export {
        name: export.to_string(),
        size: 0,
        flags: 0,
        min_block: 1,
        preferred_block: 4096,
        max_payload: DEFAULT_MAX_PAYLOAD,
        structured,
    };
    let mut got_export = false;
    loop {
        let (kind, data) = hs.reply(OPT_GO)?;
        match kind {
            REP_INFO => match parse_info(&data).map_err(|w| hs.bad(w))? {
                Info::Export { size, flags } => {
                    (e.size, e.flags) = (size, flags);
                    got_export = true;
                }
                Info::BlockSize {
                    min,
                    preferred,
                    max,
                } => {
                    (e.min_block, e.preferred_block) = (min, preferred);
                    e.max_payload = max.min(DEFAULT_MAX_PAYLOAD.max(preferred));
                }
                Info::Other(_) => {}
            },
            REP_ACK if got_export => return Ok(e),
            REP_ACK => {
                return Err(hs.bad("NBD_OPT_GO acknowledged without the export's size".into()));
            }
            k if k == REP_FLAG_ERROR | 1 => return export_name(&hs, e, no_zeroes),
            k if k & REP_FLAG_ERROR != 0 => {
                return Err(hs.refused(&format!("export {export:?} refused"), k, &data));
            }
            k => return Err(hs.bad(format!("reply type {k} to NBD_OPT_GO"))),
        }
    }
}

/// The pre-`NBD_OPT_GO` way in: size and flags, then 124 zero bytes unless both sides
/// agreed to drop them. A server that does not know the export closes the connection.
fn export_name(hs: &Hs, mut e: Export, no_zeroes: bool) -> Result<Export> {
    let mut data = Vec::with_capacity(e.name.len());
    data.extend_from_slice(e.name.as_bytes());
    hs.send(&encode_option(OPT_EXPORT_NAME, &data))?;
    let mut b = [0u8; 10 + 124];
    let n = if no_zeroes { 10 } else { b.len() };
    hs.read(&mut b[..n]).map_err(|err| match err {
        NbdError::Closed { .. } => NbdError::Refused {
            server: hs.server.into(),
            what: format!("export {:?} refused (connection closed)", e.name),
        },
        other => other,
    })?;
    e.size = be64(&b[..8]);
    e.flags = be16(&b[8..10]);
    Ok(e)
}
