//! `libiscsi`: fio's libiscsi engine, done in Rust with storbench's own initiator
//! (`storbench-iscsi`): no kernel initiator, no root, nothing left logged in.
//!
//! The file name is `iscsi://[user%password@]host[:port]/target-iqn/lun[?initiator=…]`
//! (fio's `\:` escapes accepted). One session per worker; iodepth is the number of SCSI
//! tasks in flight within the target's CmdSN window. Fsync is SYNCHRONIZE CACHE, trim is
//! UNMAP on thin-provisioned LUNs, `sync=1` sets FUA on writes. A dropped connection is
//! re-established (ERL 0 session reinstatement), the unfinished tasks are re-issued and the
//! outage is noted in the result.

use std::time::{Duration, Instant};

use storbench_core::{
    Caps, Completion, Engine, EngineError, EngineInfo, EngineSetup, ErrorKind, FileId, FileSpec,
    IoKind, IoUnit, Queued,
};
use storbench_iscsi::{Capacity, Config, Dir, Error, Outcome, Session, Url, scsi};
use storbench_job::JobSpec;
use storbench_job::target::Target;

mod prepare;
pub use prepare::secrets;

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "libiscsi";

/// Before a run: a LUN named and its CHAP secrets found (see [`secrets`]).
pub fn prepare(
    target: &Target,
    directory: bool,
    ask: &dyn storbench_core::ask::Ask,
) -> Result<(), EngineError> {
    prepare::check(target, directory, ask)
}

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    Ok(Box::new(IscsiEngine {
        depth: job.iodepth.max(1),
        lun: None,
        unmap: Vec::new(),
        trim_len: Vec::new(),
        outages: Vec::new(),
        peak_in_flight: 0,
        closed_info: None,
        gave_up: None,
        lost_since: None,
    }))
}

/// Why a LUN cannot be measured. A LUN number the target does not have still answers
/// INQUIRY, with "no device here" (peripheral qualifier 3, or type 0x1f): that is said as
/// a missing LUN, with the ones the target has, instead of "a none device", unless the
/// target lists the LUN (a real unit of unknown type).
fn not_a_disk(session: Session, url: &Url, inquiry: &scsi::Inquiry) -> EngineError {
    let wrong_type = || {
        EngineError::unsupported(format!(
            "{url}: LUN is a {} device, not a disk",
            inquiry.device_type_name()
        ))
    };
    if inquiry.qualifier != 3 && inquiry.device_type != 0x1f {
        return wrong_type();
    }
    drop(session);
    let listed = target_luns(url);
    let lun = url.lun.unwrap_or_default();
    if inquiry.qualifier != 3 && listed.as_ref().is_some_and(|l| l.contains(&lun)) {
        return wrong_type();
    }
    let luns = match listed {
        Some(l) if !l.is_empty() => l.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
        _ => "none reported".into(),
    };
    EngineError::unsupported(format!(
        "{url}: target {} has no LUN {} (its LUNs: {luns})",
        url.target,
        url.lun.unwrap_or_default()
    ))
}

/// The target's LUNs, from REPORT LUNS in a session of its own addressed to LUN 0 (which
/// every target answers; a missing LUN may refuse it); None if that fails.
fn target_luns(url: &Url) -> Option<Vec<u64>> {
    let mut lun0 = url.clone();
    lun0.lun = Some(0);
    let mut session = Session::connect(Config::new(lun0)).ok()?;
    let mut luns = session.report_luns().ok()?;
    luns.sort_unstable();
    let _ = session.logout();
    Some(luns)
}

/// An initiator error as an engine error: one line naming the portal and the operation.
fn to_engine(e: Error) -> EngineError {
    let kind = match &e {
        Error::Url { .. } | Error::Invalid { .. } => ErrorKind::Unsupported,
        e if e.is_connection_loss() => ErrorKind::Disconnected,
        _ => ErrorKind::Protocol,
    };
    let errno = match &e {
        Error::Io { source, .. } => source.raw_os_error(),
        Error::Scsi { .. } => Some(libc::EIO),
        _ => None,
    };
    EngineError {
        kind,
        errno,
        message: e.to_string(),
    }
}

/// One connection loss and how it was recovered.
struct Outage {
    /// Since the LUN was opened.
    at: Duration,
    lasted: Duration,
    reissued: usize,
    reason: String,
}

/// The open LUN.
struct Lun {
    session: Session,
    url: Url,
    capacity: Capacity,
    vendor: String,
    product: String,
    opened: Instant,
    /// TEST UNIT READY's round trip (a command without data), timed after login.
    round_trip: Option<std::time::Duration>,
}

pub struct IscsiEngine {
    depth: u32,
    lun: Option<Lun>,
    /// UNMAP parameter lists, one per worker slot (the IO's tag).
    unmap: Vec<[u8; scsi::UNMAP_PARAMS_LEN]>,
    /// Bytes each in-flight trim covers, by tag (0: not a trim): UNMAP itself transfers only
    /// its parameter list, and the runner counts the range trimmed.
    trim_len: Vec<u32>,
    outages: Vec<Outage>,
    peak_in_flight: usize,
    /// What [`Engine::info`] said just before the LUN was closed.
    closed_info: Option<EngineInfo>,
    /// Why reconnecting was given up: the runner's later calls (draining what is in
    /// flight, closing) fail at once with it instead of waiting out `reconnect=` again.
    gave_up: Option<String>,
    /// When the connection was lost with no command completed since: `reconnect=` bounds the
    /// time without progress, not each attempt, so a target that takes the login again and
    /// then never answers is given up one window after the first loss, not reconnected to
    /// forever. Cleared by the next completed command.
    lost_since: Option<Instant>,
}

impl IscsiEngine {
    fn lun(&mut self, file: FileId) -> Result<&mut Lun, EngineError> {
        match self.lun.as_mut() {
            Some(l) if file == 0 => Ok(l),
            _ => Err(EngineError::unsupported(format!(
                "libiscsi: file {file} is not open"
            ))),
        }
    }

    /// Re-establishes a lost connection within the URL's `reconnect=` seconds and re-issues
    /// the unfinished tasks.
    fn recover(&mut self, cause: Error) -> Result<(), EngineError> {
        let Some(lun) = self.lun.as_mut() else {
            return Err(to_engine(cause));
        };
        if let Some(why) = &self.gave_up {
            return Err(EngineError::new(ErrorKind::Disconnected, why.clone()));
        }
        let started = Instant::now();
        let budget = lun.url.reconnect;
        if budget.is_zero() {
            return Err(self.give_up(format!("{cause}; not reconnecting (reconnect=0)")));
        }
        let lost = *self.lost_since.get_or_insert(started);
        if started.duration_since(lost) >= budget {
            return Err(self.give_up(format!(
                "{cause}; no command completed for {} s since the connection was first lost, \
                 though logging in again worked (reconnect={} s)",
                lost.elapsed().as_secs(),
                budget.as_secs()
            )));
        }
        let mut pause = Duration::from_millis(100);
        loop {
            if storbench_core::stop::requested() {
                return Err(EngineError::new(
                    ErrorKind::Disconnected,
                    format!("{cause}; stopped while reconnecting"),
                ));
            }
            match lun.session.reconnect() {
                Ok(reissued) => {
                    self.outages.push(Outage {
                        at: started.duration_since(lun.opened),
                        lasted: started.elapsed(),
                        reissued,
                        reason: cause.to_string(),
                    });
                    return Ok(());
                }
                Err(e) if lost.elapsed() >= budget => {
                    return Err(self.give_up(format!(
                        "{cause}; no new login within {} s (last attempt: {e})",
                        budget.as_secs()
                    )));
                }
                Err(_) => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Once reconnecting was given up, every later call fails at once with the same reason:
    /// waiting on the lost connection (draining, logging out) would add `timeout=` per call.
    fn given_up(&self) -> Result<(), EngineError> {
        match &self.gave_up {
            Some(why) => Err(EngineError::new(ErrorKind::Disconnected, why.clone())),
            None => Ok(()),
        }
    }

    fn give_up(&mut self, why: String) -> EngineError {
        self.gave_up = Some(why.clone());
        EngineError::new(ErrorKind::Disconnected, why)
    }

    fn cdb_for(&mut self, io: &IoUnit) -> Result<(scsi::Cdb, Dir, *mut u8, u32), EngineError> {
        self.lun(io.file)?;
        let Some(lun) = self.lun.as_ref() else {
            return Err(EngineError::unsupported("libiscsi: no LUN is open"));
        };
        let bs = lun.capacity.block_size as u64;
        if !io.offset.is_multiple_of(bs) || !(io.len as u64).is_multiple_of(bs) {
            return Err(EngineError::unsupported(format!(
                "{}: {} bytes at offset {} is not a multiple of the LUN's {bs}-byte blocks",
                lun.url, io.len, io.offset
            )));
        }
        let (lba, blocks) = (io.offset / bs, (io.len as u64 / bs) as u32);
        let too_big = || {
            EngineError::unsupported(format!(
                "{}: LBA {lba} + {blocks} blocks does not fit READ(10)/WRITE(10), which this target needs",
                lun.url
            ))
        };
        Ok(match io.kind {
            IoKind::Read => (
                lun.session.rw_cdb(false, lba, blocks).ok_or_else(too_big)?,
                Dir::Read,
                io.buf.as_ptr(),
                io.len,
            ),
            IoKind::Write => (
                lun.session.rw_cdb(true, lba, blocks).ok_or_else(too_big)?,
                Dir::Write,
                io.buf.as_ptr(),
                io.len,
            ),
            IoKind::Fsync | IoKind::Fdatasync => {
                (lun.session.sync_cdb(), Dir::None, std::ptr::null_mut(), 0)
            }
            IoKind::Trim => {
                if !lun.capacity.thin {
                    return Err(EngineError::unsupported(format!(
                        "{}: trim needs UNMAP, and this LUN is not thin-provisioned (LBPME=0)",
                        lun.url
                    )));
                }
                let params = self.unmap.get_mut(io.tag as usize).ok_or_else(|| {
                    EngineError::unsupported(format!("libiscsi: IO tag {} beyond iodepth", io.tag))
                })?;
                *params = scsi::unmap_params(lba, blocks);
                (
                    scsi::unmap(scsi::UNMAP_PARAMS_LEN as u16),
                    Dir::Write,
                    params.as_mut_ptr(),
                    scsi::UNMAP_PARAMS_LEN as u32,
                )
            }
        })
    }
}

impl Engine for IscsiEngine {
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
        let slots = setup.slots.max(self.depth) as usize;
        self.unmap = vec![[0; scsi::UNMAP_PARAMS_LEN]; slots];
        self.trim_len = vec![0; slots];
        Ok(())
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        // The plan's parsed URL; the parser runs here only to say why a text is not one.
        let mut url = match &spec.target {
            Target::Iscsi(typed) => typed.url.clone(),
            _ => Url::parse(&spec.path).map_err(to_engine)?,
        };
        url.require_lun().map_err(to_engine)?;
        url.resolve_secrets().map_err(to_engine)?;
        if let Some(open) = &self.lun {
            if open.url == url {
                return Ok(0);
            }
            return Err(EngineError::unsupported(format!(
                "libiscsi: one LUN per job; {} is open, so {url} needs a job of its own",
                open.url
            )));
        }
        let mut cfg = Config::new(url.clone());
        cfg.max_tasks = self.depth as usize;
        let mut session = Session::connect(cfg).map_err(to_engine)?;
        // The first command after login often reports the power-on UNIT ATTENTION; the
        // session retries it once.
        let _ = session.test_unit_ready();
        let inquiry = session.inquiry().map_err(to_engine)?;
        if inquiry.device_type != 0 || inquiry.qualifier != 0 {
            return Err(not_a_disk(session, &url, &inquiry));
        }
        let capacity = session.read_capacity().map_err(to_engine)?;
        session.fua = spec.open.sync;
        let round_trip = crate::round_trip::measure(|| session.nop().is_ok());
        self.lun = Some(Lun {
            session,
            url,
            capacity,
            vendor: inquiry.vendor,
            product: inquiry.product,
            opened: Instant::now(),
            round_trip,
        });
        Ok(0)
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        Ok(self.lun(file)?.capacity.bytes())
    }

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        self.given_up()?;
        let (cdb, dir, buf, len) = self.cdb_for(io)?;
        let lun = self.lun(io.file)?;
        // SAFETY: the worker keeps the IO's buffer (or our UNMAP slot) untouched until its
        // tag is reaped, and the session hands tasks back only through reap.
        match unsafe { lun.session.submit(io.tag as u64, cdb, dir, buf, len) } {
            Ok(true) => {
                let n = lun.session.in_flight();
                self.peak_in_flight = self.peak_in_flight.max(n);
                if let Some(t) = self.trim_len.get_mut(io.tag as usize) {
                    *t = if io.kind == IoKind::Trim { io.len } else { 0 };
                }
                Ok(Queued::Pending)
            }
            Ok(false) => Ok(Queued::Busy),
            Err(e) => Err(to_engine(e)),
        }
    }

    fn commit(&mut self) -> Result<(), EngineError> {
        self.given_up()?;
        let Some(lun) = self.lun.as_mut() else {
            return Ok(());
        };
        // With other tasks in flight a reap always follows, and it writes first: one writev
        // then carries every command queued since, instead of one syscall per IO (fio
        // commits after each IO by default). A lone task goes out at once, for QD1 latency.
        if lun.session.in_flight() > 1 {
            return Ok(());
        }
        match lun.session.flush() {
            Err(e) if e.is_connection_loss() => self.recover(e),
            r => r.map_err(to_engine),
        }
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        self.given_up()?;
        loop {
            let Some(lun) = self.lun.as_mut() else {
                return Ok(());
            };
            match lun.session.wait_finished(min) {
                Ok(()) => break,
                Err(e) if e.is_connection_loss() => self.recover(e)?,
                Err(e) => return Err(to_engine(e)),
            }
        }
        let Some(lun) = self.lun.as_mut() else {
            return Ok(());
        };
        let mut failed = None;
        let before = out.len();
        for f in lun.session.drain_finished() {
            let result = match f.outcome {
                Outcome::Done(n) => match self.trim_len.get(f.tag as usize) {
                    Some(&trimmed) if trimmed > 0 => trimmed as i64,
                    _ => n as i64,
                },
                Outcome::Failed { cdb, failure } => {
                    failed.get_or_insert((cdb, failure));
                    -(libc::EIO as i64)
                }
            };
            out.push(Completion {
                tag: f.tag as u32,
                result,
            });
        }
        if out.len() > before {
            self.lost_since = None; // progress: the next loss starts a new window
        }
        match failed {
            Some((cdb, failure)) => Err(to_engine(lun.session.scsi_error(&cdb, failure))),
            None => Ok(()),
        }
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        self.lun(file)?;
        // The runner asks for the facts after closing: keep them.
        self.closed_info = Some(self.info());
        let Some(mut lun) = self.lun.take() else {
            return Ok(());
        };
        if self.gave_up.is_some() {
            // The connection is lost: dropping the session closes it, and at ERL 0 nothing
            // stays logged in; a logout would only wait out `timeout=` on it.
            return Ok(());
        }
        match lun.session.logout() {
            // The session is gone with its connection at ERL 0: nothing is left logged in.
            Err(e) if e.is_connection_loss() => Ok(()),
            r => r.map_err(to_engine),
        }
    }

    fn server_addr(&self) -> Option<std::net::SocketAddr> {
        self.lun.as_ref()?.session.peer_addr()
    }

    fn client_addr(&self) -> Option<std::net::SocketAddr> {
        self.lun.as_ref()?.session.local_addr()
    }

    fn info(&mut self) -> EngineInfo {
        let Some(lun) = self.lun.as_ref() else {
            return self.closed_info.clone().unwrap_or_default();
        };
        let n = lun.session.negotiated();
        let yes_no = |b: bool| if b { "Yes" } else { "No" }.to_string();
        let details = [
            ("protocol", "iSCSI".to_string()),
            ("target", lun.url.target.clone()),
            ("portal", lun.url.portal()),
            ("lun", lun.url.lun.unwrap_or(0).to_string()),
            ("lun_size", lun.capacity.bytes().to_string()),
            ("block_size", lun.capacity.block_size.to_string()),
            ("vendor", lun.vendor.clone()),
            ("product", lun.product.clone()),
            ("initiator", lun.url.initiator.clone()),
            (
                "MaxRecvDataSegmentLength",
                n.max_recv_data_segment_length.to_string(),
            ),
            (
                "TargetMaxRecvDataSegmentLength",
                n.max_send_data_segment_length.to_string(),
            ),
            ("MaxBurstLength", n.max_burst_length.to_string()),
            ("FirstBurstLength", n.first_burst_length.to_string()),
            ("ImmediateData", yes_no(n.immediate_data)),
            ("InitialR2T", yes_no(n.initial_r2t)),
            ("HeaderDigest", n.header_digest.wire().to_string()),
            ("DataDigest", n.data_digest.wire().to_string()),
            ("cmdsn_window", lun.session.cmdsn_window().to_string()),
            ("iodepth", self.depth.to_string()),
            ("max_in_flight", self.peak_in_flight.to_string()),
            ("fua", yes_no(lun.session.fua)),
            (
                "cdb_bytes",
                if lun.session.uses_cdb10() { "10" } else { "16" }.to_string(),
            ),
        ];
        let interface = lun
            .session
            .local_addr()
            .and_then(|a| storbench_core::nic::interface_of(a.ip()));
        EngineInfo {
            details: details
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .chain(lun.round_trip.map(crate::round_trip::detail))
                .collect(),
            notes: self.outage_notes(&lun.url.portal()),
            interface,
        }
    }
}

impl IscsiEngine {
    fn outage_notes(&self, portal: &str) -> Vec<String> {
        self.outages
            .iter()
            .map(|o| {
                format!(
                    "iSCSI connection to {portal} lost at {:.1} s ({}); logged in again after {:.1} s, {} command(s) re-issued",
                    o.at.as_secs_f64(),
                    o.reason,
                    o.lasted.as_secs_f64(),
                    o.reissued
                )
            })
            .collect()
    }
}

impl Drop for IscsiEngine {
    /// A job that failed before `close` still logs out (the session's own drop does it).
    fn drop(&mut self) {
        self.lun.take();
    }
}
