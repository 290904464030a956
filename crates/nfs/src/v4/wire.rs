//! Encoding NFSv4.1/4.2 COMPOUND requests (RFC 8881 §16, RFC 7862): a builder that counts
//! its operations, and one function per operation that appends its arguments.

use crate::xdr::Enc;

use super::types::{Fh4, SessionId, Stateid, Verifier};

/// COMPOUND is procedure 1 of program 100003 version 4.
pub const PROC_COMPOUND: u32 = 1;
pub const NFS_V4: u32 = 4;

/// Operation numbers.
pub mod op {
    pub const CLOSE: u32 = 4;
    pub const COMMIT: u32 = 5;
    pub const CREATE: u32 = 6;
    pub const DELEGRETURN: u32 = 8;
    pub const GETATTR: u32 = 9;
    pub const GETFH: u32 = 10;
    pub const LINK: u32 = 11;
    pub const LOOKUP: u32 = 15;
    pub const OPEN: u32 = 18;
    pub const PUTFH: u32 = 22;
    pub const PUTROOTFH: u32 = 24;
    pub const READ: u32 = 25;
    pub const READDIR: u32 = 26;
    pub const READLINK: u32 = 27;
    pub const REMOVE: u32 = 28;
    pub const RENAME: u32 = 29;
    pub const SAVEFH: u32 = 32;
    pub const SETATTR: u32 = 34;
    pub const WRITE: u32 = 38;
    pub const EXCHANGE_ID: u32 = 42;
    pub const CREATE_SESSION: u32 = 43;
    pub const DESTROY_SESSION: u32 = 44;
    pub const SEQUENCE: u32 = 53;
    pub const DESTROY_CLIENTID: u32 = 57;
    pub const RECLAIM_COMPLETE: u32 = 58;
    pub const ALLOCATE: u32 = 59;
    pub const DEALLOCATE: u32 = 62;
    pub const SEEK: u32 = 69;
}

/// Attribute numbers (RFC 8881 §5.8) of the attributes this client asks for.
pub mod attr {
    pub const TYPE: u32 = 1;
    pub const CHANGE: u32 = 3;
    pub const SIZE: u32 = 4;
    pub const LEASE_TIME: u32 = 10;
    pub const FILEID: u32 = 20;
    pub const MODE: u32 = 33;
    pub const NUMLINKS: u32 = 35;
    pub const SPACE_AVAIL: u32 = 42;
    pub const SPACE_FREE: u32 = 43;
    pub const SPACE_TOTAL: u32 = 44;
}

/// A two-word attribute bitmap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bitmap(pub [u32; 2]);

impl Bitmap {
    pub const fn of(attrs: &[u32]) -> Bitmap {
        let mut w = [0u32; 2];
        let mut i = 0;
        while i < attrs.len() {
            w[(attrs[i] / 32) as usize] |= 1 << (attrs[i] % 32);
            i += 1;
        }
        Bitmap(w)
    }

    fn encode(&self, e: &mut Enc<'_>) {
        let n = if self.0[1] != 0 { 2 } else { 1 };
        e.u32(n);
        for w in &self.0[..n as usize] {
            e.u32(*w);
        }
    }
}

/// What GETATTR asks for a file or directory.
pub const FILE_ATTRS: Bitmap = Bitmap::of(&[
    attr::TYPE,
    attr::SIZE,
    attr::FILEID,
    attr::MODE,
    attr::NUMLINKS,
]);
/// What the free-space check asks for.
pub const SPACE_ATTRS: Bitmap =
    Bitmap::of(&[attr::SPACE_AVAIL, attr::SPACE_FREE, attr::SPACE_TOTAL]);
/// What session set-up asks of the root.
pub const LEASE_ATTRS: Bitmap = Bitmap::of(&[attr::LEASE_TIME]);

/// OPEN's share access bits; WANT_NO_DELEG because this client takes no delegations.
pub const SHARE_ACCESS_READ: u32 = 1;
pub const SHARE_ACCESS_WRITE: u32 = 2;
pub const SHARE_ACCESS_BOTH: u32 = 3;
const WANT_NO_DELEG: u32 = 0x0400;

/// `stable_how4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stable4 {
    Unstable = 0,
    DataSync = 1,
    FileSync = 2,
}

/// How OPEN creates (RFC 8881 §18.16): UNCHECKED keeps an existing file, GUARDED fails with
/// NFS4ERR_EXIST, EXCLUSIVE4_1 fails unless the file is new or was made by this verifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Create {
    Unchecked { mode: u32 },
    Guarded { mode: u32 },
    Exclusive { verf: Verifier, mode: u32 },
}

/// Which file OPEN means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim<'a> {
    /// A name in the current directory.
    Name(&'a str),
    /// The current file handle (4.1).
    Fh,
    /// The current file handle, reclaiming an open held before a server restart.
    Previous,
}

/// What SEEK looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    Data = 0,
    Hole = 1,
}

/// A COMPOUND being built in a reused buffer: the RPC arguments after the call header.
pub struct Compound<'a> {
    buf: &'a mut Vec<u8>,
    count_at: usize,
    ops: u32,
}

impl<'a> Compound<'a> {
    /// Starts a COMPOUND for `minor` (1 or 2) with an empty tag.
    pub fn new(buf: &'a mut Vec<u8>, minor: u32) -> Self {
        Enc::new(buf).u32(0).u32(minor);
        let count_at = buf.len();
        Enc::new(buf).u32(0);
        Compound {
            buf,
            count_at,
            ops: 0,
        }
    }

    fn op(&mut self, num: u32) -> Enc<'_> {
        self.ops += 1;
        let at = self.count_at;
        self.buf[at..at + 4].copy_from_slice(&self.ops.to_be_bytes());
        let mut e = Enc::new(self.buf);
        e.u32(num);
        e
    }

    pub fn ops(&self) -> u32 {
        self.ops
    }

    pub fn sequence(&mut self, sid: &SessionId, seq: u32, slot: u32, highest: u32) {
        self.op(op::SEQUENCE)
            .fixed(&sid.0)
            .u32(seq)
            .u32(slot)
            .u32(highest)
            .bool(false);
    }

    /// EXCHANGE_ID without state protection or pNFS, naming no implementation.
    pub fn exchange_id(&mut self, verf: &Verifier, owner: &[u8]) {
        const USE_NON_PNFS: u32 = 0x0001_0000;
        self.op(op::EXCHANGE_ID)
            .fixed(&verf.0)
            .opaque(owner)
            .u32(USE_NON_PNFS)
            .u32(0) // SP4_NONE
            .u32(0); // no client implementation id
    }

    /// CREATE_SESSION with `slots` fore-channel slots, no back channel (a one-slot back
    /// channel is still described, as the XDR requires one) and AUTH_NONE for callbacks.
    pub fn create_session(&mut self, clientid: u64, seq: u32, slots: u32, max_msg: u32) {
        let mut e = self.op(op::CREATE_SESSION);
        e.u64(clientid).u32(seq).u32(0);
        // fore: header pad, max request, max response, max cached, max ops, slots, rdma ird
        e.u32(0)
            .u32(max_msg)
            .u32(max_msg)
            .u32(4096)
            .u32(16)
            .u32(slots);
        e.u32(0);
        e.u32(0).u32(4096).u32(4096).u32(0).u32(2).u32(1).u32(0);
        e.u32(0x4000_0000); // callback program (unused: no back channel)
        e.u32(1).u32(0); // one callback security parameter: AUTH_NONE
    }

    pub fn reclaim_complete(&mut self) {
        self.op(op::RECLAIM_COMPLETE).bool(false);
    }

    pub fn destroy_session(&mut self, sid: &SessionId) {
        self.op(op::DESTROY_SESSION).fixed(&sid.0);
    }

    pub fn destroy_clientid(&mut self, clientid: u64) {
        self.op(op::DESTROY_CLIENTID).u64(clientid);
    }

    pub fn putrootfh(&mut self) {
        self.op(op::PUTROOTFH);
    }

    pub fn putfh(&mut self, fh: &Fh4) {
        self.op(op::PUTFH).opaque(fh.as_bytes());
    }

    pub fn getfh(&mut self) {
        self.op(op::GETFH);
    }

    pub fn savefh(&mut self) {
        self.op(op::SAVEFH);
    }

    pub fn lookup(&mut self, name: &str) {
        self.op(op::LOOKUP).string(name);
    }

    pub fn getattr(&mut self, attrs: Bitmap) {
        let mut e = self.op(op::GETATTR);
        attrs.encode(&mut e);
    }

    /// OPEN for `access` by `owner` (open_owner4 under `clientid`).
    pub fn open(
        &mut self,
        access: u32,
        clientid: u64,
        owner: &[u8],
        create: Option<Create>,
        claim: Claim<'_>,
    ) {
        let mut e = self.op(op::OPEN);
        e.u32(0)
            .u32(access | WANT_NO_DELEG)
            .u32(0)
            .u64(clientid)
            .opaque(owner);
        match create {
            None => {
                e.u32(0);
            }
            Some(Create::Unchecked { mode }) => {
                e.u32(1).u32(0);
                mode_attrs(&mut e, mode);
            }
            Some(Create::Guarded { mode }) => {
                e.u32(1).u32(1);
                mode_attrs(&mut e, mode);
            }
            Some(Create::Exclusive { verf, mode }) => {
                e.u32(1).u32(3).fixed(&verf.0);
                mode_attrs(&mut e, mode);
            }
        }
        match claim {
            Claim::Name(name) => e.u32(0).string(name),
            Claim::Previous => e.u32(1).u32(0), // no delegation held
            Claim::Fh => e.u32(4),
        };
    }

    pub fn close(&mut self, stateid: &Stateid) {
        let mut e = self.op(op::CLOSE);
        e.u32(0);
        stateid.encode(&mut e);
    }

    pub fn delegreturn(&mut self, stateid: &Stateid) {
        let mut e = self.op(op::DELEGRETURN);
        stateid.encode(&mut e);
    }

    pub fn read(&mut self, stateid: &Stateid, offset: u64, count: u32) {
        let mut e = self.op(op::READ);
        stateid.encode(&mut e);
        e.u64(offset).u32(count);
    }

    pub fn write(&mut self, stateid: &Stateid, offset: u64, stable: Stable4, data: &[u8]) {
        let mut e = self.op(op::WRITE);
        stateid.encode(&mut e);
        e.u64(offset).u32(stable as u32).opaque(data);
    }

    pub fn commit(&mut self, offset: u64, count: u32) {
        self.op(op::COMMIT).u64(offset).u32(count);
    }

    pub fn remove(&mut self, name: &str) {
        self.op(op::REMOVE).string(name);
    }

    /// CREATE of a directory.
    pub fn mkdir(&mut self, name: &str, mode: u32) {
        let mut e = self.op(op::CREATE);
        e.u32(2).string(name);
        mode_attrs(&mut e, mode);
    }

    /// CREATE of a symbolic link holding `target`.
    pub fn symlink(&mut self, name: &str, target: &str) {
        let mut e = self.op(op::CREATE);
        e.u32(5).string(target).string(name);
        mode_attrs(&mut e, 0o777);
    }

    /// LINK: the saved handle gets `name` in the current directory.
    pub fn link(&mut self, name: &str) {
        self.op(op::LINK).string(name);
    }

    /// RENAME from the saved directory to the current one.
    pub fn rename(&mut self, from: &str, to: &str) {
        self.op(op::RENAME).string(from).string(to);
    }

    pub fn readlink(&mut self) {
        self.op(op::READLINK);
    }

    pub fn readdir(&mut self, cookie: u64, verf: &Verifier, maxcount: u32, attrs: Bitmap) {
        let mut e = self.op(op::READDIR);
        e.u64(cookie).fixed(&verf.0).u32(maxcount).u32(maxcount);
        attrs.encode(&mut e);
    }

    /// SETATTR of the size (truncate or extend).
    pub fn set_size(&mut self, stateid: &Stateid, size: u64) {
        let mut e = self.op(op::SETATTR);
        stateid.encode(&mut e);
        Bitmap::of(&[attr::SIZE]).encode(&mut e);
        e.u32(8).u64(size);
    }

    pub fn allocate(&mut self, stateid: &Stateid, offset: u64, len: u64) {
        let mut e = self.op(op::ALLOCATE);
        stateid.encode(&mut e);
        e.u64(offset).u64(len);
    }

    pub fn deallocate(&mut self, stateid: &Stateid, offset: u64, len: u64) {
        let mut e = self.op(op::DEALLOCATE);
        stateid.encode(&mut e);
        e.u64(offset).u64(len);
    }

    pub fn seek(&mut self, stateid: &Stateid, offset: u64, what: Content) {
        let mut e = self.op(op::SEEK);
        stateid.encode(&mut e);
        e.u64(offset).u32(what as u32);
    }
}

/// A fattr4 that sets only the mode.
fn mode_attrs(e: &mut Enc<'_>, mode: u32) {
    Bitmap::of(&[attr::MODE]).encode(e);
    e.u32(4).u32(mode & 0o7777);
}
