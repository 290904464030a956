//! NFSv4 status codes (RFC 8881 §15, RFC 7862 §11) with their names, for messages.

use std::fmt;

/// An `nfsstat4` other than NFS4_OK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nfs4Stat(pub u32);

impl Nfs4Stat {
    pub const NOENT: Nfs4Stat = Nfs4Stat(2);
    pub const EXIST: Nfs4Stat = Nfs4Stat(17);
    pub const NOTDIR: Nfs4Stat = Nfs4Stat(20);
    pub const NOTEMPTY: Nfs4Stat = Nfs4Stat(66);
    pub const STALE: Nfs4Stat = Nfs4Stat(70);
    pub const BADHANDLE: Nfs4Stat = Nfs4Stat(10001);
    pub const NOTSUPP: Nfs4Stat = Nfs4Stat(10004);
    pub const DELAY: Nfs4Stat = Nfs4Stat(10008);
    pub const EXPIRED: Nfs4Stat = Nfs4Stat(10011);
    pub const GRACE: Nfs4Stat = Nfs4Stat(10013);
    pub const FHEXPIRED: Nfs4Stat = Nfs4Stat(10014);
    pub const STALE_CLIENTID: Nfs4Stat = Nfs4Stat(10022);
    pub const STALE_STATEID: Nfs4Stat = Nfs4Stat(10023);
    pub const BAD_STATEID: Nfs4Stat = Nfs4Stat(10025);
    pub const NO_GRACE: Nfs4Stat = Nfs4Stat(10033);
    pub const BADSESSION: Nfs4Stat = Nfs4Stat(10052);
    pub const DEADSESSION: Nfs4Stat = Nfs4Stat(10078);

    /// The server lost our client or session (restart, or a lease that expired): a new
    /// session is needed and the state held under the old one is gone.
    pub fn session_lost(self) -> bool {
        matches!(
            self,
            Nfs4Stat::BADSESSION
                | Nfs4Stat::DEADSESSION
                | Nfs4Stat::STALE_CLIENTID
                | Nfs4Stat::EXPIRED
                | Nfs4Stat::STALE_STATEID
                | Nfs4Stat::BAD_STATEID
        )
    }

    /// Busy or in its grace period: the same request may succeed later.
    pub fn retry_later(self) -> bool {
        matches!(self, Nfs4Stat::DELAY | Nfs4Stat::GRACE)
    }

    /// A file handle the server no longer knows (the object is gone, or the server cannot
    /// tell it any more): found again by name, it may still be there.
    pub fn handle_gone(self) -> bool {
        matches!(
            self,
            Nfs4Stat::STALE | Nfs4Stat::BADHANDLE | Nfs4Stat::FHEXPIRED
        )
    }

    /// An errno that fits, for callers that report errno values.
    pub fn errno(self) -> i32 {
        match self.0 {
            1 => libc::EPERM,
            2 => libc::ENOENT,
            6 => libc::ENXIO,
            13 => libc::EACCES,
            17 => libc::EEXIST,
            18 => libc::EXDEV,
            20 => libc::ENOTDIR,
            21 => libc::EISDIR,
            22 => libc::EINVAL,
            27 => libc::EFBIG,
            28 => libc::ENOSPC,
            30 => libc::EROFS,
            31 => libc::EMLINK,
            63 => libc::ENAMETOOLONG,
            66 => libc::ENOTEMPTY,
            69 => libc::EDQUOT,
            70 | 10001 => libc::ESTALE,
            10004 => libc::EOPNOTSUPP,
            10008 | 10013 => libc::EAGAIN,
            _ => libc::EIO,
        }
    }

    fn name(self) -> Option<(&'static str, &'static str)> {
        Some(match self.0 {
            1 => ("NFS4ERR_PERM", "not owner"),
            2 => ("NFS4ERR_NOENT", "no such file or directory"),
            5 => ("NFS4ERR_IO", "I/O error"),
            6 => ("NFS4ERR_NXIO", "no such device"),
            13 => ("NFS4ERR_ACCESS", "permission denied"),
            17 => ("NFS4ERR_EXIST", "file exists"),
            18 => ("NFS4ERR_XDEV", "cross-device link"),
            20 => ("NFS4ERR_NOTDIR", "not a directory"),
            21 => ("NFS4ERR_ISDIR", "is a directory"),
            22 => ("NFS4ERR_INVAL", "invalid argument"),
            27 => ("NFS4ERR_FBIG", "file too large"),
            28 => ("NFS4ERR_NOSPC", "no space left on device"),
            30 => ("NFS4ERR_ROFS", "read-only file system"),
            31 => ("NFS4ERR_MLINK", "too many links"),
            63 => ("NFS4ERR_NAMETOOLONG", "name too long"),
            66 => ("NFS4ERR_NOTEMPTY", "directory not empty"),
            69 => ("NFS4ERR_DQUOT", "quota exceeded"),
            70 => ("NFS4ERR_STALE", "stale file handle"),
            10001 => ("NFS4ERR_BADHANDLE", "bad file handle"),
            10003 => ("NFS4ERR_BAD_COOKIE", "stale directory cookie"),
            10004 => ("NFS4ERR_NOTSUPP", "not supported by the server"),
            10005 => ("NFS4ERR_TOOSMALL", "buffer too small"),
            10006 => ("NFS4ERR_SERVERFAULT", "server fault"),
            10007 => ("NFS4ERR_BADTYPE", "bad type"),
            10008 => ("NFS4ERR_DELAY", "server busy, retry later"),
            10011 => ("NFS4ERR_EXPIRED", "lease expired"),
            10013 => ("NFS4ERR_GRACE", "server in its grace period"),
            10015 => ("NFS4ERR_SHARE_DENIED", "share reservation denied"),
            10016 => ("NFS4ERR_WRONGSEC", "wrong security flavour"),
            10018 => ("NFS4ERR_RESOURCE", "server out of resources"),
            10020 => ("NFS4ERR_NOFILEHANDLE", "no current file handle"),
            10021 => ("NFS4ERR_MINOR_VERS_MISMATCH", "minor version not served"),
            10022 => ("NFS4ERR_STALE_CLIENTID", "client ID unknown to the server"),
            10023 => ("NFS4ERR_STALE_STATEID", "stale stateid"),
            10024 => ("NFS4ERR_OLD_STATEID", "old stateid"),
            10025 => ("NFS4ERR_BAD_STATEID", "bad stateid"),
            10029 => ("NFS4ERR_SYMLINK", "is a symbolic link"),
            10032 => ("NFS4ERR_ATTRNOTSUPP", "attribute not supported"),
            10033 => ("NFS4ERR_NO_GRACE", "not in the grace period"),
            10036 => ("NFS4ERR_BADXDR", "server could not decode the request"),
            10038 => ("NFS4ERR_OPENMODE", "file not open for this access"),
            10039 => ("NFS4ERR_BADOWNER", "owner not known to the server"),
            10041 => ("NFS4ERR_BADNAME", "bad name"),
            10044 => ("NFS4ERR_OP_ILLEGAL", "operation unknown to the server"),
            10052 => ("NFS4ERR_BADSESSION", "session unknown to the server"),
            10053 => ("NFS4ERR_BADSLOT", "bad session slot"),
            10063 => ("NFS4ERR_SEQ_MISORDERED", "sequence id out of order"),
            10065 => ("NFS4ERR_REQ_TOO_BIG", "request too big for the session"),
            10066 => ("NFS4ERR_REP_TOO_BIG", "reply too big for the session"),
            10071 => ("NFS4ERR_OP_NOT_IN_SESSION", "operation outside a session"),
            10076 => ("NFS4ERR_SEQ_FALSE_RETRY", "false retry"),
            10078 => ("NFS4ERR_DEADSESSION", "session is dead"),
            10083 => ("NFS4ERR_WRONG_TYPE", "wrong type of object"),
            _ => return None,
        })
    }
}

impl fmt::Display for Nfs4Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some((name, text)) => write!(f, "{name} ({text})"),
            None => write!(f, "unknown NFSv4 status {}", self.0),
        }
    }
}
