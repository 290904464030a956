//! Host-name resolution without the C library's NSS: `/etc/hosts` first, then a DNS A and
//! AAAA query over UDP to the servers of `/etc/resolv.conf`, each with a deadline.
//!
//! Why not `ToSocketAddrs`: it calls glibc's `getaddrinfo`, which in a statically linked
//! binary loads NSS modules (`libnss_*.so`) of the running system at run time; on a NAS, an
//! old distribution or in a chroot they may be missing or of another glibc. The static
//! binary (packaging/static.sh) must reach `nfs://nas/…`, `smb://nas/…`, `iscsi://nas/…`,
//! `nbd://nas/…` and `snmp://nas` by name on its own, so every protocol client resolves
//! through this crate, with the same order and errors. What it does not do: mDNS
//! (`.local`), LDAP/NIS host maps, DNS over TCP (a truncated UDP answer is used as far as
//! it goes: A and AAAA answers fit in one datagram in practice), DNSSEC.

mod conf;
mod dns;
mod hosts;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;

pub use conf::ResolvConf;
pub use hosts::lookup_hosts;

/// Files read, so tests can point at their own.
#[derive(Clone, Debug)]
pub struct Sources<'a> {
    pub hosts: &'a Path,
    pub resolv_conf: &'a Path,
}

impl Default for Sources<'_> {
    fn default() -> Self {
        Sources {
            hosts: Path::new("/etc/hosts"),
            resolv_conf: Path::new("/etc/resolv.conf"),
        }
    }
}

/// The addresses of `host` (a name or an IP literal, IPv6 with or without brackets) with
/// `port`, IPv4 before IPv6. An unknown name is `NotFound`; a DNS server that does not
/// answer within the resolv.conf timeout (default 5 s, 2 attempts) is `TimedOut`.
pub fn resolve(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    resolve_with(host, port, &Sources::default())
}

/// [`resolve`] reading the given files.
pub fn resolve_with(host: &str, port: u16, src: &Sources) -> io::Result<Vec<SocketAddr>> {
    let with_port = |ips: Vec<IpAddr>| ips.into_iter().map(|ip| SocketAddr::new(ip, port));
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    check_name(host)?;
    let name = host.trim_end_matches('.');
    let from_file = lookup_hosts(
        &std::fs::read_to_string(src.hosts).unwrap_or_default(),
        name,
    );
    if !from_file.is_empty() {
        return Ok(with_port(ordered(from_file)).collect());
    }
    if name.eq_ignore_ascii_case("localhost") {
        // As glibc does when /etc/hosts lacks it.
        return Ok(with_port(vec![IpAddr::from([127, 0, 0, 1])]).collect());
    }
    let conf = ResolvConf::parse(&std::fs::read_to_string(src.resolv_conf).unwrap_or_default());
    let ips = dns::query_all(&conf, host)?;
    if ips.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            // The caller names the host; this says where it looked.
            "not found in /etc/hosts or DNS",
        ));
    }
    Ok(with_port(ordered(ips)).collect())
}

/// IPv4 first (a home-lab server is likelier reachable over it), each family in the order
/// given, without duplicates.
fn ordered(ips: Vec<IpAddr>) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::with_capacity(ips.len());
    for ip in ips
        .iter()
        .filter(|i| i.is_ipv4())
        .chain(ips.iter().filter(|i| i.is_ipv6()))
    {
        if !out.contains(ip) {
            out.push(*ip);
        }
    }
    out
}

/// A name DNS can carry: labels of 1–63 bytes, 253 in all, no spaces or control bytes.
fn check_name(host: &str) -> io::Result<()> {
    let name = host.strip_suffix('.').unwrap_or(host);
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .split('.')
            .all(|l| !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_graphic()));
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{host:?} is not a valid host name"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(hosts: &str, resolv: &str) -> (tempfile::TempDir, Sources<'static>) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("hosts"), hosts).unwrap();
        std::fs::write(d.path().join("resolv.conf"), resolv).unwrap();
        let leak = |p: std::path::PathBuf| -> &'static Path { Box::leak(p.into_boxed_path()) };
        let src = Sources {
            hosts: leak(d.path().join("hosts")),
            resolv_conf: leak(d.path().join("resolv.conf")),
        };
        (d, src)
    }

    #[test]
    fn literals_need_no_lookup() {
        let (_d, src) = files("", "nameserver 192.0.2.1\n");
        let v6 = resolve_with("[::1]", 2049, &src).unwrap();
        assert_eq!(v6, vec!["[::1]:2049".parse().unwrap()]);
        let v4 = resolve_with("10.1.2.3", 111, &src).unwrap();
        assert_eq!(v4, vec!["10.1.2.3:111".parse().unwrap()]);
    }

    #[test]
    fn hosts_file_wins_and_orders_ipv4_first() {
        let (_d, src) = files(
            "::1 nas.lan\n# 10.0.0.9 nas.lan\n10.0.0.5\tNAS.lan nas # comment\n",
            "nameserver 192.0.2.1\n",
        );
        let got = resolve_with("nas.lan", 2049, &src).unwrap();
        let want: Vec<SocketAddr> = vec![
            "10.0.0.5:2049".parse().unwrap(),
            "[::1]:2049".parse().unwrap(),
        ];
        assert_eq!(got, want);
        assert_eq!(
            resolve_with("nas.", 1, &src).unwrap()[0].ip().to_string(),
            "10.0.0.5"
        );
    }

    #[test]
    fn localhost_without_hosts_entry() {
        let (_d, src) = files("", "");
        let got = resolve_with("localhost", 3260, &src).unwrap();
        assert_eq!(got, vec!["127.0.0.1:3260".parse().unwrap()]);
    }

    #[test]
    fn bad_names_are_refused_before_any_query() {
        let (_d, src) = files("", "nameserver 192.0.2.1\n");
        for bad in ["", "a..b", "has space", &"x".repeat(64), "tab\there"] {
            let e = resolve_with(bad, 1, &src).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }
}
