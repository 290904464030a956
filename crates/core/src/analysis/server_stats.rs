//! The server's side (`--server-stats snmp://…`): its CPU, NICs and disks as read from its
//! own agent during the run, named as the limit when one of them was full. Reads only
//! `RunResult::server_stats`, which the CLI's sampling thread fills after the run.

use super::{BUSY, info, limit};
use storbench_model::result::{Note, RunResult, ServerStats};

/// Adds the server's notes to `run.notes`; nothing when no server was sampled.
pub fn annotate(run: &mut RunResult) {
    let Some(stats) = &run.server_stats else {
        return;
    };
    let notes = judge(stats);
    run.notes.extend(notes);
}

/// The notes one server's figures call for.
pub fn judge(s: &ServerStats) -> Vec<Note> {
    let mut notes = Vec::new();
    let who = format!("the server ({})", s.source);
    if let Some(e) = &s.error {
        notes.push(info(
            "server.unknown",
            format!("{who}: its counters are unknown or incomplete: {e}"),
        ));
    }
    let cpus = s.ncpus.map_or(String::new(), |n| format!(" ({n} CPUs)"));
    let span = s.cpu_span_ms.map_or("the run".to_string(), |ms| {
        format!(
            "the {:.1} s its agent's tick counters cover around the {:.1} s run",
            ms as f64 / 1000.0,
            s.duration_ms as f64 / 1000.0
        )
    });
    if let Some(busy) = s.cpu_busy_percent.filter(|b| *b >= BUSY) {
        notes.push(limit(
            "limit.server-cpu",
            format!(
                "{who} kept its CPUs{cpus} {busy:.0}% busy over {span} (UCD-SNMP-MIB): the server's CPU is the limit"
            ),
        ));
    } else if let (Some(busy), Some(_)) = (s.cpu_busy_percent, s.cpu_span_ms) {
        notes.push(info(
            "server.cpu",
            format!(
                "{who} kept its CPUs{cpus} {busy:.0}% busy over {span} (net-snmp refreshes them every 5 s: the figure runs from its last refresh before the run to its first after it)"
            ),
        ));
    }
    let n = s.cpu_loads.len();
    if let Some((i, load)) = s
        .cpu_loads
        .iter()
        .enumerate()
        .max_by_key(|(_, l)| **l)
        .filter(|(_, l)| f64::from(**l) >= BUSY)
    {
        notes.push(limit(
            "limit.server-cpu",
            format!(
                "{who}: its CPU {} of {n} was {load}% busy over the agent's last minute (hrProcessorLoad): a server thread on it may be the limit",
                i + 1
            ),
        ));
    }
    let secs = s.duration_ms as f64 / 1000.0;
    if secs <= 0.0 {
        return notes;
    }
    for nic in &s.nics {
        if nic.speed_mbps == 0 {
            continue;
        }
        let line = nic.speed_mbps as f64 * 1e6 / 8.0;
        for (dir, bytes) in [("received", nic.rx_bytes), ("sent", nic.tx_bytes)] {
            let rate = bytes as f64 / secs;
            if rate >= line * BUSY / 100.0 {
                notes.push(limit(
                    "limit.server-link",
                    format!(
                        "{who}: its {} {dir} {:.1} MB/s, {:.0}% of its {} Mbit/s: the server's link is the limit",
                        nic.name,
                        rate / 1e6,
                        rate * 100.0 / line,
                        nic.speed_mbps
                    ),
                ));
            }
        }
    }
    for d in &s.disks {
        let Some(busy_us) = d.busy_us else { continue };
        let busy = busy_us as f64 / 1e4 / secs;
        if busy >= BUSY {
            notes.push(limit(
                "limit.server-disk",
                format!(
                    "{who}: its disk {} was busy {:.0}% of the run (read {:.1} MB/s, wrote {:.1} MB/s): the server's disk is the limit",
                    d.name,
                    busy.min(100.0),
                    d.read_bytes as f64 / secs / 1e6,
                    d.write_bytes as f64 / secs / 1e6
                ),
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use storbench_model::result::{ServerDisk, ServerNic};

    fn stats() -> ServerStats {
        ServerStats {
            source: "snmp://nas:161".into(),
            duration_ms: 10_000,
            cpu_busy_percent: Some(40.0),
            ncpus: Some(4),
            cpu_loads: vec![10, 35, 20, 5],
            nics: vec![ServerNic {
                name: "eth0".into(),
                speed_mbps: 1000,
                rx_bytes: 500_000_000,
                tx_bytes: 1_000_000,
            }],
            disks: vec![ServerDisk {
                name: "sda".into(),
                read_bytes: 1 << 30,
                write_bytes: 0,
                busy_us: Some(5_000_000),
            }],
            ..ServerStats::default()
        }
    }

    fn codes(s: &ServerStats) -> Vec<String> {
        judge(s).into_iter().map(|n| n.code).collect()
    }

    #[test]
    fn a_server_with_room_to_spare_is_no_limit() {
        // 50 MB/s on a 1 Gbit/s link (40%), the disk busy half the time, CPUs at 40%.
        assert!(judge(&stats()).is_empty(), "{:?}", judge(&stats()));
    }

    #[test]
    fn a_busy_server_cpu_is_named_with_its_figure() {
        let mut s = stats();
        s.cpu_busy_percent = Some(96.4);
        let notes = judge(&s);
        assert_eq!(codes(&s), ["limit.server-cpu"]);
        assert!(
            notes[0].message.contains("(4 CPUs) 96% busy"),
            "{}",
            notes[0].message
        );
        // One CPU full over the last minute, the others idle: named by itself.
        let mut s = stats();
        s.cpu_loads = vec![3, 99, 2, 1];
        let notes = judge(&s);
        assert!(
            notes[0].message.contains("CPU 2 of 4 was 99% busy"),
            "{}",
            notes[0].message
        );
        s.cpu_loads = vec![3, 89, 2, 1];
        assert!(judge(&s).is_empty());
    }

    /// A short run's CPU figure spans the agent's refreshes around it: said with both
    /// durations, as information when the CPUs had room, in the limit when they had none.
    #[test]
    fn a_short_runs_cpu_figure_states_the_span_its_ticks_cover() {
        let mut s = stats();
        s.duration_ms = 2_000;
        s.nics.clear();
        s.disks.clear();
        s.cpu_span_ms = Some(7_400);
        s.cpu_busy_percent = Some(23.0);
        let notes = judge(&s);
        assert_eq!(codes(&s), ["server.cpu"]);
        assert!(
            notes[0].message.contains(
                "(4 CPUs) 23% busy over the 7.4 s its agent's tick counters cover around the 2.0 s run"
            ),
            "{}",
            notes[0].message
        );
        s.cpu_busy_percent = Some(95.0);
        let notes = judge(&s);
        assert_eq!(codes(&s), ["limit.server-cpu"]);
        assert!(
            notes[0].message.contains("95% busy over the 7.4 s"),
            "{}",
            notes[0].message
        );
    }

    #[test]
    fn a_full_server_link_and_a_busy_server_disk_are_named() {
        let mut s = stats();
        s.nics[0].rx_bytes = 1_180_000_000; // 118 MB/s of 125 = 94%
        s.disks[0].busy_us = Some(9_700_000);
        let notes = judge(&s);
        assert_eq!(codes(&s), ["limit.server-link", "limit.server-disk"]);
        assert!(
            notes[0]
                .message
                .contains("eth0 received 118.0 MB/s, 94% of its 1000 Mbit/s"),
            "{}",
            notes[0].message
        );
        assert!(
            notes[1]
                .message
                .contains("sda was busy 97% of the run (read 107.4 MB/s"),
            "{}",
            notes[1].message
        );
        // Just under: 89%.
        s.nics[0].rx_bytes = 1_112_500_000;
        s.disks[0].busy_us = Some(8_900_000);
        assert!(judge(&s).is_empty(), "{:?}", judge(&s));
    }

    #[test]
    fn unknown_counters_say_why() {
        let s = ServerStats {
            source: "snmp://nas:161".into(),
            error: Some("no answer from 10.0.0.7:161".into()),
            ..ServerStats::default()
        };
        let notes = judge(&s);
        assert_eq!(notes[0].code, "server.unknown");
        assert!(
            notes[0]
                .message
                .contains("unknown or incomplete: no answer"),
            "{}",
            notes[0].message
        );
    }
}
