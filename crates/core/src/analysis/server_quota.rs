//! A server on this host whose control group has a CPU quota (cgroup v1
//! `cpu.cfs_quota_us`, v2 `cpu.max`): how much of that quota it used. One computation for
//! ordinary runs' `limit.server-cpu` and for diagnose's server stage.

use storbench_model::result::ServerCpu;

use super::BUSY;

/// Throttled in this share of its control group's periods (or more): at its quota,
/// whatever the CPU accounting's rounding says of the share used.
pub(crate) const THROTTLED: f64 = 50.0;

/// A server's use of its cgroup's CPU quota.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct QuotaUse {
    /// Percent of the quota used; at least [`BUSY`] when the quota throttled it in most
    /// of its periods.
    pub share: f64,
}

impl QuotaUse {
    /// The quota held the server at its ceiling.
    pub fn at_ceiling(&self) -> bool {
        self.share >= BUSY
    }
}

/// Its use of its quota, when it has one.
pub(crate) fn quota_use(s: &ServerCpu) -> Option<QuotaUse> {
    let quota = s.quota_percent().filter(|&q| q > 0.0)?;
    let share = s.percent() / quota * 100.0;
    let held = s.throttled_percent().is_some_and(|t| t >= THROTTLED);
    Some(QuotaUse {
        share: if held { share.max(BUSY) } else { share },
    })
}

/// "2.8% of one CPU, its cgroup's quota 3.0%, throttled in 91% of its periods": the
/// figures behind [`quota_use`].
pub(crate) fn figures(s: &ServerCpu) -> String {
    let mut text = format!("{} of one CPU", percent(s.percent()));
    if let Some(q) = s.quota_percent() {
        text.push_str(&format!(", its cgroup's quota {}", percent(q)));
    }
    if let Some(t) = s.throttled_percent() {
        text.push_str(&format!(", throttled in {t:.0}% of its periods"));
    }
    text
}

/// "3.2%", "41%": a small share keeps a decimal.
pub(crate) fn percent(p: f64) -> String {
    if p < 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(used_bp: u64, quota_bp: Option<u64>, throttled: Option<[u64; 2]>) -> ServerCpu {
        ServerCpu {
            process: "tgtd".into(),
            usr_ns: used_bp * 100_000,
            duration_ms: 1000,
            quota_basis_points: quota_bp,
            throttled_periods: throttled,
            ..ServerCpu::default()
        }
    }

    #[test]
    fn the_share_of_a_quota_and_a_throttled_server_at_its_ceiling() {
        // 2.8% of one CPU under a 3% quota: 93% of it.
        let s = held(280, Some(300), None);
        let q = quota_use(&s).unwrap();
        assert!((q.share - 93.3).abs() < 0.1, "{q:?}");
        assert!(q.at_ceiling());
        // 2% of 3%, throttled in 60% of its periods: at its ceiling all the same.
        let s = held(200, Some(300), Some([100, 60]));
        assert!(quota_use(&s).unwrap().at_ceiling());
        // Throttled in 40%: not.
        let s = held(200, Some(300), Some([100, 40]));
        assert!(!quota_use(&s).unwrap().at_ceiling());
        // No quota: nothing to use.
        assert_eq!(quota_use(&held(280, None, None)), None);
        assert_eq!(
            figures(&held(280, Some(300), Some([100, 91]))),
            "2.8% of one CPU, its cgroup's quota 3.0%, throttled in 91% of its periods"
        );
    }
}
