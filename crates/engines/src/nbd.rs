//! `nbd`: fio's nbd engine (`--ioengine=nbd --uri=nbd://host[:port]/export`), done in Rust
//! with storbench's own client (`storbench-nbd`) instead of libnbd: no kernel nbd device,
//! no root.
//!
//! The target is the URI (`uri=`, which the job reader turns into the job's file, or an
//! `nbd://`/`nbd+unix://` file name). One connection per worker; iodepth is the number of
//! requests in flight, matched by cookie. Fsync is FLUSH, trim is TRIM, `sync=1` sets FUA
//! on writes. The export is a device: its size is the server's, nothing is laid out or
//! removed, and writes to one holding data are refused unless `--allow-destructive`.

use std::time::Duration;

use storbench_core::{
    Caps, Completion, Engine, EngineError, EngineInfo, EngineSetup, ErrorKind, FileId, FileSpec,
    IoKind, IoUnit, Queued,
};
use storbench_job::JobSpec;
use storbench_job::target::Target;
use storbench_nbd::{Client, Cmd, Config, NbdError, proto};

/// Bounds the connect, the handshake and every wait for a reply (fio's nbd engine, through
/// libnbd, waits forever).
const TIMEOUT: Duration = Duration::from_secs(30);

/// fio's name; the catalogue entry.
pub const NAME: &str = "nbd";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(NbdEngine {
        depth: job.iodepth.max(1),
        client: None,
        fua: false,
        closed_info: None,
        round_trip: None,
    }))
}

/// A client error as an engine error: one line naming the server and what failed.
fn to_engine(e: NbdError) -> EngineError {
    let kind = match &e {
        NbdError::Url { .. } | NbdError::Invalid { .. } => ErrorKind::Unsupported,
        NbdError::Refused { .. } => ErrorKind::Refused,
        e if e.is_connection_loss() => ErrorKind::Disconnected,
        _ => ErrorKind::Protocol,
    };
    EngineError {
        kind,
        errno: e.raw_os_error(),
        message: e.to_string(),
    }
}

pub struct NbdEngine {
    depth: u32,
    client: Option<Client>,
    /// `sync=1`: writes carry FUA.
    fua: bool,
    /// What [`Engine::info`] said just before the export was closed.
    closed_info: Option<EngineInfo>,
    /// NBD has no no-op: the least of a few small reads of the export's first block, which
    /// the first of them leaves in the server's cache.
    round_trip: Option<Duration>,
}

/// The small read the round trip is timed by.
const PROBE_BYTES: usize = 4096;

impl NbdEngine {
    fn client(&mut self, file: FileId) -> Result<&mut Client, EngineError> {
        match self.client.as_mut() {
            Some(c) if file == 0 => Ok(c),
            _ => Err(EngineError::unsupported(format!(
                "nbd: file {file} is not open"
            ))),
        }
    }
}

impl Engine for NbdEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: false,
            has_slat: false,
            trim: true,
            meta: false,
            no_data: false,
        }
    }

    fn setup(&mut self, setup: &EngineSetup) -> Result<(), EngineError> {
        self.depth = setup.iodepth.max(1);
        Ok(())
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        let url = match &spec.target {
            Target::Nbd(typed) => typed.url.clone(),
            other => {
                return Err(EngineError::unsupported(format!(
                    "nbd: {other} is not an NBD export (expected {})",
                    storbench_job::catalogue::NBD.form
                )));
            }
        };
        if let Some(c) = &self.client {
            if c.url() == &url {
                return Ok(0);
            }
            return Err(EngineError::unsupported(format!(
                "nbd: one export per job; {} is open, so {url} needs a job of its own",
                c.url()
            )));
        }
        let cfg = Config {
            timeout: TIMEOUT,
            window: self.depth as usize,
        };
        let mut client = Client::connect(&url, cfg).map_err(to_engine)?;
        client.set_abort(storbench_core::stop::requested);
        self.fua = spec.open.sync;
        if self.fua && !client.export().can(proto::TF_SEND_FUA) {
            return Err(EngineError::unsupported(format!(
                "{url}: sync=1 needs FUA, which this server does not offer"
            )));
        }
        if client.export().size >= PROBE_BYTES as u64 {
            let mut block = [0u8; PROBE_BYTES];
            self.round_trip = crate::round_trip::measure(|| {
                client
                    .call(Cmd::Read, 0, &mut block, false)
                    .is_ok_and(|r| r >= 0)
            });
        }
        self.client = Some(client);
        Ok(0)
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        Ok(self.client(file)?.export().size)
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        let fua = self.fua;
        let c = self.client(io.file)?;
        let (cmd, fua) = match io.kind {
            IoKind::Read => (Cmd::Read, false),
            IoKind::Write => (Cmd::Write, fua),
            IoKind::Fsync | IoKind::Fdatasync => (Cmd::Flush, false),
            IoKind::Trim => (Cmd::Trim, false),
        };
        // SAFETY: the worker keeps the IO's buffer untouched until its tag is reaped, and
        // the client hands requests back only through reap.
        let queued = unsafe {
            c.submit(
                u64::from(io.tag),
                cmd,
                io.offset,
                io.len,
                io.buf.as_ptr(),
                fua,
            )
        };
        match queued {
            Ok(true) => Ok(Queued::Pending),
            Ok(false) => Ok(Queued::Busy),
            Err(e) => Err(to_engine(e)),
        }
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        let Some(c) = self.client.as_mut() else {
            return Ok(());
        };
        // With other requests in flight a reap always follows, and it sends first: one
        // sendmsg then carries every request queued since, instead of one per IO. A lone
        // request goes out at once, for QD1 latency.
        if c.in_flight() > 1 {
            return Ok(());
        }
        c.flush().map_err(to_engine)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let Some(c) = self.client.as_mut() else {
            return Ok(());
        };
        let mut failed = false;
        c.wait(min, &mut |user, result| {
            failed |= result < 0;
            out.push(Completion {
                tag: user as u32,
                result,
            });
        })
        .map_err(to_engine)?;
        match c.first_error().filter(|_| failed) {
            Some((cmd, offset, errno)) => Err(EngineError {
                kind: ErrorKind::Os,
                errno: Some(errno as i32),
                message: format!(
                    "{}: {cmd} at offset {offset} failed on the server: {}",
                    c.url(),
                    proto::errno_name(errno)
                ),
            }),
            None => Ok(()),
        }
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        self.client(file)?;
        // The runner asks for the facts after closing: keep them.
        self.closed_info = Some(self.info());
        match self.client.take() {
            Some(c) => c.disconnect().map_err(to_engine),
            None => Ok(()),
        }
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.peer_addr()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.client.as_ref()?.local_addr()
    }

    fn info(&mut self) -> EngineInfo {
        let Some(c) = self.client.as_ref() else {
            return self.closed_info.clone().unwrap_or_default();
        };
        let e = c.export();
        let yes_no = |b: bool| if b { "Yes" } else { "No" }.to_string();
        let details = [
            ("protocol", "NBD".to_string()),
            ("server", c.url().server()),
            ("export", e.name.clone()),
            ("export_size", e.size.to_string()),
            ("min_block_size", e.min_block.to_string()),
            ("preferred_block_size", e.preferred_block.to_string()),
            ("max_payload", e.max_payload.to_string()),
            ("structured_replies", yes_no(e.structured)),
            ("read_only", yes_no(e.read_only())),
            ("flush", yes_no(e.can(proto::TF_SEND_FLUSH))),
            ("fua", yes_no(self.fua)),
            ("trim", yes_no(e.can(proto::TF_SEND_TRIM))),
            ("multi_conn", yes_no(e.can(proto::TF_CAN_MULTI_CONN))),
            ("iodepth", self.depth.to_string()),
            ("max_in_flight", c.peak_in_flight().to_string()),
        ];
        let interface = c
            .local_addr()
            .and_then(|a| storbench_core::nic::interface_of(a.ip()));
        EngineInfo {
            details: details
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .chain(self.round_trip.map(crate::round_trip::detail))
                .collect(),
            notes: Vec::new(),
            interface,
        }
    }
}
