//! What this process knows of each SMB server across connections and jobs, so that a lost
//! server costs one `reconnect=` window, as with NFS and iSCSI:
//!
//! - servers that accepted a login: failing to reach one of them later is an outage under
//!   way (a server restarting between two jobs of a run), waited out within `reconnect=`;
//!   failing to reach any other is a wrong address or a server that is down, said at once;
//! - servers given up on (a connection lost and not made again within `reconnect=`): every
//!   later login to one fails at once, naming the loss, instead of waiting a window again.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::client::{Client, ClientConfig};
use crate::error::{Result, SmbError};

static ANSWERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Servers given up on, with the window they were given.
static LOST: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());

fn answered_before(server: &str) -> bool {
    ANSWERED
        .lock()
        .map(|a| a.iter().any(|s| s == server))
        .unwrap_or(false)
}

fn answered(server: &str) {
    if let Ok(mut a) = ANSWERED.lock()
        && !a.iter().any(|s| s == server)
    {
        a.push(server.to_string());
    }
}

/// Records that `server` stayed lost for a whole `window`: later logins to it fail at once.
pub fn give_up(server: &str, window: Duration) {
    if let Ok(mut l) = LOST.lock()
        && !l.iter().any(|(s, _)| s == server)
    {
        l.push((server.to_string(), window));
    }
}

/// The error every login to `server` gets once it was given up on.
pub fn lost(server: &str) -> Option<SmbError> {
    let l = LOST.lock().ok()?;
    let (_, window) = l.iter().find(|(s, _)| s == server)?;
    Some(SmbError::Lost {
        server: server.to_string(),
        secs: window.as_secs(),
    })
}

/// Whether another login may work: a lost or refused connection, a timeout; not a refused
/// password, a share that is gone, or a server already given up on.
pub fn transient(e: &SmbError) -> bool {
    e.is_disconnect() || matches!(e, SmbError::Connect { .. } | SmbError::Resolve { .. })
}

/// A wait before the first login succeeded: how long, and the first failure.
pub struct Waited {
    pub lasted: Duration,
    pub reason: String,
}

/// A job's first login. A server that answered earlier in this process and does not now
/// is waited for within `window` (attempts with a growing pause, stopped by the
/// configuration's `abort`), and given up on if it stays away; a server given up on earlier
/// fails at once.
pub fn connect_within(cfg: &ClientConfig, window: Duration) -> Result<(Client, Option<Waited>)> {
    let server = &cfg.conn.server;
    if let Some(e) = lost(server) {
        return Err(e);
    }
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    let mut cause = None;
    loop {
        match Client::connect(cfg) {
            Ok(c) => {
                answered(server);
                let waited = cause.map(|reason| Waited {
                    lasted: started.elapsed(),
                    reason,
                });
                return Ok((c, waited));
            }
            Err(e) if transient(&e) && answered_before(server) && !(cfg.conn.abort)() => {
                if started.elapsed() >= window {
                    if !window.is_zero() {
                        give_up(server, window);
                    }
                    return Err(e);
                }
                cause.get_or_insert_with(|| e.to_string());
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(e),
        }
    }
}
