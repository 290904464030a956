//! `/etc/resolv.conf`: `nameserver` (at most 3, as glibc), `search`/`domain`, and the
//! `ndots:`, `timeout:` and `attempts:` options. Unknown lines are ignored, as by glibc.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvConf {
    pub servers: Vec<SocketAddr>,
    pub search: Vec<String>,
    pub ndots: usize,
    pub timeout: Duration,
    pub attempts: u32,
}

impl ResolvConf {
    pub fn parse(text: &str) -> ResolvConf {
        let mut c = ResolvConf {
            servers: Vec::new(),
            search: Vec::new(),
            ndots: 1,
            timeout: Duration::from_secs(5),
            attempts: 2,
        };
        for line in text.lines() {
            let line = line.split(['#', ';']).next().unwrap_or("");
            let mut f = line.split_ascii_whitespace();
            match f.next() {
                Some("nameserver") => {
                    // A scoped address (fe80::1%eth0) is not supported: skipped.
                    if let Some(Ok(ip)) = f.next().map(str::parse::<IpAddr>)
                        && c.servers.len() < 3
                    {
                        c.servers.push(SocketAddr::new(ip, 53));
                    }
                }
                // The last of `search` and `domain` wins, as in glibc.
                Some("search") | Some("domain") => {
                    c.search = f.map(|d| d.trim_end_matches('.').to_string()).collect();
                }
                Some("options") => {
                    for o in f {
                        c.option(o);
                    }
                }
                _ => {}
            }
        }
        if c.servers.is_empty() {
            // glibc's default when the file names none.
            c.servers.push(SocketAddr::from(([127, 0, 0, 1], 53)));
        }
        c
    }

    fn option(&mut self, o: &str) {
        let Some((k, v)) = o.split_once(':') else {
            return;
        };
        let Ok(n) = v.parse::<u32>() else {
            return;
        };
        match k {
            "ndots" => self.ndots = n.min(15) as usize,
            "timeout" => self.timeout = Duration::from_secs(u64::from(n.clamp(1, 30))),
            "attempts" => self.attempts = n.clamp(1, 5),
            _ => {}
        }
    }

    /// The names to ask for, in order: as given first when it has at least `ndots` dots
    /// (or ends with one), then with each search domain, then as given otherwise.
    pub fn candidates(&self, host: &str) -> Vec<String> {
        if let Some(abs) = host.strip_suffix('.') {
            return vec![abs.to_string()];
        }
        let dots = host.bytes().filter(|&b| b == b'.').count();
        let searched = self.search.iter().map(|d| format!("{host}.{d}"));
        if dots >= self.ndots {
            std::iter::once(host.to_string()).chain(searched).collect()
        } else {
            searched.chain(std::iter::once(host.to_string())).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_glibc() {
        let c = ResolvConf::parse(
            "# comment\nnameserver 10.0.0.1\nnameserver ::1\nnameserver bogus\n\
             nameserver 10.0.0.2\nnameserver 10.0.0.3\ndomain old\nsearch lan home.arpa.\n\
             options ndots:2 timeout:1 attempts:3 rotate\n",
        );
        let servers: Vec<String> = c.servers.iter().map(|s| s.to_string()).collect();
        assert_eq!(servers, ["10.0.0.1:53", "[::1]:53", "10.0.0.2:53"]);
        assert_eq!(c.search, ["lan", "home.arpa"]);
        assert_eq!(
            (c.ndots, c.timeout, c.attempts),
            (2, Duration::from_secs(1), 3)
        );
    }

    #[test]
    fn empty_file_asks_localhost() {
        let c = ResolvConf::parse("");
        assert_eq!(c.servers, [SocketAddr::from(([127, 0, 0, 1], 53))]);
        assert_eq!(c.candidates("nas"), ["nas"]);
    }

    #[test]
    fn search_order_follows_ndots() {
        let c = ResolvConf::parse("search lan\n");
        assert_eq!(c.candidates("nas"), ["nas.lan", "nas"]);
        assert_eq!(
            c.candidates("nas.example"),
            ["nas.example", "nas.example.lan"]
        );
        assert_eq!(c.candidates("nas.example."), ["nas.example"]);
    }
}
