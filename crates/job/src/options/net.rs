//! The options of fio's net and netsplice engines (a TCP, UDP or Unix-socket stream
//! between a listener and a sender), parsed into `EngineOptions::net`; `check_net` refuses
//! what fio's engine refuses when it starts, before the run.

use std::net::Ipv4Addr;

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::build::JobBuilder;
use crate::engine_options::{NetOptions, NetProtocol};
use crate::spec::JobSpec;
use crate::units::{parse_bool, parse_u32};

const PROTOCOLS: &[(&str, &str)] = &[
    ("tcp", "Transmission Control Protocol"),
    ("tcpv6", "Transmission Control Protocol V6"),
    ("udp", "User Datagram Protocol"),
    ("udpv6", "User Datagram Protocol V6"),
    ("unix", "UNIX domain socket"),
];

/// The job's net options, noting that `name` was given.
fn given<'b>(b: &'b mut JobBuilder, name: &'static str) -> &'b mut NetOptions {
    b.spec.engine_options.mark(name);
    &mut b.spec.engine_options.net
}

fn protocol(v: &str) -> Result<NetProtocol, String> {
    Ok(match v {
        "tcp" => NetProtocol::Tcp,
        "tcpv6" => NetProtocol::TcpV6,
        "udp" => NetProtocol::Udp,
        "udpv6" => NetProtocol::UdpV6,
        "unix" => NetProtocol::Unix,
        other => {
            return Err(format!(
                "'{other}' is not one of tcp, tcpv6, udp, udpv6, unix"
            ));
        }
    })
}

fn port(v: &str) -> Result<u16, String> {
    let p = parse_u32(v, 1024)?;
    u16::try_from(p)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("port {p} is out of range (1 to 65535)"))
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "hostname",
        K::Str,
        C::Engine,
        "",
        "Host to send to (a sender), or UDP multicast group to join (a reader)",
        |b, v| {
            given(b, "hostname").hostname = Some(val(v)?.to_string());
            Ok(())
        },
    ),
    OptDef::new(
        "port",
        K::Int,
        C::Engine,
        "",
        "TCP or UDP port to listen on or connect to (1 to 65535)",
        |b, v| {
            given(b, "port").port = Some(port(val(v)?)?);
            Ok(())
        },
    ),
    OptDef::new(
        "protocol",
        K::Choice(PROTOCOLS),
        C::Engine,
        "tcp",
        "Network protocol to use",
        |b, v| {
            given(b, "protocol").protocol = protocol(val(v)?)?;
            Ok(())
        },
    )
    .aliases(&["proto"]),
    OptDef::new(
        "nodelay",
        K::Bool,
        C::Engine,
        "0",
        "Use TCP_NODELAY on TCP connections",
        |b, v| {
            given(b, "nodelay").nodelay = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "listen",
        K::Flag,
        C::Engine,
        "",
        "Listen for incoming TCP connections",
        |b, v| {
            given(b, "listen").listen = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "pingpong",
        K::Flag,
        C::Engine,
        "",
        "Ping-pong IO requests: each IO waits for the peer to send the payload back",
        |b, v| {
            given(b, "pingpong").pingpong = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "interface",
        K::Str,
        C::Engine,
        "",
        "IPv4 address of the interface to send or receive UDP multicast on",
        |b, v| {
            let v = val(v)?;
            let ip: Ipv4Addr = v
                .parse()
                .map_err(|_| format!("'{v}' is not an IPv4 interface address"))?;
            given(b, "interface").interface = Some(ip);
            Ok(())
        },
    ),
    OptDef::new(
        "ttl",
        K::Int,
        C::Engine,
        "1",
        "Time-to-live value for outgoing UDP multicast packets",
        |b, v| {
            given(b, "ttl").ttl = parse_u32(val(v)?, 1024)?;
            Ok(())
        },
    ),
    OptDef::new(
        "window_size",
        K::Int,
        C::Engine,
        "",
        "Set socket buffer window size (SO_SNDBUF/SO_RCVBUF)",
        |b, v| {
            given(b, "window_size").window_size = parse_u32(val(v)?, 1024)?;
            Ok(())
        },
    ),
    OptDef::new(
        "mss",
        K::Int,
        C::Engine,
        "",
        "Set TCP maximum segment size (TCP_MAXSEG)",
        |b, v| {
            given(b, "mss").mss = parse_u32(val(v)?, 1024)?;
            Ok(())
        },
    ),
];

/// Whether `host` is an IPv4 multicast address (224.0.0.0 to 239.255.255.255).
pub fn is_multicast(host: &str) -> bool {
    host.parse::<Ipv4Addr>().is_ok_and(|a| a.is_multicast())
}

/// What fio's net engine refuses when its job starts, refused here before the run; the
/// job's file name is its host (or socket path), as in fio, so it moves to `hostname` and
/// the job has no file of its own.
pub(crate) fn check_net(job: &mut JobSpec) -> Result<(), String> {
    let Some(engine) = crate::catalogue::find(&job.ioengine).filter(|e| e.is_net()) else {
        return Ok(());
    };
    if job.engine_options.net.hostname.is_none() && !job.filenames.is_empty() {
        job.engine_options.net.hostname = Some(job.filenames[0].expose().to_string());
    }
    job.filenames.clear();
    job.nrfiles = 1;
    // fio's net engine reports in bits unless unit_base says otherwise (netsplice in bytes).
    let unit_base = job.options.iter().rev().find(|(k, _)| k == "unit_base");
    if engine.reports_bits() && unit_base.is_none_or(|(_, v)| v.trim() == "0") {
        job.unit_base = 1;
    }
    if job.numjobs > 1 {
        return Err(format!(
            "numjobs={}: fio gives each clone of a net job the next port; give each stream \
             a job section of its own with its port",
            job.numjobs
        ));
    }
    let o = &mut job.engine_options.net;
    let kind = job.rw.kind;
    if kind.is_random() {
        return Err("network IO can't be random: use rw=read, write or readwrite".into());
    }
    if kind.trims() {
        return Err("network IO has no trim: use rw=read, write or readwrite".into());
    }
    match (o.protocol, o.port) {
        (NetProtocol::Unix, Some(_)) => {
            return Err(
                "port= is not valid with protocol=unix (give the socket's path as filename=)"
                    .into(),
            );
        }
        (p, None) if p != NetProtocol::Unix => {
            return Err(format!("protocol={} needs port=", p.fio_name()));
        }
        _ => {}
    }
    if !o.protocol.is_tcp() {
        if o.listen {
            return Err(format!(
                "listen is only valid with protocol=tcp: with protocol={} the reader \
                 (rw=read) waits for the writer",
                o.protocol.fio_name()
            ));
        }
        if kind.reads() && kind.writes() {
            return Err(format!(
                "protocol={}: a datagram or Unix-socket job must read OR write",
                o.protocol.fio_name()
            ));
        }
        if o.protocol == NetProtocol::Unix && o.hostname.is_none() {
            return Err("protocol=unix needs the socket's path as filename=".into());
        }
        o.listen = !kind.writes();
    }
    let host = o.hostname.as_deref();
    if o.protocol == NetProtocol::Unix {
        return Ok(());
    }
    match (o.listen, host) {
        (false, None) if kind.writes() => {
            Err("a net sender needs hostname= (the host to send to)".into())
        }
        (false, None) => Err(
            "a net job connecting to its peer needs hostname=; did you forget to set listen?"
                .into(),
        ),
        (true, Some(h)) if !(o.protocol.is_udp() && is_multicast(h)) => Err(format!(
            "hostname={h} is not valid for a listener or a UDP reader (only a UDP multicast \
             group is)"
        )),
        (true, Some(_)) if o.protocol.is_v6() => {
            Err("IPv6 multicast is not supported by the net engine".into())
        }
        _ => Ok(()),
    }
}
