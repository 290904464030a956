//! A and AAAA queries over UDP (RFC 1035 §4): one question per datagram, the answer's ID,
//! question and source checked, names in answers skipped with compression pointers.

use std::hash::{BuildHasher, RandomState};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Instant;

use crate::conf::ResolvConf;

const TYPE_A: u16 = 1;
const TYPE_AAAA: u16 = 28;
const CLASS_IN: u16 = 1;
const RCODE_NXDOMAIN: u16 = 3;

/// What one server said about one name and type.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// Addresses (perhaps none: the name exists without this type).
    Found(Vec<IpAddr>),
    /// The name does not exist.
    NoSuchName,
    /// SERVFAIL, REFUSED, …: ask the next server.
    Failed(u16),
}

/// Every address of `host` after the search list; `Ok(empty)` when no name had any, and
/// `TimedOut` when no server answered at all.
pub fn query_all(conf: &ResolvConf, host: &str) -> io::Result<Vec<IpAddr>> {
    let mut answered = false;
    let mut last_err = None;
    for name in conf.candidates(host) {
        let mut ips = Vec::new();
        for qtype in [TYPE_A, TYPE_AAAA] {
            match ask(conf, &name, qtype) {
                Ok(found) => {
                    answered = true;
                    ips.extend(found);
                }
                Err(e) => last_err = Some(e),
            }
        }
        if !ips.is_empty() {
            return Ok(ips);
        }
    }
    match last_err {
        Some(e) if !answered => Err(e),
        _ => Ok(Vec::new()),
    }
}

/// Asks the servers in turn, `attempts` rounds, until one answers yes or no.
fn ask(conf: &ResolvConf, name: &str, qtype: u16) -> io::Result<Vec<IpAddr>> {
    let mut last = io::Error::new(io::ErrorKind::TimedOut, "no DNS server answered");
    for _ in 0..conf.attempts {
        for server in &conf.servers {
            match exchange(*server, name, qtype, conf) {
                Ok(Reply::Found(ips)) => return Ok(ips),
                Ok(Reply::NoSuchName) => return Ok(Vec::new()),
                Ok(Reply::Failed(rcode)) => {
                    last = io::Error::other(format!("DNS server {server} answered rcode {rcode}"))
                }
                Err(e) => {
                    last = io::Error::new(e.kind(), format!("DNS server {server}: {e}"));
                }
            }
        }
    }
    Err(last)
}

fn exchange(server: SocketAddr, name: &str, qtype: u16, conf: &ResolvConf) -> io::Result<Reply> {
    let local: SocketAddr = if server.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(local)?;
    // connect() makes the kernel drop datagrams from any other source.
    sock.connect(server)?;
    let id = RandomState::new().hash_one(Instant::now()) as u16;
    let query = encode_query(id, name, qtype)?;
    sock.send(&query)?;
    let deadline = Instant::now() + conf.timeout;
    let mut buf = [0u8; 1500];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time"));
        }
        sock.set_read_timeout(Some(left))?;
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time"));
            }
            Err(e) => return Err(e),
        };
        // A stray or forged datagram is skipped, not taken as the answer.
        if let Some(reply) = decode_reply(&buf[..n], &query, qtype) {
            return Ok(reply);
        }
    }
}

/// A standard query with recursion desired.
pub fn encode_query(id: u16, name: &str, qtype: u16) -> io::Result<Vec<u8>> {
    let mut q = Vec::with_capacity(18 + name.len());
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&0x0100u16.to_be_bytes()); // RD
    q.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // one question
    for label in name.trim_end_matches('.').split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a valid host name"),
            ));
        }
        q.push(label.len() as u8);
        q.extend_from_slice(label.as_bytes());
    }
    q.push(0);
    q.extend_from_slice(&qtype.to_be_bytes());
    q.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(q)
}

/// The reply to `query`, or `None` if `msg` is not one (other ID, other question, not a
/// response, malformed).
pub fn decode_reply(msg: &[u8], query: &[u8], qtype: u16) -> Option<Reply> {
    let u16_at =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*msg.get(i)?, *msg.get(i + 1)?])) };
    if msg.len() < 12 || msg[..2] != query[..2] {
        return None;
    }
    let flags = u16_at(2)?;
    if flags & 0x8000 == 0 || u16_at(4)? != 1 {
        return None;
    }
    // The question must be ours, byte for byte but for the case of the name.
    let question = &query[12..];
    let echoed = msg.get(12..12 + question.len())?;
    if !echoed.eq_ignore_ascii_case(question) {
        return None;
    }
    match flags & 0x000f {
        0 => {}
        RCODE_NXDOMAIN => return Some(Reply::NoSuchName),
        rcode => return Some(Reply::Failed(rcode)),
    }
    let answers = u16_at(6)?;
    let mut at = 12 + question.len();
    let mut ips = Vec::new();
    for _ in 0..answers {
        at = skip_name(msg, at)?;
        let (rtype, class, len) = (u16_at(at)?, u16_at(at + 2)?, u16_at(at + 8)? as usize);
        let data = msg.get(at + 10..at + 10 + len)?;
        at += 10 + len;
        if class != CLASS_IN || rtype != qtype {
            continue; // CNAMEs on the way: their targets' records follow.
        }
        match (rtype, data.len()) {
            (TYPE_A, 4) => ips.push(IpAddr::from(<[u8; 4]>::try_from(data).ok()?)),
            (TYPE_AAAA, 16) => ips.push(IpAddr::from(<[u8; 16]>::try_from(data).ok()?)),
            _ => return None,
        }
    }
    Some(Reply::Found(ips))
}

/// The offset after a (possibly compressed) name starting at `at`.
fn skip_name(msg: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = *msg.get(at)?;
        match len {
            0 => return Some(at + 1),
            l if l & 0xc0 == 0xc0 => {
                msg.get(at + 1)?;
                return Some(at + 2);
            }
            l if l <= 63 => at += 1 + l as usize,
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A reply to `q` as a server builds it: header flags, the question echoed, answers
    /// with compressed owner names pointing at the question (offset 12).
    fn reply(q: &[u8], rcode: u16, answers: &[(u16, &[u8])]) -> Vec<u8> {
        let mut r = q[..2].to_vec();
        r.extend_from_slice(&(0x8180u16 | rcode).to_be_bytes());
        r.extend_from_slice(&[0, 1]);
        r.extend_from_slice(&(answers.len() as u16).to_be_bytes());
        r.extend_from_slice(&[0, 0, 0, 0]);
        r.extend_from_slice(&q[12..]);
        for (t, data) in answers {
            r.extend_from_slice(&[0xc0, 12]);
            r.extend_from_slice(&t.to_be_bytes());
            r.extend_from_slice(&CLASS_IN.to_be_bytes());
            r.extend_from_slice(&300u32.to_be_bytes());
            r.extend_from_slice(&(data.len() as u16).to_be_bytes());
            r.extend_from_slice(data);
        }
        r
    }

    #[test]
    fn query_bytes() {
        let q = encode_query(0x1234, "nas.lan", TYPE_AAAA).unwrap();
        assert_eq!(
            q,
            [
                0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, b'n', b'a', b's', 3, b'l', b'a', b'n',
                0, 0, 28, 0, 1
            ]
        );
    }

    #[test]
    fn answers_after_a_cname() {
        let q = encode_query(7, "nas.lan", TYPE_A).unwrap();
        // CNAME nas.lan -> nas.lan (pointer), then the A record.
        let r = reply(&q, 0, &[(5, &[0xc0, 12]), (TYPE_A, &[192, 168, 1, 10])]);
        assert_eq!(
            decode_reply(&r, &q, TYPE_A),
            Some(Reply::Found(vec![IpAddr::from([192, 168, 1, 10])]))
        );
        let q6 = encode_query(8, "nas.lan", TYPE_AAAA).unwrap();
        let mut v6 = [0u8; 16];
        v6[15] = 1;
        let r6 = reply(&q6, 0, &[(TYPE_AAAA, &v6)]);
        assert_eq!(
            decode_reply(&r6, &q6, TYPE_AAAA),
            Some(Reply::Found(vec!["::1".parse().unwrap()]))
        );
    }

    #[test]
    fn errors_and_strays() {
        let q = encode_query(7, "nas.lan", TYPE_A).unwrap();
        assert_eq!(
            decode_reply(&reply(&q, 3, &[]), &q, TYPE_A),
            Some(Reply::NoSuchName)
        );
        assert_eq!(
            decode_reply(&reply(&q, 2, &[]), &q, TYPE_A),
            Some(Reply::Failed(2))
        );
        // Another ID, another question, the query itself (not a response): not ours.
        let other = encode_query(8, "nas.lan", TYPE_A).unwrap();
        assert_eq!(decode_reply(&reply(&other, 0, &[]), &q, TYPE_A), None);
        let elsewhere = encode_query(7, "evil.lan", TYPE_A).unwrap();
        assert_eq!(decode_reply(&reply(&elsewhere, 0, &[]), &q, TYPE_A), None);
        assert_eq!(decode_reply(&q, &q, TYPE_A), None);
        // An answer cut short.
        let r = reply(&q, 0, &[(TYPE_A, &[192, 168, 1, 10])]);
        assert_eq!(decode_reply(&r[..r.len() - 1], &q, TYPE_A), None);
    }

    /// A server on loopback that answers one query: the whole exchange over a real socket.
    #[test]
    fn asks_a_real_socket() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            for _ in 0..2 {
                let (n, from) = server.recv_from(&mut buf).unwrap();
                let q = &buf[..n];
                let qtype = u16::from_be_bytes([q[n - 4], q[n - 3]]);
                let r = if qtype == TYPE_A {
                    reply(q, 0, &[(TYPE_A, &[10, 9, 8, 7])])
                } else {
                    reply(q, 0, &[])
                };
                server.send_to(&r, from).unwrap();
            }
        });
        let conf = ResolvConf {
            servers: vec![addr],
            search: vec![],
            ndots: 1,
            timeout: std::time::Duration::from_secs(2),
            attempts: 1,
        };
        let got = query_all(&conf, "nas.example").unwrap();
        t.join().unwrap();
        assert_eq!(got, vec![IpAddr::from([10, 9, 8, 7])]);
    }

    #[test]
    fn silent_server_times_out() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let conf = ResolvConf {
            servers: vec![server.local_addr().unwrap()],
            search: vec![],
            ndots: 1,
            timeout: std::time::Duration::from_millis(200),
            attempts: 1,
        };
        let started = Instant::now();
        let e = query_all(&conf, "nas.example").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    proptest! {
        /// Any bytes: never a panic.
        #[test]
        fn decode_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..300)) {
            let q = encode_query(7, "nas.lan", TYPE_A).unwrap();
            let mut msg = reply(&q, 0, &[]);
            msg.truncate(12 + q.len() - 12);
            msg.extend_from_slice(&tail);
            msg[6] = tail.first().copied().unwrap_or(0);
            msg[7] = 3;
            let _ = decode_reply(&msg, &q, TYPE_A);
        }
    }
}
