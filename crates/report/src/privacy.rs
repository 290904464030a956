//! What a shared report leaves out. By default the binary's and the database's paths (they
//! name the user's home and layout, and say nothing about the figures); with `--hide-host`
//! also host names: this machine's, the servers', and the host part of target URLs.
//! Applied to a copy of each run before anything is rendered, so no writer can forget it.

use storbench_model::result::RunResult;

/// Written where a host name was.
pub const HIDDEN_HOST: &str = "(host)";

/// What to leave out of a shared report.
#[derive(Clone, Debug, Default)]
pub struct Privacy {
    pub hide_host: bool,
    /// Keep the binary's and database's paths in the command line.
    pub show_paths: bool,
}

impl Privacy {
    /// A copy of `run` with what this privacy leaves out removed.
    pub fn apply(&self, run: &RunResult) -> RunResult {
        let mut run = run.clone();
        if !self.show_paths {
            run.command_line = without_paths(&run.command_line);
            for (path, _) in &mut run.job_files {
                *path = file_name(path);
            }
        }
        if self.hide_host {
            let hosts = hosts_of(&run);
            let hide = |s: &mut String| *s = replace_hosts(s, &hosts);
            run.command_line.iter_mut().for_each(hide);
            run.notes.iter_mut().for_each(|n| hide(&mut n.message));
            for job in run.groups.iter_mut().flat_map(|g| g.jobs.iter_mut()) {
                job.targets.iter_mut().for_each(hide);
                job.engine_details.iter_mut().for_each(|(_, v)| hide(v));
            }
            if let Some(stats) = &mut run.server_stats {
                stats.source = format!("snmp://{HIDDEN_HOST}");
            }
            if let Some(b) = &mut run.bonnie {
                hide(&mut b.name);
            }
            if let Some(hosts) = &mut run.hosts {
                for r in &mut hosts.ranks {
                    r.host = format!("{HIDDEN_HOST} {}", r.rank);
                }
                // A multi-host bonnie run's rows are named by their hosts.
                for h in hosts.bonnie.iter_mut().flat_map(|b| b.hosts.iter_mut()) {
                    h.result.name = format!("{HIDDEN_HOST} {}", h.rank);
                }
            }
            if let Some(env) = &mut run.environment {
                env.hostname.clear();
                for t in &mut env.targets {
                    hide(&mut t.target);
                    t.server = None;
                    t.interface = None;
                }
            }
        }
        run
    }

    /// A target as the card shows it: a URL's host replaced when hosts are hidden.
    pub fn target(&self, target: &str) -> String {
        match url_host(target) {
            Some(host) if self.hide_host => target.replacen(host, HIDDEN_HOST, 1),
            _ => target.to_string(),
        }
    }
}

/// The command line with argv[0] reduced to its file name and `--db PATH` left out.
fn without_paths(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut skip = false;
    for (i, arg) in argv.iter().enumerate() {
        if std::mem::take(&mut skip) {
            continue;
        }
        if i == 0 {
            out.push(file_name(arg));
        } else if arg == "--db" {
            skip = true;
        } else if !arg.starts_with("--db=") {
            out.push(arg.clone());
        }
    }
    out
}

fn file_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// This host's name, the servers' and every URL's host, longest first (so `nas.lan` goes
/// before `nas`).
fn hosts_of(run: &RunResult) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    let mut add = |h: &str| {
        let h = h.trim();
        if h.len() >= 2 && !hosts.iter().any(|k| k == h) {
            hosts.push(h.to_string());
        }
    };
    if let Some(env) = &run.environment {
        add(&env.hostname);
        for t in &env.targets {
            if let Some(s) = &t.server {
                add(s.rsplit_once(':').map_or(s.as_str(), |(h, _)| h));
            }
            if let Some(h) = url_host(&t.target) {
                add(h);
            }
        }
    }
    for r in run.hosts.iter().flat_map(|h| &h.ranks) {
        add(&r.host);
    }
    for job in run.groups.iter().flat_map(|g| &g.jobs) {
        for t in &job.targets {
            if let Some(h) = url_host(t) {
                add(h);
            }
        }
    }
    hosts.sort_by_key(|h| std::cmp::Reverse(h.len()));
    hosts
}

fn replace_hosts(s: &str, hosts: &[String]) -> String {
    let mut s = s.to_string();
    for h in hosts {
        if s.contains(h.as_str()) {
            s = s.replace(h.as_str(), HIDDEN_HOST);
        }
    }
    s
}

/// `nfs://user@nas.lan:2049/export` → `nas.lan`; `None` for a path.
fn url_host(target: &str) -> Option<&str> {
    let (_, rest) = target.split_once("://")?;
    let authority = rest.split('/').next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storbench_model::result::{Environment, TargetInfo};

    fn run() -> RunResult {
        let mut r = RunResult {
            schema: storbench_model::result::RESULT_SCHEMA,
            mode: storbench_model::result::RunMode::Quick,
            tool_version: String::new(),
            started_unix_ms: 0,
            finished_unix_ms: 0,
            command_line: ["/home/ann/bin/storbench", "--db", "/home/ann/r.db", "quick"]
                .iter()
                .chain(&["--db=/x/y.db", "nfs://ann@nas.lan:2049/pool"])
                .map(|s| s.to_string())
                .collect(),
            job_files: Vec::new(),
            global_options: Vec::new(),
            groups: Vec::new(),
            disks: Vec::new(),
            nics: Vec::new(),
            system_cpu: None,
            notes: Vec::new(),
            environment: None,
            bonnie: None,
            repeats: None,
            interrupted: false,
            verdicts: Vec::new(),
            hosts: None,
            diagnosis: None,
            server_stats: Some(storbench_model::result::ServerStats {
                source: "snmp://nas.lan:1161".into(),
                ..Default::default()
            }),
        };
        r.environment = Some(Environment {
            hostname: "client7".into(),
            targets: vec![TargetInfo {
                target: "nfs://ann@nas.lan:2049/pool".into(),
                server: Some("nas.lan:2049".into()),
                ..TargetInfo::default()
            }],
            ..Environment::default()
        });
        r
    }

    #[test]
    fn paths_are_left_out_unless_asked() {
        let p = Privacy::default().apply(&run());
        assert_eq!(
            p.command_line,
            ["storbench", "quick", "nfs://ann@nas.lan:2049/pool"]
        );
        let kept = Privacy {
            show_paths: true,
            ..Privacy::default()
        }
        .apply(&run());
        assert_eq!(kept.command_line, run().command_line);
    }

    #[test]
    fn hosts_are_hidden_everywhere() {
        let privacy = Privacy {
            hide_host: true,
            ..Privacy::default()
        };
        let p = privacy.apply(&run());
        let text = serde_json::to_string(&p).unwrap();
        assert!(
            !text.contains("nas.lan") && !text.contains("client7"),
            "{text}"
        );
        assert!(text.contains("nfs://ann@(host):2049/pool"), "{text}");
        assert_eq!(privacy.target("nfs://nas/x"), "nfs://(host)/x");
        assert_eq!(privacy.target("/mnt/nas"), "/mnt/nas");
        assert_eq!(url_host("iscsi://[fe80::1]:3260/iqn"), Some("fe80::1"));
    }
}
