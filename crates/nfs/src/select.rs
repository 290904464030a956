//! Which protocol a URL reaches: the version its `version=` asks for, or, without one,
//! NFSv3 where the server offers it and NFSv4.1 where it does not. The server is asked
//! once, by a NULL call of NFS version 3 on its NFS port (the URL's, or the one the
//! portmapper gives): PROG_MISMATCH or PROG_UNAVAIL, no v3 with the portmapper, or no
//! portmapper (and no `mountport=`) means the server has no v3; anything else keeps v3,
//! whose client then reports what failed.

use crate::error::{NfsError, Result};
use crate::mount::{getport, machine_name, one_shot, resolve};
use crate::proto;
use crate::rpc::{Auth, PROG_NFS};
use crate::url::{NfsUrl, NfsVersion};
use crate::v4::Client4;

/// The version to speak to `url`'s server.
pub fn choose(url: &NfsUrl) -> Result<NfsVersion> {
    if let Some(v) = url.version {
        return Ok(v);
    }
    let auth = Auth::sys(&machine_name(), url.uid, url.gid);
    let addrs = resolve(url)?;
    let port = match url.port {
        Some(p) => p,
        None => match getport(url, &addrs, &auth, PROG_NFS, proto::NFS_V3, "NFS") {
            Ok(p) => p,
            // The portmapper has no NFSv3: a v4 server.
            Err(NfsError::Rpc { .. }) => return Ok(NfsVersion::V4_1),
            // No portmapper: a v4 server, unless the URL gives a MOUNT port (v3's).
            Err(_) if url.mount_port.is_none() => return Ok(NfsVersion::V4_1),
            Err(_) => return Ok(NfsVersion::V3),
        },
    };
    // A server that cannot be reached is left to the v3 client, whose errors name what
    // failed (MOUNT, the portmapper) as a v3 user expects.
    let Ok(mut t) = one_shot(url, &addrs, port, &auth, "NFS NULL", url.timeout) else {
        return Ok(NfsVersion::V3);
    };
    match t.call("NULL", PROG_NFS, proto::NFS_V3, 0, &[]) {
        Err(NfsError::Rpc { reason, .. }) if no_such_version(&reason) => Ok(NfsVersion::V4_1),
        _ => Ok(NfsVersion::V3),
    }
}

/// Whether a rejected call's reason says the program or version is not served.
fn no_such_version(reason: &str) -> bool {
    reason.contains("(PROG_MISMATCH)") || reason.contains("(PROG_UNAVAIL)")
}

/// `url` with the version [`choose`] picked written in, so a client connects without
/// asking again (and its `Display` says which).
pub fn with_version(url: &NfsUrl, v: NfsVersion) -> NfsUrl {
    NfsUrl {
        version: Some(v),
        ..url.clone()
    }
}

/// Reaches `url`'s directory once and leaves: MOUNT and UMNT over v3, a session set up
/// and destroyed over v4 (so a bad path or version is one line before a run).
pub fn check(url: &NfsUrl) -> Result<()> {
    let v = choose(url)?;
    let url = with_version(url, v);
    match v {
        NfsVersion::V3 => crate::Client::mount(&url).map(drop),
        _ => Client4::connect_url(&url, 1)?.shutdown(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_missing_program_or_version_means_no_v3() {
        assert!(no_such_version(
            "program version not supported, server has 4..4 (PROG_MISMATCH)"
        ));
        assert!(no_such_version("program unavailable (PROG_UNAVAIL)"));
        assert!(!no_such_version("procedure unavailable (PROC_UNAVAIL)"));
        assert!(!no_such_version("authentication error"));
    }

    #[test]
    fn an_asked_version_is_kept_without_asking_the_server() {
        for v in ["3", "4", "4.1", "4.2"] {
            let url = NfsUrl::parse(&format!("nfs://192.0.2.1/x?version={v}")).unwrap();
            assert_eq!(choose(&url).unwrap(), url.version.unwrap());
        }
    }
}
