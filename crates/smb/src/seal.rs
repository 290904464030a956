//! SMB 3 encryption ([MS-SMB2] 2.2.41, 3.1.4.3): a TRANSFORM_HEADER in front of the whole
//! message, sealed with AES-128/256-CCM or -GCM; the 32 bytes of the transform header
//! from the nonce on are the additional data, the tag is its signature.

use std::ops::Range;

use aes::{Aes128, Aes256};
use aes_gcm::aead::consts::{U11, U16};
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use ccm::Ccm;

use crate::error::DecodeError;
use crate::header::TRANSFORM_ID;
use crate::proto::{CIPHER_AES128_CCM, CIPHER_AES128_GCM, CIPHER_AES256_CCM, CIPHER_AES256_GCM};
use crate::wire::Rd;

pub const TRANSFORM_LEN: usize = 52;

enum Aead {
    Ccm128(Box<Ccm<Aes128, U16, U11>>),
    Ccm256(Box<Ccm<Aes256, U16, U11>>),
    Gcm128(Box<Aes128Gcm>),
    Gcm256(Box<Aes256Gcm>),
}

impl Aead {
    fn new(cipher: u16, key: &[u8]) -> Option<Aead> {
        Some(match cipher {
            CIPHER_AES128_CCM => Aead::Ccm128(Box::new(Ccm::new_from_slice(key).ok()?)),
            CIPHER_AES256_CCM => Aead::Ccm256(Box::new(Ccm::new_from_slice(key).ok()?)),
            CIPHER_AES128_GCM => Aead::Gcm128(Box::new(Aes128Gcm::new_from_slice(key).ok()?)),
            CIPHER_AES256_GCM => Aead::Gcm256(Box::new(Aes256Gcm::new_from_slice(key).ok()?)),
            _ => return None,
        })
    }

    fn nonce_len(&self) -> usize {
        match self {
            Aead::Ccm128(_) | Aead::Ccm256(_) => 11,
            _ => 12,
        }
    }

    fn seal(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
        let tag = match self {
            Aead::Ccm128(c) => c.encrypt_in_place_detached(nonce.into(), aad, buf),
            Aead::Ccm256(c) => c.encrypt_in_place_detached(nonce.into(), aad, buf),
            Aead::Gcm128(c) => c.encrypt_in_place_detached(nonce.into(), aad, buf),
            Aead::Gcm256(c) => c.encrypt_in_place_detached(nonce.into(), aad, buf),
        }
        .expect("message within the cipher's length limit");
        tag.into()
    }

    fn open(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        match self {
            Aead::Ccm128(c) => c.decrypt_in_place_detached(nonce.into(), aad, buf, tag.into()),
            Aead::Ccm256(c) => c.decrypt_in_place_detached(nonce.into(), aad, buf, tag.into()),
            Aead::Gcm128(c) => c.decrypt_in_place_detached(nonce.into(), aad, buf, tag.into()),
            Aead::Gcm256(c) => c.decrypt_in_place_detached(nonce.into(), aad, buf, tag.into()),
        }
        .is_ok()
    }
}

/// The cipher's name, for results.
pub fn cipher_name(cipher: u16) -> &'static str {
    match cipher {
        CIPHER_AES128_CCM => "AES-128-CCM",
        CIPHER_AES128_GCM => "AES-128-GCM",
        CIPHER_AES256_CCM => "AES-256-CCM",
        CIPHER_AES256_GCM => "AES-256-GCM",
        _ => "none",
    }
}

/// A session's encryption and decryption keys. No `Debug`: nothing here may be printed.
pub struct Sealer {
    pub cipher: u16,
    enc: Aead,
    dec: Aead,
    /// Nonces: a random prefix and a counter, never repeated within a session.
    prefix: [u8; 4],
    counter: u64,
}

impl Sealer {
    pub fn new(cipher: u16, encrypt_key: &[u8], decrypt_key: &[u8]) -> Option<Sealer> {
        Some(Sealer {
            cipher,
            enc: Aead::new(cipher, encrypt_key)?,
            dec: Aead::new(cipher, decrypt_key)?,
            prefix: crate::wire::random(),
            counter: 0,
        })
    }

    /// Appends the sealed form of `msg ‖ payload` (a whole SMB2 message) to `out`.
    pub fn seal(&mut self, session_id: u64, msg: &[u8], payload: &[u8], out: &mut Vec<u8>) {
        self.counter += 1;
        let mut nonce = [0u8; 16];
        let nl = self.enc.nonce_len();
        nonce[..8].copy_from_slice(&self.counter.to_le_bytes());
        nonce[8..nl].copy_from_slice(&self.prefix[..nl - 8]);
        let start = out.len();
        out.extend_from_slice(&TRANSFORM_ID);
        out.extend_from_slice(&[0; 16]);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&((msg.len() + payload.len()) as u32).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes()); // Flags: encrypted
        out.extend_from_slice(&session_id.to_le_bytes());
        out.extend_from_slice(msg);
        out.extend_from_slice(payload);
        let (th, body) = out[start..].split_at_mut(TRANSFORM_LEN);
        let tag = self.enc.seal(&nonce[..nl], &th[20..TRANSFORM_LEN], body);
        th[4..20].copy_from_slice(&tag);
    }

    /// Decrypts a sealed message in place; returns where the plain message lies.
    pub fn open(&self, msg: &mut [u8]) -> Result<Range<usize>, DecodeError> {
        let mut r = Rd::new(msg);
        if r.array::<4>()? != TRANSFORM_ID {
            return Err(DecodeError::Invalid("not a TRANSFORM_HEADER"));
        }
        let tag: [u8; 16] = r.array()?;
        r.skip(16)?;
        let size = r.u32()? as usize;
        r.skip(12)?;
        if size != msg.len() - TRANSFORM_LEN {
            return Err(DecodeError::BadValue {
                what: "OriginalMessageSize",
                value: size as u64,
            });
        }
        let nl = self.dec.nonce_len();
        let (th, body) = msg.split_at_mut(TRANSFORM_LEN);
        let nonce = &th[20..20 + nl];
        if !self.dec.open(nonce, &th[20..TRANSFORM_LEN], body, &tag) {
            return Err(DecodeError::Invalid("encrypted reply fails authentication"));
        }
        Ok(TRANSFORM_LEN..TRANSFORM_LEN + size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_messages_open_with_the_peer_keys_and_tampering_is_caught() {
        for (cipher, klen) in [
            (CIPHER_AES128_CCM, 16),
            (CIPHER_AES128_GCM, 16),
            (CIPHER_AES256_CCM, 32),
            (CIPHER_AES256_GCM, 32),
        ] {
            let (a, b) = (vec![1u8; klen], vec![2u8; klen]);
            let mut client = Sealer::new(cipher, &a, &b).unwrap();
            let server = Sealer::new(cipher, &b, &a).unwrap();
            let mut out = Vec::new();
            client.seal(7, b"\xfeSMB-header-and-body", b"payload", &mut out);
            assert_eq!(&out[44..52], &7u64.to_le_bytes());
            assert!(
                !out.windows(7).any(|w| w == b"payload"),
                "{cipher}: plain text sent"
            );
            let mut copy = out.clone();
            let r = server.open(&mut copy).unwrap();
            assert_eq!(&copy[r], b"\xfeSMB-header-and-bodypayload");
            let mut bad = out.clone();
            bad[60] ^= 1;
            assert!(server.open(&mut bad).is_err(), "{cipher}");
            let mut short = out.clone();
            short.truncate(40);
            assert!(server.open(&mut short).is_err());
        }
    }

    #[test]
    fn ccm_matches_an_independent_implementation() {
        // Python `cryptography`: AESCCM(key=bytes(16), tag_length=16).encrypt(
        //   nonce=bytes(range(11)), data=b"hello", associated_data=b"aad")
        let aead = Aead::new(CIPHER_AES128_CCM, &[0; 16]).unwrap();
        let nonce: Vec<u8> = (0..11).collect();
        let mut buf = *b"hello";
        let tag = aead.seal(&nonce, b"aad", &mut buf);
        let mut got = buf.to_vec();
        got.extend_from_slice(&tag);
        assert_eq!(hex(&got), CCM_EXPECTED);
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    const CCM_EXPECTED: &str = "26c09d336f1a967253220f5d49f122b035071d260b";
}
