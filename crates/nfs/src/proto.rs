//! NFSv3 (RFC 1813), MOUNT v3 and PORTMAP v2 messages: argument encoders that append to a
//! reusable buffer, and result decoders that borrow the reply record. Decoders return
//! `Ok(Err(status))` for a well-formed failure reply and `Err` for a malformed one.

use std::fmt;

use crate::error::{DecodeError, MountStat};
use crate::xdr::{Dec, Enc};

pub const NFS_V3: u32 = 3;
pub const MOUNT_V3: u32 = 3;
pub const PORTMAP_V2: u32 = 2;

/// NFSv3 procedure numbers.
pub mod nfsproc {
    pub const NULL: u32 = 0;
    pub const GETATTR: u32 = 1;
    pub const SETATTR: u32 = 2;
    pub const LOOKUP: u32 = 3;
    pub const READLINK: u32 = 5;
    pub const READ: u32 = 6;
    pub const WRITE: u32 = 7;
    pub const CREATE: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const SYMLINK: u32 = 10;
    pub const REMOVE: u32 = 12;
    pub const RMDIR: u32 = 13;
    pub const LINK: u32 = 15;
    pub const READDIRPLUS: u32 = 17;
    pub const FSSTAT: u32 = 18;
    pub const FSINFO: u32 = 19;
    pub const COMMIT: u32 = 21;
}

pub const MOUNTPROC_MNT: u32 = 1;
pub const MOUNTPROC_UMNT: u32 = 3;
pub const MOUNTPROC_EXPORT: u32 = 5;
pub const PMAPPROC_GETPORT: u32 = 3;

/// Longest NFSv3 file handle.
pub const FH_MAX: usize = 64;
/// Longest file name we accept from a server.
const NAME_MAX: usize = 4096;

/// An NFSv3 file handle, stored inline so requests can carry it without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Fh {
    len: u8,
    data: [u8; FH_MAX],
}

impl Fh {
    pub fn new(bytes: &[u8]) -> Result<Fh, DecodeError> {
        if bytes.len() > FH_MAX {
            return Err(DecodeError::TooLong {
                what: "file handle",
                len: bytes.len(),
            });
        }
        let mut data = [0u8; FH_MAX];
        data[..bytes.len()].copy_from_slice(bytes);
        Ok(Fh {
            len: bytes.len() as u8,
            data,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.data[..self.len as usize]
    }

    fn decode(d: &mut Dec<'_>) -> Result<Fh, DecodeError> {
        Fh::new(d.opaque(FH_MAX, "file handle")?)
    }
}

impl fmt::Debug for Fh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// An NFSv3 status code other than NFS3_OK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NfsStat(pub u32);

impl NfsStat {
    pub const NOENT: NfsStat = NfsStat(2);
    pub const EXIST: NfsStat = NfsStat(17);
    pub const NOTDIR: NfsStat = NfsStat(20);
    pub const ISDIR: NfsStat = NfsStat(21);
    pub const STALE: NfsStat = NfsStat(70);
    pub const BADHANDLE: NfsStat = NfsStat(10001);
    pub const NOTSUPP: NfsStat = NfsStat(10004);

    fn names(self) -> Option<(&'static str, &'static str)> {
        Some(match self.0 {
            1 => ("NFS3ERR_PERM", "not owner"),
            2 => ("NFS3ERR_NOENT", "no such file or directory"),
            5 => ("NFS3ERR_IO", "I/O error"),
            6 => ("NFS3ERR_NXIO", "no such device"),
            13 => ("NFS3ERR_ACCES", "permission denied"),
            17 => ("NFS3ERR_EXIST", "file exists"),
            18 => ("NFS3ERR_XDEV", "cross-device link"),
            19 => ("NFS3ERR_NODEV", "no such device"),
            20 => ("NFS3ERR_NOTDIR", "not a directory"),
            21 => ("NFS3ERR_ISDIR", "is a directory"),
            22 => ("NFS3ERR_INVAL", "invalid argument"),
            27 => ("NFS3ERR_FBIG", "file too large"),
            28 => ("NFS3ERR_NOSPC", "no space left on the server"),
            30 => ("NFS3ERR_ROFS", "read-only export"),
            31 => ("NFS3ERR_MLINK", "too many links"),
            63 => ("NFS3ERR_NAMETOOLONG", "name too long"),
            66 => ("NFS3ERR_NOTEMPTY", "directory not empty"),
            69 => ("NFS3ERR_DQUOT", "quota exceeded"),
            70 => (
                "NFS3ERR_STALE",
                "stale file handle: the file was removed or the server lost it",
            ),
            71 => ("NFS3ERR_REMOTE", "too many levels of remote in path"),
            10001 => ("NFS3ERR_BADHANDLE", "invalid file handle"),
            10002 => ("NFS3ERR_NOT_SYNC", "update synchronization mismatch"),
            10003 => ("NFS3ERR_BAD_COOKIE", "stale READDIR cookie"),
            10004 => ("NFS3ERR_NOTSUPP", "operation not supported"),
            10005 => ("NFS3ERR_TOOSMALL", "buffer or request too small"),
            10006 => ("NFS3ERR_SERVERFAULT", "server fault"),
            10007 => ("NFS3ERR_BADTYPE", "type not supported"),
            10008 => ("NFS3ERR_JUKEBOX", "server busy, try later"),
            _ => return None,
        })
    }

    /// The matching errno: NFSv3 codes below 10000 are errno values by design.
    pub fn errno(self) -> i32 {
        match self.0 {
            v @ 1..=9999 => v as i32,
            10001 | 10007 => 22, // EINVAL
            10004 => 95,         // EOPNOTSUPP
            10008 => 11,         // EAGAIN
            _ => 5,              // EIO
        }
    }
}

impl fmt::Display for NfsStat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.names() {
            Some((name, text)) => write!(f, "{name} ({text})"),
            None => write!(f, "unknown NFS status {}", self.0),
        }
    }
}

/// The attributes storbench uses, out of fattr3.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fattr {
    /// ftype3: 1 regular, 2 directory, 5 symbolic link, …
    pub ftype: u32,
    pub mode: u32,
    /// Number of hard links.
    pub nlink: u32,
    pub size: u64,
    pub fileid: u64,
}

impl Fattr {
    /// NF3REG: a regular file.
    pub fn is_file(&self) -> bool {
        self.ftype == 1
    }

    pub fn is_dir(&self) -> bool {
        self.ftype == 2
    }

    /// NF3LNK: a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.ftype == 5
    }
}

/// FSINFO results that shape requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsInfo {
    pub rtmax: u32,
    pub rtpref: u32,
    pub wtmax: u32,
    pub wtpref: u32,
    pub maxfilesize: u64,
}

/// FSSTAT results: the file system's capacity in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsStat {
    /// Total size.
    pub tbytes: u64,
    /// Free bytes.
    pub fbytes: u64,
    /// Free bytes the caller (an unprivileged user) may use.
    pub abytes: u64,
}

/// stable_how of WRITE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stable {
    Unstable = 0,
    DataSync = 1,
    FileSync = 2,
}

pub type Verf = [u8; 8];

/// A result that is either the decoded value or the server's NFS status.
pub type NfsResult<T> = Result<Result<T, NfsStat>, DecodeError>;

// ---------- argument encoders ----------

fn fh(e: &mut Enc<'_>, fh: &Fh) {
    e.opaque(fh.as_bytes());
}

pub fn args_fh(buf: &mut Vec<u8>, h: &Fh) {
    fh(&mut Enc::new(buf), h);
}

pub fn args_read(buf: &mut Vec<u8>, h: &Fh, offset: u64, count: u32) {
    let mut e = Enc::new(buf);
    fh(&mut e, h);
    e.u64(offset).u32(count);
}

pub fn args_write(buf: &mut Vec<u8>, h: &Fh, offset: u64, stable: Stable, data: &[u8]) {
    args_write_head(buf, h, offset, stable, data.len() as u32);
    Enc::new(buf).fixed(data);
}

/// WRITE arguments up to the data's length word: the data and its padding (see
/// [`xdr_pad`]) follow, sent from wherever they lie.
pub fn args_write_head(buf: &mut Vec<u8>, h: &Fh, offset: u64, stable: Stable, len: u32) {
    let mut e = Enc::new(buf);
    fh(&mut e, h);
    e.u64(offset).u32(len).u32(stable as u32).u32(len);
}

/// Zero bytes that follow `len` bytes of opaque data.
pub fn xdr_pad(len: usize) -> &'static [u8] {
    &[0u8; 3][..(4 - len % 4) % 4]
}

pub fn args_commit(buf: &mut Vec<u8>, h: &Fh, offset: u64, count: u32) {
    args_read(buf, h, offset, count);
}

pub fn args_dirop(buf: &mut Vec<u8>, dir: &Fh, name: &str) {
    let mut e = Enc::new(buf);
    fh(&mut e, dir);
    e.string(name);
}

/// sattr3 setting only the mode (CREATE, MKDIR) or only the size (SETATTR).
fn sattr(e: &mut Enc<'_>, mode: Option<u32>, size: Option<u64>) {
    match mode {
        Some(m) => e.bool(true).u32(m),
        None => e.bool(false),
    };
    e.bool(false).bool(false); // uid, gid: server defaults
    match size {
        Some(s) => e.bool(true).u64(s),
        None => e.bool(false),
    };
    e.u32(0).u32(0); // atime, mtime: DONT_CHANGE
}

/// CREATE in GUARDED mode: fails with NFS3ERR_EXIST instead of taking over a file.
pub fn args_create_guarded(buf: &mut Vec<u8>, dir: &Fh, name: &str, mode: u32) {
    args_dirop(buf, dir, name);
    let mut e = Enc::new(buf);
    e.u32(1);
    sattr(&mut e, Some(mode), None);
}

pub fn args_mkdir(buf: &mut Vec<u8>, dir: &Fh, name: &str, mode: u32) {
    args_dirop(buf, dir, name);
    sattr(&mut Enc::new(buf), Some(mode), None);
}

/// LINK: a new name `name` in `dir` for the file `file`.
pub fn args_link(buf: &mut Vec<u8>, file: &Fh, dir: &Fh, name: &str) {
    fh(&mut Enc::new(buf), file);
    args_dirop(buf, dir, name);
}

/// SYMLINK: `name` in `dir`, a symbolic link holding `target` (stored as is, never
/// resolved by the server).
pub fn args_symlink(buf: &mut Vec<u8>, dir: &Fh, name: &str, mode: u32, target: &str) {
    args_dirop(buf, dir, name);
    let mut e = Enc::new(buf);
    sattr(&mut e, Some(mode), None);
    e.string(target);
}

pub fn args_setattr_size(buf: &mut Vec<u8>, h: &Fh, size: u64) {
    let mut e = Enc::new(buf);
    fh(&mut e, h);
    sattr(&mut e, None, Some(size));
    e.bool(false); // no ctime guard
}

pub fn args_readdirplus(buf: &mut Vec<u8>, dir: &Fh, cookie: u64, verf: &Verf, maxcount: u32) {
    let mut e = Enc::new(buf);
    fh(&mut e, dir);
    e.u64(cookie).fixed(verf).u32(maxcount / 2).u32(maxcount);
}

pub fn args_string(buf: &mut Vec<u8>, s: &str) {
    Enc::new(buf).string(s);
}

pub fn args_getport(buf: &mut Vec<u8>, prog: u32, vers: u32) {
    Enc::new(buf).u32(prog).u32(vers).u32(6).u32(0); // IPPROTO_TCP
}

// ---------- result decoders ----------

fn status(d: &mut Dec<'_>) -> Result<Option<NfsStat>, DecodeError> {
    Ok(match d.u32()? {
        0 => None,
        s => Some(NfsStat(s)),
    })
}

fn fattr(d: &mut Dec<'_>) -> Result<Fattr, DecodeError> {
    let ftype = d.u32()?;
    if !(1..=7).contains(&ftype) {
        return Err(DecodeError::BadValue {
            what: "file type",
            value: ftype,
        });
    }
    let mode = d.u32()?;
    let nlink = d.u32()?;
    d.skip(8)?; // uid, gid
    let size = d.u64()?;
    d.skip(8 + 8 + 8)?; // used, rdev, fsid
    let fileid = d.u64()?;
    d.skip(24)?; // atime, mtime, ctime
    Ok(Fattr {
        ftype,
        mode,
        nlink,
        size,
        fileid,
    })
}

fn post_op_attr(d: &mut Dec<'_>) -> Result<Option<Fattr>, DecodeError> {
    if d.bool()? {
        fattr(d).map(Some)
    } else {
        Ok(None)
    }
}

fn wcc_data(d: &mut Dec<'_>) -> Result<Option<Fattr>, DecodeError> {
    if d.bool()? {
        d.skip(24)?; // size, mtime, ctime before
    }
    post_op_attr(d)
}

fn post_op_fh(d: &mut Dec<'_>) -> Result<Option<Fh>, DecodeError> {
    if d.bool()? {
        Fh::decode(d).map(Some)
    } else {
        Ok(None)
    }
}

fn verf(d: &mut Dec<'_>) -> Result<Verf, DecodeError> {
    let mut v = [0u8; 8];
    v.copy_from_slice(d.fixed(8)?);
    Ok(v)
}

/// READLINK: where the link's text lies within `body` (start, length).
pub fn res_readlink(body: &[u8]) -> NfsResult<(usize, usize)> {
    let mut d = Dec::new(body);
    if let Some(s) = status(&mut d)? {
        return Ok(Err(s));
    }
    post_op_attr(&mut d)?;
    let start = d.pos() + 4; // after the length
    let text = d.opaque(NAME_MAX, "symbolic link text")?;
    Ok(Ok((start, text.len())))
}

/// READ: (count, eof, start of the data within `body`).
pub fn res_read(body: &[u8]) -> NfsResult<(u32, bool, usize)> {
    let mut d = Dec::new(body);
    if let Some(s) = status(&mut d)? {
        return Ok(Err(s));
    }
    post_op_attr(&mut d)?;
    let count = d.u32()?;
    let eof = d.bool()?;
    let len = d.u32()?;
    if len != count || len as usize > d.remaining() {
        return Err(DecodeError::Invalid(
            "READ data length disagrees with count",
        ));
    }
    Ok(Ok((count, eof, d.pos())))
}

/// The part of a READ reply before its data, for placing the data straight into the
/// caller's buffer while it arrives: `Some((count, data offset in body))` for a success
/// whose header is complete in `head`, `None` otherwise (the whole reply then goes through
/// [`res_read`]).
pub fn res_read_head(head: &[u8]) -> Option<(u32, usize)> {
    let mut d = Dec::new(head);
    if status(&mut d).ok()?.is_some() {
        return None;
    }
    post_op_attr(&mut d).ok()?;
    let count = d.u32().ok()?;
    let _eof = d.bool().ok()?;
    let len = d.u32().ok()?;
    (len == count).then_some((count, d.pos()))
}

/// WRITE: (count, committed level, write verifier).
pub fn res_write(body: &[u8]) -> NfsResult<(u32, u32, Verf)> {
    let mut d = Dec::new(body);
    let st = status(&mut d)?;
    wcc_data(&mut d)?;
    if let Some(s) = st {
        return Ok(Err(s));
    }
    let count = d.u32()?;
    let committed = d.u32()?;
    if committed > 2 {
        return Err(DecodeError::BadValue {
            what: "stable_how",
            value: committed,
        });
    }
    Ok(Ok((count, committed, verf(&mut d)?)))
}

pub fn res_commit(body: &[u8]) -> NfsResult<Verf> {
    let mut d = Dec::new(body);
    let st = status(&mut d)?;
    wcc_data(&mut d)?;
    if let Some(s) = st {
        return Ok(Err(s));
    }
    Ok(Ok(verf(&mut d)?))
}

pub fn res_getattr(body: &[u8]) -> NfsResult<Fattr> {
    let mut d = Dec::new(body);
    if let Some(s) = status(&mut d)? {
        return Ok(Err(s));
    }
    Ok(Ok(fattr(&mut d)?))
}

pub fn res_lookup(body: &[u8]) -> NfsResult<(Fh, Option<Fattr>)> {
    let mut d = Dec::new(body);
    if let Some(s) = status(&mut d)? {
        return Ok(Err(s));
    }
    let h = Fh::decode(&mut d)?;
    let attr = post_op_attr(&mut d)?;
    post_op_attr(&mut d)?;
    Ok(Ok((h, attr)))
}

/// CREATE, MKDIR and SYMLINK: the new handle and attributes, when the server sends them.
pub fn res_create(body: &[u8]) -> NfsResult<(Option<Fh>, Option<Fattr>)> {
    let mut d = Dec::new(body);
    if let Some(s) = status(&mut d)? {
        return Ok(Err(s));
    }
    let h = post_op_fh(&mut d)?;
    let attr = post_op_attr(&mut d)?;
    wcc_data(&mut d)?;
    Ok(Ok((h, attr)))
}

/// LINK: the file's attributes after the link, when the server sends them. A failure's
/// status is all that is read of it (the attributes that follow it are of no use).
pub fn res_link(body: &[u8]) -> NfsResult<Option<Fattr>> {
    let mut d = Dec::new(body);
    if let Some(s) = status(&mut d)? {
        return Ok(Err(s));
    }
    let attr = post_op_attr(&mut d)?;
    wcc_data(&mut d)?;
    Ok(Ok(attr))
}

/// REMOVE, RMDIR, SETATTR: only a status and wcc_data.
pub fn res_wcc(body: &[u8]) -> NfsResult<()> {
    let mut d = Dec::new(body);
    let st = status(&mut d)?;
    wcc_data(&mut d)?;
    Ok(st.map_or(Ok(()), Err))
}

/// One page of READDIRPLUS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirPage {
    /// (name, cookie) of each entry, `.` and `..` included as the server sent them.
    pub entries: Vec<(String, u64)>,
    pub verf: Verf,
    pub eof: bool,
}

/// What a READDIRPLUS page says besides its entries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirPageEnd {
    pub verf: Verf,
    pub eof: bool,
    /// Entries in the page, `.` and `..` included.
    pub entries: usize,
}

pub fn res_readdirplus(body: &[u8]) -> NfsResult<DirPage> {
    let mut entries = Vec::new();
    let end = res_readdirplus_each(body, &mut |name, cookie| {
        entries.push((String::from_utf8_lossy(name).into_owned(), cookie));
    })?;
    Ok(end.map(|end| DirPage {
        entries,
        verf: end.verf,
        eof: end.eof,
    }))
}

/// READDIRPLUS without building a page: hands each entry's name and cookie to `each`, in
/// the reply buffer. The whole page is checked first, so a malformed reply hands out
/// nothing.
pub fn res_readdirplus_each(
    body: &[u8],
    each: &mut dyn FnMut(&[u8], u64),
) -> NfsResult<DirPageEnd> {
    match walk_readdirplus(body, &mut |_, _| {})? {
        Ok(_) => walk_readdirplus(body, each),
        Err(status) => Ok(Err(status)),
    }
}

fn walk_readdirplus(body: &[u8], each: &mut dyn FnMut(&[u8], u64)) -> NfsResult<DirPageEnd> {
    let mut d = Dec::new(body);
    if let Some(s) = status(&mut d)? {
        return Ok(Err(s));
    }
    post_op_attr(&mut d)?;
    let verf = verf(&mut d)?;
    let mut entries = 0;
    while d.bool()? {
        d.u64()?; // fileid
        let name = d.opaque(NAME_MAX, "file name")?;
        let cookie = d.u64()?;
        post_op_attr(&mut d)?;
        post_op_fh(&mut d)?;
        each(name, cookie);
        entries += 1;
    }
    let eof = d.bool()?;
    Ok(Ok(DirPageEnd { verf, eof, entries }))
}

pub fn res_fsinfo(body: &[u8]) -> NfsResult<FsInfo> {
    let mut d = Dec::new(body);
    let st = status(&mut d)?;
    post_op_attr(&mut d)?;
    if let Some(s) = st {
        return Ok(Err(s));
    }
    let rtmax = d.u32()?;
    let rtpref = d.u32()?;
    d.u32()?; // rtmult
    let wtmax = d.u32()?;
    let wtpref = d.u32()?;
    d.skip(8)?; // wtmult, dtpref
    let maxfilesize = d.u64()?;
    Ok(Ok(FsInfo {
        rtmax,
        rtpref,
        wtmax,
        wtpref,
        maxfilesize,
    }))
}

pub fn res_fsstat(body: &[u8]) -> NfsResult<FsStat> {
    let mut d = Dec::new(body);
    let st = status(&mut d)?;
    post_op_attr(&mut d)?;
    if let Some(s) = st {
        return Ok(Err(s));
    }
    let tbytes = d.u64()?;
    let fbytes = d.u64()?;
    let abytes = d.u64()?;
    Ok(Ok(FsStat {
        tbytes,
        fbytes,
        abytes,
    }))
}

/// MNT: the root handle of the export.
pub fn res_mnt(body: &[u8]) -> Result<Result<Fh, MountStat>, DecodeError> {
    let mut d = Dec::new(body);
    match d.u32()? {
        0 => Ok(Ok(Fh::decode(&mut d)?)),
        s => Ok(Err(MountStat(s))),
    }
}

/// EXPORT: the exported directory paths.
pub fn res_export(body: &[u8]) -> Result<Vec<String>, DecodeError> {
    let mut d = Dec::new(body);
    let mut out = Vec::new();
    while d.bool()? {
        let dir = d.opaque(1024, "export path")?;
        out.push(String::from_utf8_lossy(dir).into_owned());
        while d.bool()? {
            d.opaque(255, "group name")?;
        }
    }
    Ok(out)
}

pub fn res_getport(body: &[u8]) -> Result<u32, DecodeError> {
    Dec::new(body).u32()
}

#[cfg(test)]
#[path = "proto_tests.rs"]
mod tests;
