//! The small fixed-size values NFSv4 passes around: file handles, session ids, stateids,
//! verifiers, and the attributes this client decodes.

use crate::error::DecodeError;
use crate::xdr::{Dec, Enc};

/// NFS4_FHSIZE.
pub const FH4_MAX: usize = 128;

/// An NFSv4 file handle, kept inline (Copy, no allocation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fh4 {
    len: u8,
    data: [u8; FH4_MAX],
}

impl Fh4 {
    pub fn new(bytes: &[u8]) -> Result<Fh4, DecodeError> {
        if bytes.len() > FH4_MAX {
            return Err(DecodeError::TooLong {
                what: "file handle",
                len: bytes.len(),
            });
        }
        let mut data = [0; FH4_MAX];
        data[..bytes.len()].copy_from_slice(bytes);
        Ok(Fh4 {
            len: bytes.len() as u8,
            data,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.data[..self.len as usize]
    }

    pub(crate) fn decode(d: &mut Dec<'_>) -> Result<Fh4, DecodeError> {
        Fh4::new(d.opaque(FH4_MAX, "file handle")?)
    }
}

impl std::fmt::Debug for Fh4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fh4(")?;
        self.as_bytes()
            .iter()
            .try_for_each(|b| write!(f, "{b:02x}"))?;
        write!(f, ")")
    }
}

/// A session id (16 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionId(pub [u8; 16]);

/// An 8-byte verifier (client owner, exclusive create, write, readdir cookie).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verifier(pub [u8; 8]);

impl Verifier {
    pub(crate) fn decode(d: &mut Dec<'_>) -> Result<Verifier, DecodeError> {
        let mut v = [0; 8];
        v.copy_from_slice(d.fixed(8)?);
        Ok(Verifier(v))
    }
}

/// A stateid: sequence number and 12 opaque bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stateid {
    pub seqid: u32,
    pub other: [u8; 12],
}

impl Stateid {
    /// The anonymous stateid (all zeros), for operations outside an open.
    pub const ANONYMOUS: Stateid = Stateid {
        seqid: 0,
        other: [0; 12],
    };

    pub(crate) fn encode(&self, e: &mut Enc<'_>) {
        e.u32(self.seqid).fixed(&self.other);
    }

    pub(crate) fn decode(d: &mut Dec<'_>) -> Result<Stateid, DecodeError> {
        let seqid = d.u32()?;
        let mut other = [0; 12];
        other.copy_from_slice(d.fixed(12)?);
        Ok(Stateid { seqid, other })
    }
}

/// `nfs_ftype4`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileType4 {
    #[default]
    Unknown,
    Regular,
    Directory,
    Symlink,
    Other,
}

/// The attributes this client decodes; absent ones stay at their defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attrs4 {
    pub ftype: FileType4,
    pub change: u64,
    pub size: u64,
    /// Lease time in seconds.
    pub lease_time: u32,
    pub fileid: u64,
    pub mode: u32,
    pub nlink: u32,
    pub space_avail: u64,
    pub space_free: u64,
    pub space_total: u64,
}

impl Attrs4 {
    pub fn is_dir(&self) -> bool {
        self.ftype == FileType4::Directory
    }

    pub fn is_symlink(&self) -> bool {
        self.ftype == FileType4::Symlink
    }
}
