//! SNMPv3 messages (RFC 3412 section 6) with the User-based Security Model's parameters
//! (RFC 3414 section 2.4): the encoder of requests and the decoder of the agent's replies.
//! Authentication and privacy are applied by the caller ([`crate::v3`]); this module only
//! says where the authentication code sits so it can be computed over the whole message.

use crate::Error;
use crate::ber::{self, Reader};
use crate::message::{self, Response};

/// msgVersion of SNMPv3.
pub const VERSION_3: i64 = 3;
/// msgSecurityModel: USM.
pub const USM: i64 = 3;
/// msgFlags bits.
pub const FLAG_AUTH: u8 = 1;
pub const FLAG_PRIV: u8 = 2;
pub const FLAG_REPORTABLE: u8 = 4;
/// msgMaxSize: the largest reply this client reads (a UDP datagram's payload).
pub const MAX_SIZE: i64 = 65_507;

/// USM's security parameters (msgSecurityParameters' contents).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecParams<'a> {
    pub engine_id: &'a [u8],
    pub boots: u32,
    pub time: u32,
    pub user: &'a [u8],
    /// The message's authentication code (zeros while it is computed).
    pub auth: &'a [u8],
    /// AES: the 8-byte salt of the IV.
    pub privacy: &'a [u8],
}

/// A decoded v3 message.
#[derive(Debug, PartialEq)]
pub struct Message<'a> {
    pub msg_id: i32,
    pub flags: u8,
    pub sec: SecParams<'a>,
    /// Where `sec.auth` sits in the message, to check the code over the whole message.
    pub auth_at: usize,
    /// The ScopedPDU as sent: its whole TLV in clear, or the encrypted octets.
    pub data: &'a [u8],
}

/// A whole message. `scoped` is the ScopedPDU's TLV, or its encryption when `flags` has
/// [`FLAG_PRIV`]. Returns the message and the offset of its authentication parameters.
pub fn encode(msg_id: i32, flags: u8, sec: &SecParams, scoped: &[u8]) -> (Vec<u8>, usize) {
    let mut params = Vec::with_capacity(64 + sec.engine_id.len() + sec.user.len());
    ber::put_constructed(&mut params, ber::SEQUENCE, |p| {
        ber::put_tlv(p, ber::OCTET_STRING, sec.engine_id);
        ber::put_int(p, sec.boots.into());
        ber::put_int(p, sec.time.into());
        ber::put_tlv(p, ber::OCTET_STRING, sec.user);
        ber::put_tlv(p, ber::OCTET_STRING, sec.auth);
        ber::put_tlv(p, ber::OCTET_STRING, sec.privacy);
    });
    let mut out = Vec::with_capacity(params.len() + scoped.len() + 48);
    ber::put_constructed(&mut out, ber::SEQUENCE, |m| {
        ber::put_int(m, VERSION_3);
        ber::put_constructed(m, ber::SEQUENCE, |h| {
            ber::put_int(h, msg_id.into());
            ber::put_int(h, MAX_SIZE);
            ber::put_tlv(h, ber::OCTET_STRING, &[flags]);
            ber::put_int(h, USM);
        });
        ber::put_tlv(m, ber::OCTET_STRING, &params);
        if flags & FLAG_PRIV != 0 {
            ber::put_tlv(m, ber::OCTET_STRING, scoped);
        } else {
            m.extend_from_slice(scoped);
        }
    });
    // The encoder's own output decodes; that gives the code's place without counting.
    let at = decode(&out).map_or(0, |m| m.auth_at);
    (out, at)
}

/// A ScopedPDU (RFC 3412): the agent's engine ID as context, the default context, `pdu`.
pub fn scoped_pdu(context_engine: &[u8], pdu: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    ber::put_constructed(&mut out, ber::SEQUENCE, |s| {
        ber::put_tlv(s, ber::OCTET_STRING, context_engine);
        ber::put_tlv(s, ber::OCTET_STRING, b"");
        pdu(s);
    });
    out
}

/// Decodes a v3 message's header and security parameters; the ScopedPDU is left as sent.
pub fn decode(msg: &[u8]) -> Result<Message<'_>, Error> {
    let mut top = Reader::new(msg);
    let mut m = top.sequence("message")?;
    let version = m.int("version")?;
    if version != VERSION_3 {
        return Err(Error::Protocol(format!(
            "reply of SNMP version field {version}, not 3 (v3)"
        )));
    }
    let mut h = m.sequence("msgGlobalData")?;
    let msg_id = h.int("msgID")?;
    let msg_id = i32::try_from(msg_id)
        .map_err(|_| Error::Protocol(format!("msgID {msg_id} out of range")))?;
    h.int("msgMaxSize")?;
    let flags = match h.octets("msgFlags")? {
        [f] => *f,
        f => {
            return Err(Error::Protocol(format!(
                "msgFlags of {} bytes, not 1",
                f.len()
            )));
        }
    };
    let model = h.int("msgSecurityModel")?;
    if model != USM {
        return Err(Error::Protocol(format!(
            "security model {model}, not 3 (USM)"
        )));
    }
    let params = m.octets("msgSecurityParameters")?;
    let mut p = Reader::new(params).sequence("USM security parameters")?;
    let engine_id = p.octets("msgAuthoritativeEngineID")?;
    let boots = u31(p.int("msgAuthoritativeEngineBoots")?, "engine boots")?;
    let time = u31(p.int("msgAuthoritativeEngineTime")?, "engine time")?;
    let user = p.octets("msgUserName")?;
    let auth = p.octets("msgAuthenticationParameters")?;
    let privacy = p.octets("msgPrivacyParameters")?;
    let data = if flags & FLAG_PRIV != 0 {
        m.octets("encryptedPDU")?
    } else {
        let rest = m.rest();
        let mut r = Reader::new(rest);
        r.expect(ber::SEQUENCE, "ScopedPDU")?;
        &rest[..rest.len() - r.rest().len()]
    };
    Ok(Message {
        msg_id,
        flags,
        sec: SecParams {
            engine_id,
            boots,
            time,
            user,
            auth,
            privacy,
        },
        auth_at: auth.as_ptr() as usize - msg.as_ptr() as usize,
        data,
    })
}

fn u31(v: i64, what: &str) -> Result<u32, Error> {
    u32::try_from(v)
        .ok()
        .filter(|v| *v <= i32::MAX as u32)
        .ok_or_else(|| Error::Protocol(format!("{what} {v} out of range")))
}

/// What a ScopedPDU held: a Response, or a Report of the agent's USM counters (an error).
#[derive(Debug, PartialEq)]
pub enum Reply {
    Response(Response),
    Report(Response),
}

/// Decodes a ScopedPDU in clear (after decryption: trailing bytes are ignored).
pub fn decode_scoped(data: &[u8]) -> Result<Reply, Error> {
    let mut s = Reader::new(data).sequence("ScopedPDU")?;
    s.octets("contextEngineID")?;
    s.octets("contextName")?;
    let (tag, body) = s.tlv()?;
    match tag {
        message::RESPONSE => Ok(Reply::Response(message::decode_pdu(body)?)),
        message::REPORT => Ok(Reply::Report(message::decode_pdu(body)?)),
        t => Err(Error::Protocol(format!(
            "reply PDU of type {t:#04x}, not a Response or Report"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_decodes_to_what_was_encoded_and_finds_its_code() {
        let scoped = scoped_pdu(b"engine", |p| {
            ber::put_constructed(p, message::RESPONSE, |r| {
                ber::put_int(r, 9);
                ber::put_int(r, 0);
                ber::put_int(r, 0);
                ber::put_constructed(r, ber::SEQUENCE, |_| {});
            })
        });
        let sec = SecParams {
            engine_id: b"engine",
            boots: 3,
            time: 1234,
            user: b"bench",
            auth: &[0; 12],
            privacy: b"",
        };
        let (msg, at) = encode(42, FLAG_AUTH | FLAG_REPORTABLE, &sec, &scoped);
        assert_eq!(&msg[at..at + 12], &[0; 12]);
        let m = decode(&msg).unwrap();
        assert_eq!((m.msg_id, m.flags), (42, FLAG_AUTH | FLAG_REPORTABLE));
        assert_eq!(m.sec, sec);
        assert_eq!(m.data, &scoped[..]);
        let Reply::Response(r) = decode_scoped(m.data).unwrap() else {
            panic!("not a response")
        };
        assert_eq!(r.request_id, 9);
        for cut in 0..msg.len() {
            assert!(decode(&msg[..cut]).is_err(), "{cut}");
        }
        let (enc, _) = encode(1, FLAG_AUTH | FLAG_PRIV, &sec, b"secret");
        assert_eq!(decode(&enc).unwrap().data, b"secret");
    }
}
