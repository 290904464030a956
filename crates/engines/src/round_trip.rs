//! The network round trip of a remote target, timed when a job opens it (before the run):
//! the least of a few calls that do no work (an NFS NULL call, an SMB ECHO, an iSCSI
//! NOP-Out; NBD, which has no such call, a small read of a block the first read left in
//! the server's cache).
//! The latency verdict sets it against the IOs' own latency.

use std::time::{Duration, Instant};

/// Calls timed; the least is the round trip (queueing on a busy host only adds).
const CALLS: u32 = 5;

/// The least time of [`CALLS`] calls of `call`, or None if any fails.
pub fn measure(mut call: impl FnMut() -> bool) -> Option<Duration> {
    let mut best: Option<Duration> = None;
    for _ in 0..CALLS {
        let t = Instant::now();
        if !call() {
            return None;
        }
        let d = t.elapsed();
        best = Some(best.map_or(d, |b| b.min(d)));
    }
    best
}

/// The engine detail naming it: `("round trip", "61 µs")`.
pub fn detail(rtt: Duration) -> (String, String) {
    let us = rtt.as_secs_f64() * 1e6;
    let text = if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    };
    ("round trip".to_string(), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_of_the_calls_or_none_on_failure() {
        let mut n = 0u64;
        let d = measure(|| {
            n += 1;
            std::thread::sleep(Duration::from_millis(if n == 3 { 1 } else { 5 }));
            true
        })
        .unwrap();
        assert_eq!(n, 5);
        assert!(d < Duration::from_millis(5), "{d:?}");
        assert_eq!(measure(|| false), None);
        assert_eq!(detail(Duration::from_micros(61)).1, "61 µs");
        assert_eq!(detail(Duration::from_micros(2500)).1, "2.50 ms");
    }
}
