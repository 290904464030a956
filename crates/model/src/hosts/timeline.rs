//! The ranks' per-second timelines on one time line: each rank's points are moved onto
//! rank 0's clock with the offset measured at the start, then summed per second of the
//! group, so the aggregate's own course over time (a NAS that slows when every client
//! writes at once) shows, not only its mean.

use super::RankRun;
use crate::result::TimelinePoint;

/// The group's timeline over all ranks: point `i` holds what every rank completed in
/// second `i` after the group's earliest start (`start_unix_ms`, rank 0's clock), `t_ms`
/// being that second's end. A rank's interval is counted in the second its end falls in
/// (ranks sample about once a second, so an interval spans at most two of them).
pub(super) fn aggregate_timeline(
    gid: u32,
    ranks: &[RankRun],
    start_unix_ms: f64,
) -> Vec<TimelinePoint> {
    let mut out: Vec<TimelinePoint> = Vec::new();
    for r in ranks {
        let Ok(run) = &r.result else { continue };
        let jobs = run
            .groups
            .iter()
            .filter(|g| g.id == gid)
            .flat_map(|g| &g.jobs)
            .filter(|j| j.runtime_ms > 0);
        for j in jobs {
            let job_start = j.end_unix_ms as f64 - j.runtime_ms as f64 - r.clock_offset_ms;
            for p in &j.timeline {
                let at = job_start + p.t_ms as f64 - start_unix_ms;
                // An end exactly on a second's boundary belongs to the second it ends.
                let second = ((at - 1.0) / 1000.0).floor().max(0.0) as usize;
                add(&mut out, second, p);
            }
        }
    }
    out
}

fn add(out: &mut Vec<TimelinePoint>, second: usize, p: &TimelinePoint) {
    while out.len() <= second {
        out.push(TimelinePoint {
            t_ms: (out.len() as u64 + 1) * 1000,
            ..Default::default()
        });
    }
    let o = &mut out[second];
    for d in 0..3 {
        o.bytes[d] += p.bytes[d];
        o.ios[d] += p.ios[d];
        o.lat_sum_ns[d] += p.lat_sum_ns[d];
    }
}
