//! Decoding COMPOUND replies (RFC 8881 §16.2.3): the result of each operation in turn,
//! checked against the operation that was sent. Every length is bounded and checked
//! against the bytes present before use; nothing here allocates or panics.

use crate::error::DecodeError;
use crate::xdr::Dec;

use super::stat::Nfs4Stat;
use super::types::{Attrs4, Fh4, FileType4, SessionId, Stateid, Verifier};
use super::wire::{attr, op};

/// Longest opaque or string this client accepts from a server (NFS4_OPAQUE_LIMIT).
const OPAQUE_LIMIT: usize = 1024;
/// Longest attribute list accepted in one fattr4.
const ATTRLIST_LIMIT: usize = 64 << 10;
/// Longest symbolic link text accepted.
const LINK_LIMIT: usize = 4096;

/// Why an operation's result is not usable: a malformed reply, or the server's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum V4Error {
    Decode(DecodeError),
    Status { op: &'static str, status: Nfs4Stat },
}

impl From<DecodeError> for V4Error {
    fn from(d: DecodeError) -> Self {
        V4Error::Decode(d)
    }
}

pub type V4Result<T> = Result<T, V4Error>;

/// What SEQUENCE answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqRes {
    pub highest_slot: u32,
    pub target_highest_slot: u32,
    pub status_flags: u32,
}

/// What EXCHANGE_ID answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExchangeRes {
    pub clientid: u64,
    pub sequence: u32,
    pub flags: u32,
}

/// The fore channel a session was granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    pub max_request: u32,
    pub max_response: u32,
    pub max_ops: u32,
    pub slots: u32,
}

/// What CREATE_SESSION answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionRes {
    pub id: SessionId,
    pub sequence: u32,
    pub fore: Channel,
}

/// What OPEN answered: the open stateid, and a delegation if the server gave one anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenRes {
    pub stateid: Stateid,
    pub delegation: Option<Stateid>,
}

/// What WRITE answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteRes {
    pub count: u32,
    pub committed: u32,
    pub verf: Verifier,
}

/// A COMPOUND reply being read operation by operation.
pub struct Reply<'a> {
    d: Dec<'a>,
    /// The COMPOUND's status: that of the last operation the server ran.
    pub status: u32,
    left: u32,
}

impl<'a> Reply<'a> {
    pub fn parse(body: &'a [u8]) -> Result<Reply<'a>, DecodeError> {
        let mut d = Dec::new(body);
        let status = d.u32()?;
        d.opaque(OPAQUE_LIMIT, "tag")?;
        let left = d.u32()?;
        // Each result is at least an operation number and a status.
        if left as usize > d.remaining() / 8 {
            return Err(DecodeError::TooLong {
                what: "result array",
                len: left as usize,
            });
        }
        Ok(Reply { d, status, left })
    }

    /// The operation number of the next result, if there is one.
    pub fn peek_op(&self) -> Result<Option<u32>, DecodeError> {
        match self.left {
            0 => Ok(None),
            _ => self.d.clone().u32().map(Some),
        }
    }

    /// Moves to the next result, which must be `num`'s; its status if not NFS4_OK.
    fn next(&mut self, num: u32, name: &'static str) -> V4Result<()> {
        if self.left == 0 {
            return Err(match self.status {
                0 => DecodeError::Invalid("fewer results than operations sent").into(),
                s => V4Error::Status {
                    op: name,
                    status: Nfs4Stat(s),
                },
            });
        }
        self.left -= 1;
        let got = self.d.u32()?;
        if got != num {
            return Err(DecodeError::BadValue {
                what: "result operation",
                value: got,
            }
            .into());
        }
        match self.d.u32()? {
            0 => Ok(()),
            s => Err(V4Error::Status {
                op: name,
                status: Nfs4Stat(s),
            }),
        }
    }

    /// SEQUENCE's result, which must be for session `sid` (any session for `None`).
    pub fn sequence(&mut self, sid: Option<&SessionId>) -> V4Result<SeqRes> {
        self.next(op::SEQUENCE, "SEQUENCE")?;
        let got = self.d.fixed(16)?;
        if sid.is_some_and(|s| s.0 != got) {
            return Err(DecodeError::Invalid("SEQUENCE answered for another session").into());
        }
        let _seq = self.d.u32()?;
        let _slot = self.d.u32()?;
        Ok(SeqRes {
            highest_slot: self.d.u32()?,
            target_highest_slot: self.d.u32()?,
            status_flags: self.d.u32()?,
        })
    }

    pub fn exchange_id(&mut self) -> V4Result<ExchangeRes> {
        self.next(op::EXCHANGE_ID, "EXCHANGE_ID")?;
        let d = &mut self.d;
        let res = ExchangeRes {
            clientid: d.u64()?,
            sequence: d.u32()?,
            flags: d.u32()?,
        };
        if d.u32()? != 0 {
            return Err(DecodeError::Invalid("server imposed state protection").into());
        }
        d.u64()?; // server owner: minor id
        d.opaque(OPAQUE_LIMIT, "server owner")?;
        d.opaque(OPAQUE_LIMIT, "server scope")?;
        match d.u32()? {
            0 => {}
            1 => {
                d.opaque(OPAQUE_LIMIT, "implementation domain")?;
                d.opaque(OPAQUE_LIMIT, "implementation name")?;
                d.skip(12)?; // build date
            }
            n => {
                return Err(DecodeError::BadValue {
                    what: "implementation id count",
                    value: n,
                }
                .into());
            }
        }
        Ok(res)
    }

    pub fn create_session(&mut self) -> V4Result<SessionRes> {
        self.next(op::CREATE_SESSION, "CREATE_SESSION")?;
        let mut id = SessionId::default();
        id.0.copy_from_slice(self.d.fixed(16)?);
        let sequence = self.d.u32()?;
        let _flags = self.d.u32()?;
        let fore = channel(&mut self.d)?;
        channel(&mut self.d)?;
        Ok(SessionRes { id, sequence, fore })
    }

    /// An operation whose result is its status alone (PUTFH, LOOKUP, SAVEFH, …).
    pub fn status_only(&mut self, num: u32, name: &'static str) -> V4Result<()> {
        self.next(num, name)
    }

    pub fn getfh(&mut self) -> V4Result<Fh4> {
        self.next(op::GETFH, "GETFH")?;
        Ok(Fh4::decode(&mut self.d)?)
    }

    pub fn getattr(&mut self) -> V4Result<Attrs4> {
        self.next(op::GETATTR, "GETATTR")?;
        Ok(fattr(&mut self.d)?)
    }

    pub fn open(&mut self) -> V4Result<OpenRes> {
        self.next(op::OPEN, "OPEN")?;
        let d = &mut self.d;
        let stateid = Stateid::decode(d)?;
        change_info(d)?;
        d.u32()?; // result flags
        bitmap(d)?;
        let delegation = match d.u32()? {
            0 => None,
            kind @ (1 | 2) => {
                let sid = Stateid::decode(d)?;
                d.bool()?; // recall
                if kind == 2 {
                    match d.u32()? {
                        1 => d.skip(8)?,
                        2 => d.skip(8)?,
                        v => {
                            return Err(DecodeError::BadValue {
                                what: "space limit",
                                value: v,
                            }
                            .into());
                        }
                    }
                }
                d.skip(12)?; // ace type, flag, mask
                d.opaque(OPAQUE_LIMIT, "ace who")?;
                Some(sid)
            }
            3 => {
                if matches!(d.u32()?, 6 | 7) {
                    d.bool()?;
                }
                None
            }
            v => {
                return Err(DecodeError::BadValue {
                    what: "delegation type",
                    value: v,
                }
                .into());
            }
        };
        Ok(OpenRes {
            stateid,
            delegation,
        })
    }

    pub fn close(&mut self) -> V4Result<Stateid> {
        self.next(op::CLOSE, "CLOSE")?;
        Ok(Stateid::decode(&mut self.d)?)
    }

    /// READ: end of file, and the data where it lies in the reply.
    pub fn read(&mut self) -> V4Result<(bool, &'a [u8])> {
        self.next(op::READ, "READ")?;
        let eof = self.d.bool()?;
        let data = self.d.opaque(usize::MAX, "READ data")?;
        Ok((eof, data))
    }

    /// READ up to its data: end of file and the data's length (the data follows at
    /// [`pos`](Self::pos), or went to a sink).
    pub fn read_head(&mut self) -> V4Result<(bool, u32)> {
        self.next(op::READ, "READ")?;
        Ok((self.d.bool()?, self.d.u32()?))
    }

    /// Where in the body decoding stands.
    pub fn pos(&self) -> usize {
        self.d.pos()
    }

    pub fn write(&mut self) -> V4Result<WriteRes> {
        self.next(op::WRITE, "WRITE")?;
        Ok(WriteRes {
            count: self.d.u32()?,
            committed: self.d.u32()?,
            verf: Verifier::decode(&mut self.d)?,
        })
    }

    pub fn commit(&mut self) -> V4Result<Verifier> {
        self.next(op::COMMIT, "COMMIT")?;
        Ok(Verifier::decode(&mut self.d)?)
    }

    pub fn remove(&mut self) -> V4Result<()> {
        self.next(op::REMOVE, "REMOVE")?;
        Ok(change_info(&mut self.d)?)
    }

    pub fn create(&mut self, name: &'static str) -> V4Result<()> {
        self.next(op::CREATE, name)?;
        change_info(&mut self.d)?;
        bitmap(&mut self.d)?;
        Ok(())
    }

    pub fn link(&mut self) -> V4Result<()> {
        self.next(op::LINK, "LINK")?;
        Ok(change_info(&mut self.d)?)
    }

    pub fn rename(&mut self) -> V4Result<()> {
        self.next(op::RENAME, "RENAME")?;
        change_info(&mut self.d)?;
        Ok(change_info(&mut self.d)?)
    }

    pub fn readlink(&mut self) -> V4Result<&'a [u8]> {
        self.next(op::READLINK, "READLINK")?;
        Ok(self.d.opaque(LINK_LIMIT, "link text")?)
    }

    /// READDIR: hands each entry (cookie, name, attributes) to `each`; returns the cookie
    /// verifier and whether the listing is complete.
    pub fn readdir(
        &mut self,
        mut each: impl FnMut(u64, &'a [u8], Attrs4),
    ) -> V4Result<(Verifier, bool)> {
        self.next(op::READDIR, "READDIR")?;
        let verf = Verifier::decode(&mut self.d)?;
        while self.d.bool()? {
            let cookie = self.d.u64()?;
            let name = self.d.opaque(OPAQUE_LIMIT * 4, "entry name")?;
            let attrs = fattr(&mut self.d)?;
            each(cookie, name, attrs);
        }
        Ok((verf, self.d.bool()?))
    }

    pub fn setattr(&mut self) -> V4Result<()> {
        self.next(op::SETATTR, "SETATTR")?;
        bitmap(&mut self.d)?;
        Ok(())
    }

    /// SEEK: end of file, and the offset found.
    pub fn seek(&mut self) -> V4Result<(bool, u64)> {
        self.next(op::SEEK, "SEEK")?;
        Ok((self.d.bool()?, self.d.u64()?))
    }
}

fn channel(d: &mut Dec<'_>) -> Result<Channel, DecodeError> {
    d.u32()?; // header pad
    let c = Channel {
        max_request: d.u32()?,
        max_response: d.u32()?,
        max_ops: {
            d.u32()?; // max response cached
            d.u32()?
        },
        slots: d.u32()?,
    };
    match d.u32()? {
        0 => {}
        1 => {
            d.u32()?;
        }
        n => {
            return Err(DecodeError::BadValue {
                what: "rdma ird count",
                value: n,
            });
        }
    }
    Ok(c)
}

fn change_info(d: &mut Dec<'_>) -> Result<(), DecodeError> {
    d.bool()?;
    d.skip(16)
}

/// A bitmap4 of at most 8 words; only the first two may name attributes this client knows.
fn bitmap(d: &mut Dec<'_>) -> Result<[u32; 2], DecodeError> {
    let n = d.u32()?;
    if n > 8 {
        return Err(DecodeError::TooLong {
            what: "attribute bitmap",
            len: n as usize,
        });
    }
    let mut w = [0u32; 2];
    for i in 0..n as usize {
        let v = d.u32()?;
        match w.get_mut(i) {
            Some(slot) => *slot = v,
            None if v == 0 => {}
            None => return Err(DecodeError::Invalid("attribute beyond those asked for")),
        }
    }
    Ok(w)
}

/// A fattr4: the attributes named by its bitmap, in bit order. An attribute this client
/// did not ask for cannot be skipped (its length is unknown) and fails the reply.
fn fattr(d: &mut Dec<'_>) -> Result<Attrs4, DecodeError> {
    let bits = bitmap(d)?;
    let list = d.opaque(ATTRLIST_LIMIT, "attribute list")?;
    let mut a = Dec::new(list);
    let mut out = Attrs4::default();
    for bit in 0..64u32 {
        if bits[(bit / 32) as usize] & (1 << (bit % 32)) == 0 {
            continue;
        }
        match bit {
            attr::TYPE => {
                out.ftype = match a.u32()? {
                    1 => FileType4::Regular,
                    2 => FileType4::Directory,
                    5 => FileType4::Symlink,
                    3 | 4 | 6..=9 => FileType4::Other,
                    v => {
                        return Err(DecodeError::BadValue {
                            what: "file type",
                            value: v,
                        });
                    }
                }
            }
            attr::CHANGE => out.change = a.u64()?,
            attr::SIZE => out.size = a.u64()?,
            attr::LEASE_TIME => out.lease_time = a.u32()?,
            attr::FILEID => out.fileid = a.u64()?,
            attr::MODE => out.mode = a.u32()?,
            attr::NUMLINKS => out.nlink = a.u32()?,
            attr::SPACE_AVAIL => out.space_avail = a.u64()?,
            attr::SPACE_FREE => out.space_free = a.u64()?,
            attr::SPACE_TOTAL => out.space_total = a.u64()?,
            _ => return Err(DecodeError::Invalid("attribute beyond those asked for")),
        }
    }
    Ok(out)
}

/// Where the data of a successful SEQUENCE, PUTFH, READ reply lies in its body (offset and
/// length), for the transport to place it straight into the caller's buffer. `body` may
/// be the start of a reply still arriving: the data need not be there yet (the transport
/// checks it against the record's length).
pub fn locate_read(body: &[u8]) -> Option<(usize, usize)> {
    let mut r = Reply::parse(body).ok()?;
    r.sequence(None).ok()?;
    r.status_only(op::PUTFH, "PUTFH").ok()?;
    let (_, len) = r.read_head().ok()?;
    Some((r.pos(), len as usize))
}

/// Decodes every result of a COMPOUND reply by its operation number (for fuzzing and
/// tests); returns how many were decoded, or the first failure.
pub fn walk(body: &[u8]) -> V4Result<u32> {
    let mut r = Reply::parse(body)?;
    let mut n = 0;
    while let Some(num) = r.peek_op()? {
        match num {
            op::SEQUENCE => r.sequence(None).map(drop),
            op::EXCHANGE_ID => r.exchange_id().map(drop),
            op::CREATE_SESSION => r.create_session().map(drop),
            op::GETFH => r.getfh().map(drop),
            op::GETATTR => r.getattr().map(drop),
            op::OPEN => r.open().map(drop),
            op::CLOSE => r.close().map(drop),
            op::READ => r.read().map(drop),
            op::WRITE => r.write().map(drop),
            op::COMMIT => r.commit().map(drop),
            op::REMOVE => r.remove(),
            op::CREATE => r.create("CREATE"),
            op::LINK => r.link(),
            op::RENAME => r.rename(),
            op::READLINK => r.readlink().map(drop),
            op::READDIR => r.readdir(|_, _, _| {}).map(drop),
            op::SETATTR => r.setattr(),
            op::SEEK => r.seek().map(drop),
            other => r.status_only(other, "operation"),
        }?;
        n += 1;
    }
    Ok(n)
}
