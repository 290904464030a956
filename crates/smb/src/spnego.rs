//! The two SPNEGO (RFC 4178) wrappers an NTLM-only client needs: NegTokenInit carrying the
//! NTLMSSP NEGOTIATE message, and NegTokenResp carrying AUTHENTICATE. The server's replies
//! are not parsed as DER: the NTLMSSP message inside is found by its signature
//! ([`crate::ntlm::parse_challenge`]).

const SPNEGO_OID: [u8; 6] = [0x2b, 0x06, 0x01, 0x05, 0x05, 0x02];
const NTLMSSP_OID: [u8; 10] = [0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a];

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(content.len() + 4);
    v.push(tag);
    let n = content.len();
    if n < 0x80 {
        v.push(n as u8);
    } else if n < 0x100 {
        v.extend_from_slice(&[0x81, n as u8]);
    } else {
        v.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
    }
    v.extend_from_slice(content);
    v
}

/// GSS-API InitialContextToken with a NegTokenInit offering NTLMSSP only.
pub fn init(ntlm_negotiate: &[u8]) -> Vec<u8> {
    let mech_types = der(0xa0, &der(0x30, &der(0x06, &NTLMSSP_OID)));
    let token = der(0xa2, &der(0x04, ntlm_negotiate));
    let seq = der(0x30, &[mech_types, token].concat());
    der(0x60, &[der(0x06, &SPNEGO_OID), der(0xa0, &seq)].concat())
}

/// NegTokenResp carrying the next NTLMSSP message.
pub fn response(ntlm_message: &[u8]) -> Vec<u8> {
    der(0xa1, &der(0x30, &der(0xa2, &der(0x04, ntlm_message))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_token_has_the_known_layout() {
        let t = init(&[0xAB; 3]);
        assert_eq!(
            t,
            [
                0x60, 0x23, 0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02, 0xa0, 0x19, 0x30, 0x17,
                0xa0, 0x0e, 0x30, 0x0c, 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02,
                0x02, 0x0a, 0xa2, 0x05, 0x04, 0x03, 0xAB, 0xAB, 0xAB
            ]
        );
    }

    #[test]
    fn long_tokens_use_long_form_lengths() {
        let r = response(&vec![0; 300]);
        assert_eq!(&r[..4], &[0xa1, 0x82, 0x01, 0x38]);
        assert_eq!(r.len(), 4 + 0x138);
    }
}
