//! A normal session with one connection: login, SCSI tasks pipelined within the CmdSN
//! window, reconnection by session reinstatement (ERL 0), and logout.
//!
//! The data path (submitting tasks, reading PDUs, completing tasks) is in `datapath.rs`; this
//! file holds the session's state and its life cycle.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::login::{self, LoginOutcome, LoginParams};
use crate::pdu::{self, BHS_LEN, Bhs};
use crate::scsi::{self, Capacity, Cdb, Inquiry};
use crate::task::{Dir, Finished, Outcome, Tasks};
use crate::text::{Negotiated, Offer};
use crate::url::Url;
use crate::wire::Wire;

/// How long each kind of wait may last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    /// Each login or logout exchange.
    pub login: Duration,
    /// No task completed for this long while tasks are outstanding: the connection is
    /// considered lost.
    pub io: Duration,
    /// Quiet time after which we ping the target with a NOP-Out.
    pub nop_interval: Duration,
    /// A ping unanswered for this long means the connection is lost.
    pub nop_timeout: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            login: Duration::from_secs(15),
            io: Duration::from_secs(60),
            nop_interval: Duration::from_secs(5),
            nop_timeout: Duration::from_secs(10),
        }
    }
}

impl Timeouts {
    /// The URL's `timeout=` as the time outstanding commands may go without one completing;
    /// the NOP-Out ping is sent after half of it at most and may go unanswered for all of it
    /// at most, so a silent target is noticed within `timeout` as well.
    pub fn capped(self, timeout: Duration) -> Timeouts {
        Timeouts {
            io: timeout,
            nop_interval: self.nop_interval.min(timeout / 2),
            nop_timeout: self.nop_timeout.min(timeout),
            ..self
        }
    }
}

/// Everything needed to open (and re-open) a session.
#[derive(Clone, Debug)]
pub struct Config {
    pub url: Url,
    pub offer: Offer,
    /// Most tasks in flight at once (the job's iodepth); one more is kept for internal
    /// commands.
    pub max_tasks: usize,
    pub timeouts: Timeouts,
}

impl Config {
    pub fn new(url: Url) -> Config {
        let offer = Offer {
            header_digest: url.header_digest,
            data_digest: url.data_digest,
            ..Offer::default()
        };
        Config {
            timeouts: Timeouts::default().capped(url.timeout),
            url,
            offer,
            max_tasks: 32,
        }
    }
}

/// Where the receiver is within the current PDU.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Phase {
    Header,
    /// Receiving `bhs`'s data segment into `dst`; `got` bytes so far, running digest `crc`.
    Data {
        dst: *mut u8,
        got: u32,
        crc: u32,
    },
}

/// A logged-in session to one LUN.
pub struct Session {
    pub(crate) cfg: Config,
    pub(crate) wire: Wire,
    pub(crate) neg: Negotiated,
    pub(crate) isid: [u8; 6],
    pub(crate) tsih: u16,
    pub(crate) lun: [u8; 8],
    pub(crate) cmd_sn: u32,
    pub(crate) exp_cmd_sn: u32,
    pub(crate) max_cmd_sn: u32,
    pub(crate) exp_stat_sn: u32,
    pub(crate) tasks: Tasks,
    /// Tasks ready to send, held back by the CmdSN window.
    pub(crate) waiting: VecDeque<u16>,
    /// Tasks backing off after BUSY / TASK SET FULL.
    pub(crate) delayed: Vec<u16>,
    pub(crate) finished: Vec<Finished>,
    pub(crate) phase: Phase,
    pub(crate) bhs: Bhs,
    /// Slot of the task the current Data-In belongs to.
    pub(crate) rx_task: Option<u16>,
    pub(crate) scratch: Vec<u8>,
    /// The last PDU carried a large Data-In payload, so the next ones likely do too: read
    /// headers exactly, and payloads straight into the task buffers, instead of reading as
    /// much as the socket has into the receive buffer and copying from there.
    pub(crate) rx_exact: bool,
    /// ITT and send time of our outstanding NOP-Out ping.
    pub(crate) ping: Option<(u32, Instant)>,
    pub(crate) next_session_itt: u32,
    pub(crate) last_completion: Instant,
    pub(crate) logged_out: bool,
    /// Use READ(10)/WRITE(10)/SYNCHRONIZE CACHE(10): the target lacks the 16-byte forms.
    pub(crate) use_cdb10: bool,
    /// Set FUA on writes (O_SYNC semantics).
    pub fua: bool,
    /// Stop words from a target (async logout request, connection drop notice).
    pub(crate) async_drop: bool,
}

// SAFETY: the raw pointers inside (task buffers, queued write data, the receive target) point
// to memory the submitter guarantees valid until completion (`submit`'s contract); the
// session itself is used by one thread at a time, so moving it to another thread is sound.
unsafe impl Send for Session {}

/// The tag of internal synchronous commands.
const SYNC_TAG: u64 = u64::MAX;

impl Session {
    /// Connects and logs in to the target and LUN of `cfg.url`.
    pub fn connect(cfg: Config) -> Result<Session> {
        let lun = cfg.url.require_lun()?;
        let mut isid = [0u8; 6];
        crate::chap::random_bytes(&mut isid);
        isid[0] = 0x80 | (isid[0] & 0x3f); // "random" ISID format (RFC 7143 11.12.5)
        let (wire, outcome) = Self::open_wire(&cfg, isid, 1)?;
        let slots = cfg.max_tasks + 1;
        let max_recv = outcome.negotiated.max_recv_data_segment_length as usize;
        let mut s = Session {
            wire,
            neg: outcome.negotiated.clone(),
            isid,
            tsih: 0,
            lun: pdu::encode_lun(lun),
            cmd_sn: 0,
            exp_cmd_sn: 0,
            max_cmd_sn: 0,
            exp_stat_sn: 0,
            tasks: Tasks::new(slots),
            waiting: VecDeque::with_capacity(slots),
            delayed: Vec::with_capacity(slots),
            finished: Vec::with_capacity(slots),
            phase: Phase::Header,
            bhs: Bhs::default(),
            rx_task: None,
            scratch: Vec::with_capacity(max_recv + BHS_LEN),
            rx_exact: false,
            ping: None,
            next_session_itt: 1,
            last_completion: Instant::now(),
            logged_out: false,
            use_cdb10: false,
            fua: false,
            async_drop: false,
            cfg,
        };
        s.apply_login(&outcome);
        Ok(s)
    }

    fn open_wire(cfg: &Config, isid: [u8; 6], cmd_sn: u32) -> Result<(Wire, LoginOutcome)> {
        let url = &cfg.url;
        let mut wire = Wire::connect(&url.host, url.port, &url.portal(), cfg.timeouts.connect)?;
        let params = LoginParams {
            initiator: &url.initiator,
            target: Some(&url.target),
            isid,
            tsih: 0,
            credentials: url.credentials.as_ref(),
            offer: &cfg.offer,
            cmd_sn,
            timeout: cfg.timeouts.login,
        };
        let outcome = login::login(&mut wire, &params)?;
        Ok((wire, outcome))
    }

    fn apply_login(&mut self, o: &LoginOutcome) {
        self.neg = o.negotiated.clone();
        self.tsih = o.tsih;
        self.exp_stat_sn = o.exp_stat_sn;
        self.cmd_sn = o.exp_cmd_sn;
        self.exp_cmd_sn = o.exp_cmd_sn;
        self.max_cmd_sn = o.max_cmd_sn;
        self.phase = Phase::Header;
        self.rx_task = None;
        self.rx_exact = false;
        self.ping = None;
        self.async_drop = false;
        self.last_completion = Instant::now();
        let need = self.neg.max_recv_data_segment_length as usize + BHS_LEN;
        if self.scratch.capacity() < need {
            self.scratch.reserve(need - self.scratch.len());
        }
    }

    /// Logs in again after a lost connection (same ISID, TSIH 0: the target reinstates the
    /// session and drops the old one's tasks) and re-issues every unfinished task. Returns
    /// how many were re-issued.
    pub fn reconnect(&mut self) -> Result<usize> {
        self.wire.shutdown();
        let (wire, outcome) = Self::open_wire(&self.cfg, self.isid, self.cmd_sn)?;
        self.wire = wire;
        self.apply_login(&outcome);
        self.waiting.clear();
        self.delayed.clear();
        let live: Vec<u16> = self.tasks.live().collect();
        for &idx in &live {
            let t = self.tasks.get_mut(idx);
            t.state = crate::task::State::Waiting;
            t.received = 0;
            t.not_before = None;
            self.tasks.renew_itt(idx);
            self.waiting.push_back(idx);
        }
        self.send_waiting();
        Ok(live.len())
    }

    /// Logs out (waiting for outstanding tasks first, at most the login timeout) and closes
    /// the connection. Safe to call twice.
    pub fn logout(&mut self) -> Result<()> {
        if self.logged_out {
            return Ok(());
        }
        let result = self.logout_exchange();
        self.logged_out = true;
        self.wire.shutdown();
        result
    }

    fn logout_exchange(&mut self) -> Result<()> {
        let timeout = self.cfg.timeouts.login;
        let deadline = Instant::now() + timeout;
        while self.tasks.in_use() > 0 && Instant::now() < deadline {
            self.wait_finished(1)?;
            self.finished.clear();
        }
        let itt = self.session_itt();
        let mut bhs = Bhs::default();
        pdu::logout_request(&mut bhs, itt, 0, self.cmd_sn, self.exp_stat_sn);
        self.wire.queue_copy(&bhs, &[]);
        self.wire.flush_all(timeout, "logout")?;
        while !self.logged_out {
            let now = Instant::now();
            if now >= deadline {
                return Err(self.wire.timeout("logout", timeout));
            }
            match self.pump() {
                // The target may close right after (or instead of) its Logout Response.
                Err(Error::Closed { .. }) => return Ok(()),
                Err(e) => return Err(e),
                Ok(()) => {}
            }
            if !self.logged_out {
                self.wire.wait(deadline - now)?;
            }
        }
        Ok(())
    }

    /// A fresh ITT for session-level exchanges (high bit set, never the reserved value).
    pub(crate) fn session_itt(&mut self) -> u32 {
        self.next_session_itt = (self.next_session_itt + 1) & 0x7fff_fffe;
        0x8000_0000 | self.next_session_itt
    }

    /// Runs one command to completion (set-up and discovery; not the hot path). Returns the
    /// bytes transferred.
    pub fn command(&mut self, cdb: Cdb, dir: Dir, buf: &mut [u8]) -> Result<u32> {
        // SAFETY: `buf` outlives the task: we wait for its completion before returning, and
        // on error the connection is shut down so no later Data-In can land in it.
        let accepted =
            unsafe { self.submit(SYNC_TAG, cdb, dir, buf.as_mut_ptr(), buf.len() as u32)? };
        if !accepted {
            return Err(Error::Invalid {
                portal: self.wire.portal.clone(),
                reason: "no free task slot for an internal command".into(),
            });
        }
        self.flush()?;
        loop {
            if let Err(e) = self.wait_finished(1) {
                self.wire.shutdown();
                return Err(e);
            }
            if let Some(pos) = self.finished.iter().position(|f| f.tag == SYNC_TAG) {
                let done = self.finished.swap_remove(pos);
                return match done.outcome {
                    Outcome::Done(n) => Ok(n),
                    Outcome::Failed { cdb, failure } => Err(self.scsi_error(&cdb, failure)),
                };
            }
        }
    }

    /// The error for a failed task.
    pub fn scsi_error(&self, cdb: &Cdb, status: crate::error::ScsiFailure) -> Error {
        Error::Scsi {
            portal: self.wire.portal.clone(),
            lun: self.cfg.url.lun.unwrap_or(0),
            command: scsi::name(cdb),
            lba: scsi::lba_of(cdb),
            status,
        }
    }

    pub fn test_unit_ready(&mut self) -> Result<()> {
        self.command(scsi::test_unit_ready(), Dir::None, &mut [])
            .map(|_| ())
    }

    pub fn inquiry(&mut self) -> Result<Inquiry> {
        let mut buf = [0u8; 96];
        let n = self.command(scsi::inquiry(96), Dir::Read, &mut buf)? as usize;
        Inquiry::parse(&buf[..n.min(buf.len())]).ok_or_else(|| self.bad_reply("INQUIRY"))
    }

    /// READ CAPACITY(16), or (10) on targets without it (which then also get 10-byte CDBs).
    pub fn read_capacity(&mut self) -> Result<Capacity> {
        let mut buf = [0u8; 32];
        match self.command(scsi::read_capacity16(), Dir::Read, &mut buf) {
            Ok(n) => Capacity::parse16(&buf[..n as usize])
                .ok_or_else(|| self.bad_reply("READ CAPACITY(16)")),
            Err(Error::Scsi {
                status: crate::error::ScsiFailure::Check(s),
                ..
            }) if s.is_invalid_opcode() => {
                self.use_cdb10 = true;
                let n = self.command(scsi::read_capacity10(), Dir::Read, &mut buf)?;
                Capacity::parse10(&buf[..n as usize])
                    .ok_or_else(|| self.bad_reply("READ CAPACITY(10)"))
            }
            Err(e) => Err(e),
        }
    }

    pub fn report_luns(&mut self) -> Result<Vec<u64>> {
        let mut buf = vec![0u8; 4096];
        let n = self.command(scsi::report_luns(4096), Dir::Read, &mut buf)? as usize;
        Ok(scsi::parse_report_luns(&buf[..n]))
    }

    pub fn synchronize_cache(&mut self) -> Result<()> {
        let cdb = if self.use_cdb10 {
            scsi::sync_cache10()
        } else {
            scsi::sync_cache16()
        };
        self.command(cdb, Dir::None, &mut []).map(|_| ())
    }

    fn bad_reply(&self, what: &'static str) -> Error {
        self.wire.proto(what, "reply too short".into())
    }

    /// The READ/WRITE CDB for this session (16-byte, or 10-byte on old targets).
    pub fn rw_cdb(&self, write: bool, lba: u64, blocks: u32) -> Option<Cdb> {
        if self.use_cdb10 {
            scsi::rw10(write, lba, blocks, self.fua && write)
        } else {
            Some(scsi::rw16(write, lba, blocks, self.fua && write))
        }
    }

    /// SYNCHRONIZE CACHE CDB for this session.
    pub fn sync_cdb(&self) -> Cdb {
        if self.use_cdb10 {
            scsi::sync_cache10()
        } else {
            scsi::sync_cache16()
        }
    }

    /// Whether the target needed 10-byte READ/WRITE CDBs.
    pub fn uses_cdb10(&self) -> bool {
        self.use_cdb10
    }

    pub fn negotiated(&self) -> &Negotiated {
        &self.neg
    }

    pub fn url(&self) -> &Url {
        &self.cfg.url
    }

    pub fn portal(&self) -> &str {
        &self.wire.portal
    }

    /// Commands the target allows in flight right now (MaxCmdSN - ExpCmdSN + 1).
    pub fn cmdsn_window(&self) -> u32 {
        self.max_cmd_sn
            .wrapping_sub(self.exp_cmd_sn)
            .wrapping_add(1)
    }

    pub fn tsih(&self) -> u16 {
        self.tsih
    }

    pub fn isid(&self) -> [u8; 6] {
        self.isid
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.wire.local_addr()
    }

    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.wire.peer_addr()
    }

    /// Tasks accepted and not yet handed back.
    pub fn in_flight(&self) -> usize {
        self.tasks.in_use()
    }

    pub fn is_logged_out(&self) -> bool {
        self.logged_out
    }
}

impl Drop for Session {
    /// Never leave a session logged in: a short logout, then close. With tasks still in
    /// flight their buffers may already be gone, so then the connection is only closed
    /// (at ERL 0 the target ends the session with its last connection).
    fn drop(&mut self) {
        if !self.logged_out && self.tasks.in_use() > 0 {
            self.logged_out = true;
            self.wire.shutdown();
        }
        if !self.logged_out {
            self.cfg.timeouts.login = self.cfg.timeouts.login.min(Duration::from_secs(2));
            let _ = self.logout();
        }
    }
}
