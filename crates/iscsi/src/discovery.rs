//! Discovery: a SendTargets exchange on a discovery session, then a normal session per target
//! to list its LUNs with INQUIRY and READ CAPACITY.

use crate::error::{Error, Result};
use crate::login::{self, LoginParams};
use crate::pdu::{self, Bhs, RESERVED_TAG, flag, op};
use crate::scsi::{Capacity, Inquiry};
use crate::session::{Config, Session, Timeouts};
use crate::text::{self, Offer};
use crate::url::Url;
use crate::wire::Wire;

/// One target named by SendTargets, with the portals it listed (`host:port,tpgt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetEntry {
    pub name: String,
    pub addresses: Vec<String>,
}

/// What a LUN says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LunInfo {
    pub lun: u64,
    pub inquiry: Option<Inquiry>,
    pub capacity: Option<Capacity>,
    /// Why INQUIRY or READ CAPACITY failed, if one did.
    pub error: Option<String>,
}

const TEXT_ITT: u32 = 0x8000_0001;
const LOGOUT_ITT: u32 = 0x8000_0002;

/// Lists the targets a portal offers (`SendTargets=All`). Uses the URL's host, port,
/// initiator name and CHAP credentials.
pub fn send_targets(url: &Url, timeouts: &Timeouts) -> Result<Vec<TargetEntry>> {
    let portal = url.portal();
    let mut wire = Wire::connect(&url.host, url.port, &portal, timeouts.connect)?;
    let mut isid = [0u8; 6];
    crate::chap::random_bytes(&mut isid);
    isid[0] = 0x80 | (isid[0] & 0x3f);
    let offer = Offer {
        header_digest: url.header_digest,
        data_digest: url.data_digest,
        ..Offer::default()
    };
    let params = LoginParams {
        initiator: &url.initiator,
        target: None,
        isid,
        tsih: 0,
        credentials: url.credentials.as_ref(),
        offer: &offer,
        cmd_sn: 1,
        timeout: timeouts.login,
    };
    let outcome = login::login(&mut wire, &params)?;
    let mut cmd_sn = outcome.exp_cmd_sn;
    let mut exp_stat_sn = outcome.exp_stat_sn;
    let mut request = Vec::new();
    text::push(&mut request, "SendTargets", "All");
    let mut answer = Vec::new();
    let mut ttt = RESERVED_TAG;
    loop {
        let mut bhs = Bhs::default();
        pdu::text_request(
            &mut bhs,
            TEXT_ITT,
            ttt,
            cmd_sn,
            exp_stat_sn,
            request.len() as u32,
        );
        cmd_sn = cmd_sn.wrapping_add(1);
        wire.queue_copy(&bhs, &request);
        wire.flush_all(timeouts.login, "SendTargets")?;
        let (resp, data) = recv_skipping_nops(&mut wire, timeouts, "SendTargets")?;
        if resp.opcode() != op::TEXT_RESP {
            return Err(wire.proto(
                "SendTargets",
                format!(
                    "expected a Text Response, got opcode {:#04x}",
                    resp.opcode()
                ),
            ));
        }
        exp_stat_sn = resp.stat_sn().wrapping_add(1);
        answer.extend_from_slice(&data);
        if resp.flags() & flag::CONTINUE == 0 {
            break;
        }
        ttt = resp.ttt();
        request.clear();
    }
    let _ = logout_wire(&mut wire, cmd_sn, exp_stat_sn, timeouts);
    wire.shutdown();
    Ok(parse_send_targets(&answer))
}

fn recv_skipping_nops(
    wire: &mut Wire,
    timeouts: &Timeouts,
    op_name: &'static str,
) -> Result<(Bhs, Vec<u8>)> {
    loop {
        let (bhs, data) = wire.recv_pdu(timeouts.login, op_name)?;
        if bhs.opcode() != op::NOP_IN && bhs.opcode() != op::ASYNC {
            return Ok((bhs, data));
        }
    }
}

fn logout_wire(wire: &mut Wire, cmd_sn: u32, exp_stat_sn: u32, timeouts: &Timeouts) -> Result<()> {
    let mut bhs = Bhs::default();
    pdu::logout_request(&mut bhs, LOGOUT_ITT, 0, cmd_sn, exp_stat_sn);
    wire.queue_copy(&bhs, &[]);
    wire.flush_all(timeouts.login, "logout")?;
    let (resp, _) = recv_skipping_nops(wire, timeouts, "logout")?;
    if resp.opcode() != op::LOGOUT_RESP {
        return Err(wire.proto(
            "logout",
            format!(
                "expected a Logout Response, got opcode {:#04x}",
                resp.opcode()
            ),
        ));
    }
    Ok(())
}

/// Groups `TargetName=` and the `TargetAddress=` lines that follow it.
pub fn parse_send_targets(data: &[u8]) -> Vec<TargetEntry> {
    let mut out: Vec<TargetEntry> = Vec::new();
    for (k, v) in text::parse(data) {
        match k.as_str() {
            "TargetName" => out.push(TargetEntry {
                name: v,
                addresses: Vec::new(),
            }),
            "TargetAddress" => {
                if let Some(last) = out.last_mut() {
                    last.addresses.push(v);
                }
            }
            _ => {}
        }
    }
    out
}

/// Logs in to `target` on the URL's portal and describes each LUN it reports.
pub fn probe_target(url: &Url, target: &str, timeouts: &Timeouts) -> Result<Vec<LunInfo>> {
    let mut u = url.clone();
    u.target = target.to_string();
    // REPORT LUNS is addressed to LUN 0, which every target must answer.
    u.lun = Some(0);
    let mut cfg = Config::new(u);
    cfg.max_tasks = 2;
    cfg.timeouts = *timeouts;
    let mut session = Session::connect(cfg)?;
    let mut luns = match session.report_luns() {
        Ok(l) => l,
        Err(Error::Scsi { .. }) => vec![0],
        Err(e) => return Err(e),
    };
    luns.sort_unstable();
    session.logout()?;
    let mut infos = Vec::with_capacity(luns.len());
    for lun in luns {
        infos.push(probe_lun(url, target, lun, timeouts)?);
    }
    Ok(infos)
}

fn probe_lun(url: &Url, target: &str, lun: u64, timeouts: &Timeouts) -> Result<LunInfo> {
    let mut u = url.clone();
    u.target = target.to_string();
    u.lun = Some(lun);
    let mut cfg = Config::new(u);
    cfg.max_tasks = 2;
    cfg.timeouts = *timeouts;
    let mut s = Session::connect(cfg)?;
    let mut info = LunInfo {
        lun,
        inquiry: None,
        capacity: None,
        error: None,
    };
    match s.inquiry() {
        Ok(i) => info.inquiry = Some(i),
        Err(e) if !e.is_connection_loss() => info.error = Some(e.to_string()),
        Err(e) => return Err(e),
    }
    let is_block = info
        .inquiry
        .as_ref()
        .is_some_and(|i| i.device_type == 0 && i.qualifier == 0);
    if is_block {
        match s.read_capacity() {
            Ok(c) => info.capacity = Some(c),
            Err(e) if !e.is_connection_loss() => info.error = Some(e.to_string()),
            Err(e) => return Err(e),
        }
    }
    s.logout()?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_targets_groups_addresses() {
        let mut d = Vec::new();
        text::push(&mut d, "TargetName", "iqn.a:1");
        text::push(&mut d, "TargetAddress", "127.0.0.1:3260,1");
        text::push(&mut d, "TargetAddress", "[::1]:3260,1");
        text::push(&mut d, "TargetName", "iqn.a:2");
        let t = parse_send_targets(&d);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].addresses.len(), 2);
        assert!(t[1].addresses.is_empty());
    }
}
