//! One SNMPv3 user's session with one agent (RFC 3414): the agent's engine ID is learnt
//! from its first Report (discovery), the user's passwords are turned into keys for that
//! engine, and the agent's clock (boots, seconds) is followed so requests fall inside its
//! 150-second time window; a Report saying the clock drifted re-syncs it. Reports of an
//! unknown user, a wrong digest or a failed decryption become one-line errors that say
//! which secret to check. Passwords come from the caller (the environment or a file), never
//! from the URL.

use std::time::Instant;

use crate::Error;
use crate::ber::{self, Oid};
use crate::message::Response;
use crate::usm::{Auth, MIN_PASSWORD, Privacy};
use crate::v3msg::{self, FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, Reply, SecParams};

/// usmStats counters (RFC 3414 section 5) an agent reports instead of answering.
const USM_STATS: &str = "1.3.6.1.6.3.15.1.1";

/// A user and the secrets of the security level asked for.
pub struct Credentials {
    pub user: Vec<u8>,
    pub auth: Option<(Auth, Vec<u8>)>,
    /// Privacy needs authentication (RFC 3414: authPriv).
    pub privacy: Option<(Privacy, Vec<u8>)>,
}

/// What the agent told us about itself, with the keys localized to it.
struct Engine {
    id: Vec<u8>,
    boots: u32,
    time: u32,
    at: Instant,
    auth_key: Vec<u8>,
    priv_key: Vec<u8>,
}

pub struct Session {
    cred: Credentials,
    engine: Option<Engine>,
    salt: u64,
}

/// What a reply meant.
pub enum Outcome {
    Response(Response),
    /// The agent's engine ID or clock was learnt: send the request again.
    Retry,
}

impl Session {
    pub fn new(cred: Credentials, seed: u64) -> Result<Session, Error> {
        if cred.user.is_empty() {
            return Err(Error::Url("an SNMPv3 user name is needed".into()));
        }
        if cred.privacy.is_some() && cred.auth.is_none() {
            return Err(Error::Url(
                "a privacy password without an authentication password (SNMPv3 has no privacy \
                 without authentication)"
                    .into(),
            ));
        }
        let short = |p: Option<&Vec<u8>>| p.is_some_and(|p| p.len() < MIN_PASSWORD);
        if short(cred.auth.as_ref().map(|(_, p)| p)) || short(cred.privacy.as_ref().map(|(_, p)| p))
        {
            return Err(Error::Url(format!(
                "an SNMPv3 password shorter than {MIN_PASSWORD} characters (RFC 3414 and \
                 net-snmp refuse them)"
            )));
        }
        Ok(Session {
            cred,
            engine: None,
            salt: seed,
        })
    }

    /// The security level's name, for messages.
    pub fn level(&self) -> &'static str {
        match (&self.cred.auth, &self.cred.privacy) {
            (Some(_), Some(_)) => "authPriv",
            (Some(_), None) => "authNoPriv",
            _ => "noAuthNoPriv",
        }
    }

    fn flags(&self) -> u8 {
        let mut f = FLAG_REPORTABLE;
        if self.cred.auth.is_some() {
            f |= FLAG_AUTH;
        }
        if self.cred.privacy.is_some() {
            f |= FLAG_PRIV;
        }
        f
    }

    /// The message carrying `pdu` (written by the closure): before the engine is known,
    /// the discovery probe (no user, no security, no bindings) instead.
    pub fn encode(&mut self, msg_id: i32, pdu: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        self.salt = self.salt.wrapping_add(1);
        let salt = self.salt.to_be_bytes();
        let Some(e) = &self.engine else {
            let scoped = v3msg::scoped_pdu(b"", |s| {
                ber::put_constructed(s, crate::message::GET, |p| {
                    ber::put_int(p, msg_id.into());
                    ber::put_int(p, 0);
                    ber::put_int(p, 0);
                    ber::put_constructed(p, ber::SEQUENCE, |_| {});
                })
            });
            let sec = SecParams::default();
            return v3msg::encode(msg_id, FLAG_REPORTABLE, &sec, &scoped).0;
        };
        let time = e
            .time
            .saturating_add(u32::try_from(e.at.elapsed().as_secs()).unwrap_or(u32::MAX));
        let mut scoped = v3msg::scoped_pdu(&e.id, pdu);
        let mut privacy: &[u8] = b"";
        if let Some((p, _)) = &self.cred.privacy {
            p.apply(true, &e.priv_key, e.boots, time, &salt, &mut scoped)
                .expect("an 8-byte salt");
            privacy = &salt;
        }
        let zeros = [0u8; 48];
        let auth = self.cred.auth.as_ref().map(|(a, _)| *a);
        let sec = SecParams {
            engine_id: &e.id,
            boots: e.boots,
            time,
            user: &self.cred.user,
            auth: &zeros[..auth.map_or(0, Auth::mac_len)],
            privacy,
        };
        let (mut msg, at) = v3msg::encode(msg_id, self.flags(), &sec, &scoped);
        if let Some(a) = auth {
            let code = a.mac(&e.auth_key, &msg);
            msg[at..at + code.len()].copy_from_slice(&code);
        }
        msg
    }

    /// Reads a reply: `None` when it answers another request.
    pub fn decode(&mut self, msg_id: i32, reply: &[u8]) -> Result<Option<Outcome>, Error> {
        let m = v3msg::decode(reply)?;
        if m.msg_id != msg_id {
            return Ok(None);
        }
        // The code first: nothing of a forged reply is decrypted or believed.
        if m.flags & FLAG_AUTH != 0 {
            self.check_code(reply, &m)?;
        }
        let clear;
        let data = if m.flags & FLAG_PRIV != 0 {
            let (Some((p, _)), Some(e)) = (&self.cred.privacy, &self.engine) else {
                return Err(Error::Protocol(
                    "an encrypted reply to a request in clear".into(),
                ));
            };
            let mut d = m.data.to_vec();
            p.apply(
                false,
                &e.priv_key,
                m.sec.boots,
                m.sec.time,
                m.sec.privacy,
                &mut d,
            )?;
            clear = d;
            &clear[..]
        } else {
            m.data
        };
        let reply_kind = v3msg::decode_scoped(data)?;
        let r = match reply_kind {
            Reply::Report(r) => return self.report(&m.sec, &r).map(Some),
            Reply::Response(r) => r,
        };
        if self.cred.auth.is_some() && m.flags & FLAG_AUTH == 0 {
            return Err(Error::Protocol(
                "a Response without authentication to an authenticated request".into(),
            ));
        }
        Ok(Some(Outcome::Response(r)))
    }

    /// The reply's authentication code, computed again with our key.
    fn check_code(&self, reply: &[u8], m: &v3msg::Message) -> Result<(), Error> {
        let (Some((a, _)), Some(e)) = (&self.cred.auth, &self.engine) else {
            return Err(Error::Protocol(
                "an authenticated reply to an unauthenticated request".into(),
            ));
        };
        if m.sec.auth.len() != a.mac_len() {
            return Err(Error::Protocol(format!(
                "the reply's authentication code has {} bytes, not {} ({})",
                m.sec.auth.len(),
                a.mac_len(),
                a.name()
            )));
        }
        let mut copy = reply.to_vec();
        copy[m.auth_at..m.auth_at + a.mac_len()].fill(0);
        if a.mac(&e.auth_key, &copy) != m.sec.auth {
            return Err(Error::Protocol(
                "the reply's authentication code does not match our key".into(),
            ));
        }
        Ok(())
    }

    /// A Report: the engine learnt or the clock re-synced (send again), else the error.
    fn report(&mut self, sec: &SecParams, r: &Response) -> Result<Outcome, Error> {
        let prefix = Oid::parse(USM_STATS).expect("constant");
        let counter = r
            .bindings
            .first()
            .and_then(|(o, _)| o.suffix(&prefix))
            .and_then(|s| s.first().copied());
        let user = String::from_utf8_lossy(&self.cred.user).into_owned();
        match counter {
            // usmStatsUnknownEngineIDs: the discovery's answer.
            Some(4) if !sec.engine_id.is_empty() && self.engine.is_none() => {
                self.learn(sec);
                Ok(Outcome::Retry)
            }
            // usmStatsNotInTimeWindows: the agent's clock, sent with it.
            Some(2)
                if self
                    .engine
                    .as_ref()
                    .is_some_and(|e| e.time != sec.time || e.boots != sec.boots) =>
            {
                if let Some(e) = &mut self.engine {
                    (e.boots, e.time, e.at) = (sec.boots, sec.time, Instant::now());
                }
                Ok(Outcome::Retry)
            }
            Some(1) => Err(Error::Agent(format!(
                "user {user} may not use security level {} (usmStatsUnsupportedSecLevels): \
                 check which of STORBENCH_SNMP_AUTH / STORBENCH_SNMP_PRIV the agent expects",
                self.level()
            ))),
            Some(2) => Err(Error::Agent(
                "the agent keeps saying our clock is outside its time window \
                 (usmStatsNotInTimeWindows)"
                    .into(),
            )),
            Some(3) => Err(Error::Agent(format!(
                "the agent knows no user {user} (usmStatsUnknownUserNames)"
            ))),
            Some(4) => Err(Error::Agent(
                "the agent did not accept its own engine ID (usmStatsUnknownEngineIDs)".into(),
            )),
            Some(5) => Err(Error::Agent(format!(
                "wrong authentication password or protocol for user {user} \
                 (usmStatsWrongDigests)"
            ))),
            Some(6) => Err(Error::Agent(format!(
                "the agent could not decrypt the request: wrong privacy password or protocol \
                 for user {user} (usmStatsDecryptionErrors)"
            ))),
            _ => Err(Error::Agent(format!(
                "the agent sent a Report ({})",
                r.bindings
                    .first()
                    .map_or("no binding".into(), |(o, _)| o.to_string())
            ))),
        }
    }

    /// A session that knows its engine already, with keys given (for the fuzz targets,
    /// which cannot afford a key localisation per input).
    #[doc(hidden)]
    pub fn keyed(cred: Credentials, engine_id: &[u8], keys: (Vec<u8>, Vec<u8>)) -> Session {
        Session {
            cred,
            engine: Some(Engine {
                id: engine_id.to_vec(),
                boots: 1,
                time: 1,
                at: Instant::now(),
                auth_key: keys.0,
                priv_key: keys.1,
            }),
            salt: 0,
        }
    }

    fn learn(&mut self, sec: &SecParams) {
        let key = |p: Option<&Vec<u8>>| match (&self.cred.auth, p) {
            (Some((a, _)), Some(pw)) => a.localized_key(pw, sec.engine_id),
            _ => Vec::new(),
        };
        let auth_key = key(self.cred.auth.as_ref().map(|(_, p)| p));
        let priv_key = key(self.cred.privacy.as_ref().map(|(_, p)| p));
        self.engine = Some(Engine {
            id: sec.engine_id.to_vec(),
            boots: sec.boots,
            time: sec.time,
            at: Instant::now(),
            auth_key,
            priv_key,
        });
    }
}
