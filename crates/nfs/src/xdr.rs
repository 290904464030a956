//! XDR (RFC 4506) encoding into a growable byte buffer and bounds-checked decoding from a
//! borrowed slice. Decoding never panics: every read checks the remaining length, and
//! variable-length items are checked against the bytes actually present before anything
//! is allocated.

use crate::error::DecodeError;

/// Appends XDR items to a buffer. The buffer is reused across calls, so steady-state
/// encoding does not allocate.
pub struct Enc<'a> {
    pub buf: &'a mut Vec<u8>,
}

impl<'a> Enc<'a> {
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        Enc { buf }
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u32(v as u32)
    }

    /// Variable-length opaque: length, bytes, zero padding to 4.
    pub fn opaque(&mut self, data: &[u8]) -> &mut Self {
        self.u32(data.len() as u32);
        self.fixed(data)
    }

    /// Fixed-length opaque: bytes and padding, no length.
    pub fn fixed(&mut self, data: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(data);
        let pad = (4 - data.len() % 4) % 4;
        self.buf.extend_from_slice(&[0u8; 3][..pad]);
        self
    }

    pub fn string(&mut self, s: &str) -> &mut Self {
        self.opaque(s.as_bytes())
    }
}

/// Reads XDR items from a slice, tracking the position.
#[derive(Clone, Debug)]
pub struct Dec<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Dec { data, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated {
                at: self.pos,
                need: n,
            });
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let hi = self.u32()? as u64;
        let lo = self.u32()? as u64;
        Ok(hi << 32 | lo)
    }

    pub fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(DecodeError::BadValue {
                what: "bool",
                value: v,
            }),
        }
    }

    /// Fixed-length opaque of `n` bytes plus its padding.
    pub fn fixed(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let padded = n.checked_add(3).ok_or(DecodeError::TooLong {
            what: "opaque",
            len: n,
        })? & !3;
        let b = self.take(padded)?;
        Ok(&b[..n])
    }

    /// Variable-length opaque with an upper bound on its length.
    pub fn opaque(&mut self, max: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(DecodeError::TooLong { what, len });
        }
        self.fixed(len)
    }

    pub fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        self.take(n).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn opaque_is_padded_to_four() {
        let mut buf = Vec::new();
        Enc::new(&mut buf).opaque(b"abcde");
        assert_eq!(buf, [0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]);
        let mut d = Dec::new(&buf);
        assert_eq!(d.opaque(8, "x").unwrap(), b"abcde");
        assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn overlong_opaque_is_refused() {
        let buf = [0, 0, 0, 9, 1, 2];
        assert!(matches!(
            Dec::new(&buf).opaque(8, "fh"),
            Err(DecodeError::TooLong { len: 9, .. })
        ));
        assert!(matches!(
            Dec::new(&buf).opaque(64, "fh"),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn huge_length_does_not_overflow() {
        let buf = [0xff, 0xff, 0xff, 0xff];
        assert!(Dec::new(&buf).opaque(usize::MAX, "x").is_err());
    }

    proptest! {
        #[test]
        fn round_trip(a: u32, b: u64, c: bool, s in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut buf = Vec::new();
            Enc::new(&mut buf).u32(a).u64(b).bool(c).opaque(&s);
            prop_assert_eq!(buf.len() % 4, 0);
            let mut d = Dec::new(&buf);
            prop_assert_eq!(d.u32().unwrap(), a);
            prop_assert_eq!(d.u64().unwrap(), b);
            prop_assert_eq!(d.bool().unwrap(), c);
            prop_assert_eq!(d.opaque(64, "s").unwrap(), &s[..]);
            prop_assert_eq!(d.remaining(), 0);
        }

        #[test]
        fn decoding_garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut d = Dec::new(&data);
            let _ = d.u32();
            let _ = d.opaque(1 << 20, "x");
            let _ = d.u64();
            let _ = d.bool();
        }
    }
}
