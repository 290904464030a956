//! Text key=value data (RFC 7143 6) and the operational parameters negotiated at login.

use std::fmt::Write as _;

/// Parses `key=value\0` pairs. Pairs without `=` or with non-UTF-8 bytes are skipped:
/// a hostile target cannot make the parser fail, only be ignored.
pub fn parse(data: &[u8]) -> Vec<(String, String)> {
    data.split(|&b| b == 0)
        .filter(|s| !s.is_empty())
        .filter_map(|pair| {
            let text = std::str::from_utf8(pair).ok()?;
            let (k, v) = text.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// Appends one `key=value\0` pair.
pub fn push(out: &mut Vec<u8>, key: &str, value: &str) {
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value.as_bytes());
    out.push(0);
}

/// The first value of `key`, if present.
pub fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Digest choice for headers or data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digest {
    None,
    Crc32c,
}

impl Digest {
    pub fn wire(self) -> &'static str {
        match self {
            Digest::None => "None",
            Digest::Crc32c => "CRC32C",
        }
    }

    /// Bytes the digest adds after a header or data segment.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(self) -> usize {
        match self {
            Digest::None => 0,
            Digest::Crc32c => 4,
        }
    }

    pub fn is_none(self) -> bool {
        self == Digest::None
    }
}

/// What we offer at login: our limits and preferences.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The largest data segment we accept (declared; the target's own value limits us).
    pub max_recv_data_segment_length: u32,
    pub max_burst_length: u32,
    pub first_burst_length: u32,
    pub immediate_data: bool,
    pub initial_r2t: bool,
    pub max_outstanding_r2t: u32,
    pub header_digest: Digest,
    pub data_digest: Digest,
}

impl Default for Offer {
    fn default() -> Self {
        Offer {
            max_recv_data_segment_length: 262_144,
            max_burst_length: 16_776_192,
            first_burst_length: 262_144,
            immediate_data: true,
            initial_r2t: false,
            max_outstanding_r2t: 1,
            header_digest: Digest::None,
            data_digest: Digest::None,
        }
    }
}

/// The parameters in force for a session after login.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// Largest data segment we may send (the target's declaration, default 8192).
    pub max_send_data_segment_length: u32,
    /// Largest data segment the target may send us (our declaration).
    pub max_recv_data_segment_length: u32,
    pub max_burst_length: u32,
    pub first_burst_length: u32,
    pub immediate_data: bool,
    pub initial_r2t: bool,
    pub max_outstanding_r2t: u32,
    pub header_digest: Digest,
    pub data_digest: Digest,
    pub data_pdu_in_order: bool,
    pub data_sequence_in_order: bool,
    pub error_recovery_level: u32,
    pub default_time2wait: u32,
    pub default_time2retain: u32,
    pub target_portal_group_tag: Option<u16>,
}

impl Negotiated {
    /// RFC 7143 defaults, narrowed to what we offered, before the target answers.
    pub fn from_offer(offer: &Offer) -> Negotiated {
        Negotiated {
            max_send_data_segment_length: 8192,
            max_recv_data_segment_length: offer.max_recv_data_segment_length,
            max_burst_length: offer.max_burst_length.min(262_144),
            first_burst_length: offer.first_burst_length.min(65_536),
            immediate_data: offer.immediate_data,
            initial_r2t: true,
            max_outstanding_r2t: 1,
            header_digest: Digest::None,
            data_digest: Digest::None,
            data_pdu_in_order: true,
            data_sequence_in_order: true,
            error_recovery_level: 0,
            default_time2wait: 2,
            default_time2retain: 0,
            target_portal_group_tag: None,
        }
    }
}

/// Writes the operational keys we propose (login stage 1). Discovery sessions only declare
/// digests and MaxRecvDataSegmentLength.
pub fn write_offer(out: &mut Vec<u8>, offer: &Offer, discovery: bool) {
    push(out, "HeaderDigest", digest_list(offer.header_digest));
    push(out, "DataDigest", digest_list(offer.data_digest));
    let mut num = String::new();
    let mut num_key = |out: &mut Vec<u8>, key: &str, v: u32| {
        num.clear();
        let _ = write!(num, "{v}");
        push(out, key, &num);
    };
    num_key(
        out,
        "MaxRecvDataSegmentLength",
        offer.max_recv_data_segment_length,
    );
    if discovery {
        return;
    }
    push(out, "InitialR2T", yes_no(offer.initial_r2t));
    push(out, "ImmediateData", yes_no(offer.immediate_data));
    num_key(out, "MaxBurstLength", offer.max_burst_length);
    num_key(out, "FirstBurstLength", offer.first_burst_length);
    num_key(out, "MaxOutstandingR2T", offer.max_outstanding_r2t);
    num_key(out, "MaxConnections", 1);
    push(out, "DataPDUInOrder", "Yes");
    push(out, "DataSequenceInOrder", "Yes");
    num_key(out, "ErrorRecoveryLevel", 0);
    num_key(out, "DefaultTime2Wait", 2);
    num_key(out, "DefaultTime2Retain", 0);
}

fn digest_list(d: Digest) -> &'static str {
    match d {
        Digest::None => "None",
        Digest::Crc32c => "CRC32C,None",
    }
}

fn yes_no(v: bool) -> &'static str {
    if v { "Yes" } else { "No" }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "Yes" => Some(true),
        "No" => Some(false),
        _ => None,
    }
}

fn parse_num(v: &str) -> Option<u32> {
    v.parse().ok()
}

/// A key the target sent that needs an answer from us (it proposed it on its own).
pub type Reply = (String, String);

/// Applies the target's answers and proposals to `neg`. Returns the replies owed for keys the
/// target proposed itself, or an error text naming an unacceptable answer.
pub fn apply_answers(
    neg: &mut Negotiated,
    offer: &Offer,
    pairs: &[(String, String)],
    offered: bool,
) -> Result<Vec<Reply>, String> {
    let mut replies = Vec::new();
    for (key, value) in pairs {
        if value == "Reject" || value == "Irrelevant" || value == "NotUnderstood" {
            continue;
        }
        let bad = || format!("the target answered {key}={value}");
        match key.as_str() {
            "MaxRecvDataSegmentLength" => {
                let v = parse_num(value).filter(|v| *v >= 512).ok_or_else(bad)?;
                neg.max_send_data_segment_length = v.min(crate::pdu::MAX_DATA_SEGMENT);
            }
            "MaxBurstLength" => {
                let v = parse_num(value).filter(|v| *v >= 512).ok_or_else(bad)?;
                neg.max_burst_length = v.min(offer.max_burst_length);
                reply_if(&mut replies, offered, key, neg.max_burst_length);
            }
            "FirstBurstLength" => {
                let v = parse_num(value).filter(|v| *v >= 512).ok_or_else(bad)?;
                neg.first_burst_length = v.min(offer.first_burst_length);
                reply_if(&mut replies, offered, key, neg.first_burst_length);
            }
            "MaxOutstandingR2T" => {
                let v = parse_num(value).filter(|v| *v >= 1).ok_or_else(bad)?;
                neg.max_outstanding_r2t = v.min(offer.max_outstanding_r2t);
                reply_if(&mut replies, offered, key, neg.max_outstanding_r2t);
            }
            "ImmediateData" => {
                neg.immediate_data = parse_bool(value).ok_or_else(bad)? && offer.immediate_data;
                reply_bool(&mut replies, offered, key, neg.immediate_data);
            }
            "InitialR2T" => {
                neg.initial_r2t = parse_bool(value).ok_or_else(bad)? || offer.initial_r2t;
                reply_bool(&mut replies, offered, key, neg.initial_r2t);
            }
            "DataPDUInOrder" | "DataSequenceInOrder" => {
                // We offered Yes; OR-semantics keep it Yes whatever the answer.
                parse_bool(value).ok_or_else(bad)?;
                reply_bool(&mut replies, offered, key, true);
            }
            "HeaderDigest" | "DataDigest" => {
                let chosen = pick_digest(value, offer, key == "HeaderDigest").ok_or_else(bad)?;
                if key == "HeaderDigest" {
                    neg.header_digest = chosen;
                } else {
                    neg.data_digest = chosen;
                }
                if !offered {
                    replies.push((key.clone(), chosen.wire().to_string()));
                }
            }
            "ErrorRecoveryLevel" => {
                // We only do ERL 0: the minimum of ours and theirs.
                parse_num(value).ok_or_else(bad)?;
                neg.error_recovery_level = 0;
                reply_if(&mut replies, offered, key, 0);
            }
            "DefaultTime2Wait" => {
                neg.default_time2wait = parse_num(value).ok_or_else(bad)?.max(2);
                reply_if(&mut replies, offered, key, neg.default_time2wait);
            }
            "DefaultTime2Retain" => {
                parse_num(value).ok_or_else(bad)?;
                neg.default_time2retain = 0;
                reply_if(&mut replies, offered, key, 0);
            }
            "TargetPortalGroupTag" => {
                neg.target_portal_group_tag = value.parse().ok();
            }
            "MaxConnections" => reply_if(&mut replies, offered, key, 1),
            _ => {}
        }
    }
    Ok(replies)
}

fn reply_if(replies: &mut Vec<Reply>, offered: bool, key: &str, v: u32) {
    if !offered {
        replies.push((key.to_string(), v.to_string()));
    }
}

fn reply_bool(replies: &mut Vec<Reply>, offered: bool, key: &str, v: bool) {
    if !offered {
        replies.push((key.to_string(), yes_no(v).to_string()));
    }
}

/// The digest the target chose from our list, or the first of its list that we accept.
fn pick_digest(value: &str, offer: &Offer, header: bool) -> Option<Digest> {
    let ours = if header {
        offer.header_digest
    } else {
        offer.data_digest
    };
    value.split(',').find_map(|v| match v {
        "None" => Some(Digest::None),
        "CRC32C" if ours == Digest::Crc32c => Some(Digest::Crc32c),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn tgtd_like_answer_is_applied() {
        let offer = Offer::default();
        let mut neg = Negotiated::from_offer(&offer);
        let answer = pairs(&[
            ("HeaderDigest", "None"),
            ("DataDigest", "None"),
            ("MaxRecvDataSegmentLength", "8192"),
            ("InitialR2T", "Yes"),
            ("ImmediateData", "Yes"),
            ("MaxBurstLength", "262144"),
            ("FirstBurstLength", "65536"),
            ("MaxOutstandingR2T", "1"),
        ]);
        let replies = apply_answers(&mut neg, &offer, &answer, true).unwrap();
        assert!(replies.is_empty());
        assert_eq!(neg.max_send_data_segment_length, 8192);
        assert!(neg.initial_r2t && neg.immediate_data);
        assert_eq!(
            (neg.max_burst_length, neg.first_burst_length),
            (262_144, 65_536)
        );
    }

    #[test]
    fn target_proposals_get_replies() {
        let offer = Offer::default();
        let mut neg = Negotiated::from_offer(&offer);
        let replies =
            apply_answers(&mut neg, &offer, &pairs(&[("ImmediateData", "No")]), false).unwrap();
        assert_eq!(replies, pairs(&[("ImmediateData", "No")]));
        assert!(!neg.immediate_data);
    }

    #[test]
    fn crc32c_is_only_taken_when_offered() {
        let mut offer = Offer::default();
        let mut neg = Negotiated::from_offer(&offer);
        assert!(
            apply_answers(
                &mut neg,
                &offer,
                &pairs(&[("HeaderDigest", "CRC32C")]),
                true
            )
            .is_err()
        );
        offer.header_digest = Digest::Crc32c;
        apply_answers(
            &mut neg,
            &offer,
            &pairs(&[("HeaderDigest", "CRC32C")]),
            true,
        )
        .unwrap();
        assert_eq!(neg.header_digest, Digest::Crc32c);
    }

    #[test]
    fn absurd_segment_length_is_refused() {
        let offer = Offer::default();
        let mut neg = Negotiated::from_offer(&offer);
        let r = apply_answers(
            &mut neg,
            &offer,
            &pairs(&[("MaxRecvDataSegmentLength", "0")]),
            true,
        );
        assert!(r.is_err());
    }

    proptest! {
        #[test]
        fn push_then_parse_round_trips(kv in proptest::collection::vec(
            ("[A-Za-z][A-Za-z0-9.]{0,20}", "[ -~&&[^=]]{0,40}"), 0..10)) {
            let mut buf = Vec::new();
            for (k, v) in &kv {
                push(&mut buf, k, v);
            }
            let back = parse(&buf);
            let want: Vec<(String, String)> = kv.iter()
                .map(|(k, v)| (k.clone(), v.clone())).collect();
            prop_assert_eq!(back, want);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = parse(&data);
        }
    }
}
