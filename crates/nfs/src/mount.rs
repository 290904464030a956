//! Reaching an export: the server's addresses, its ports (PORTMAP), one-shot
//! connections for MOUNT calls, and the choice of export for a path (MNT).

use std::net::SocketAddr;
use std::time::Duration;

use crate::client::garbage;
use crate::error::{NfsError, Result};
use crate::proto::{self, Fh};
use crate::rpc::{Auth, PROG_MOUNT, PROG_PORTMAP};
use crate::transport::{Transport, TransportConfig};
use crate::url::NfsUrl;

pub(crate) fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "storbench".into())
}

pub(crate) fn resolve(url: &NfsUrl) -> Result<Vec<SocketAddr>> {
    // Not getaddrinfo: the static binary must resolve names without glibc's NSS modules.
    let addrs = storbench_resolve::resolve(&url.host, 0).map_err(|source| NfsError::Resolve {
        host: url.host.clone(),
        source,
    })?;
    if addrs.is_empty() {
        let source = std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
        return Err(NfsError::Resolve {
            host: url.host.clone(),
            source,
        });
    }
    Ok(addrs)
}

pub(crate) fn with_port(addrs: &[SocketAddr], port: u16) -> Vec<SocketAddr> {
    addrs
        .iter()
        .map(|a| SocketAddr::new(a.ip(), port))
        .collect()
}

/// A single-connection transport that gives up at the first loss (PORTMAP, MOUNT).
pub(crate) fn one_shot(
    url: &NfsUrl,
    addrs: &[SocketAddr],
    port: u16,
    auth: &Auth,
    op: &'static str,
    timeout: Duration,
) -> Result<Transport> {
    let cfg = TransportConfig {
        server: url.host_port(port),
        addrs: with_port(addrs, port),
        connections: 1,
        timeout,
        reconnect_window: Duration::ZERO,
        recv_capacity: 64 * 1024,
    };
    Transport::connect(cfg, auth.clone(), op)
}

/// Asks the portmapper on port 111 for a program's TCP port.
pub(crate) fn getport(
    url: &NfsUrl,
    addrs: &[SocketAddr],
    auth: &Auth,
    prog: u32,
    vers: u32,
    what: &str,
) -> Result<u16> {
    let op = "PORTMAP GETPORT";
    let mut t = one_shot(url, addrs, 111, auth, op, url.timeout).map_err(|e| match e {
        NfsError::Connect { server, source, .. } => NfsError::Connect {
            server,
            op: "PORTMAP GETPORT (give ?port= and ?mountport= to skip the portmapper)",
            source,
        },
        e => e,
    })?;
    let mut args = Vec::new();
    proto::args_getport(&mut args, prog, vers);
    let body = t.call(
        op,
        PROG_PORTMAP,
        proto::PORTMAP_V2,
        proto::PMAPPROC_GETPORT,
        &args,
    )?;
    let port = proto::res_getport(&body).map_err(garbage(&t, op))?;
    match u16::try_from(port) {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(NfsError::Rpc {
            server: t.server().to_string(),
            op,
            reason: format!("{what} v{vers} over TCP is not registered with the portmapper"),
        }),
    }
}

/// Picks the export for `path` and mounts it. Exports listed by the server that prefix the
/// path are tried longest first; then, for servers that list nothing useful, each shorter
/// prefix of the path. The first successful MNT wins; a refusal other than "no such
/// export" (e.g. MNT3ERR_ACCES) ends the search with that error.
pub(crate) fn mount_export(
    url: &NfsUrl,
    addrs: &[SocketAddr],
    port: u16,
    auth: &Auth,
) -> Result<(String, Fh)> {
    let mut t = one_shot(url, addrs, port, auth, "MOUNT", url.timeout)?;
    // A server may refuse to list its exports (PROC_UNAVAIL, …); then prefixes are tried.
    let listed = match t.call(
        "MOUNT EXPORT",
        PROG_MOUNT,
        proto::MOUNT_V3,
        proto::MOUNTPROC_EXPORT,
        &[],
    ) {
        Ok(body) => proto::res_export(&body).map_err(garbage(&t, "MOUNT EXPORT"))?,
        Err(NfsError::Rpc { .. }) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut candidates: Vec<String> = listed
        .iter()
        .filter(|e| is_prefix(e, &url.path))
        .cloned()
        .collect();
    candidates.sort_by_key(|e| std::cmp::Reverse(e.len()));
    let mut prefix = url.path.clone();
    loop {
        if !candidates.contains(&prefix) {
            candidates.push(prefix.clone());
        }
        match prefix.rfind('/') {
            Some(0) if prefix != "/" => prefix = "/".into(),
            Some(i) if i > 0 => prefix.truncate(i),
            _ => break,
        }
    }
    for export in candidates {
        let mut args = Vec::new();
        proto::args_string(&mut args, &export);
        let body = t.call(
            "MOUNT MNT",
            PROG_MOUNT,
            proto::MOUNT_V3,
            proto::MOUNTPROC_MNT,
            &args,
        )?;
        match proto::res_mnt(&body).map_err(garbage(&t, "MOUNT MNT"))? {
            Ok(fh) => return Ok((export, fh)),
            // Not an export: try the next prefix. Any other refusal is the answer.
            Err(st) if st.0 == 2 || st.0 == 20 => {}
            Err(status) => {
                return Err(NfsError::Mount {
                    server: t.server().to_string(),
                    export,
                    status,
                    exports: export_list(&listed),
                });
            }
        }
    }
    Err(NfsError::NoExport {
        server: t.server().to_string(),
        path: url.path.clone(),
        exports: export_list(&listed),
    })
}

/// The export list for messages.
fn export_list(listed: &[String]) -> String {
    if listed.is_empty() {
        "none listed".into()
    } else {
        listed.join(", ")
    }
}

fn is_prefix(export: &str, path: &str) -> bool {
    export == "/"
        || path == export
        || path
            .strip_prefix(export)
            .is_some_and(|r| r.starts_with('/'))
}
