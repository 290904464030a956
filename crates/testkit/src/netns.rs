//! A network namespace joined to the host by a veth pair, for tests and benches that need a
//! "remote" peer with a real link (optionally shaped with tbf). Each namespace has a number
//! that names it and picks its private /30; the number is claimed machine-wide by creating
//! the namespace (`ip netns add` refuses a name that exists), so test processes running at
//! the same time never share a name or an address. Before anything is sent, `ip route get`
//! must show the peer address going over our own veth, or creation fails. Everything is
//! deleted on drop.

use std::io;
use std::net::Ipv4Addr;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// 10.251.0.0/16 split into /30s: one per namespace number.
const BLOCKS: u32 = 16_384;
/// Numbers tried before giving up (each taken one is a namespace that exists now).
const CLAIM_TRIES: u32 = 256;

/// Why namespaces cannot be made here (not root, no `ip`), or `None`.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root".into());
    }
    match Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => None,
        _ => Some("the ip tool (iproute2) is not installed".into()),
    }
}

/// A namespace whose veth is shaped to `rate` (tc's spelling: `1gbit`) and whose peer is
/// checked to be reached over it, for tests that need a real link; `None`, with the
/// reason printed, where namespaces cannot be made here.
pub fn shaped(rate: &str) -> Option<NetNs> {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    let ns = match NetNs::create() {
        Ok(ns) => ns,
        Err(e) => {
            eprintln!("skipped: cannot create a network namespace here: {e}");
            return None;
        }
    };
    ns.shape(rate).expect("tbf on both veth ends");
    ns.verify_route().expect("peer reached over our veth only");
    Some(ns)
}

/// A namespace `name` with `ns_if` (address `ns_addr`) inside, `host_if` (`host_addr`) outside:
/// on the host, or in the namespace `outer` (a test's "switch" between clients and a server).
pub struct NetNs {
    pub name: String,
    pub host_if: String,
    pub ns_if: String,
    pub host_addr: Ipv4Addr,
    pub ns_addr: Ipv4Addr,
    pub outer: Option<String>,
    /// Whether this value created the namespace and the veth pair, which drop removes
    /// (never ones that were there before).
    claimed: bool,
    linked: bool,
}

impl NetNs {
    /// Creates the namespace and the veth pair, brings both ends up, and checks the route.
    pub fn create() -> io::Result<NetNs> {
        Self::create_in(None)
    }

    /// Creates a namespace whose veth's outer end lives in `outer` rather than on the host:
    /// several of them behind one `outer` namespace share its link to the host, as clients
    /// behind a switch share a server's uplink.
    pub fn create_behind(outer: &NetNs) -> io::Result<NetNs> {
        Self::create_in(Some(outer.name.clone()))
    }

    fn create_in(outer: Option<String>) -> io::Result<NetNs> {
        // Start where this process has not looked yet, spread by PID so that processes
        // starting together rarely try the same number first.
        let start = std::process::id()
            .wrapping_mul(7919)
            .wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed));
        Self::claim_from(start, outer)
    }

    /// Creates the first namespace numbered `start`, `start + 1`, … whose name is free.
    fn claim_from(start: u32, outer: Option<String>) -> io::Result<NetNs> {
        for i in 0..CLAIM_TRIES {
            let mut ns = NetNs::numbered(start.wrapping_add(i) % BLOCKS, outer.clone());
            match run("ip", &["netns", "add", &ns.name]) {
                Ok(_) => ns.claimed = true,
                // Another process's (or a leftover): not ours to use or delete.
                Err(e) if e.to_string().contains("File exists") => continue,
                Err(e) => return Err(e),
            }
            NEXT.fetch_add(i, Ordering::Relaxed);
            // From here the namespace is ours: dropping `ns` on an error deletes it.
            ns.build()?;
            return Ok(ns);
        }
        Err(io::Error::other(format!(
            "no free namespace name among {CLAIM_TRIES} tried (sbns*)"
        )))
    }

    /// The namespace numbered `id` (below [`BLOCKS`]): its names, and the `id`-th /30 of
    /// 10.251.0.0/16 for its addresses.
    fn numbered(id: u32, outer: Option<String>) -> NetNs {
        let base = u32::from(Ipv4Addr::new(10, 251, 0, 0)) + id * 4;
        NetNs {
            name: format!("sbns{id}"),
            host_if: format!("sbh{id}"),
            ns_if: format!("sbn{id}"),
            host_addr: Ipv4Addr::from(base + 1),
            ns_addr: Ipv4Addr::from(base + 2),
            outer,
            claimed: false,
            linked: false,
        }
    }

    /// Everything but the namespace itself, which [`Self::create_in`] has claimed.
    fn build(&mut self) -> io::Result<()> {
        let host = format!("{}/30", self.host_addr);
        let inner = format!("{}/30", self.ns_addr);
        run(
            "ip",
            &[
                "link",
                "add",
                &self.host_if,
                "type",
                "veth",
                "peer",
                "name",
                &self.ns_if,
            ],
        )?;
        self.linked = true;
        run("ip", &["link", "set", &self.ns_if, "netns", &self.name])?;
        if let Some(outer) = &self.outer {
            run("ip", &["link", "set", &self.host_if, "netns", outer])?;
        }
        self.outer_ok("ip", &["addr", "add", &host, "dev", &self.host_if])?;
        self.outer_ok("ip", &["link", "set", &self.host_if, "up"])?;
        self.exec_ok(&["ip", "addr", "add", &inner, "dev", &self.ns_if])?;
        self.exec_ok(&["ip", "link", "set", &self.ns_if, "up"])?;
        self.exec_ok(&["ip", "link", "set", "lo", "up"])?;
        self.verify_route()
    }

    /// Fails unless `ip route get <ns_addr>` leaves through our host-side veth: otherwise
    /// traffic would follow the default route off this machine.
    pub fn verify_route(&self) -> io::Result<()> {
        let out = self.outer_ok("ip", &["route", "get", &self.ns_addr.to_string()])?;
        let text = String::from_utf8_lossy(&out.stdout);
        let dev = text.split_whitespace().skip_while(|w| *w != "dev").nth(1);
        if dev != Some(self.host_if.as_str()) {
            return Err(io::Error::other(format!(
                "refusing to use {}: `ip route get` sends it via {dev:?}, not {}",
                self.ns_addr, self.host_if
            )));
        }
        Ok(())
    }

    /// Shapes both directions with a token bucket (`rate` like `1gbit`): the host end
    /// limits what we send, the namespace end what the peer sends back.
    pub fn shape(&self, rate: &str) -> io::Result<()> {
        let tbf = [
            "root", "handle", "1:", "tbf", "rate", rate, "burst", "128kb", "latency", "10ms",
        ];
        let mut host = vec!["qdisc", "add", "dev", self.host_if.as_str()];
        host.extend(tbf);
        self.outer_ok("tc", &host)?;
        let mut inner = vec!["tc", "qdisc", "add", "dev", self.ns_if.as_str()];
        inner.extend(tbf);
        self.exec_ok(&inner)?;
        Ok(())
    }

    /// Shapes only what the namespace sends (tbf on its end, `rate` like `984mbit`): a
    /// server in it behind a slow port, reached from a host end as fast as a veth is.
    pub fn shape_egress(&self, rate: &str) -> io::Result<()> {
        self.exec_ok(&[
            "tc",
            "qdisc",
            "add",
            "dev",
            self.ns_if.as_str(),
            "root",
            "handle",
            "1:",
            "tbf",
            "rate",
            rate,
            "burst",
            "128kb",
            "latency",
            "10ms",
        ])?;
        Ok(())
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Runs `program args` where the outer end lives: on the host or in `outer`.
    fn outer_ok(&self, program: &str, args: &[&str]) -> io::Result<Output> {
        match &self.outer {
            None => run(program, args),
            Some(outer) => {
                let mut argv = vec!["netns", "exec", outer.as_str(), program];
                argv.extend_from_slice(args);
                run("ip", &argv)
            }
        }
    }

    /// Runs `argv` inside the namespace; fails with its error output unless it succeeds.
    pub fn exec_ok(&self, argv: &[&str]) -> io::Result<Output> {
        let mut args = vec!["netns", "exec", self.name.as_str()];
        args.extend_from_slice(argv);
        run("ip", &args)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // Deleting the namespace destroys its veth end, which takes the host end with it.
        if self.claimed {
            let _ = run("ip", &["netns", "del", &self.name]);
        }
        if !self.linked {
            return;
        }
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn run(program: &str, args: &[&str]) -> io::Result<Output> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn exists(name: &str) -> bool {
        Path::new("/run/netns").join(name).exists()
    }

    #[test]
    fn a_number_another_process_holds_is_passed_over_and_left_alone() {
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
        // A number from this process's own stretch, held by "someone else" first.
        let start = std::process::id().wrapping_mul(7919).wrapping_add(5_000) % BLOCKS;
        let held = NetNs::numbered(start, None);
        run("ip", &["netns", "add", &held.name]).expect("hold a namespace");
        let ns = NetNs::claim_from(start, None).expect("the next free number");
        let next = NetNs::numbered((start + 1) % BLOCKS, None);
        assert_eq!(ns.name, next.name);
        assert_eq!(ns.ns_addr, next.ns_addr);
        assert_ne!(ns.ns_addr, held.ns_addr);
        let name = ns.name.clone();
        drop(ns);
        assert!(!exists(&name), "our namespace is removed");
        assert!(exists(&held.name), "the one we did not create is not");
        run("ip", &["netns", "del", &held.name]).unwrap();
    }
}
