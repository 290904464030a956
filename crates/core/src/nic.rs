//! Network-interface counters and link speed for network targets.

use storbench_model::result::NicUsage;

/// rx/tx byte counters of one interface at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NicSample {
    pub name: String,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

impl NicSample {
    pub fn read(name: &str) -> Option<Self> {
        let get = |f: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/sys/class/net/{name}/statistics/{f}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some(NicSample {
            name: name.to_string(),
            rx_bytes: get("rx_bytes")?,
            tx_bytes: get("tx_bytes")?,
        })
    }

    pub fn since(&self, earlier: &NicSample, duration_ms: u64) -> NicUsage {
        NicUsage {
            name: self.name.clone(),
            rx_bytes: self.rx_bytes.saturating_sub(earlier.rx_bytes),
            tx_bytes: self.tx_bytes.saturating_sub(earlier.tx_bytes),
            duration_ms,
            speed_mbps: effective_speed_mbps(&self.name),
        }
    }
}

/// The rate the interface can really carry: the lower of its stated speed and a shaping
/// qdisc's rate. A veth states 10000 Mbit/s whatever tbf lets through, so taking the stated
/// speed alone would never name a shaped 1 Gbit/s link as the limit. Read once per run,
/// at its end, so the result keeps it (the qdisc may be gone when the run is analysed).
pub fn effective_speed_mbps(name: &str) -> Option<u64> {
    match (link_speed_mbps(name), shaped_rate_mbps(name)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Link speed in Mbit/s as the interface states it; None where it states none (loopback,
/// virtio).
pub fn link_speed_mbps(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{name}/speed")).ok()?;
    text.trim()
        .parse::<i64>()
        .ok()
        .filter(|&s| s > 0)
        .map(|s| s as u64)
}

/// Rate of a shaping qdisc (tbf) on the interface, in Mbit/s: an emulated link's real limit.
pub fn shaped_rate_mbps(name: &str) -> Option<u64> {
    let out = std::process::Command::new("tc")
        .args(["qdisc", "show", "dev", name])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rate = text
        .split_whitespace()
        .skip_while(|w| *w != "rate")
        .nth(1)?;
    parse_tc_rate(rate)
}

fn parse_tc_rate(rate: &str) -> Option<u64> {
    let (num, unit) = rate.split_at(rate.find(|c: char| c.is_ascii_alphabetic())?);
    let value: f64 = num.parse().ok()?;
    let mbps = match unit.to_ascii_lowercase().as_str() {
        "gbit" => value * 1000.0,
        "mbit" => value,
        "kbit" => value / 1000.0,
        "bit" => value / 1e6,
        _ => return None,
    };
    Some(mbps.round() as u64)
}

/// The local interface holding `ip` (a socket's local address), for NIC statistics; also
/// tells an address of this host from another's.
pub fn interface_of(ip: std::net::IpAddr) -> Option<String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list`, released by freeifaddrs below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = list;
    while !cur.is_null() && found.is_none() {
        // SAFETY: `cur` is a node of the list getifaddrs returned.
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null() && sockaddr_ip(ifa.ifa_addr) == Some(ip) {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: the list from getifaddrs, released once.
    unsafe { libc::freeifaddrs(list) };
    found
}

/// The IP address in a `sockaddr` of family AF_INET or AF_INET6.
fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<std::net::IpAddr> {
    // SAFETY: `sa` is non-null and points to a sockaddr of the family it states.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let v4 = &*(sa as *const libc::sockaddr_in);
                Some(std::net::Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)).into())
            }
            libc::AF_INET6 => {
                let v6 = &*(sa as *const libc::sockaddr_in6);
                Some(std::net::Ipv6Addr::from(v6.sin6_addr.s6_addr).into())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_counters_but_no_speed() {
        let s = NicSample::read("lo").expect("lo counters");
        assert_eq!(s.name, "lo");
        assert_eq!(link_speed_mbps("lo"), None);
    }

    #[test]
    fn tc_rates() {
        assert_eq!(parse_tc_rate("1Gbit"), Some(1000));
        assert_eq!(parse_tc_rate("984Mbit"), Some(984));
        assert_eq!(parse_tc_rate("fast"), None);
    }
}
