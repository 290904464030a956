//! Test doubles shared by the unit tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::engine::{Access, Caps, Completion, Engine, FileId, FileSpec, IoKind, IoUnit, Queued};
use crate::error::EngineError;

/// How long the recorder's fsync takes.
pub const SYNC_TIME: Duration = Duration::from_millis(30);

/// An engine that completes every IO at once and records the calls that shape what the
/// kernel caches (advise, invalidate) and the syncs, in order.
pub struct Recorder {
    log: Arc<Mutex<Vec<String>>>,
    size: u64,
    /// Cache drops fail, as BLKFLSBUF does for a user who is not root.
    refuse_drops: bool,
    /// Says it queues IO (as libaio does), though it still completes each IO at once.
    queued: bool,
    /// The server it says it is connected to.
    server: Option<std::net::SocketAddr>,
    /// How long closing a file takes (an iSCSI logout, an NFS COMMIT).
    close_time: Duration,
    /// How long dropping a region's page cache takes.
    drop_time: Duration,
    /// Queued IOs stay in flight until reaped (tag, bytes); a drop notes how many are.
    pending: Option<Vec<(u32, u64)>>,
    /// Each read and write is noted with its offset.
    log_ios: bool,
}

impl Recorder {
    /// Records into `log`; every file it opens is `size` bytes.
    pub fn new(log: Arc<Mutex<Vec<String>>>, size: u64) -> Self {
        Recorder {
            log,
            size,
            refuse_drops: false,
            queued: false,
            server: None,
            close_time: Duration::ZERO,
            drop_time: Duration::ZERO,
            pending: None,
            log_ios: false,
        }
    }

    /// As [`queued`](Self::queued), keeping IOs in flight until they are reaped.
    pub fn in_flight(log: Arc<Mutex<Vec<String>>>, size: u64) -> Self {
        Recorder {
            pending: Some(Vec::new()),
            ..Recorder::queued(log, size)
        }
    }

    /// As [`new`](Self::new), taking `drop_time` to drop a region's page cache.
    pub fn dropping_slowly(log: Arc<Mutex<Vec<String>>>, size: u64, drop_time: Duration) -> Self {
        Recorder {
            drop_time,
            ..Recorder::new(log, size)
        }
    }

    /// As [`new`](Self::new), noting each read (`read <offset>`) and write too.
    pub fn logging_ios(log: Arc<Mutex<Vec<String>>>, size: u64) -> Self {
        Recorder {
            log_ios: true,
            ..Recorder::new(log, size)
        }
    }

    /// As [`new`](Self::new), for an engine that is not synchronous.
    pub fn queued(log: Arc<Mutex<Vec<String>>>, size: u64) -> Self {
        Recorder {
            queued: true,
            ..Recorder::new(log, size)
        }
    }

    /// As [`new`](Self::new), taking `close_time` to close each file.
    pub fn closing_slowly(log: Arc<Mutex<Vec<String>>>, size: u64, close_time: Duration) -> Self {
        Recorder {
            close_time,
            ..Recorder::new(log, size)
        }
    }

    /// As [`new`](Self::new), saying it is connected to a server at `addr`.
    pub fn connected_to(
        log: Arc<Mutex<Vec<String>>>,
        size: u64,
        addr: std::net::SocketAddr,
    ) -> Self {
        Recorder {
            server: Some(addr),
            ..Recorder::new(log, size)
        }
    }

    /// This recorder, taking `close_time` to close each file.
    pub fn closing_in(self, close_time: Duration) -> Self {
        Recorder { close_time, ..self }
    }

    /// As [`new`](Self::new), with every cache drop refused.
    pub fn refusing_drops(log: Arc<Mutex<Vec<String>>>, size: u64) -> Self {
        Recorder {
            refuse_drops: true,
            ..Recorder::new(log, size)
        }
    }

    fn note(&self, call: String) {
        self.log.lock().unwrap().push(call);
    }
}

impl Engine for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn caps(&self) -> Caps {
        Caps {
            synchronous: !self.queued,
            ..Caps::default()
        }
    }
    fn open(&mut self, _file: &FileSpec) -> Result<FileId, EngineError> {
        Ok(0)
    }
    fn size(&mut self, _file: FileId) -> Result<u64, EngineError> {
        Ok(self.size)
    }
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        if io.kind == IoKind::Fsync {
            self.note("fsync".into());
            std::thread::sleep(SYNC_TIME);
        }
        if self.log_ios && matches!(io.kind, IoKind::Read | IoKind::Write) {
            let op = if io.kind == IoKind::Read {
                "read"
            } else {
                "write"
            };
            self.note(format!("{op} {}", io.offset));
        }
        if let Some(pending) = &mut self.pending {
            pending.push((io.tag, u64::from(io.len)));
            return Ok(Queued::Pending);
        }
        Ok(Queued::Done(u64::from(io.len)))
    }
    fn reap(&mut self, _min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        if let Some(pending) = &mut self.pending {
            out.extend(pending.drain(..).map(|(tag, n)| Completion {
                tag,
                result: n as i64,
            }));
        }
        Ok(())
    }
    fn close(&mut self, _file: FileId) -> Result<(), EngineError> {
        std::thread::sleep(self.close_time);
        Ok(())
    }
    fn invalidate(&mut self, _file: FileId) -> Result<(), EngineError> {
        self.note("invalidate".into());
        if self.refuse_drops {
            return Err(EngineError::new(
                crate::error::ErrorKind::Os,
                "only root may drop a block device's cache",
            ));
        }
        Ok(())
    }
    fn invalidate_range(
        &mut self,
        _file: FileId,
        offset: u64,
        len: u64,
    ) -> Result<(), EngineError> {
        std::thread::sleep(self.drop_time);
        match &self.pending {
            Some(p) if !p.is_empty() => self.note(format!(
                "invalidate {offset}+{len} with {} in flight",
                p.len()
            )),
            _ => self.note(format!("invalidate {offset}+{len}")),
        }
        Ok(())
    }
    fn advise(&mut self, _file: FileId, access: Access) -> Result<(), EngineError> {
        self.note(format!("{access:?}"));
        Ok(())
    }
    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.server
    }
}

/// Starts `sh -c script` holding `fd` (a socket standing in for a server's): the flag that
/// closes it on exec is cleared in the child only, between fork and exec, so a child
/// another test spawns meanwhile (tests run as threads) does not inherit it.
pub fn child_holding(fd: std::os::fd::RawFd, script: &str) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", script])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: fcntl is async-signal-safe, and `fd` is open in the forked child.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().expect("spawn sh")
}
