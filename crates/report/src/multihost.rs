//! The "All clients" block of a multi-host run's normal output (docs/multihost.md): the
//! ranks with their hosts and clock offsets, then per group each rank's share and IOR's
//! aggregate (all bytes over the earliest start to the latest end) with the first-done
//! ("stonewall") figure. Reads the result model only.

use std::io::{self, Write};

use storbench_model::hosts::{GroupAggregate, MultiHost};
use storbench_model::result::RunResult;

use crate::fio::units::{Unit, num2str};

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// Writes the block when the run is a multi-host one; nothing otherwise.
pub fn render(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let Some(hosts) = run.hosts.as_deref() else {
        return Ok(());
    };
    writeln!(
        out,
        "\nAll clients: {} ranks ({}), aggregate = all bytes / (latest end - earliest start):",
        hosts.ranks.len(),
        hosts.launcher
    )?;
    for r in &hosts.ranks {
        write!(
            out,
            "  rank {}: {}, clock offset {:+.3} ms",
            r.rank, r.host, r.clock_offset_ms
        )?;
        match &r.error {
            Some(e) => writeln!(out, ", failed: {e}")?,
            None => writeln!(out)?,
        }
    }
    for g in &hosts.groups {
        group(hosts, g, out)?;
    }
    Ok(())
}

fn rate(bytes_per_s: f64) -> String {
    let b = bytes_per_s.max(0.0).round() as u64;
    format!(
        "{} ({})",
        num2str(b, 4, 1, true, Unit::BytePerSec),
        num2str(b, 4, 1, false, Unit::BytePerSec)
    )
}

fn group(hosts: &MultiHost, g: &GroupAggregate, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "  group {}:", g.group)?;
    for d in (0..3).filter(|&d| g.bytes[d] > 0) {
        for p in &g.per_rank {
            let host = hosts
                .ranks
                .iter()
                .find(|r| r.rank == p.rank)
                .map_or("?", |r| r.host.as_str());
            writeln!(
                out,
                "    rank {} ({host}): {}: bw={}, io={}, from {} ms to {} ms",
                p.rank,
                DIRS[d],
                rate(p.bw[d]),
                num2str(p.bytes[d], 4, 1, true, Unit::Byte),
                p.start_ms,
                p.end_ms
            )?;
        }
        writeln!(
            out,
            "    All clients: {}: bw={}, io={}, run={} ms; first done at {} ms: bw={}",
            DIRS[d],
            rate(g.aggregate_bw[d]),
            num2str(g.bytes[d], 4, 1, true, Unit::Byte),
            g.last_done_ms,
            g.first_done_ms,
            rate(g.first_done_bw[d])
        )?;
    }
    Ok(())
}
