//! The server's side of a run read over SNMP (`--server-stats`): its figures over the run
//! and one row per reading, so the report shows what the NAS did while the client measured.

use std::fmt::Write as _;

use storbench_model::result::ServerStats;

const MB: f64 = 1e6;

pub fn section(html: &mut String, s: &ServerStats) {
    let _ = writeln!(
        html,
        "<div class=\"server\"><p>server {} over {:.1} s:</p><ul>",
        escape(&s.source),
        s.duration_ms as f64 / 1000.0
    );
    if let Some(busy) = s.cpu_busy_percent {
        let cpus = s.ncpus.map_or(String::new(), |n| format!(" of {n} CPUs"));
        let _ = writeln!(html, "<li>CPU {busy:.0}% busy{cpus}</li>");
    }
    if !s.cpu_loads.is_empty() {
        let loads: Vec<String> = s.cpu_loads.iter().map(|l| format!("{l}%")).collect();
        let _ = writeln!(
            html,
            "<li>each CPU over the agent's last minute: {}</li>",
            loads.join(", ")
        );
    }
    let secs = (s.duration_ms as f64 / 1000.0).max(1e-3);
    for n in &s.nics {
        let _ = writeln!(
            html,
            "<li>{}: received {:.1} MB/s, sent {:.1} MB/s (link {} Mbit/s)</li>",
            escape(&n.name),
            n.rx_bytes as f64 / secs / MB,
            n.tx_bytes as f64 / secs / MB,
            n.speed_mbps
        );
    }
    for d in &s.disks {
        let busy = d.busy_us.map_or(String::new(), |b| {
            format!(", busy {:.0}%", b as f64 / 1e4 / secs)
        });
        let _ = writeln!(
            html,
            "<li>disk {}: read {:.1} MB/s, wrote {:.1} MB/s{busy}</li>",
            escape(&d.name),
            d.read_bytes as f64 / secs / MB,
            d.write_bytes as f64 / secs / MB
        );
    }
    if let Some(e) = &s.error {
        let _ = writeln!(html, "<li>unknown: {}</li>", escape(e));
    }
    html.push_str("</ul>\n");
    if !s.samples.is_empty() {
        html.push_str(
            "<details><summary>server over time</summary><table class=\"server-samples\">\
             <tr><th>s</th><th>CPU %</th><th>received MB/s</th><th>sent MB/s</th>\
             <th>disk read MB/s</th><th>disk write MB/s</th><th>busiest disk %</th></tr>\n",
        );
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        for p in &s.samples {
            let _ = writeln!(
                html,
                "<tr><td>{:.1}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td></tr>",
                p.t_ms as f64 / 1000.0,
                pct(p.cpu_busy_percent),
                p.rx_bytes_per_s / MB,
                p.tx_bytes_per_s / MB,
                p.disk_read_bytes_per_s / MB,
                p.disk_write_bytes_per_s / MB,
                pct(p.disk_busy_percent)
            );
        }
        html.push_str("</table></details>\n");
    }
    html.push_str("</div>\n");
}

/// Text made safe inside HTML (the rest of the page is escaped by its template).
pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use storbench_model::result::{ServerNic, ServerSample};

    #[test]
    fn the_servers_figures_and_samples_are_shown() {
        let s = ServerStats {
            source: "snmp://nas:161".into(),
            duration_ms: 2000,
            cpu_busy_percent: Some(97.2),
            ncpus: Some(2),
            nics: vec![ServerNic {
                name: "eth0".into(),
                speed_mbps: 1000,
                rx_bytes: 200_000_000,
                tx_bytes: 0,
            }],
            samples: vec![ServerSample {
                t_ms: 1000,
                cpu_busy_percent: None,
                rx_bytes_per_s: 1.5e8,
                ..ServerSample::default()
            }],
            ..ServerStats::default()
        };
        let mut html = String::new();
        section(&mut html, &s);
        assert!(html.contains("server snmp://nas:161 over 2.0 s"), "{html}");
        assert!(html.contains("CPU 97% busy of 2 CPUs"), "{html}");
        assert!(html.contains("eth0: received 100.0 MB/s"), "{html}");
        assert!(
            html.contains("<tr><td>1.0</td><td>-</td><td>150.0</td>"),
            "{html}"
        );
    }
}
