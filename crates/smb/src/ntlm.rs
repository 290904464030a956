//! NTLMSSP with NTLMv2 responses ([MS-NLMP]): the three messages of an SMB session set-up,
//! and the session key that signing and encryption keys are derived from.
//!
//! Only NTLMv2 is spoken (LM and NTLMv1 are refused by current servers, and Samba's default
//! `ntlm auth = ntlmv2-only`). The client offers key exchange, so the exported session key
//! is a fresh random one sent RC4-sealed under the key-exchange key, as Windows does.
//! Passwords live in [`Credentials`], whose `Debug` shows no secret.

use std::fmt;

use hmac::{Hmac, Mac};
use md4::{Digest, Md4};
use md5::Md5;

use crate::error::DecodeError;
use crate::wire::{Rd, put_u16, put_u32, slice, utf16};

const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";

pub const NEGOTIATE_UNICODE: u32 = 0x0000_0001;
pub const REQUEST_TARGET: u32 = 0x0000_0004;
pub const NEGOTIATE_SIGN: u32 = 0x0000_0010;
pub const NEGOTIATE_SEAL: u32 = 0x0000_0020;
pub const NEGOTIATE_NTLM: u32 = 0x0000_0200;
pub const NEGOTIATE_ANONYMOUS: u32 = 0x0000_0800;
pub const NEGOTIATE_ALWAYS_SIGN: u32 = 0x0000_8000;
pub const NEGOTIATE_EXTENDED_SESSIONSECURITY: u32 = 0x0008_0000;
pub const NEGOTIATE_TARGET_INFO: u32 = 0x0080_0000;
pub const NEGOTIATE_VERSION: u32 = 0x0200_0000;
pub const NEGOTIATE_128: u32 = 0x2000_0000;
pub const NEGOTIATE_KEY_EXCH: u32 = 0x4000_0000;
pub const NEGOTIATE_56: u32 = 0x8000_0000;

const AV_EOL: u16 = 0;
const AV_TIMESTAMP: u16 = 7;

/// Who logs in. An empty user is an anonymous login; `Debug` never shows the password.
#[derive(Clone, Default)]
pub struct Credentials {
    pub user: String,
    pub domain: String,
    pub password: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("domain", &self.domain)
            .field("password", &"<hidden>")
            .finish()
    }
}

impl Credentials {
    pub fn anonymous(&self) -> bool {
        self.user.is_empty()
    }
}

/// The flags the client asks for.
pub fn client_flags(anonymous: bool) -> u32 {
    let mut f = NEGOTIATE_UNICODE
        | REQUEST_TARGET
        | NEGOTIATE_SIGN
        | NEGOTIATE_SEAL
        | NEGOTIATE_NTLM
        | NEGOTIATE_ALWAYS_SIGN
        | NEGOTIATE_EXTENDED_SESSIONSECURITY
        | NEGOTIATE_TARGET_INFO
        | NEGOTIATE_128
        | NEGOTIATE_KEY_EXCH
        | NEGOTIATE_56;
    if anonymous {
        // No password, no session key to exchange: Samba refuses a key-exchange field
        // without one.
        f = (f | NEGOTIATE_ANONYMOUS) & !NEGOTIATE_KEY_EXCH;
    }
    f
}

/// NEGOTIATE_MESSAGE (type 1): no domain or workstation supplied.
pub fn negotiate_message(flags: u32) -> Vec<u8> {
    let mut m = Vec::with_capacity(32);
    m.extend_from_slice(SIGNATURE);
    put_u32(&mut m, 1);
    put_u32(&mut m, flags);
    m.extend_from_slice(&[0u8; 16]);
    m
}

/// What the server's CHALLENGE_MESSAGE (type 2) says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub flags: u32,
    pub server_challenge: [u8; 8],
    pub target_info: Vec<u8>,
    /// MsvAvTimestamp from the target info, if the server sent one.
    pub timestamp: Option<u64>,
}

/// Finds and decodes a CHALLENGE_MESSAGE in a security blob (bare or inside SPNEGO).
pub fn parse_challenge(blob: &[u8]) -> Result<Challenge, DecodeError> {
    let start = blob
        .windows(SIGNATURE.len())
        .position(|w| w == SIGNATURE)
        .ok_or(DecodeError::Invalid(
            "no NTLMSSP message in the security blob",
        ))?;
    let m = &blob[start..];
    let mut r = Rd::at(m, 8)?;
    let kind = r.u32()?;
    if kind != 2 {
        return Err(DecodeError::BadValue {
            what: "NTLMSSP message type",
            value: kind.into(),
        });
    }
    r.skip(8)?; // target name
    let flags = r.u32()?;
    let server_challenge = r.array::<8>()?;
    r.skip(8)?;
    let ti_len = r.u16()? as usize;
    r.u16()?;
    let ti_off = r.u32()? as usize;
    let target_info = if flags & NEGOTIATE_TARGET_INFO != 0 {
        slice(m, ti_off, ti_len)?.to_vec()
    } else {
        Vec::new()
    };
    let timestamp = av_timestamp(&target_info)?;
    Ok(Challenge {
        flags,
        server_challenge,
        target_info,
        timestamp,
    })
}

/// Walks AV_PAIRs up to MsvAvEOL and returns MsvAvTimestamp's value.
fn av_timestamp(ti: &[u8]) -> Result<Option<u64>, DecodeError> {
    let mut r = Rd::new(ti);
    let mut ts = None;
    while r.pos() < ti.len() {
        let id = r.u16()?;
        let len = r.u16()? as usize;
        let v = r.bytes(len)?;
        match id {
            AV_EOL => break,
            AV_TIMESTAMP if len == 8 => ts = Some(Rd::new(v).u64()?),
            _ => {}
        }
    }
    Ok(ts)
}

type HmacMd5 = Hmac<Md5>;

fn hmac_md5(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut m = <HmacMd5 as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// NTOWFv2: HMAC-MD5 of the upper-cased user and the domain under MD4(password).
pub fn ntowf_v2(c: &Credentials) -> [u8; 16] {
    let nt_hash: [u8; 16] = Md4::digest(utf16(&c.password)).into();
    let who = utf16(&(c.user.to_uppercase() + &c.domain));
    hmac_md5(&nt_hash, &[&who])
}

/// The responses and keys of an NTLMv2 authentication.
pub struct V2 {
    pub nt_response: Vec<u8>,
    pub lm_response: Vec<u8>,
    pub session_base_key: [u8; 16],
}

/// NTLMv2 responses ([MS-NLMP] 3.3.2) for a challenge, at `time` (FILETIME) with
/// `client_challenge`. The LM response is zeros when the server sent a timestamp.
pub fn v2_response(c: &Credentials, ch: &Challenge, time: u64, client_challenge: [u8; 8]) -> V2 {
    let key = ntowf_v2(c);
    let mut temp = Vec::with_capacity(32 + ch.target_info.len());
    temp.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 0]);
    temp.extend_from_slice(&time.to_le_bytes());
    temp.extend_from_slice(&client_challenge);
    temp.extend_from_slice(&[0; 4]);
    temp.extend_from_slice(&ch.target_info);
    temp.extend_from_slice(&[0; 4]);
    let proof = hmac_md5(&key, &[&ch.server_challenge, &temp]);
    let mut nt_response = proof.to_vec();
    nt_response.extend_from_slice(&temp);
    let lm_response = if ch.timestamp.is_some() {
        vec![0u8; 24]
    } else {
        let mut lm = hmac_md5(&key, &[&ch.server_challenge, &client_challenge]).to_vec();
        lm.extend_from_slice(&client_challenge);
        lm
    };
    V2 {
        nt_response,
        lm_response,
        session_base_key: hmac_md5(&key, &[&proof]),
    }
}

/// RC4, used once per login to seal the exported session key (key exchange).
pub fn rc4(key: &[u8], data: &mut [u8]) {
    let mut s: [u8; 256] = std::array::from_fn(|i| i as u8);
    let mut j = 0u8;
    for i in 0..256 {
        j = j.wrapping_add(s[i]).wrapping_add(key[i % key.len()]);
        s.swap(i, j as usize);
    }
    let (mut i, mut j) = (0u8, 0u8);
    for b in data {
        i = i.wrapping_add(1);
        j = j.wrapping_add(s[i as usize]);
        s.swap(i as usize, j as usize);
        *b ^= s[(s[i as usize].wrapping_add(s[j as usize])) as usize];
    }
}

/// An AUTHENTICATE_MESSAGE (type 3) and the exported session key it establishes.
pub struct Authenticate {
    pub message: Vec<u8>,
    pub session_key: [u8; 16],
}

/// Builds the AUTHENTICATE_MESSAGE. `random_key` is the exported session key to seal when
/// the server agreed to key exchange; anonymous logins send empty responses and no key.
pub fn authenticate(
    c: &Credentials,
    ch: &Challenge,
    time: u64,
    client_challenge: [u8; 8],
    random_key: [u8; 16],
) -> Authenticate {
    let flags = client_flags(c.anonymous()) & ch.flags;
    let (nt, lm, mut session_key, enc_key) = if c.anonymous() {
        (Vec::new(), vec![0u8], [0u8; 16], Vec::new())
    } else {
        let v2 = v2_response(c, ch, ch.timestamp.unwrap_or(time), client_challenge);
        if flags & NEGOTIATE_KEY_EXCH != 0 {
            let mut sealed = random_key;
            rc4(&v2.session_base_key, &mut sealed);
            (v2.nt_response, v2.lm_response, random_key, sealed.to_vec())
        } else {
            (
                v2.nt_response,
                v2.lm_response,
                v2.session_base_key,
                Vec::new(),
            )
        }
    };
    if c.anonymous() {
        session_key = [0u8; 16];
    }
    let domain = utf16(&c.domain);
    let user = utf16(&c.user);
    let fields: [&[u8]; 6] = [&lm, &nt, &domain, &user, &[], &enc_key];
    let mut m = Vec::with_capacity(88 + fields.iter().map(|f| f.len()).sum::<usize>());
    m.extend_from_slice(SIGNATURE);
    put_u32(&mut m, 3);
    let mut off = 64u32; // header: 8 + 4 + 6 fields * 8 + flags 4
    for f in fields {
        put_u16(&mut m, f.len() as u16);
        put_u16(&mut m, f.len() as u16);
        put_u32(&mut m, off);
        off += f.len() as u32;
    }
    put_u32(&mut m, flags);
    for f in fields {
        m.extend_from_slice(f);
    }
    Authenticate {
        message: m,
        session_key,
    }
}

/// Now as a Windows FILETIME (100 ns since 1601).
pub fn filetime_now() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs() + 11_644_473_600) * 10_000_000 + u64::from(d.subsec_nanos() / 100)
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

    /// [MS-NLMP] 4.2.1 and 4.2.4: User / Domain / Password, server "Server".
    fn vector() -> (Credentials, Challenge) {
        let c = Credentials {
            user: "User".into(),
            domain: "Domain".into(),
            password: "Password".into(),
        };
        let ti = hex("02 00 0c 00 44 00 6f 00 6d 00 61 00 69 00 6e 00
             01 00 0c 00 53 00 65 00 72 00 76 00 65 00 72 00 00 00 00 00");
        let ch = Challenge {
            flags: 0xe28a_8233,
            server_challenge: [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef],
            target_info: ti,
            timestamp: None,
        };
        (c, ch)
    }

    #[test]
    fn ntowf_v2_matches_ms_nlmp() {
        let (c, _) = vector();
        assert_eq!(
            ntowf_v2(&c).to_vec(),
            hex("0c 86 8a 40 3b fd 7a 93 a3 00 1e f2 2e f0 2e 3f")
        );
    }

    #[test]
    fn v2_responses_and_session_key_match_ms_nlmp() {
        let (c, ch) = vector();
        let v2 = v2_response(&c, &ch, 0, [0xaa; 8]);
        assert_eq!(
            v2.nt_response[..16].to_vec(),
            hex("68 cd 0a b8 51 e5 1c 96 aa bc 92 7b eb ef 6a 1c")
        );
        assert_eq!(
            v2.lm_response,
            hex("86 c3 50 97 ac 9c ec 10 25 54 76 4a 57 cc cc 19 aa aa aa aa aa aa aa aa")
        );
        assert_eq!(
            v2.session_base_key.to_vec(),
            hex("8d e4 0c ca db c1 4a 82 f1 5c b0 ad 0d e9 5c a3")
        );
    }

    #[test]
    fn key_exchange_seals_the_random_key_as_ms_nlmp_shows() {
        let (c, ch) = vector();
        let a = authenticate(&c, &ch, 0, [0xaa; 8], [0x55; 16]);
        assert_eq!(a.session_key, [0x55; 16]);
        let want = hex("c5 da d2 54 4f c9 79 90 94 ce 1c e9 0b c9 d0 3e");
        assert!(
            a.message.windows(16).any(|w| w == want.as_slice()),
            "sealed key not in the message"
        );
    }

    #[test]
    fn rc4_matches_the_classic_vector() {
        let mut d = *b"Plaintext";
        rc4(b"Key", &mut d);
        assert_eq!(d.to_vec(), hex("bb f3 16 e8 d9 40 af 0a d3"));
    }

    #[test]
    fn challenge_is_found_inside_spnego_and_bounds_are_checked() {
        let mut m = Vec::new();
        m.extend_from_slice(SIGNATURE);
        put_u32(&mut m, 2);
        m.extend_from_slice(&[0; 8]);
        put_u32(&mut m, NEGOTIATE_TARGET_INFO);
        m.extend_from_slice(&[7; 8]);
        m.extend_from_slice(&[0; 8]);
        put_u16(&mut m, 12);
        put_u16(&mut m, 12);
        put_u32(&mut m, 48);
        let ti = [7u8, 0, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&ti);
        let mut wrapped = vec![0xa1, 0x30, 0x00];
        wrapped.extend_from_slice(&m);
        let ch = parse_challenge(&wrapped).unwrap();
        assert_eq!(ch.server_challenge, [7; 8]);
        assert_eq!(ch.timestamp, Some(1));
        m.truncate(50);
        assert!(parse_challenge(&m).is_err());
    }

    #[test]
    fn credentials_debug_hides_the_password() {
        let c = Credentials {
            user: "u".into(),
            domain: String::new(),
            password: "hunter2".into(),
        };
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
