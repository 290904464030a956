//! SNMPv3's User-based Security Model (RFC 3414, RFC 7860 for SHA-2, RFC 3826 for AES):
//! the keys made from a user's passwords for one agent, the message authentication code,
//! and the encryption of the scoped PDU. The hashing and ciphers are RustCrypto's.

use aes::Aes128;
use cfb_mode::cipher::{AsyncStreamCipher, KeyIvInit};
use hmac::{Hmac, Mac};
use sha2::Digest;

use crate::Error;

/// The shortest password net-snmp accepts (RFC 3414 section 11.2 asks for 8 characters).
pub const MIN_PASSWORD: usize = 8;

/// The authentication protocol: HMAC with one of these hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// usmHMACMD5AuthProtocol: old, still what some NAS firmware offers.
    Md5,
    /// usmHMACSHAAuthProtocol (SHA-1).
    Sha1,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl Auth {
    /// Every protocol, by the names the URL accepts (net-snmp's `-a` names, lower case).
    pub const ALL: [(&'static str, Auth); 7] = [
        ("md5", Auth::Md5),
        ("sha", Auth::Sha1),
        ("sha1", Auth::Sha1),
        ("sha224", Auth::Sha224),
        ("sha256", Auth::Sha256),
        ("sha384", Auth::Sha384),
        ("sha512", Auth::Sha512),
    ];

    pub fn parse(name: &str) -> Option<Auth> {
        let name = name.to_ascii_lowercase().replace('-', "");
        Auth::ALL.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
    }

    pub fn name(self) -> &'static str {
        match self {
            Auth::Md5 => "MD5",
            Auth::Sha1 => "SHA",
            Auth::Sha224 => "SHA-224",
            Auth::Sha256 => "SHA-256",
            Auth::Sha384 => "SHA-384",
            Auth::Sha512 => "SHA-512",
        }
    }

    /// The bytes of the code carried in msgAuthenticationParameters: RFC 3414's 96 bits,
    /// RFC 7860's sizes for SHA-2.
    pub fn mac_len(self) -> usize {
        match self {
            Auth::Md5 | Auth::Sha1 => 12,
            Auth::Sha224 => 16,
            Auth::Sha256 => 24,
            Auth::Sha384 => 32,
            Auth::Sha512 => 48,
        }
    }

    /// The user's key for one agent (RFC 3414 A.2): the password stretched to 1 MiB and
    /// hashed (Ku), then hashed between two copies of itself with the agent's engine ID.
    pub fn localized_key(self, password: &[u8], engine_id: &[u8]) -> Vec<u8> {
        match self {
            Auth::Md5 => localize::<md5::Md5>(password, engine_id),
            Auth::Sha1 => localize::<sha1::Sha1>(password, engine_id),
            Auth::Sha224 => localize::<sha2::Sha224>(password, engine_id),
            Auth::Sha256 => localize::<sha2::Sha256>(password, engine_id),
            Auth::Sha384 => localize::<sha2::Sha384>(password, engine_id),
            Auth::Sha512 => localize::<sha2::Sha512>(password, engine_id),
        }
    }

    /// The code of a whole message (its authentication parameters zeroed), truncated.
    pub fn mac(self, key: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut full = match self {
            Auth::Md5 => hmac::<Hmac<md5::Md5>>(key, msg),
            Auth::Sha1 => hmac::<Hmac<sha1::Sha1>>(key, msg),
            Auth::Sha224 => hmac::<Hmac<sha2::Sha224>>(key, msg),
            Auth::Sha256 => hmac::<Hmac<sha2::Sha256>>(key, msg),
            Auth::Sha384 => hmac::<Hmac<sha2::Sha384>>(key, msg),
            Auth::Sha512 => hmac::<Hmac<sha2::Sha512>>(key, msg),
        };
        full.truncate(self.mac_len());
        full
    }
}

/// RFC 3414 A.2.1/A.2.2: Ku = H(password repeated to 1,048,576 bytes), then
/// Kul = H(Ku || engineID || Ku).
fn localize<D: Digest>(password: &[u8], engine_id: &[u8]) -> Vec<u8> {
    let mut d = D::new();
    let mut chunk = [0u8; 64];
    let mut at = 0usize;
    if !password.is_empty() {
        for _ in 0..(1_048_576 / chunk.len()) {
            for b in &mut chunk {
                *b = password[at % password.len()];
                at += 1;
            }
            d.update(chunk);
        }
    }
    let ku = d.finalize();
    let mut d = D::new();
    d.update(&ku);
    d.update(engine_id);
    d.update(&ku);
    d.finalize().to_vec()
}

fn hmac<M: Mac + hmac::digest::KeyInit>(key: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut m = <M as hmac::digest::KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    m.update(msg);
    m.finalize().into_bytes().to_vec()
}

/// The privacy protocol. Only AES-128 (RFC 3826): DES (RFC 3414) is broken and refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privacy {
    Aes128,
}

impl Privacy {
    pub fn parse(name: &str) -> Option<Privacy> {
        match name.to_ascii_lowercase().as_str() {
            "aes" | "aes128" | "aes-128" => Some(Privacy::Aes128),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        "AES-128"
    }

    /// Encrypts or decrypts `data` in place with the localized privacy key (its first 16
    /// bytes), the agent's boots and time and the message's 8-byte salt (RFC 3826 3.1.2.1:
    /// IV = boots || time || salt, AES in 128-bit CFB mode, no padding).
    pub fn apply(
        self,
        encrypt: bool,
        key: &[u8],
        boots: u32,
        time: u32,
        salt: &[u8],
        data: &mut [u8],
    ) -> Result<(), Error> {
        let (Some(key), Ok(salt)) = (key.get(..16), <[u8; 8]>::try_from(salt)) else {
            return Err(Error::Protocol(format!(
                "privacy parameters of {} bytes, not 8 (AES)",
                salt.len()
            )));
        };
        let mut iv = [0u8; 16];
        iv[..4].copy_from_slice(&boots.to_be_bytes());
        iv[4..8].copy_from_slice(&time.to_be_bytes());
        iv[8..].copy_from_slice(&salt);
        if encrypt {
            cfb_mode::Encryptor::<Aes128>::new(key.into(), &iv.into()).encrypt(data);
        } else {
            cfb_mode::Decryptor::<Aes128>::new(key.into(), &iv.into()).decrypt(data);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// RFC 3414 A.3.1 and A.3.2: password "maplesyrup", engine ID 00…02.
    #[test]
    fn rfc3414_key_localisation_vectors() {
        let engine = hex("000000000000000000000002");
        assert_eq!(
            Auth::Md5.localized_key(b"maplesyrup", &engine),
            hex("52 6f 5e ed 9f cc e2 6f 89 64 c2 93 07 87 d8 2b")
        );
        assert_eq!(
            Auth::Sha1.localized_key(b"maplesyrup", &engine),
            hex("66 95 fe bc 92 88 e3 62 82 23 5f c7 15 1f 12 84 97 b3 8f 3f")
        );
    }

    #[test]
    fn protocol_names_and_code_sizes() {
        assert_eq!(Auth::parse("SHA"), Some(Auth::Sha1));
        assert_eq!(Auth::parse("sha-256"), Some(Auth::Sha256));
        assert_eq!(Auth::parse("sha3"), None);
        assert_eq!(Privacy::parse("AES"), Some(Privacy::Aes128));
        assert_eq!(Privacy::parse("des"), None);
        for (_, a) in Auth::ALL {
            let key = a.localized_key(b"maplesyrup", b"e");
            assert_eq!(a.mac(&key, b"message").len(), a.mac_len(), "{a:?}");
            assert_ne!(a.mac(&key, b"message"), a.mac(&key, b"messagf"), "{a:?}");
        }
    }

    /// AES-CFB keeps the length (no padding), decrypts back, and depends on the IV.
    #[test]
    fn aes_cfb_round_trips_any_length() {
        let key = Auth::Sha1.localized_key(b"maplesyrup", b"engine");
        for len in [0, 1, 15, 16, 17, 100] {
            let plain: Vec<u8> = (0..len as u8).collect();
            let mut data = plain.clone();
            let p = Privacy::Aes128;
            p.apply(true, &key, 1, 2, &[9; 8], &mut data).unwrap();
            assert_eq!(data.len(), len);
            if len > 0 {
                assert_ne!(data, plain);
            }
            let mut other = data.clone();
            p.apply(false, &key, 1, 3, &[9; 8], &mut other).unwrap();
            if len > 0 {
                assert_ne!(other, plain, "another time, another IV");
            }
            p.apply(false, &key, 1, 2, &[9; 8], &mut data).unwrap();
            assert_eq!(data, plain);
        }
        let e = Privacy::Aes128
            .apply(false, &key, 1, 2, &[9; 7], &mut [0; 4])
            .unwrap_err();
        assert!(e.to_string().contains("7 bytes"), "{e}");
    }
}
