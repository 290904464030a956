//! `/etc/hosts`: `ADDRESS NAME [ALIAS…]`, `#` starts a comment, names match without case.

use std::net::IpAddr;

/// Every address `/etc/hosts` (its text) gives `name`, in file order.
pub fn lookup_hosts(text: &str, name: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_ascii_whitespace();
        let Some(Ok(ip)) = fields.next().map(str::parse::<IpAddr>) else {
            continue;
        };
        if fields.any(|n| n.trim_end_matches('.').eq_ignore_ascii_case(name)) {
            out.push(ip);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_and_aliases() {
        let text = "127.0.0.1 localhost\n192.168.1.10 nas.home nas\nnot-an-ip nas\n\
                    fe80::1%eth0 nas\n192.168.1.11 nas # second\n#192.168.1.12 nas\n";
        let got: Vec<String> = lookup_hosts(text, "NAS")
            .iter()
            .map(|i| i.to_string())
            .collect();
        assert_eq!(got, ["192.168.1.10", "192.168.1.11"]);
        assert!(lookup_hosts(text, "na").is_empty());
        assert!(lookup_hosts("", "nas").is_empty());
    }
}
