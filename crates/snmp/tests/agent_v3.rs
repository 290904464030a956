//! SNMPv3 against Debian's net-snmp snmpd started by the test with `createUser` users:
//! engine discovery, time sync, SHA-1, SHA-256 and MD5 authentication with AES privacy,
//! authNoPriv; and the agent's Reports (unknown user, wrong digest, a wrong privacy
//! password) as one-line errors naming what to check.

use std::time::Duration;

use storbench_snmp::client::Secrets;
use storbench_snmp::{Client, Oid, SnmpUrl, Value};
use storbench_testkit::snmpd::{self, AUTH_PASSWORD, PRIV_PASSWORD, Snmpd, V3_USERS, free_port};

fn agent() -> Option<Snmpd> {
    storbench_testkit::require!(snmpd::unavailable());
    Some(Snmpd::start_at("127.0.0.1", free_port().unwrap(), None).expect("snmpd"))
}

fn secrets(auth: &str, privacy: Option<&str>) -> Secrets {
    Secrets {
        community: None,
        auth: Some(auth.as_bytes().to_vec()),
        privacy: privacy.map(|p| p.as_bytes().to_vec()),
    }
}

fn client(url: &str, s: Secrets) -> Client {
    let url = SnmpUrl::parse(url).unwrap();
    Client::open_with(&url, s, Duration::from_millis(500), 2).unwrap()
}

#[test]
fn every_v3_user_reads_the_agent_with_its_protocols() {
    let Some(a) = agent() else {
        return;
    };
    let uptime = Oid::parse("1.3.6.1.2.1.1.3.0").unwrap();
    let if_name = Oid::parse("1.3.6.1.2.1.31.1.1.1.1").unwrap();
    for u in &V3_USERS {
        let privacy = u.privacy.map(|_| PRIV_PASSWORD);
        let mut c = client(&a.v3_url(u), secrets(AUTH_PASSWORD, privacy));
        let got = c.get(std::slice::from_ref(&uptime)).unwrap_or_else(|e| {
            panic!("{}: {e}\n{}", u.name, a.log());
        });
        assert!(
            matches!(got[0].1, Value::TimeTicks(_)),
            "{}: {got:?}",
            u.name
        );
        // A walk is several requests on the same session (the clock followed).
        let names = c.walk(&if_name).unwrap();
        assert!(
            names
                .iter()
                .any(|(_, v)| v.as_text().as_deref() == Some("lo")),
            "{}: {names:?}",
            u.name
        );
    }
}

#[test]
fn the_agents_reports_are_one_line_errors_that_say_what_to_check() {
    let Some(a) = agent() else {
        return;
    };
    let uptime = [Oid::parse("1.3.6.1.2.1.1.3.0").unwrap()];
    let sha = &V3_USERS[0];
    let url = |user: &str| format!("snmpv3://{user}@127.0.0.1:{}", a.port);
    for (url, s, expect) in [
        (
            url("nobody"),
            secrets(AUTH_PASSWORD, Some(PRIV_PASSWORD)),
            "knows no user nobody (usmStatsUnknownUserNames)",
        ),
        (
            a.v3_url(sha),
            secrets("wrong-password", Some(PRIV_PASSWORD)),
            "wrong authentication password or protocol for user sbsha (usmStatsWrongDigests)",
        ),
        (
            // The right password with the wrong hash is a wrong digest too.
            a.v3_url(sha).replace("auth=sha", "auth=md5"),
            secrets(AUTH_PASSWORD, Some(PRIV_PASSWORD)),
            "usmStatsWrongDigests",
        ),
        (
            // authNoPriv for a user the agent only lets in with privacy: net-snmp's
            // access rule refuses it with an error-status, not a Report.
            a.v3_url(sha),
            secrets(AUTH_PASSWORD, None),
            "(authorizationError) at binding 0: the agent's access rules refuse this user at authNoPriv",
        ),
    ] {
        let mut c = client(&url, s);
        let e = c.get(&uptime).unwrap_err().to_string();
        assert!(e.contains(expect) && !e.contains('\n'), "{url}: {e}");
    }
    // A wrong privacy password: net-snmp cannot read the request and answers with a
    // decryption Report, or drops it; either way one line, in bounded time.
    let started = std::time::Instant::now();
    let mut c = client(
        &a.v3_url(sha),
        secrets(AUTH_PASSWORD, Some("wrong-privacy")),
    );
    let e = c.get(&uptime).unwrap_err().to_string();
    assert!(
        (e.contains("usmStatsDecryptionErrors") || e.contains("no answer")) && !e.contains('\n'),
        "{e}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn short_passwords_and_privacy_without_authentication_are_refused_before_sending() {
    let url = SnmpUrl::parse("snmpv3://u@127.0.0.1:9").unwrap();
    for (s, expect) in [
        (secrets("short", None), "shorter than 8"),
        (
            Secrets {
                privacy: Some(b"long-enough".to_vec()),
                ..Secrets::default()
            },
            "without an authentication password",
        ),
    ] {
        let e = Client::open_with(&url, s, Duration::from_millis(100), 1)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(expect), "{e}");
    }
}

/// The session alone over a plain socket, message by message: the discovery Report (in
/// clear, unauthenticated, with the engine's ID, boots and time), then an authenticated,
/// encrypted Response. With STORBENCH_SNMP_CAPTURE=DIR set, the agent's replies are kept
/// there (how the v3 seeds of fuzz/corpus/replies were captured).
#[test]
fn discovery_then_an_encrypted_response_message_by_message() {
    use storbench_snmp::message::{GET, Request, put_pdu};
    use storbench_snmp::usm::{Auth, Privacy};
    use storbench_snmp::v3::{Credentials, Outcome, Session};
    let Some(a) = agent() else {
        return;
    };
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(("127.0.0.1", a.port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut s = Session::new(
        Credentials {
            user: b"sbsha".to_vec(),
            auth: Some((Auth::Sha1, AUTH_PASSWORD.as_bytes().to_vec())),
            privacy: Some((Privacy::Aes128, PRIV_PASSWORD.as_bytes().to_vec())),
        },
        7,
    )
    .unwrap();
    let oids = [Oid::parse("1.3.6.1.2.1.1.5.0").unwrap()];
    let capture = std::env::var_os("STORBENCH_SNMP_CAPTURE");
    let mut kinds = Vec::new();
    for id in 1..=3 {
        let req = Request {
            kind: GET,
            request_id: id,
            oids: &oids,
            max_repetitions: 0,
        };
        sock.send(&s.encode(id, |out| put_pdu(out, &req))).unwrap();
        let mut buf = vec![0u8; 65_535];
        let n = sock.recv(&mut buf).unwrap();
        if let Some(dir) = &capture {
            std::fs::write(
                std::path::Path::new(dir).join(format!("v3-reply-{id}")),
                &buf[..n],
            )
            .unwrap();
        }
        let m = storbench_snmp::v3msg::decode(&buf[..n]).unwrap();
        kinds.push(m.flags & 3);
        match s.decode(id, &buf[..n]).unwrap() {
            Some(Outcome::Retry) => continue,
            Some(Outcome::Response(r)) => {
                assert!(matches!(r.bindings[0].1, Value::OctetString(_)), "{r:?}");
                break;
            }
            None => panic!("a reply to another request"),
        }
    }
    // The discovery Report in clear, then an authenticated (1) and encrypted (2) reply.
    assert_eq!(kinds, [0, 3], "{}", a.log());
}
