//! Free TCP ports on 127.0.0.1 for test servers. `STORBENCH_TEST_PORTS=47200-47299` keeps
//! them inside a range (shared machines and CI hosts that allow only some ports); without
//! it the kernel picks an ephemeral port.

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// The environment variable naming the allowed range, `FIRST-LAST`.
pub const PORTS_ENV: &str = "STORBENCH_TEST_PORTS";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A port nobody listens on right now (bound and released; the server takes it next).
pub fn free_port() -> io::Result<u16> {
    let Some((first, last)) = range()? else {
        return Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port());
    };
    let span = u32::from(last - first) + 1;
    // Start where this process has not looked yet, spread by PID so parallel test
    // processes rarely try the same port first.
    let start = std::process::id()
        .wrapping_mul(7919)
        .wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed));
    for i in 0..span {
        let port = first + (start.wrapping_add(i) % span) as u16;
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            NEXT.fetch_add(i + 1, Ordering::Relaxed);
            return Ok(port);
        }
    }
    Err(io::Error::other(format!(
        "no free port in {PORTS_ENV}={first}-{last}"
    )))
}

fn range() -> io::Result<Option<(u16, u16)>> {
    let Some(v) = std::env::var_os(PORTS_ENV).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let v = v.to_string_lossy();
    let parsed = v
        .split_once('-')
        .and_then(|(a, b)| Some((a.trim().parse::<u16>().ok()?, b.trim().parse::<u16>().ok()?)))
        .filter(|&(a, b)| a > 0 && a <= b);
    match parsed {
        Some(r) => Ok(Some(r)),
        None => Err(io::Error::other(format!(
            "{PORTS_ENV}={v}: expected FIRST-LAST, e.g. 47200-47299"
        ))),
    }
}
