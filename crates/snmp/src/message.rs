//! SNMPv2c messages (RFC 3416 PDUs in an RFC 1901 community message): the requests this
//! client sends and the decoder of the agent's replies.

use crate::Error;
use crate::ber::{self, Oid, Reader, Value};

pub const GET: u8 = 0xa0;
pub const GET_NEXT: u8 = 0xa1;
pub const RESPONSE: u8 = 0xa2;
pub const GET_BULK: u8 = 0xa5;
pub const REPORT: u8 = 0xa8;

/// The version field of an SNMPv2c message.
const VERSION_2C: i64 = 1;

/// A request PDU: GET of `oids`, or GETBULK of up to `max_repetitions` successors of each.
pub struct Request<'a> {
    pub kind: u8,
    pub request_id: i32,
    pub oids: &'a [Oid],
    pub max_repetitions: u32,
}

/// The decoded reply.
#[derive(Debug, PartialEq)]
pub struct Response {
    pub request_id: i32,
    /// RFC 3416 error-status (0 = noError) and the 1-based binding it names.
    pub error_status: i64,
    pub error_index: i64,
    pub bindings: Vec<(Oid, Value)>,
}

/// A whole v2c message carrying `req`.
pub fn encode_v2c(community: &[u8], req: &Request) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + req.oids.len() * 16);
    ber::put_constructed(&mut out, ber::SEQUENCE, |m| {
        ber::put_int(m, VERSION_2C);
        ber::put_tlv(m, ber::OCTET_STRING, community);
        put_pdu(m, req);
    });
    out
}

/// The PDU alone (a v3 message carries it in its ScopedPDU).
pub fn put_pdu(out: &mut Vec<u8>, req: &Request) {
    ber::put_constructed(out, req.kind, |p| {
        ber::put_int(p, req.request_id.into());
        // GETBULK: non-repeaters, max-repetitions; else error-status, error-index.
        let (a, b) = if req.kind == GET_BULK {
            (0, i64::from(req.max_repetitions))
        } else {
            (0, 0)
        };
        ber::put_int(p, a);
        ber::put_int(p, b);
        ber::put_constructed(p, ber::SEQUENCE, |list| {
            for oid in req.oids {
                ber::put_constructed(list, ber::SEQUENCE, |vb| {
                    ber::put_oid(vb, oid);
                    ber::put_tlv(vb, ber::NULL, &[]);
                });
            }
        });
    });
}

/// Decodes a v2c reply: the version must be v2c and the PDU a Response. The community is
/// not checked (an agent answers with the one it was asked with).
pub fn decode_v2c(msg: &[u8]) -> Result<Response, Error> {
    let mut top = Reader::new(msg);
    let mut m = top.sequence("message")?;
    let version = m.int("version")?;
    if version != VERSION_2C {
        return Err(Error::Protocol(format!(
            "reply of SNMP version field {version}, not 1 (v2c)"
        )));
    }
    m.octets("community")?;
    let (tag, body) = m.tlv()?;
    if tag == REPORT {
        return Err(Error::Protocol(
            "the agent sent a Report, not a Response".into(),
        ));
    }
    if tag != RESPONSE {
        return Err(Error::Protocol(format!(
            "reply PDU of type {tag:#04x}, not a Response"
        )));
    }
    decode_pdu(body)
}

/// A Response PDU's contents.
pub fn decode_pdu(body: &[u8]) -> Result<Response, Error> {
    let mut p = Reader::new(body);
    let request_id = p.int("request-id")?;
    let request_id = i32::try_from(request_id)
        .map_err(|_| Error::Protocol(format!("request-id {request_id} out of range")))?;
    let error_status = p.int("error-status")?;
    let error_index = p.int("error-index")?;
    let mut list = p.sequence("variable bindings")?;
    let mut bindings = Vec::new();
    while !list.is_empty() {
        let mut vb = list.sequence("variable binding")?;
        let name = ber::oid(vb.expect(ber::OID, "a binding's name")?)?;
        let (tag, v) = vb.tlv()?;
        bindings.push((name, ber::value(tag, v)?));
    }
    Ok(Response {
        request_id,
        error_status,
        error_index,
        bindings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_get_request_is_byte_exact() {
        // net-snmp's snmpget -v2c -c public host 1.3.6.1.2.1.1.3.0 with request-id 0x1234.
        let oids = [Oid::parse("1.3.6.1.2.1.1.3.0").unwrap()];
        let msg = encode_v2c(
            b"public",
            &Request {
                kind: GET,
                request_id: 0x1234,
                oids: &oids,
                max_repetitions: 0,
            },
        );
        let expected: &[u8] = &[
            0x30, 0x27, 2, 1, 1, 4, 6, b'p', b'u', b'b', b'l', b'i', b'c', 0xa0, 0x1a, 2, 2, 0x12,
            0x34, 2, 1, 0, 2, 1, 0, 0x30, 0x0e, 0x30, 0x0c, 6, 8, 0x2b, 6, 1, 2, 1, 1, 3, 0, 5, 0,
        ];
        assert_eq!(msg, expected);
    }

    #[test]
    fn a_response_decodes_with_its_bindings() {
        let mut msg = Vec::new();
        ber::put_constructed(&mut msg, ber::SEQUENCE, |m| {
            ber::put_int(m, 1);
            ber::put_tlv(m, ber::OCTET_STRING, b"public");
            ber::put_constructed(m, RESPONSE, |p| {
                ber::put_int(p, 7);
                ber::put_int(p, 0);
                ber::put_int(p, 0);
                ber::put_constructed(p, ber::SEQUENCE, |l| {
                    ber::put_constructed(l, ber::SEQUENCE, |vb| {
                        ber::put_oid(vb, &Oid::parse("1.3.6.1.2.1.31.1.1.1.6.2").unwrap());
                        ber::put_tlv(vb, ber::COUNTER64, &[1, 0, 0, 0, 0]);
                    });
                    ber::put_constructed(l, ber::SEQUENCE, |vb| {
                        ber::put_oid(vb, &Oid::parse("1.3.6.1.2.1.1.5.0").unwrap());
                        ber::put_tlv(vb, ber::END_OF_MIB_VIEW, &[]);
                    });
                });
            });
        });
        let r = decode_v2c(&msg).unwrap();
        assert_eq!(r.request_id, 7);
        assert_eq!(r.bindings.len(), 2);
        assert_eq!(r.bindings[0].1, Value::Counter64(1 << 32));
        assert_eq!(r.bindings[1].1, Value::EndOfMib);
        for cut in 0..msg.len() {
            assert!(decode_v2c(&msg[..cut]).is_err(), "{cut}");
        }
        msg[4] = 3; // version field: v3
        assert!(
            decode_v2c(&msg)
                .unwrap_err()
                .to_string()
                .contains("version")
        );
    }
}
