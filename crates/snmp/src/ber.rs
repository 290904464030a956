//! The subset of ASN.1 BER that SNMP messages use: definite lengths, INTEGER, OCTET STRING,
//! NULL, OBJECT IDENTIFIER, SEQUENCE and SNMP's application types. Decoding never panics
//! and never reads past its input: every length is checked against what is left.

use crate::Error;

pub const INTEGER: u8 = 0x02;
pub const OCTET_STRING: u8 = 0x04;
pub const NULL: u8 = 0x05;
pub const OID: u8 = 0x06;
pub const SEQUENCE: u8 = 0x30;
pub const IP_ADDRESS: u8 = 0x40;
pub const COUNTER32: u8 = 0x41;
pub const GAUGE32: u8 = 0x42;
pub const TIMETICKS: u8 = 0x43;
pub const COUNTER64: u8 = 0x46;
pub const NO_SUCH_OBJECT: u8 = 0x80;
pub const NO_SUCH_INSTANCE: u8 = 0x81;
pub const END_OF_MIB_VIEW: u8 = 0x82;

/// An object identifier's arcs (`1.3.6.1.2.1.25.3.3.1.2`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Oid(pub Vec<u32>);

impl Oid {
    /// Parses a dotted OID; for constants in code, so a bad one is a programming error.
    pub fn parse(dotted: &str) -> Option<Oid> {
        let arcs: Option<Vec<u32>> = dotted.split('.').map(|a| a.parse().ok()).collect();
        arcs.filter(|a| a.len() >= 2 && a[0] <= 2).map(Oid)
    }

    pub fn starts_with(&self, prefix: &Oid) -> bool {
        self.0.starts_with(&prefix.0)
    }

    /// The arcs after `prefix` (a table row's index), if this OID is below it.
    pub fn suffix(&self, prefix: &Oid) -> Option<&[u32]> {
        self.0.strip_prefix(prefix.0.as_slice())
    }
}

impl std::fmt::Display for Oid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, a) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{a}")?;
        }
        Ok(())
    }
}

/// A variable's value as an agent returned it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Integer(i64),
    OctetString(Vec<u8>),
    Null,
    Oid(Oid),
    IpAddress([u8; 4]),
    Counter32(u32),
    Gauge32(u32),
    TimeTicks(u32),
    Counter64(u64),
    /// noSuchObject, noSuchInstance: the agent does not have this variable.
    Missing,
    /// endOfMibView: nothing follows in the agent's tree.
    EndOfMib,
    /// A type this client does not read (Opaque, ...), by its tag.
    Other(u8),
}

impl Value {
    /// A number from any integer-like type.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Integer(i) => u64::try_from(i).ok(),
            Value::Counter32(v) | Value::Gauge32(v) | Value::TimeTicks(v) => Some(v.into()),
            Value::Counter64(v) => Some(v),
            _ => None,
        }
    }

    /// Text of an OCTET STRING (a device or interface name), lossily.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Value::OctetString(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

// ---- encoding ----

/// Appends a tag, the length of `body` and `body`.
pub fn put_tlv(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    put_len(out, body.len());
    out.extend_from_slice(body);
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
        return;
    }
    let bytes = len.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    out.push(0x80 | (bytes.len() - skip) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

pub fn put_int(out: &mut Vec<u8>, v: i64) {
    let bytes = v.to_be_bytes();
    // Drop leading bytes that only repeat the sign of the next one.
    let mut start = 0;
    while start < 7 {
        let (b, next) = (bytes[start], bytes[start + 1]);
        if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            start += 1;
        } else {
            break;
        }
    }
    put_tlv(out, INTEGER, &bytes[start..]);
}

pub fn put_oid(out: &mut Vec<u8>, oid: &Oid) {
    let mut body = Vec::with_capacity(oid.0.len() + 4);
    let arcs = &oid.0;
    let first = arcs.first().copied().unwrap_or(0) * 40 + arcs.get(1).copied().unwrap_or(0);
    put_base128(&mut body, first);
    for &a in arcs.iter().skip(2) {
        put_base128(&mut body, a);
    }
    put_tlv(out, OID, &body);
}

fn put_base128(out: &mut Vec<u8>, v: u32) {
    let mut groups = [0u8; 5];
    let mut n = 0;
    let mut v = v;
    loop {
        groups[n] = (v & 0x7f) as u8;
        n += 1;
        v >>= 7;
        if v == 0 {
            break;
        }
    }
    for i in (0..n).rev() {
        out.push(groups[i] | if i > 0 { 0x80 } else { 0 });
    }
}

/// A SEQUENCE (or any constructed type) around what `body` writes.
pub fn put_constructed(out: &mut Vec<u8>, tag: u8, body: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    body(&mut inner);
    put_tlv(out, tag, &inner);
}

// ---- decoding ----

/// Reads TLVs one after another from a slice.
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// What is left to read.
    pub fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// The next element's tag and contents.
    pub fn tlv(&mut self) -> Result<(u8, &'a [u8]), Error> {
        let (&tag, rest) = self.buf.split_first().ok_or_else(|| short("a tag"))?;
        if tag & 0x1f == 0x1f {
            return Err(Error::Protocol(format!(
                "multi-byte tag {tag:#04x} in a reply"
            )));
        }
        let (&first, mut rest) = rest.split_first().ok_or_else(|| short("a length"))?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return Err(Error::Protocol(format!(
                    "bad length form {first:#04x} in a reply"
                )));
            }
            let v = rest[..n]
                .iter()
                .fold(0usize, |a, b| (a << 8) | usize::from(*b));
            rest = &rest[n..];
            v
        };
        if rest.len() < len {
            return Err(short("an element's contents"));
        }
        let (body, rest) = rest.split_at(len);
        self.buf = rest;
        Ok((tag, body))
    }

    /// The next element, which must have `tag`.
    pub fn expect(&mut self, tag: u8, what: &str) -> Result<&'a [u8], Error> {
        let (t, body) = self.tlv()?;
        if t != tag {
            return Err(Error::Protocol(format!(
                "{what}: expected tag {tag:#04x}, got {t:#04x}"
            )));
        }
        Ok(body)
    }

    pub fn int(&mut self, what: &str) -> Result<i64, Error> {
        int(self.expect(INTEGER, what)?, what)
    }

    pub fn octets(&mut self, what: &str) -> Result<&'a [u8], Error> {
        self.expect(OCTET_STRING, what)
    }

    /// A SEQUENCE's contents as a reader of its own.
    pub fn sequence(&mut self, what: &str) -> Result<Reader<'a>, Error> {
        Ok(Reader::new(self.expect(SEQUENCE, what)?))
    }
}

fn short(what: &str) -> Error {
    Error::Protocol(format!("reply ends inside {what}"))
}

/// A signed integer of at most 8 bytes (a Counter64 may take 9: a leading zero).
pub fn int(body: &[u8], what: &str) -> Result<i64, Error> {
    if body.is_empty() || body.len() > 8 {
        return Err(Error::Protocol(format!(
            "{what}: an integer of {} bytes",
            body.len()
        )));
    }
    let neg = body[0] & 0x80 != 0;
    let init: i64 = if neg { -1 } else { 0 };
    Ok(body.iter().fold(init, |a, b| (a << 8) | i64::from(*b)))
}

/// An unsigned value of an application type: at most `max` bytes after a leading zero.
fn unsigned(body: &[u8], bits: u32, what: &str) -> Result<u64, Error> {
    let body = match body {
        [0, rest @ ..] if !rest.is_empty() => rest,
        _ => body,
    };
    if body.is_empty() || body.len() * 8 > bits as usize {
        return Err(Error::Protocol(format!(
            "{what}: {} bytes for a {bits}-bit value",
            body.len()
        )));
    }
    Ok(body.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)))
}

pub fn oid(body: &[u8]) -> Result<Oid, Error> {
    if body.is_empty() || body.len() > 256 {
        return Err(Error::Protocol(format!(
            "an object identifier of {} bytes",
            body.len()
        )));
    }
    let mut arcs = Vec::with_capacity(body.len() + 1);
    let mut v: u64 = 0;
    for (i, &b) in body.iter().enumerate() {
        v = (v << 7) | u64::from(b & 0x7f);
        if v > u64::from(u32::MAX) {
            return Err(Error::Protocol("an object identifier arc past 2^32".into()));
        }
        if b & 0x80 != 0 {
            if i + 1 == body.len() {
                return Err(Error::Protocol("an object identifier ends mid-arc".into()));
            }
            continue;
        }
        if arcs.is_empty() {
            let first = (v / 40).min(2);
            arcs.push(first as u32);
            arcs.push((v - first * 40) as u32);
        } else {
            arcs.push(v as u32);
        }
        v = 0;
    }
    Ok(Oid(arcs))
}

/// A variable binding's value.
pub fn value(tag: u8, body: &[u8]) -> Result<Value, Error> {
    Ok(match tag {
        INTEGER => Value::Integer(int(body, "an INTEGER value")?),
        OCTET_STRING => Value::OctetString(body.to_vec()),
        NULL => Value::Null,
        OID => Value::Oid(oid(body)?),
        IP_ADDRESS => {
            let a: [u8; 4] = body
                .try_into()
                .map_err(|_| Error::Protocol(format!("an IpAddress of {} bytes", body.len())))?;
            Value::IpAddress(a)
        }
        COUNTER32 => Value::Counter32(unsigned(body, 32, "a Counter32")? as u32),
        GAUGE32 => Value::Gauge32(unsigned(body, 32, "a Gauge32")? as u32),
        TIMETICKS => Value::TimeTicks(unsigned(body, 32, "a TimeTicks")? as u32),
        COUNTER64 => Value::Counter64(unsigned(body, 64, "a Counter64")?),
        NO_SUCH_OBJECT | NO_SUCH_INSTANCE => Value::Missing,
        END_OF_MIB_VIEW => Value::EndOfMib,
        other => Value::Other(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_take_the_fewest_bytes_and_read_back() {
        for (v, bytes) in [
            (0i64, &[2u8, 1, 0][..]),
            (127, &[2, 1, 0x7f]),
            (128, &[2, 2, 0, 0x80]),
            (-1, &[2, 1, 0xff]),
            (-129, &[2, 2, 0xff, 0x7f]),
            (65536, &[2, 3, 1, 0, 0]),
        ] {
            let mut out = Vec::new();
            put_int(&mut out, v);
            assert_eq!(out, bytes, "{v}");
            assert_eq!(Reader::new(&out).int("x").unwrap(), v);
        }
    }

    #[test]
    fn oids_encode_as_rfc_2578_says() {
        // 1.3.6.1.2.1.1.3.0 (sysUpTime.0) and an arc needing two bytes (2021 = 0x0F 0x65).
        let mut out = Vec::new();
        put_oid(&mut out, &Oid::parse("1.3.6.1.2.1.1.3.0").unwrap());
        assert_eq!(out, [6, 8, 0x2b, 6, 1, 2, 1, 1, 3, 0]);
        let mut out = Vec::new();
        let ucd = Oid::parse("1.3.6.1.4.1.2021.11").unwrap();
        put_oid(&mut out, &ucd);
        assert_eq!(out, [6, 8, 0x2b, 6, 1, 4, 1, 0x8f, 0x65, 11]);
        assert_eq!(oid(&out[2..]).unwrap(), ucd);
    }

    #[test]
    fn long_lengths_and_truncation() {
        let body = vec![7u8; 300];
        let mut out = Vec::new();
        put_tlv(&mut out, OCTET_STRING, &body);
        assert_eq!(&out[..4], &[4, 0x82, 1, 44]);
        assert_eq!(Reader::new(&out).octets("x").unwrap(), &body[..]);
        for cut in 0..out.len() {
            assert!(Reader::new(&out[..cut]).tlv().is_err(), "{cut}");
        }
    }

    #[test]
    fn application_types() {
        assert_eq!(
            value(
                COUNTER64,
                &[0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
            )
            .unwrap(),
            Value::Counter64(u64::MAX)
        );
        assert_eq!(value(COUNTER32, &[1, 0]).unwrap(), Value::Counter32(256));
        assert!(value(COUNTER32, &[1, 0, 0, 0, 0]).is_err());
        assert_eq!(value(NO_SUCH_INSTANCE, &[]).unwrap(), Value::Missing);
        assert!(oid(&[0x2b, 0x86]).is_err());
    }
}
