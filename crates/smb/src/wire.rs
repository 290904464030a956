//! Little-endian reading with bounds checks (every decoder goes through [`Rd`], so a short or
//! lying reply is a [`DecodeError`], never a panic) and the writing helpers encoders use.

use crate::error::DecodeError;

/// A bounds-checked reader over a reply.
#[derive(Clone, Copy)]
pub struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    pub fn new(b: &'a [u8]) -> Rd<'a> {
        Rd { b, pos: 0 }
    }

    pub fn at(b: &'a [u8], pos: usize) -> Result<Rd<'a>, DecodeError> {
        if pos > b.len() {
            return Err(DecodeError::Truncated {
                at: b.len(),
                need: pos - b.len(),
            });
        }
        Ok(Rd { b, pos })
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        let Some(end) = end else {
            return Err(DecodeError::Truncated {
                at: self.pos,
                need: n - (self.b.len() - self.pos.min(self.b.len())),
            });
        };
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        self.bytes(n).map(|_| ())
    }

    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }
}

/// `len` bytes at `off` of `b`, both from a reply (checked).
pub fn slice(b: &[u8], off: usize, len: usize) -> Result<&[u8], DecodeError> {
    Rd::at(b, off)?.bytes(len)
}

pub fn put_u16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}

pub fn put_u32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

pub fn put_u64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

pub fn set_u16(v: &mut [u8], at: usize, x: u16) {
    v[at..at + 2].copy_from_slice(&x.to_le_bytes());
}

pub fn set_u32(v: &mut [u8], at: usize, x: u32) {
    v[at..at + 4].copy_from_slice(&x.to_le_bytes());
}

pub fn set_u64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

pub fn pad8(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(8) {
        v.push(0);
    }
}

/// UTF-16LE of a string (names, paths, NTLM fields).
pub fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// A UTF-16LE name from a reply; unpaired surrogates become U+FFFD.
pub fn from_utf16(b: &[u8]) -> String {
    let units: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

/// Random bytes from the kernel (client GUID, NTLM client challenge, session key, salt).
pub fn random<const N: usize>() -> [u8; N] {
    let mut a = [0u8; N];
    let mut got = 0;
    while got < N {
        // SAFETY: writing into our own array within its bounds.
        let n = unsafe { libc::getrandom(a[got..].as_mut_ptr().cast(), N - got, 0) };
        if n > 0 {
            got += n as usize;
        }
    }
    a
}
