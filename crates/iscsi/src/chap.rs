//! CHAP with MD5 (RFC 1994 as used by RFC 7143 12.1.3): response = MD5(id || secret ||
//! challenge). Values travel as `0x` hex or `0b` base64 strings.

use md5::{Digest as _, Md5};

/// The CHAP response to an identifier and challenge.
pub fn response(id: u8, secret: &[u8], challenge: &[u8]) -> [u8; 16] {
    let mut h = Md5::new();
    h.update([id]);
    h.update(secret);
    h.update(challenge);
    h.finalize().into()
}

/// Decodes a CHAP binary value (`0x…` hex or `0b…` base64).
pub fn decode_binary(v: &str) -> Option<Vec<u8>> {
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        decode_hex(hex)
    } else if let Some(b64) = v.strip_prefix("0b").or_else(|| v.strip_prefix("0B")) {
        decode_base64(b64)
    } else {
        None
    }
}

/// `0x` followed by lower-case hex.
pub fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 + bytes.len() * 2);
    s.push_str("0x");
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = hex
        .bytes()
        .map(|c| (c as char).to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()?;
    if digits.is_empty() {
        return None;
    }
    // An odd count means a leading zero nibble was dropped.
    let mut out = Vec::with_capacity(digits.len().div_ceil(2));
    let mut iter = digits.iter();
    if digits.len() % 2 == 1 {
        out.push(*iter.next()?);
    }
    while let (Some(h), Some(l)) = (iter.next(), iter.next()) {
        out.push(h << 4 | l);
    }
    Some(out)
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if out.is_empty() { None } else { Some(out) }
}

/// Fills `buf` with random bytes from the kernel (for the ISID and mutual CHAP challenges).
pub fn random_bytes(buf: &mut [u8]) {
    let mut filled = 0;
    while filled < buf.len() {
        // SAFETY: writes at most the remaining length into our own buffer.
        let n =
            unsafe { libc::getrandom(buf[filled..].as_mut_ptr().cast(), buf.len() - filled, 0) };
        if n <= 0 {
            // getrandom cannot fail on Linux ≥ 3.17 except for EINTR; fall back to time bits.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0x9e37_79b9);
            for (i, b) in buf[filled..].iter_mut().enumerate() {
                *b = (t >> ((i % 8) * 8)) as u8 ^ (i as u8).wrapping_mul(151);
            }
            return;
        }
        filled += n as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn md5_response_matches_known_value() {
        // MD5(0x01 || "secret" || 0x00 0x01 0x02) computed independently with Python hashlib.
        let r = response(1, b"secret", &[0, 1, 2]);
        assert_eq!(encode_hex(&r), "0xc4081e0c9f89346155ddb08f0bf91611");
    }

    #[test]
    fn base64_and_hex_agree() {
        assert_eq!(decode_binary("0x00ff10"), Some(vec![0, 0xff, 0x10]));
        assert_eq!(decode_binary("0bAP8Q"), Some(vec![0, 0xff, 0x10]));
        assert_eq!(decode_binary("0xabc"), Some(vec![0x0a, 0xbc]));
        assert_eq!(decode_binary("abc"), None);
        assert_eq!(decode_binary("0x"), None);
        assert_eq!(decode_binary("0xzz"), None);
    }

    proptest! {
        #[test]
        fn hex_round_trips(bytes in proptest::collection::vec(any::<u8>(), 1..64)) {
            prop_assert_eq!(decode_binary(&encode_hex(&bytes)), Some(bytes));
        }

        #[test]
        fn decode_never_panics(s in "\\PC{0,80}") {
            let _ = decode_binary(&s);
        }
    }
}
