//! The path rule: a network job whose steady rate sits at a standard Ethernet link's
//! payload ceiling while this client's own NIC is faster points at a link of that speed
//! somewhere on the path (the server's port, a switch port, a cable negotiated down), which
//! the client cannot see. The same figure can come from a server whose disks or CPU happen
//! to run at that rate, so the note names both and how to tell them apart.

use storbench_model::confidence::Summary;
use storbench_model::result::{JobResult, NicUsage, Note, TimelinePoint};

/// A standard Ethernet link: its speed and the TCP payload it carries per second at an MTU
/// (IPv4, TCP timestamps: 1448 of 1538 bytes on the wire at MTU 1500, 8948 of 9038 at 9000).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkCeiling {
    pub speed_mbps: u64,
    pub mtu: u32,
}

/// The links the rule knows, slowest first (docs/diagnose.md's table).
pub const ETHERNET: &[LinkCeiling] = &[
    LinkCeiling::new(1_000, 1500),
    LinkCeiling::new(1_000, 9000),
    LinkCeiling::new(2_500, 1500),
    LinkCeiling::new(2_500, 9000),
    LinkCeiling::new(5_000, 1500),
    LinkCeiling::new(5_000, 9000),
    LinkCeiling::new(10_000, 1500),
    LinkCeiling::new(10_000, 9000),
    LinkCeiling::new(25_000, 1500),
    LinkCeiling::new(25_000, 9000),
];

/// How far below the TCP payload ceiling a storage protocol's data rate may sit at that
/// link: its own headers per call (NFS, SMB2, iSCSI: 0.1–0.5% at 1 MiB) and the ACK traffic
/// and pauses of a real transfer.
const PROTOCOL_SHARE: f64 = 0.03;
/// Above the ceiling: clock and counter rounding.
const OVER: f64 = 0.005;
/// A steady rate: per-second samples whose standard deviation is at most this share of
/// their mean.
const STEADY_CV: f64 = 0.05;
/// Full one-second samples needed to call a rate steady.
const MIN_SECONDS: usize = 3;
/// A sample this long counts as a whole second; the last, partial one would pull the mean
/// down.
const WHOLE_SECOND_MS: u64 = 950;

impl LinkCeiling {
    pub const fn new(speed_mbps: u64, mtu: u32) -> LinkCeiling {
        LinkCeiling { speed_mbps, mtu }
    }

    /// TCP payload bytes per second.
    pub fn payload_bytes_per_sec(&self) -> f64 {
        let (payload, wire) = match self.mtu {
            9000 => (8948.0, 9038.0),
            _ => (1448.0, 1538.0),
        };
        self.speed_mbps as f64 * 1e6 / 8.0 * payload / wire
    }

    /// "1 Gbit/s", "2.5 Gbit/s".
    pub fn speed_text(&self) -> String {
        let g = self.speed_mbps as f64 / 1000.0;
        if g.fract() == 0.0 {
            format!("{g:.0} Gbit/s")
        } else {
            format!("{g} Gbit/s")
        }
    }
}

/// A job's rate over its full seconds: mean and the standard error of that mean, bytes/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyRate {
    pub mean: f64,
    pub sd: f64,
    pub seconds: usize,
}

impl SteadyRate {
    /// The per-second rates of a timeline (all directions), when there are enough full
    /// seconds and they scatter little; `None` for a short or unsteady job.
    pub fn of(timeline: &[TimelinePoint]) -> Option<SteadyRate> {
        let rates: Vec<f64> = super::verdicts::rates_over(timeline, WHOLE_SECOND_MS)
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        if rates.len() < MIN_SECONDS {
            return None;
        }
        let s = Summary::of(&rates)?;
        let sd = s.var.sqrt();
        (s.mean > 0.0 && sd / s.mean <= STEADY_CV).then_some(SteadyRate {
            mean: s.mean,
            sd,
            seconds: s.n,
        })
    }

    /// Twice the standard error of the mean: the tolerance the measurement's own scatter
    /// allows around a ceiling.
    fn margin(&self) -> f64 {
        2.0 * self.sd / (self.seconds as f64).sqrt()
    }
}

/// The standard link slower than `nic_mbps` whose payload ceiling the rate meets, if any.
pub fn matching_link(rate: &SteadyRate, nic_mbps: u64) -> Option<LinkCeiling> {
    ETHERNET
        .iter()
        .filter(|l| l.speed_mbps < nic_mbps)
        .find(|l| {
            let c = l.payload_bytes_per_sec();
            rate.mean + rate.margin() >= c * (1.0 - PROTOCOL_SHARE)
                && rate.mean - rate.margin() <= c * (1.0 + OVER)
        })
        .copied()
}

/// The note for a network job that ran over `nic` (its speed `nic_mbps`), if its steady
/// rate sits at a slower standard link's ceiling.
pub fn path_note(job: &JobResult, nic: &NicUsage, nic_mbps: u64) -> Option<Note> {
    let rate = SteadyRate::of(&job.timeline)?;
    let link = matching_link(&rate, nic_mbps)?;
    let ceiling = link.payload_bytes_per_sec();
    let speed = link.speed_text();
    Some(super::limit(
        "limit.path-link",
        format!(
            "{name}: {mb:.1} MB/s, steady over {secs} s (±{sd:.1}), is {pct:.1}% of {speed} \
             Ethernet's payload ceiling ({cmb:.1} MB/s at MTU {mtu}) while this client's {nic} \
             is {nic_mbps} Mbit/s: a {speed} link on the path (the server's port, a switch \
             port or a cable) would explain it, and then a faster disk, more server memory \
             or a faster client would not raise it; the server's disks or CPU running at this \
             rate would give the same figure: reading data the server holds in its memory \
             tells them apart (`storbench diagnose TARGET` does)",
            name = job.name,
            mb = rate.mean / 1e6,
            secs = rate.seconds,
            sd = rate.sd / 1e6,
            pct = rate.mean / ceiling * 100.0,
            cmb = ceiling / 1e6,
            mtu = link.mtu,
            nic = nic.name,
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(mb_per_sec: &[f64]) -> Vec<TimelinePoint> {
        mb_per_sec
            .iter()
            .enumerate()
            .map(|(i, mb)| TimelinePoint {
                t_ms: (i as u64 + 1) * 1000,
                bytes: [(mb * 1e6) as u64, 0, 0],
                ..TimelinePoint::default()
            })
            .collect()
    }

    #[test]
    fn the_documented_ceilings_are_the_payload_of_each_link() {
        let mb = |speed, mtu| LinkCeiling::new(speed, mtu).payload_bytes_per_sec() / 1e6;
        assert!((mb(1_000, 1500) - 117.7).abs() < 0.05);
        assert!((mb(1_000, 9000) - 123.8).abs() < 0.05);
        assert!((mb(2_500, 1500) - 294.2).abs() < 0.1);
        assert!((mb(10_000, 1500) - 1176.9).abs() < 0.1);
        assert!((mb(25_000, 9000) - 3093.9).abs() < 0.1);
    }

    #[test]
    fn a_steady_rate_at_a_ceiling_matches_only_that_link() {
        let at_1g = SteadyRate::of(&seconds(&[117.5, 117.7, 117.6, 117.4])).unwrap();
        assert_eq!(
            matching_link(&at_1g, 10_000),
            Some(LinkCeiling::new(1_000, 1500))
        );
        let jumbo = SteadyRate::of(&seconds(&[123.4, 123.6, 123.5])).unwrap();
        assert_eq!(
            matching_link(&jumbo, 10_000),
            Some(LinkCeiling::new(1_000, 9000))
        );
        let at_2g5 = SteadyRate::of(&seconds(&[291.0, 292.5, 291.8])).unwrap();
        assert_eq!(
            matching_link(&at_2g5, 10_000),
            Some(LinkCeiling::new(2_500, 1500))
        );
        // Between ceilings, or above any, nothing.
        for mb in [100.0, 200.0, 500.0] {
            let r = SteadyRate::of(&seconds(&[mb, mb, mb])).unwrap();
            assert_eq!(matching_link(&r, 10_000), None, "{mb}");
        }
    }

    #[test]
    fn only_links_slower_than_the_clients_nic_are_candidates() {
        let at_1g = SteadyRate::of(&seconds(&[117.5, 117.7, 117.6])).unwrap();
        // A 1 Gbit/s client NIC full is the client's own link: the link rule's case.
        assert_eq!(matching_link(&at_1g, 1_000), None);
        assert!(matching_link(&at_1g, 2_500).is_some());
    }

    #[test]
    fn short_or_unsteady_rates_are_not_judged() {
        assert_eq!(SteadyRate::of(&seconds(&[117.6, 117.6])), None);
        assert_eq!(SteadyRate::of(&seconds(&[80.0, 117.6, 140.0, 117.6])), None);
        // A partial last second is left out, not averaged in.
        let mut t = seconds(&[117.6, 117.6, 117.6]);
        t.push(TimelinePoint {
            t_ms: 3300,
            bytes: [30_000_000, 0, 0],
            ..TimelinePoint::default()
        });
        let r = SteadyRate::of(&t).unwrap();
        assert_eq!(r.seconds, 3);
    }
}
