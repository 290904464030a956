//! What the smb engine tells the result: the session's facts (dialect, signing,
//! encryption, credits), the outages it recovered from, and the notes that name what
//! limited the run (the server's credits, the client thread's signing or encryption).

use storbench_core::EngineInfo;
use storbench_smb::SmbUrl;
use storbench_smb::session::Outage;
use storbench_smb::url::PASSWORD_ENV;

use super::SmbEngine;

impl SmbEngine {
    /// The details and notes of [`storbench_core::Engine::info`].
    pub(super) fn describe(&self) -> EngineInfo {
        let Some(s) = self.session.as_ref() else {
            return EngineInfo::default();
        };
        let c = s.client();
        let i = c.info();
        let mut details = vec![
            ("protocol".to_string(), "SMB".to_string()),
            ("dialect".to_string(), i.dialect_name().to_string()),
            ("server".to_string(), c.server().to_string()),
            ("share".to_string(), c.share().to_string()),
            (
                "signing".to_string(),
                i.signing.unwrap_or("off").to_string(),
            ),
            (
                "encryption".to_string(),
                i.cipher.unwrap_or("off").to_string(),
            ),
            ("max_read".to_string(), i.max_read.to_string()),
            ("max_write".to_string(), i.max_write.to_string()),
            (
                "credits_granted".to_string(),
                c.credits_granted().to_string(),
            ),
            (
                "login".to_string(),
                if i.guest { "guest" } else { "user" }.to_string(),
            ),
        ];
        let mut notes: Vec<String> = s
            .outages()
            .iter()
            .map(|o| outage_note(c.server(), o))
            .collect();
        let q = s.queue_stats();
        let mean = q.mean_in_flight();
        let (reclaimed, reopened) = s.outages().iter().fold((0, 0), |(a, b), o| {
            (a + o.files.reclaimed, b + o.files.reopened)
        });
        details.push(("files_reclaimed".into(), reclaimed.to_string()));
        details.push(("files_reopened".into(), reopened.to_string()));
        details.push(("max_in_flight".into(), q.peak_in_flight.to_string()));
        details.push(("mean_in_flight".into(), format!("{mean:.1}")));
        details.extend(self.round_trip.map(crate::round_trip::detail));
        if let Some(note) = starvation(q.credit_waits, mean, self.depth, c.credits_granted()) {
            notes.push(note);
        }
        let what = match (i.cipher, i.signing) {
            (Some(cipher), _) => Some(format!("encryption ({cipher})")),
            (None, Some(alg)) => Some(format!("signing ({alg})")),
            _ => None,
        };
        if let Some(what) = what {
            let now = storbench_core::cpu::Usage::thread();
            let cost = CryptoCost {
                crypto_ns: s.crypto_ns(),
                cpu_ns: (now.usr_ns + now.sys_ns)
                    .saturating_sub(self.cpu_at_connect.usr_ns + self.cpu_at_connect.sys_ns),
                wait_ns: now.wait_ns.saturating_sub(self.cpu_at_connect.wait_ns),
                wall_ns: s.connected_at().elapsed().as_nanos() as u64,
            };
            details.push(("crypto_ms".into(), (cost.crypto_ns / 1_000_000).to_string()));
            details.push((
                "client_cpu_ms".into(),
                (cost.cpu_ns / 1_000_000).to_string(),
            ));
            details.push((
                "client_busy_ms".into(),
                ((cost.cpu_ns + cost.wait_ns) / 1_000_000).to_string(),
            ));
            notes.extend(cost.note(&what));
        }
        if self.url.as_ref().is_some_and(SmbUrl::password_in_url) {
            notes.push(format!(
                "the SMB password was given in the URL (visible to other users in the process list); use {PASSWORD_ENV}"
            ));
        }
        let interface = c
            .conn()
            .local()
            .and_then(|a| storbench_core::nic::interface_of(a.ip()));
        EngineInfo {
            details,
            notes,
            interface,
        }
    }
}

/// One outage's note.
fn outage_note(server: &str, o: &Outage) -> String {
    if o.first {
        return format!(
            "SMB server {server} did not answer when the job started ({}), though it \
             had earlier in the run; logged in after {:.1} s",
            o.reason,
            o.lasted.as_secs_f64()
        );
    }
    format!(
        "SMB connection to {server} lost at {:.1} s ({}); reconnected after {:.1} s, \
         {}{}, {} IO(s) sent again",
        o.at.as_secs_f64(),
        o.reason,
        o.lasted.as_secs_f64(),
        o.files.describe(),
        if o.listing {
            ", the directory listing restarted (entries returned before skipped)"
        } else {
            ""
        },
        o.resent
    )
}

/// The credit-starvation note: IOs had to wait for credits, and the mean number in flight
/// stayed below 90% of `iodepth` (a moment at full depth does not hide it).
fn starvation(waits: u64, mean: f64, depth: u32, granted: u32) -> Option<String> {
    if waits == 0 || mean >= 0.9 * f64::from(depth) {
        return None;
    }
    Some(format!(
        "credit starvation: the SMB server's credits kept {mean:.1} IO(s) in flight on average, fewer than iodepth={depth} (IOs waited for credits {waits} time(s); at most {granted} credits held): the server, not the queue depth, set the concurrency"
    ))
}

/// Where the client thread's time went since it connected, for the crypto note.
#[derive(Clone, Copy, Debug)]
struct CryptoCost {
    /// In signing, checking, sealing and opening messages: wall time (a clock read on each
    /// side, cheap enough per IO), so it includes any wait for a CPU in the middle; it is
    /// set against the thread's CPU plus its waits for a CPU, which include the same.
    crypto_ns: u64,
    /// The thread's CPU (user + system).
    cpu_ns: u64,
    /// Ready to run, waiting for a CPU.
    wait_ns: u64,
    wall_ns: u64,
}

/// Signing or encryption is named the limit when it took at least this share of the client
/// thread's busy time (running or waiting for a CPU)...
const CRYPTO_SHARE: f64 = 0.5;
/// ...and the thread was running or waiting to run at least this share of the time (it
/// had no time to spare for the server).
const THREAD_BUSY: f64 = 0.8;

impl CryptoCost {
    /// The note naming `what` (`signing (AES-128-CMAC)`) as the limit, with its figures.
    fn note(&self, what: &str) -> Option<String> {
        if self.cpu_ns == 0 || self.wall_ns == 0 {
            return None;
        }
        let busy_ns = self.cpu_ns + self.wait_ns;
        let share = self.crypto_ns as f64 / busy_ns as f64;
        let busy = busy_ns as f64 / self.wall_ns as f64;
        if share < CRYPTO_SHARE || busy < THREAD_BUSY {
            return None;
        }
        Some(format!(
            "{what} is the client's limit: it took {:.0}% of the client thread's busy time ({:.2} s of {:.2} s; {:.2} s per second of the run), and the thread was busy {:.0}% of the time",
            share.min(1.0) * 100.0,
            self.crypto_ns as f64 / 1e9,
            busy_ns as f64 / 1e9,
            self.crypto_ns as f64 / self.wall_ns as f64,
            busy.min(1.0) * 100.0
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::CryptoCost;

    fn cost(crypto_ms: u64, cpu_ms: u64, wait_ms: u64, wall_ms: u64) -> CryptoCost {
        CryptoCost {
            crypto_ns: crypto_ms * 1_000_000,
            cpu_ns: cpu_ms * 1_000_000,
            wait_ns: wait_ms * 1_000_000,
            wall_ns: wall_ms * 1_000_000,
        }
    }

    #[test]
    fn starvation_is_named_when_the_mean_depth_stays_below_iodepth() {
        let n = super::starvation(120, 16.3, 64, 80).expect("named");
        assert!(
            n.starts_with("credit starvation: the SMB server's credits kept 16.3 IO(s) in flight on average, fewer than iodepth=64 (IOs waited for credits 120 time(s); at most 80 credits held)"),
            "{n}"
        );
        assert!(super::starvation(0, 16.3, 64, 80).is_none(), "no waits");
        assert!(
            super::starvation(5, 60.0, 64, 80).is_none(),
            "near full depth"
        );
    }

    #[test]
    fn crypto_is_named_only_when_it_dominates_a_busy_client_thread() {
        let n = cost(600, 900, 100, 1000)
            .note("signing (AES-128-CMAC)")
            .expect("named");
        assert!(
            n.starts_with("signing (AES-128-CMAC) is the client's limit: it took 60% of the client thread's busy time (0.60 s of 1.00 s; 0.60 s per second of the run)"),
            "{n}"
        );
        assert!(n.ends_with("busy 100% of the time"), "{n}");
        // Most of the busy time in crypto, but the thread mostly waited for the server.
        assert!(cost(300, 400, 0, 1000).note("x").is_none());
        // A busy thread spending its time elsewhere.
        assert!(cost(300, 850, 100, 1000).note("x").is_none());
        assert!(cost(0, 0, 0, 0).note("x").is_none());
    }
}
