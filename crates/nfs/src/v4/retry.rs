//! NFS4ERR_DELAY and NFS4ERR_GRACE (RFC 8881 §15.1.1.3, §8.4.2): the server may do the
//! request later, so the same request is sent again after a wait of 50 ms doubling to 1 s.
//!
//! The two have their own limits. DELAY ("busy") is retried until the URL's `timeout` +
//! `reconnect` have passed since the first one, the bound a server that answers
//! NFS3ERR_JUKEBOX forever gets over NFSv3: a server busy for that long is as good as
//! lost. GRACE lasts for the server's grace period after a restart (90 s by default), so it
//! is retried for [`RETRY_FOR`] or that window, whichever is longer. Past its limit the
//! request fails with one line naming the status, the tries and the limit.

use std::time::{Duration, Instant};

use crate::url::NfsUrl;

use super::stat::Nfs4Stat;

/// The least time NFS4ERR_GRACE is retried (longer than the 90 s grace period servers
/// default to).
pub const RETRY_FOR: Duration = Duration::from_secs(120);
/// First and longest wait between retries.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(1);

/// How long each status is retried, from the URL once per session.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// NFS4ERR_DELAY: `timeout` + `reconnect`.
    delay: Duration,
    /// NFS4ERR_GRACE: [`RETRY_FOR`] or the window above, the longer.
    grace: Duration,
    timeout_s: u64,
    reconnect_s: u64,
}

impl Limits {
    pub(crate) fn of(url: &NfsUrl) -> Limits {
        let delay = url.timeout.saturating_add(url.reconnect);
        Limits {
            delay,
            grace: RETRY_FOR.max(delay),
            timeout_s: url.timeout.as_secs(),
            reconnect_s: url.reconnect.as_secs(),
        }
    }

    fn of_status(&self, status: Nfs4Stat) -> Duration {
        match status {
            Nfs4Stat::GRACE => self.grace,
            _ => self.delay,
        }
    }

    /// The limit of `status` in words, for the message when it is passed.
    pub(crate) fn stated(&self, status: Nfs4Stat) -> String {
        match status {
            Nfs4Stat::GRACE => format!(
                "{} s (the longer of {} s and timeout + reconnect)",
                self.grace.as_secs(),
                RETRY_FOR.as_secs()
            ),
            _ => format!(
                "timeout={} s + reconnect={} s",
                self.timeout_s, self.reconnect_s
            ),
        }
    }
}

/// The retries of one request so far.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Retries {
    first: Option<Instant>,
    tries: u32,
}

impl Retries {
    /// For a reply of `status`: waits and returns true when the request is to be sent
    /// again; false when the status is not one to retry or its limit has passed.
    pub(crate) fn again(&mut self, status: Nfs4Stat, limits: &Limits) -> bool {
        if !status.retry_later() {
            return false;
        }
        let first = *self.first.get_or_insert_with(Instant::now);
        let left = limits.of_status(status).saturating_sub(first.elapsed());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(backoff(self.tries).min(left));
        self.tries += 1;
        true
    }

    /// Requests sent again so far.
    pub(crate) fn tries(&self) -> u32 {
        self.tries
    }

    /// Time since the first reply that asked to retry.
    pub(crate) fn waited(&self) -> Duration {
        self.first.map_or(Duration::ZERO, |f| f.elapsed())
    }
}

/// How long to wait before retry `n`.
fn backoff(n: u32) -> Duration {
    RETRY_FIRST.saturating_mul(1 << n.min(5)).min(RETRY_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(timeout: u64, reconnect: u64) -> Limits {
        let url = NfsUrl::parse(&format!(
            "nfs://h/x?version=4.1&timeout={timeout}&reconnect={reconnect}"
        ))
        .unwrap();
        Limits::of(&url)
    }

    #[test]
    fn delay_is_retried_for_timeout_plus_reconnect_and_grace_for_a_grace_period() {
        let l = limits(1, 2);
        assert_eq!(l.of_status(Nfs4Stat::DELAY), Duration::from_secs(3));
        assert_eq!(l.of_status(Nfs4Stat::GRACE), RETRY_FOR);
        assert_eq!(l.stated(Nfs4Stat::DELAY), "timeout=1 s + reconnect=2 s");
        let long = limits(100, 200);
        assert_eq!(long.of_status(Nfs4Stat::GRACE), Duration::from_secs(300));
    }

    #[test]
    fn retries_wait_longer_each_time_and_stop_at_the_limit() {
        let l = limits(1, 0);
        let mut r = Retries::default();
        assert!(!r.again(Nfs4Stat::NOENT, &l), "not a status to retry");
        let t = Instant::now();
        while r.again(Nfs4Stat::DELAY, &l) {}
        let took = t.elapsed();
        assert!(took >= Duration::from_secs(1), "{took:?}");
        assert!(took < Duration::from_millis(1500), "{took:?}");
        // 50, 100, 200, 400 ms, then what is left of the second.
        assert_eq!(r.tries(), 5, "{r:?}");
        assert!(r.waited() >= Duration::from_secs(1));
        assert_eq!(backoff(0), RETRY_FIRST);
        assert_eq!(backoff(9), RETRY_MAX);
    }
}
