//! Login against a real tgtd: CHAP one-way and mutual, authentication failures named with the
//! target's status, a refused initiator, discovery with SendTargets and LUN probing.

mod common;

use std::time::Duration;

use storbench_iscsi::discovery::{self, LunInfo};
use storbench_iscsi::{Config, Error, Session, Timeouts, Url};

fn connect(url: &str) -> Result<Session, Error> {
    Session::connect(Config::new(Url::parse(url).expect("url")))
}

fn with_auth(lab: &common::Lab, userinfo: &str, query: &str) -> String {
    format!(
        "iscsi://{userinfo}@{}/{}/1{query}",
        lab.tgtd.portal(),
        common::IQN
    )
}

#[test]
fn chap_one_way_logs_in_and_wrong_secret_is_refused() {
    let Some(mut lab) = common::lab() else { return };
    lab.tgtd.require_chap(1, "alice", "s3cret-s3cret").unwrap();

    let mut s = connect(&with_auth(&lab, "alice%s3cret-s3cret", "")).expect("CHAP login");
    assert_eq!(s.read_capacity().unwrap().bytes(), common::LUN_SIZE);
    s.logout().unwrap();

    let e = connect(&with_auth(&lab, "alice%wrong-secret", ""))
        .err()
        .expect("must fail");
    let text = e.to_string();
    assert!(
        matches!(
            e,
            Error::LoginRejected {
                class: 2,
                detail: 1,
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.contains("authentication failure") && !text.contains("wrong-secret"),
        "{text}"
    );

    // tgtd rejects a login without CHAP as an "authentication failure"; with no secret
    // given, the message says credentials are needed and where a secret goes other than
    // the URL (where `ps` shows it).
    let e = connect(&lab.url())
        .err()
        .expect("no credentials must fail")
        .to_string();
    for needle in [
        "requires CHAP",
        "iscsi://USER@host",
        "STORBENCH_ISCSI_SECRET",
        "?secret-file=PATH",
        "prompt",
    ] {
        assert!(e.contains(needle), "{needle}: {e}");
    }
    assert!(!e.contains('%'), "{e}");
    assert!(
        lab.tgtd
            .wait_no_nexus(1, Duration::from_secs(5))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn chap_mutual_verifies_the_target() {
    let Some(mut lab) = common::lab() else { return };
    lab.tgtd.require_chap(1, "alice", "s3cret-s3cret").unwrap();
    lab.tgtd.mutual_chap(1, "tgt", "target-secret1").unwrap();

    let ok = with_auth(
        &lab,
        "alice%s3cret-s3cret",
        "?target_user=tgt&target_password=target-secret1",
    );
    let mut s = connect(&ok).expect("mutual CHAP login");
    s.logout().unwrap();

    let bad = with_auth(
        &lab,
        "alice%s3cret-s3cret",
        "?target_user=tgt&target_password=not-the-one",
    );
    let e = connect(&bad)
        .err()
        .expect("a target with the wrong secret must be refused");
    assert!(matches!(e, Error::Auth { .. }), "{e}");
    assert!(
        e.to_string().contains("mutual CHAP response is wrong"),
        "{e}"
    );
}

#[test]
fn initiator_not_allowed_is_named() {
    let Some(mut lab) = common::lab() else { return };
    lab.tgtd
        .tgtadm(&[
            "--mode",
            "target",
            "--op",
            "unbind",
            "--tid",
            "1",
            "--initiator-address",
            "ALL",
        ])
        .unwrap();
    lab.tgtd
        .tgtadm(&[
            "--mode",
            "target",
            "--op",
            "bind",
            "--tid",
            "1",
            "--initiator-name",
            "iqn.2026-11.lab:only-me",
        ])
        .unwrap();
    let e = connect(&lab.url()).err().expect("must be refused");
    assert!(matches!(e, Error::LoginRejected { class: 2, .. }), "{e}");
    let mut s = connect(&format!("{}?initiator=iqn.2026-11.lab:only-me", lab.url()))
        .expect("allowed initiator");
    s.logout().unwrap();
}

#[test]
fn discovery_lists_targets_and_luns() {
    let Some(lab) = common::lab() else { return };
    let url = Url::parse(&format!("iscsi://{}", lab.tgtd.portal())).unwrap();
    let t = Timeouts::default();
    let targets = discovery::send_targets(&url, &t).expect("SendTargets");
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].name, common::IQN);
    assert!(
        targets[0].addresses[0].starts_with(&lab.tgtd.portal()),
        "{:?}",
        targets[0]
    );
    let luns = discovery::probe_target(&url, common::IQN, &t).expect("probe");
    let disk: &LunInfo = luns.iter().find(|l| l.lun == 1).expect("LUN 1");
    assert_eq!(disk.capacity.unwrap().bytes(), common::LUN_SIZE);
    let inq = disk.inquiry.as_ref().unwrap();
    assert_eq!(
        (inq.vendor.as_str(), inq.product.as_str()),
        ("IET", "VIRTUAL-DISK")
    );
    assert_eq!(
        luns.iter()
            .find(|l| l.lun == 0)
            .unwrap()
            .inquiry
            .as_ref()
            .unwrap()
            .device_type_name(),
        "controller"
    );
    assert!(
        lab.tgtd
            .wait_no_nexus(1, Duration::from_secs(5))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn agrees_with_libiscsi_tools() {
    let Some(lab) = common::lab() else { return };
    let Ok(out) = std::process::Command::new("iscsi-readcapacity16")
        .arg(lab.url())
        .output()
    else {
        eprintln!("skipped: iscsi-readcapacity16 not installed (Debian package libiscsi-bin)");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut s = connect(&lab.url()).unwrap();
    let cap = s.read_capacity().unwrap();
    assert!(
        text.contains(&format!("Total size:{}", cap.bytes())),
        "{text}"
    );
    assert!(
        text.contains(&format!("LOGICAL BLOCK LENGTH IN BYTES:{}", cap.block_size)),
        "{text}"
    );
    let inq = s.inquiry().unwrap();
    s.logout().unwrap();
    let out = std::process::Command::new("iscsi-inq")
        .arg(lab.url())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Product:{}", inq.product)), "{text}");
}
