//! The bodies of the cargo-fuzz targets in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through them on a stable toolchain (`tests/fuzz_corpus.rs`), and
//! the fuzz targets stay one line each. Not an API: each function panics when the property
//! it checks does not hold.

use crate::{chap, discovery, pdu, scsi, sense, text, url};

/// Every decoder that reads bytes a target (or a user) controls: BHS fields, text key=value
/// data, SendTargets answers, sense data, INQUIRY / READ CAPACITY / REPORT LUNS replies, CHAP
/// binary values and URLs. None may panic, whatever the input.
pub fn decoders(data: &[u8]) {
    if let Some(bhs) = pdu::Bhs::from_slice(data) {
        let _ = (
            bhs.opcode(),
            bhs.flags(),
            bhs.ahs_len(),
            bhs.data_len(),
            bhs.itt(),
        );
        let _ = (
            bhs.stat_sn(),
            bhs.exp_cmd_sn(),
            bhs.max_cmd_sn(),
            bhs.carries_status(),
        );
        let _ = pdu::decode_lun(bhs.lun());
        let (class, detail) = bhs.login_status();
        let _ = pdu::login_status_text(class, detail);
    }
    let pairs = text::parse(data);
    let offer = text::Offer::default();
    let mut neg = text::Negotiated::from_offer(&offer);
    let leading = data.first().is_some_and(|b| b & 1 == 0);
    let _ = text::apply_answers(&mut neg, &offer, &pairs, leading);
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
}

/// Any text as an `iscsi://` URL: a URL with a host and a non-zero port, or one error line;
/// never a panic.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match url::Url::parse(text) {
        Ok(u) => {
            assert!(!u.host.is_empty() && u.port != 0, "{u:?}");
            let shown = u.to_string();
            assert!(shown.starts_with("iscsi://"), "{shown}");
            let _ = (u.portal(), u.require_lun());
        }
        Err(e) => {
            // Input with control characters is echoed as given; only its shape is checked.
            if !text.chars().any(char::is_control) {
                let msg = e.to_string();
                assert!(!msg.contains('\n'), "multi-line error: {msg}");
            }
        }
    }
}
