//! The login phase (RFC 7143 6.3, 12): security negotiation (None or CHAP-MD5, one-way or
//! mutual), then operational negotiation, then full feature phase.

use std::time::Duration;

use crate::chap;
use crate::error::{Error, Result};
use crate::pdu::{Bhs, LoginRequest, flag, op, stage};
use crate::text::{self, Negotiated, Offer};
use crate::url::{Credentials, SECRET_ENV};
use crate::wire::Wire;

/// What a login needs to know.
#[derive(Clone, Debug)]
pub struct LoginParams<'a> {
    pub initiator: &'a str,
    /// `None` for a discovery session.
    pub target: Option<&'a str>,
    pub isid: [u8; 6],
    /// 0 for a new session (also for ERL 0 reinstatement).
    pub tsih: u16,
    pub credentials: Option<&'a Credentials>,
    pub offer: &'a Offer,
    pub cmd_sn: u32,
    pub timeout: Duration,
}

/// The state a session starts the full feature phase with.
#[derive(Clone, Debug)]
pub struct LoginOutcome {
    pub negotiated: Negotiated,
    pub tsih: u16,
    pub exp_stat_sn: u32,
    pub exp_cmd_sn: u32,
    pub max_cmd_sn: u32,
}

/// The ITT every login PDU of a connection carries.
const LOGIN_ITT: u32 = 0x8000_0000;

struct Exchange<'w, 'p> {
    wire: &'w mut Wire,
    p: &'p LoginParams<'p>,
    exp_stat_sn: u32,
    last: Bhs,
}

/// Logs in on a fresh connection. On success the wire's digests are switched on as negotiated.
pub fn login(wire: &mut Wire, p: &LoginParams<'_>) -> Result<LoginOutcome> {
    let mut ex = Exchange {
        wire,
        p,
        exp_stat_sn: 0,
        last: Bhs::default(),
    };
    ex.security()?;
    let negotiated = ex.operational()?;
    let h = ex.last;
    ex.wire.header_digest = negotiated.header_digest;
    ex.wire.data_digest = negotiated.data_digest;
    ex.wire
        .ensure_rx_capacity(negotiated.max_recv_data_segment_length);
    Ok(LoginOutcome {
        tsih: h.tsih(),
        exp_stat_sn: ex.exp_stat_sn,
        exp_cmd_sn: h.exp_cmd_sn(),
        max_cmd_sn: h.max_cmd_sn(),
        negotiated,
    })
}

impl Exchange<'_, '_> {
    fn target_name(&self) -> String {
        self.p.target.unwrap_or("discovery").to_string()
    }

    /// One request/response round. Returns the response's keys (joined over continuation
    /// PDUs) and whether the target moved to `nsg`.
    fn round(
        &mut self,
        csg: u8,
        nsg: u8,
        transit: bool,
        data: &[u8],
    ) -> Result<Vec<(String, String)>> {
        let mut keys_data = Vec::new();
        let mut req = data;
        loop {
            let mut bhs = Bhs::default();
            LoginRequest {
                transit,
                csg,
                nsg,
                isid: self.p.isid,
                tsih: self.p.tsih,
                itt: LOGIN_ITT,
                cid: 0,
                cmd_sn: self.p.cmd_sn,
                exp_stat_sn: self.exp_stat_sn,
                data_len: req.len() as u32,
            }
            .encode(&mut bhs);
            self.wire.queue_copy(&bhs, req);
            self.wire.flush_all(self.p.timeout, "login")?;
            let (resp, data) = self.wire.recv_pdu(self.p.timeout, "login")?;
            self.check(&resp)?;
            keys_data.extend_from_slice(&data);
            self.last = resp;
            if resp.flags() & flag::CONTINUE == 0 {
                break;
            }
            req = &[];
        }
        Ok(text::parse(&keys_data))
    }

    fn check(&mut self, resp: &Bhs) -> Result<()> {
        if resp.opcode() != op::LOGIN_RESP {
            return Err(self.wire.proto(
                "login",
                format!(
                    "expected a Login Response, got opcode {:#04x}",
                    resp.opcode()
                ),
            ));
        }
        self.exp_stat_sn = resp.stat_sn().wrapping_add(1);
        let (class, detail) = resp.login_status();
        if class != 0 {
            return Err(Error::LoginRejected {
                portal: self.wire.portal.clone(),
                target: self.target_name(),
                class,
                detail,
                text: crate::pdu::login_status_text(class, detail),
            });
        }
        Ok(())
    }

    fn transits_to(&self, nsg: u8) -> bool {
        self.last.flags() & flag::TRANSIT != 0 && self.last.flags() & 3 == nsg
    }

    fn security(&mut self) -> Result<()> {
        let mut data = Vec::new();
        text::push(&mut data, "InitiatorName", self.p.initiator);
        match self.p.target {
            Some(t) => {
                text::push(&mut data, "SessionType", "Normal");
                text::push(&mut data, "TargetName", t);
            }
            None => text::push(&mut data, "SessionType", "Discovery"),
        }
        let Some(creds) = self.p.credentials else {
            text::push(&mut data, "AuthMethod", "None");
            // A target that insists on CHAP either answers AuthMethod=CHAP or, as tgtd
            // does, rejects the login outright as an authentication failure: both mean the
            // URL lacks credentials, which is what the user needs to read.
            let keys = match self.round(stage::SECURITY, stage::OPERATIONAL, true, &data) {
                Err(Error::LoginRejected {
                    class: 2,
                    detail: 1,
                    ..
                }) => return Err(self.chap_required()),
                keys => keys?,
            };
            return match text::get(&keys, "AuthMethod") {
                Some(m) if m.contains("CHAP") => Err(self.chap_required()),
                _ => self.finish_security(),
            };
        };
        // Credentials are offered, not imposed (as libiscsi does): a target that does not
        // require authentication answers None and the login goes on without CHAP.
        text::push(&mut data, "AuthMethod", "CHAP,None");
        let keys = self.round(stage::SECURITY, stage::SECURITY, false, &data)?;
        match text::get(&keys, "AuthMethod") {
            Some("CHAP") => self.chap(creds),
            Some("None") if creds.target_user.is_some() || creds.target_secret.is_some() => {
                Err(self.auth_err(
                    "the target chose no authentication, so it cannot prove itself as \
                     target_user/target_password ask (mutual CHAP)"
                        .into(),
                ))
            }
            Some("None") => self.finish_security(),
            other => Err(self.auth_err(format!(
                "the target accepted neither CHAP nor None (answered AuthMethod={})",
                other.unwrap_or("nothing")
            ))),
        }
    }

    /// Waits until the target leaves the security stage.
    fn finish_security(&mut self) -> Result<()> {
        let mut tries = 0;
        while !self.transits_to(stage::OPERATIONAL) {
            tries += 1;
            if tries > 4 {
                return Err(self
                    .wire
                    .proto("login", "the target never left the security stage".into()));
            }
            self.round(stage::SECURITY, stage::OPERATIONAL, true, &[])?;
        }
        Ok(())
    }

    fn chap(&mut self, creds: &Credentials) -> Result<()> {
        let mut data = Vec::new();
        text::push(&mut data, "CHAP_A", "5");
        let keys = self.round(stage::SECURITY, stage::SECURITY, false, &data)?;
        if text::get(&keys, "CHAP_A") != Some("5") {
            return Err(self.auth_err("the target does not offer CHAP with MD5".into()));
        }
        let id: u8 = text::get(&keys, "CHAP_I")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| self.auth_err("no valid CHAP_I from the target".into()))?;
        let challenge = text::get(&keys, "CHAP_C")
            .and_then(chap::decode_binary)
            .ok_or_else(|| self.auth_err("no valid CHAP_C from the target".into()))?;
        let resp = chap::response(id, creds.secret.as_bytes(), &challenge);
        data.clear();
        text::push(&mut data, "CHAP_N", &creds.user);
        text::push(&mut data, "CHAP_R", &chap::encode_hex(&resp));
        let mutual = match (&creds.target_user, &creds.target_secret) {
            (Some(u), Some(s)) => Some((u.clone(), s.clone())),
            (None, None) => None,
            _ => {
                return Err(
                    self.auth_err("mutual CHAP needs both target_user and target_password".into())
                );
            }
        };
        let mut ours = [0u8; 17];
        chap::random_bytes(&mut ours);
        let (our_id, our_challenge) = (ours[0], &ours[1..]);
        if mutual.is_some() {
            if our_challenge == challenge.as_slice() {
                return Err(self.auth_err("the target reflected our challenge".into()));
            }
            text::push(&mut data, "CHAP_I", &our_id.to_string());
            text::push(&mut data, "CHAP_C", &chap::encode_hex(our_challenge));
        }
        let keys = self.round(stage::SECURITY, stage::OPERATIONAL, true, &data)?;
        if let Some((user, secret)) = mutual {
            self.verify_target(&keys, &user, &secret, our_id, our_challenge)?;
        }
        self.finish_security()
    }

    fn verify_target(
        &self,
        keys: &[(String, String)],
        user: &str,
        secret: &str,
        id: u8,
        challenge: &[u8],
    ) -> Result<()> {
        let name = text::get(keys, "CHAP_N").unwrap_or("");
        if name != user {
            return Err(self.auth_err(format!(
                "the target answered as {name:?}, expected {user:?}"
            )));
        }
        let got = text::get(keys, "CHAP_R").and_then(chap::decode_binary);
        if got.as_deref() != Some(&chap::response(id, secret.as_bytes(), challenge)[..]) {
            return Err(self.auth_err("the target's mutual CHAP response is wrong".into()));
        }
        Ok(())
    }

    fn operational(&mut self) -> Result<Negotiated> {
        let discovery = self.p.target.is_none();
        let mut neg = Negotiated::from_offer(self.p.offer);
        let mut data = Vec::new();
        text::write_offer(&mut data, self.p.offer, discovery);
        let mut offered = true;
        for _ in 0..8 {
            let keys = self.round(stage::OPERATIONAL, stage::FULL_FEATURE, true, &data)?;
            let replies = text::apply_answers(&mut neg, self.p.offer, &keys, offered)
                .map_err(|reason| self.wire.proto("login", reason))?;
            if self.transits_to(stage::FULL_FEATURE) && replies.is_empty() {
                return Ok(neg);
            }
            data.clear();
            for (k, v) in &replies {
                text::push(&mut data, k, v);
            }
            offered = false;
        }
        Err(self
            .wire
            .proto("login", "operational negotiation did not converge".into()))
    }

    fn chap_required(&self) -> Error {
        self.auth_err(format!(
            "the target requires CHAP: give the CHAP user in the URL (iscsi://USER@host/…) and \
             its secret in {SECRET_ENV}, with ?secret-file=PATH, or at the prompt on a terminal"
        ))
    }

    fn auth_err(&self, reason: String) -> Error {
        Error::Auth {
            portal: self.wire.portal.clone(),
            target: self.target_name(),
            reason,
        }
    }
}
