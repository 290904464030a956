//! A network namespace joined to the host by a veth pair, for tests and benches that need a
//! "remote" peer with a real link (optionally shaped with tbf). Addresses come from a private
//! /30 chosen per process; before anything is sent, `ip route get` must show the peer address
//! going over our own veth, or creation fails. Everything is deleted on drop.

use std::io;
use std::net::Ipv4Addr;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

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
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let id = (std::process::id() % 10_000) * 10 + n % 10;
        // 10.251.0.0/16 split into /30s: 16384 of them.
        let block = (id % 16_384) * 4;
        let base = u32::from(Ipv4Addr::new(10, 251, 0, 0)) + block;
        let ns = NetNs {
            name: format!("sbns{id}"),
            host_if: format!("sbh{id}"),
            ns_if: format!("sbn{id}"),
            host_addr: Ipv4Addr::from(base + 1),
            ns_addr: Ipv4Addr::from(base + 2),
            outer,
        };
        ns.build()?;
        Ok(ns)
    }

    fn build(&self) -> io::Result<()> {
        let host = format!("{}/30", self.host_addr);
        let inner = format!("{}/30", self.ns_addr);
        run("ip", &["netns", "add", &self.name])?;
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
        let _ = run("ip", &["netns", "del", &self.name]);
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
