//! Every decoder that reads bytes a target (or a user) controls: BHS fields, text key=value
//! data, SendTargets answers, sense data, INQUIRY / READ CAPACITY / REPORT LUNS replies, CHAP
//! binary values and URLs. None may panic, whatever the input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use storbench_iscsi::{chap, discovery, pdu, scsi, sense, text, url};

fuzz_target!(|data: &[u8]| {
    if let Some(bhs) = pdu::Bhs::from_slice(data) {
        let _ = (bhs.opcode(), bhs.flags(), bhs.ahs_len(), bhs.data_len(), bhs.itt());
        let _ = (bhs.stat_sn(), bhs.exp_cmd_sn(), bhs.max_cmd_sn(), bhs.carries_status());
        let _ = pdu::decode_lun(bhs.lun());
        let (class, detail) = bhs.login_status();
        let _ = pdu::login_status_text(class, detail);
    }
    let pairs = text::parse(data);
    let offer = text::Offer::default();
    let mut neg = text::Negotiated::from_offer(&offer);
    let _ = text::apply_answers(&mut neg, &offer, &pairs, data.first().is_some_and(|b| b & 1 == 0));
    let _ = discovery::parse_send_targets(data);
    if let Some(s) = sense::Sense::parse(data) {
        let _ = s.to_string();
    }
    let _ = scsi::Inquiry::parse(data);
    let _ = scsi::Capacity::parse16(data);
    let _ = scsi::Capacity::parse10(data);
    let _ = scsi::parse_report_luns(data);
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = chap::decode_binary(s);
        let _ = url::Url::parse(s);
    }
});
