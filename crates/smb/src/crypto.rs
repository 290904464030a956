//! Keys and signatures ([MS-SMB2] 3.1.4): the SP800-108 key derivation, the 3.1.1
//! pre-authentication integrity hash, and message signing with HMAC-SHA256 (2.0.2, 2.1),
//! AES-128-CMAC (3.0, 3.0.2, 3.1.1) or AES-128-GMAC (3.1.1 when negotiated).
//!
//! A [`Signer`] works incrementally over the pieces of a message (header, body, payload),
//! so a READ's data is checked where it landed and a WRITE's where it lies: no copy.

use aes::Aes128;
use aes::cipher::{BlockEncrypt, KeyInit};
use cmac::Cmac;
use ghash::GHash;
use ghash::universal_hash::UniversalHash;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

type HmacSha256 = Hmac<Sha256>;

/// The dialects, as on the wire.
pub const SMB202: u16 = 0x0202;
pub const SMB210: u16 = 0x0210;
pub const SMB300: u16 = 0x0300;
pub const SMB302: u16 = 0x0302;
pub const SMB311: u16 = 0x0311;

/// Signing algorithm ids of the 3.1.1 SIGNING_CAPABILITIES context.
pub const SIGN_HMAC_SHA256: u16 = 0;
pub const SIGN_AES_CMAC: u16 = 1;
pub const SIGN_AES_GMAC: u16 = 2;

/// SP800-108 counter-mode KDF with HMAC-SHA256, one block (`bits` ≤ 256), as SMB 3 uses it:
/// HMAC(Ki, 1 ‖ label ‖ 0 ‖ context ‖ L).
pub fn kdf(ki: &[u8], label: &[u8], context: &[u8], bits: u32) -> Vec<u8> {
    let mut m = <HmacSha256 as Mac>::new_from_slice(ki).expect("HMAC takes any key length");
    m.update(&1u32.to_be_bytes());
    m.update(label);
    m.update(&[0]);
    m.update(context);
    m.update(&bits.to_be_bytes());
    let out = m.finalize().into_bytes();
    out[..(bits / 8) as usize].to_vec()
}

/// The running SHA-512 pre-authentication integrity hash of SMB 3.1.1.
#[derive(Clone)]
pub struct Preauth(pub [u8; 64]);

impl Default for Preauth {
    fn default() -> Self {
        Preauth([0; 64])
    }
}

impl Preauth {
    /// H = SHA-512(H ‖ message), for each NEGOTIATE and SESSION_SETUP message.
    pub fn update(&mut self, message: &[u8]) {
        let mut h = Sha512::new();
        h.update(self.0);
        h.update(message);
        self.0.copy_from_slice(&h.finalize());
    }
}

/// The session keys of a dialect.
pub struct Keys {
    pub signing: [u8; 16],
    /// Client to server and server to client encryption keys (16 or 32 bytes), 3.x only.
    pub encrypt: Vec<u8>,
    pub decrypt: Vec<u8>,
}

/// Derives the signing and encryption keys from the session key ([MS-SMB2] 3.2.5.3.1).
/// `cipher_bits` is 128 or 256 (the key length of the negotiated cipher).
pub fn derive_keys(
    dialect: u16,
    session_key: &[u8; 16],
    preauth: &Preauth,
    cipher_bits: u32,
) -> Keys {
    match dialect {
        SMB202 | SMB210 => Keys {
            signing: *session_key,
            encrypt: Vec::new(),
            decrypt: Vec::new(),
        },
        SMB311 => Keys {
            signing: to16(&kdf(session_key, b"SMBSigningKey\0", &preauth.0, 128)),
            encrypt: kdf(session_key, b"SMBC2SCipherKey\0", &preauth.0, cipher_bits),
            decrypt: kdf(session_key, b"SMBS2CCipherKey\0", &preauth.0, cipher_bits),
        },
        _ => Keys {
            signing: to16(&kdf(session_key, b"SMB2AESCMAC\0", b"SmbSign\0", 128)),
            encrypt: kdf(session_key, b"SMB2AESCCM\0", b"ServerIn \0", 128),
            decrypt: kdf(session_key, b"SMB2AESCCM\0", b"ServerOut\0", 128),
        },
    }
}

fn to16(v: &[u8]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a.copy_from_slice(&v[..16]);
    a
}

/// Which MAC signs messages of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignAlg {
    HmacSha256,
    AesCmac,
    AesGmac,
}

impl SignAlg {
    pub fn name(self) -> &'static str {
        match self {
            SignAlg::HmacSha256 => "HMAC-SHA256",
            SignAlg::AesCmac => "AES-128-CMAC",
            SignAlg::AesGmac => "AES-128-GMAC",
        }
    }
}

/// A signing key with its algorithm. `Debug` shows the algorithm only.
#[derive(Clone)]
pub struct Signer {
    pub alg: SignAlg,
    key: [u8; 16],
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({})", self.alg.name())
    }
}

/// One signature being computed over a message's pieces, in order. The header piece must
/// have its signature field zeroed (see [`crate::header::zero_signature`]). Lives on the
/// stack: signing a message allocates nothing (hence no boxing of the larger variants).
#[allow(clippy::large_enum_variant)]
pub enum Mac16 {
    Hmac(HmacSha256),
    Cmac(Cmac<Aes128>),
    Gmac(Gmac),
}

/// AES-GMAC (GCM with the message as additional data and nothing encrypted), streamed:
/// GHASH over the pieces with a partial block carried between them.
pub struct Gmac {
    ghash: GHash,
    j0_enc: [u8; 16],
    partial: [u8; 16],
    filled: usize,
    total: u64,
}

impl Gmac {
    fn new(key: &[u8; 16], nonce: [u8; 12]) -> Gmac {
        let cipher = Aes128::new(key.into());
        let mut h = [0u8; 16];
        cipher.encrypt_block((&mut h).into());
        let mut j0 = [0u8; 16];
        j0[..12].copy_from_slice(&nonce);
        j0[15] = 1;
        cipher.encrypt_block((&mut j0).into());
        Gmac {
            ghash: <GHash as ghash::universal_hash::KeyInit>::new(&h.into()),
            j0_enc: j0,
            partial: [0; 16],
            filled: 0,
            total: 0,
        }
    }

    fn update(&mut self, mut piece: &[u8]) {
        self.total += piece.len() as u64;
        if self.filled > 0 {
            let n = (16 - self.filled).min(piece.len());
            self.partial[self.filled..self.filled + n].copy_from_slice(&piece[..n]);
            self.filled += n;
            piece = &piece[n..];
            if self.filled < 16 {
                return;
            }
            self.ghash.update(&[self.partial.into()]);
            self.filled = 0;
        }
        let whole = piece.len() / 16 * 16;
        // All whole blocks in one call: a whole-block slice gets no padding, and one call
        // per block would pay the hash's set-up (and its CPU feature check) per 16 bytes.
        self.ghash.update_padded(&piece[..whole]);
        let rest = &piece[whole..];
        self.partial[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn finish(mut self) -> [u8; 16] {
        if self.filled > 0 {
            self.partial[self.filled..].fill(0);
            self.ghash.update(&[self.partial.into()]);
        }
        let mut lens = [0u8; 16];
        lens[..8].copy_from_slice(&(self.total * 8).to_be_bytes());
        self.ghash.update(&[lens.into()]);
        let mut tag: [u8; 16] = self.ghash.finalize().into();
        for (t, e) in tag.iter_mut().zip(self.j0_enc) {
            *t ^= e;
        }
        tag
    }
}

impl Signer {
    pub fn new(alg: SignAlg, key: [u8; 16]) -> Signer {
        Signer { alg, key }
    }

    /// Starts a signature of the message with this id (GMAC's nonce); `response` and
    /// `cancel` are the nonce's role bits.
    pub fn start(&self, message_id: u64, response: bool, cancel: bool) -> Mac16 {
        match self.alg {
            SignAlg::HmacSha256 => {
                Mac16::Hmac(<HmacSha256 as Mac>::new_from_slice(&self.key).expect("any key length"))
            }
            SignAlg::AesCmac => {
                Mac16::Cmac(<Cmac<Aes128> as Mac>::new_from_slice(&self.key).expect("16-byte key"))
            }
            SignAlg::AesGmac => {
                let mut nonce = [0u8; 12];
                nonce[..8].copy_from_slice(&message_id.to_le_bytes());
                nonce[8] = u8::from(response) | (u8::from(cancel) << 1);
                Mac16::Gmac(Gmac::new(&self.key, nonce))
            }
        }
    }

    /// The signature of a message held in one piece (signature field zeroed).
    pub fn sign(&self, message_id: u64, response: bool, msg: &[u8]) -> [u8; 16] {
        let mut m = self.start(message_id, response, false);
        m.update(msg);
        m.finish()
    }
}

impl Mac16 {
    pub fn update(&mut self, piece: &[u8]) {
        match self {
            Mac16::Hmac(m) => m.update(piece),
            Mac16::Cmac(m) => m.update(piece),
            Mac16::Gmac(g) => g.update(piece),
        }
    }

    pub fn finish(self) -> [u8; 16] {
        match self {
            Mac16::Hmac(m) => to16(&m.finalize().into_bytes()),
            Mac16::Cmac(m) => to16(&m.finalize().into_bytes()),
            Mac16::Gmac(g) => g.finish(),
        }
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

    #[test]
    fn kdf_matches_an_independent_sp800_108_computation() {
        // Python: hmac.new(bytes(range(16)), b"\0\0\0\1" + b"SMB2AESCMAC\0" + b"\0"
        //          + b"SmbSign\0" + b"\0\0\0\x80", sha256).hexdigest()[:32]
        let ki: Vec<u8> = (0..16).collect();
        let got = kdf(&ki, b"SMB2AESCMAC\0", b"SmbSign\0", 128);
        assert_eq!(got, hex(KDF_EXPECTED));
    }

    #[test]
    fn aes_cmac_matches_rfc4493() {
        let key: [u8; 16] = hex("2b7e1516 28aed2a6 abf71588 09cf4f3c")
            .try_into()
            .unwrap();
        let s = Signer::new(SignAlg::AesCmac, key);
        let msg = hex("6bc1bee2 2e409f96 e93d7e11 7393172a");
        assert_eq!(
            s.sign(0, false, &msg).to_vec(),
            hex("070a16b4 6b4d4144 f79bdd9d d04a287c")
        );
    }

    #[test]
    fn signatures_over_pieces_equal_one_piece_and_differ_by_algorithm() {
        let msg: Vec<u8> = (0..200u8).collect();
        for alg in [SignAlg::HmacSha256, SignAlg::AesCmac, SignAlg::AesGmac] {
            let s = Signer::new(alg, [9; 16]);
            let mut m = s.start(5, false, false);
            m.update(&msg[..7]);
            m.update(&msg[7..9]);
            m.update(&msg[9..64]);
            m.update(&msg[64..]);
            assert_eq!(m.finish(), s.sign(5, false, &msg), "{alg:?}");
        }
        let a = Signer::new(SignAlg::HmacSha256, [9; 16]).sign(5, false, &msg);
        let b = Signer::new(SignAlg::AesCmac, [9; 16]).sign(5, false, &msg);
        let c = Signer::new(SignAlg::AesGmac, [9; 16]).sign(5, false, &msg);
        let d = Signer::new(SignAlg::AesGmac, [9; 16]).sign(5, true, &msg);
        assert!(a != b && b != c && c != d);
    }

    #[test]
    fn signatures_match_independent_values() {
        let msg: Vec<u8> = (0..100u8).collect();
        let h = Signer::new(SignAlg::HmacSha256, [7; 16]).sign(0, false, &msg);
        assert_eq!(h.to_vec(), hex(HMAC_EXPECTED));
        let g = Signer::new(SignAlg::AesGmac, [7; 16]).sign(0x1234, true, &msg);
        assert_eq!(g.to_vec(), hex(GMAC_EXPECTED));
    }

    /// A large message signed in pieces that cut blocks (and the hash's groups of blocks)
    /// anywhere gives the tag AES-GCM gives with the whole message as additional data and
    /// nothing encrypted: the definition of GMAC, from an independent implementation.
    #[test]
    fn gmac_over_uneven_pieces_of_a_large_message_equals_aes_gcm() {
        use aes_gcm::aead::{AeadInPlace, KeyInit as _};
        let msg: Vec<u8> = (0..70_001u32).map(|i| (i * 31 % 251) as u8).collect();
        let key = [0x5a; 16];
        let s = Signer::new(SignAlg::AesGmac, key);
        for cuts in [
            &[80usize, 96, 65_616][..],
            &[1, 17, 50, 113, 4_097],
            &[64_000],
        ] {
            let mut m = s.start(0x0102_0304_0506, true, false);
            let mut at = 0;
            for &c in cuts {
                m.update(&msg[at..c]);
                at = c;
            }
            m.update(&msg[at..]);
            let mut nonce = [0u8; 12];
            nonce[..8].copy_from_slice(&0x0102_0304_0506u64.to_le_bytes());
            nonce[8] = 1;
            let gcm = aes_gcm::Aes128Gcm::new(&key.into());
            let tag = gcm
                .encrypt_in_place_detached(&nonce.into(), &msg, &mut [])
                .unwrap();
            assert_eq!(m.finish().to_vec(), tag.to_vec(), "{cuts:?}");
        }
    }

    #[test]
    fn preauth_chains_sha512() {
        let mut p = Preauth::default();
        p.update(b"abc");
        assert_eq!(p.0[..8].to_vec(), hex(PREAUTH_EXPECTED));
    }

    // Computed with Python's hmac/hashlib and the `cryptography` package (AESGCM), not
    // with this code.
    const KDF_EXPECTED: &str = "6234814cbb8ea9227440ebfeb5eacbe1";
    const HMAC_EXPECTED: &str = "9e76d2db672e8a6c6bcbd0abf5b294bb";
    const GMAC_EXPECTED: &str = "302a0b964bac176b217e47539a91d331";
    const PREAUTH_EXPECTED: &str = "7682b6b84c6f6925";
}
