//! Request bodies and reply decoders of the commands the client uses ([MS-SMB2] 2.2).
//! Offsets in bodies count from the start of the SMB2 header, as on the wire.

use crate::crypto::{SIGN_AES_CMAC, SIGN_AES_GMAC, SIGN_HMAC_SHA256};
use crate::error::DecodeError;
use crate::header::HEADER_LEN;
use crate::wire::{Rd, from_utf16, pad8, put_u16, put_u32, put_u64, slice, utf16};

pub const SECURITY_SIGNING_ENABLED: u16 = 1;
pub const SECURITY_SIGNING_REQUIRED: u16 = 2;

pub const CAP_DFS: u32 = 0x01;
pub const CAP_LEASING: u32 = 0x02;
pub const CAP_LARGE_MTU: u32 = 0x04;
pub const CAP_ENCRYPTION: u32 = 0x40;

pub const CTX_PREAUTH: u16 = 1;
pub const CTX_ENCRYPTION: u16 = 2;
pub const CTX_SIGNING: u16 = 8;

pub const CIPHER_AES128_CCM: u16 = 1;
pub const CIPHER_AES128_GCM: u16 = 2;
pub const CIPHER_AES256_CCM: u16 = 3;
pub const CIPHER_AES256_GCM: u16 = 4;

pub const SESSION_FLAG_IS_GUEST: u16 = 1;
pub const SESSION_FLAG_IS_NULL: u16 = 2;
pub const SESSION_FLAG_ENCRYPT_DATA: u16 = 4;

pub const SHAREFLAG_ENCRYPT_DATA: u32 = 0x8000;

/// What the client offers in NEGOTIATE.
pub struct NegotiateReq<'a> {
    pub dialects: &'a [u16],
    pub signing_required: bool,
    pub client_guid: [u8; 16],
    pub salt: [u8; 32],
    pub ciphers: &'a [u16],
    pub sign_algs: &'a [u16],
}

/// Offered signing algorithms, in preference order.
pub const SIGN_ALGS: [u16; 3] = [SIGN_AES_GMAC, SIGN_AES_CMAC, SIGN_HMAC_SHA256];

pub fn negotiate_body(n: &NegotiateReq) -> Vec<u8> {
    let mut b = Vec::with_capacity(256);
    put_u16(&mut b, 36);
    put_u16(&mut b, n.dialects.len() as u16);
    let sec = SECURITY_SIGNING_ENABLED
        | if n.signing_required {
            SECURITY_SIGNING_REQUIRED
        } else {
            0
        };
    put_u16(&mut b, sec);
    put_u16(&mut b, 0);
    put_u32(&mut b, CAP_LEASING | CAP_LARGE_MTU | CAP_ENCRYPTION);
    b.extend_from_slice(&n.client_guid);
    let smb311 = n.dialects.contains(&crate::crypto::SMB311);
    let ctx_at = b.len();
    put_u64(&mut b, 0); // NegotiateContextOffset/Count, or ClientStartTime
    for d in n.dialects {
        put_u16(&mut b, *d);
    }
    if !smb311 {
        return b;
    }
    // Contexts start 8-aligned counting from the header.
    while !(HEADER_LEN + b.len()).is_multiple_of(8) {
        b.push(0);
    }
    let off = (HEADER_LEN + b.len()) as u32;
    b[ctx_at..ctx_at + 4].copy_from_slice(&off.to_le_bytes());
    let mut count = 0u16;
    let mut ctx = |b: &mut Vec<u8>, kind: u16, data: &[u8]| {
        if count > 0 {
            while !(HEADER_LEN + b.len()).is_multiple_of(8) {
                b.push(0);
            }
        }
        put_u16(b, kind);
        put_u16(b, data.len() as u16);
        put_u32(b, 0);
        b.extend_from_slice(data);
        count += 1;
    };
    let mut pre = Vec::new();
    put_u16(&mut pre, 1); // one hash algorithm
    put_u16(&mut pre, n.salt.len() as u16);
    put_u16(&mut pre, 1); // SHA-512
    pre.extend_from_slice(&n.salt);
    ctx(&mut b, CTX_PREAUTH, &pre);
    let mut enc = Vec::new();
    put_u16(&mut enc, n.ciphers.len() as u16);
    for c in n.ciphers {
        put_u16(&mut enc, *c);
    }
    ctx(&mut b, CTX_ENCRYPTION, &enc);
    let mut sig = Vec::new();
    put_u16(&mut sig, n.sign_algs.len() as u16);
    for a in n.sign_algs {
        put_u16(&mut sig, *a);
    }
    ctx(&mut b, CTX_SIGNING, &sig);
    b[ctx_at + 4..ctx_at + 6].copy_from_slice(&count.to_le_bytes());
    b
}

/// The server's NEGOTIATE reply.
#[derive(Clone, Debug, Default)]
pub struct NegotiateResp {
    pub security_mode: u16,
    pub dialect: u16,
    pub server_guid: [u8; 16],
    pub capabilities: u32,
    pub max_transact: u32,
    pub max_read: u32,
    pub max_write: u32,
    pub security_blob: Vec<u8>,
    /// 3.1.1 contexts: the chosen cipher (0: none) and signing algorithm.
    pub cipher: u16,
    pub sign_alg: Option<u16>,
    pub preauth_ok: bool,
}

pub fn parse_negotiate(msg: &[u8]) -> Result<NegotiateResp, DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, 65)?;
    let mut n = NegotiateResp {
        security_mode: r.u16()?,
        dialect: r.u16()?,
        ..Default::default()
    };
    let ctx_count = r.u16()?;
    n.server_guid = r.array()?;
    n.capabilities = r.u32()?;
    n.max_transact = r.u32()?;
    n.max_read = r.u32()?;
    n.max_write = r.u32()?;
    r.skip(16)?; // SystemTime, ServerStartTime
    let blob_off = r.u16()? as usize;
    let blob_len = r.u16()? as usize;
    let ctx_off = r.u32()? as usize;
    if blob_len > 0 {
        n.security_blob = slice(msg, blob_off, blob_len)?.to_vec();
    }
    if n.dialect == crate::crypto::SMB311 {
        parse_contexts(msg, ctx_off, ctx_count, &mut n)?;
    }
    Ok(n)
}

fn parse_contexts(
    msg: &[u8],
    mut off: usize,
    count: u16,
    n: &mut NegotiateResp,
) -> Result<(), DecodeError> {
    for _ in 0..count {
        off = off.div_ceil(8) * 8;
        let mut r = Rd::at(msg, off)?;
        let kind = r.u16()?;
        let len = r.u16()? as usize;
        r.skip(4)?;
        let data = r.bytes(len)?;
        let mut d = Rd::new(data);
        match kind {
            CTX_PREAUTH => {
                let algs = d.u16()?;
                d.u16()?;
                n.preauth_ok = algs == 1 && d.u16()? == 1;
            }
            CTX_ENCRYPTION => {
                if d.u16()? != 1 {
                    return Err(DecodeError::Invalid("server chose more than one cipher"));
                }
                n.cipher = d.u16()?;
            }
            CTX_SIGNING => {
                if d.u16()? != 1 {
                    return Err(DecodeError::Invalid(
                        "server chose more than one signing algorithm",
                    ));
                }
                n.sign_alg = Some(d.u16()?);
            }
            _ => {}
        }
        off = r.pos();
    }
    Ok(())
}

pub fn session_setup_body(signing_required: bool, blob: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(24 + blob.len());
    put_u16(&mut b, 25);
    b.push(0); // Flags
    b.push(if signing_required { 2 } else { 1 } as u8);
    put_u32(&mut b, 0); // Capabilities
    put_u32(&mut b, 0); // Channel
    put_u16(&mut b, (HEADER_LEN + 24) as u16);
    put_u16(&mut b, blob.len() as u16);
    put_u64(&mut b, 0); // PreviousSessionId
    b.extend_from_slice(blob);
    b
}

/// SESSION_SETUP reply: session flags and the server's security blob.
pub fn parse_session_setup(msg: &[u8]) -> Result<(u16, Vec<u8>), DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, 9)?;
    let flags = r.u16()?;
    let off = r.u16()? as usize;
    let len = r.u16()? as usize;
    let blob = if len > 0 {
        slice(msg, off, len)?.to_vec()
    } else {
        Vec::new()
    };
    Ok((flags, blob))
}

/// TREE_CONNECT to `\\server\share`.
pub fn tree_connect_body(unc: &str) -> Vec<u8> {
    let path = utf16(unc);
    let mut b = Vec::with_capacity(8 + path.len());
    put_u16(&mut b, 9);
    put_u16(&mut b, 0);
    put_u16(&mut b, (HEADER_LEN + 8) as u16);
    put_u16(&mut b, path.len() as u16);
    b.extend_from_slice(&path);
    b
}

/// TREE_CONNECT reply: share type, share flags, capabilities, maximal access.
pub fn parse_tree_connect(msg: &[u8]) -> Result<(u8, u32, u32, u32), DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, 16)?;
    let kind = r.u8()?;
    r.u8()?;
    Ok((kind, r.u32()?, r.u32()?, r.u32()?))
}

/// A file handle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FileId(pub [u8; 16]);

pub mod access {
    pub const FILE_READ_DATA: u32 = 0x1;
    pub const FILE_WRITE_DATA: u32 = 0x2;
    pub const FILE_READ_ATTRIBUTES: u32 = 0x80;
    pub const FILE_WRITE_ATTRIBUTES: u32 = 0x100;
    pub const DELETE: u32 = 0x1_0000;
    pub const SYNCHRONIZE: u32 = 0x10_0000;
    pub const GENERIC_READ: u32 = 0x8000_0000;
    pub const GENERIC_WRITE: u32 = 0x4000_0000;
    pub const MAXIMUM_ALLOWED: u32 = 0x0200_0000;
}

pub mod disposition {
    pub const OPEN: u32 = 1;
    pub const CREATE: u32 = 2;
    pub const OPEN_IF: u32 = 3;
    pub const OVERWRITE_IF: u32 = 5;
}

pub mod options {
    pub const DIRECTORY_FILE: u32 = 0x1;
    pub const WRITE_THROUGH: u32 = 0x2;
    pub const NON_DIRECTORY_FILE: u32 = 0x40;
    pub const DELETE_ON_CLOSE: u32 = 0x1000;
    /// Opens a symbolic link itself instead of following it.
    pub const OPEN_REPARSE_POINT: u32 = 0x20_0000;
}

pub const FILE_ATTRIBUTE_DIRECTORY: u32 = 0x10;
pub const FILE_ATTRIBUTE_NORMAL: u32 = 0x80;
/// A reparse point: a symbolic link or junction, when opened with OPEN_REPARSE_POINT.
pub const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;

/// CREATE of `path` (relative to the share, `\` separated).
pub fn create_body(path: &str, access: u32, disposition: u32, options: u32) -> Vec<u8> {
    let name = utf16(path);
    let mut b = Vec::with_capacity(56 + name.len().max(1));
    put_u16(&mut b, 57);
    b.push(0); // SecurityFlags
    b.push(0); // RequestedOplockLevel: none (no client cache)
    put_u32(&mut b, 2); // Impersonation
    put_u64(&mut b, 0);
    put_u64(&mut b, 0);
    put_u32(&mut b, access);
    put_u32(&mut b, FILE_ATTRIBUTE_NORMAL);
    put_u32(&mut b, 7); // share read, write, delete
    put_u32(&mut b, disposition);
    put_u32(&mut b, options);
    put_u16(&mut b, (HEADER_LEN + 56) as u16);
    put_u16(&mut b, name.len() as u16);
    put_u32(&mut b, 0);
    put_u32(&mut b, 0);
    b.extend_from_slice(&name);
    if name.is_empty() {
        b.push(0);
    }
    b
}

/// CREATE of `path` with `oplock` as the RequestedOplockLevel and `contexts` (a chain
/// made by [`crate::lease`]) appended 8-aligned.
pub fn create_body_ctx(
    path: &str,
    access: u32,
    disposition: u32,
    options: u32,
    oplock: u8,
    contexts: &[u8],
) -> Vec<u8> {
    let mut b = create_body(path, access, disposition, options);
    b[3] = oplock;
    if !contexts.is_empty() {
        pad8(&mut b); // HEADER_LEN is a multiple of 8
        let off = (HEADER_LEN + b.len()) as u32;
        b[48..52].copy_from_slice(&off.to_le_bytes());
        b[52..56].copy_from_slice(&(contexts.len() as u32).to_le_bytes());
        b.extend_from_slice(contexts);
    }
    b
}

/// What CREATE and CLOSE (with attributes) report about a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileInfo {
    pub create_action: u32,
    pub change_time: u64,
    pub last_write: u64,
    pub allocation: u64,
    pub size: u64,
    pub attributes: u32,
}

impl FileInfo {
    pub fn is_dir(&self) -> bool {
        self.attributes & FILE_ATTRIBUTE_DIRECTORY != 0
    }
}

pub fn parse_create(msg: &[u8]) -> Result<(FileId, FileInfo), DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, 89)?;
    r.skip(2)?;
    let create_action = r.u32()?;
    r.skip(8)?; // CreationTime
    r.skip(8)?; // LastAccessTime
    let last_write = r.u64()?;
    let change_time = r.u64()?;
    let allocation = r.u64()?;
    let size = r.u64()?;
    let attributes = r.u32()?;
    r.skip(4)?;
    let id = FileId(r.array()?);
    Ok((
        id,
        FileInfo {
            create_action,
            change_time,
            last_write,
            allocation,
            size,
            attributes,
        },
    ))
}

pub fn close_body(id: FileId) -> Vec<u8> {
    let mut b = Vec::with_capacity(24);
    put_u16(&mut b, 24);
    put_u16(&mut b, 0);
    put_u32(&mut b, 0);
    b.extend_from_slice(&id.0);
    b
}

pub fn flush_body(id: FileId) -> Vec<u8> {
    close_body(id) // same layout: size 24, reserved, file id
}

/// An ECHO request (and its reply): StructureSize 4, two reserved bytes.
pub fn echo_body() -> [u8; 4] {
    [4, 0, 0, 0]
}

/// The fixed part of a READ request (49 bytes with its one-byte buffer).
pub const READ_BODY_LEN: usize = 49;
/// The fixed part of a WRITE request before the data.
pub const WRITE_BODY_LEN: usize = 48;
/// READ reply: StructureSize .. Reserved2, before the data.
pub const READ_RESP_LEN: usize = 16;

pub fn read_body(out: &mut [u8; READ_BODY_LEN], id: FileId, offset: u64, len: u32) {
    out.fill(0);
    out[0..2].copy_from_slice(&49u16.to_le_bytes());
    out[2] = (HEADER_LEN + READ_RESP_LEN) as u8; // Padding: where the data should start
    out[4..8].copy_from_slice(&len.to_le_bytes());
    out[8..16].copy_from_slice(&offset.to_le_bytes());
    out[16..32].copy_from_slice(&id.0);
}

pub fn write_body(out: &mut [u8; WRITE_BODY_LEN], id: FileId, offset: u64, len: u32) {
    out.fill(0);
    out[0..2].copy_from_slice(&49u16.to_le_bytes());
    out[2..4].copy_from_slice(&((HEADER_LEN + WRITE_BODY_LEN) as u16).to_le_bytes());
    out[4..8].copy_from_slice(&len.to_le_bytes());
    out[8..16].copy_from_slice(&offset.to_le_bytes());
    out[16..32].copy_from_slice(&id.0);
}

/// The READ reply's fixed part: (data offset from the header's start, data length).
pub fn parse_read_fixed(b: &[u8]) -> Result<(usize, usize), DecodeError> {
    let mut r = Rd::new(b);
    expect_size(r.u16()?, 17)?;
    let off = r.u8()? as usize;
    r.u8()?;
    let len = r.u32()? as usize;
    Ok((off, len))
}

/// The WRITE reply: bytes written.
pub fn parse_write(msg: &[u8]) -> Result<u32, DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, 17)?;
    r.u16()?;
    r.u32()
}

/// SET_INFO (file class) of `info_class` with `data`.
pub fn set_info_body(id: FileId, info_class: u8, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(32 + data.len());
    put_u16(&mut b, 33);
    b.push(1); // SMB2_0_INFO_FILE
    b.push(info_class);
    put_u32(&mut b, data.len() as u32);
    put_u16(&mut b, (HEADER_LEN + 32) as u16);
    put_u16(&mut b, 0);
    put_u32(&mut b, 0);
    b.extend_from_slice(&id.0);
    b.extend_from_slice(data);
    b
}

pub const FILE_END_OF_FILE_INFORMATION: u8 = 20;
pub const FILE_DISPOSITION_INFORMATION: u8 = 13;
pub const FILE_ID_BOTH_DIRECTORY_INFORMATION: u8 = 37;
pub const FILE_DIRECTORY_INFORMATION: u8 = 1;

/// QUERY_INFO's InfoType for file-system information.
pub const INFO_FILESYSTEM: u8 = 2;
/// FileFsFullSizeInformation's class.
pub const FILE_FS_FULL_SIZE_INFORMATION: u8 = 7;
/// The size of a FileFsFullSizeInformation record.
pub const FS_FULL_SIZE_LEN: u32 = 32;

/// QUERY_INFO of `class` of `info_type` on the open handle `id`.
pub fn query_info_body(id: FileId, info_type: u8, class: u8, out_len: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(41);
    put_u16(&mut b, 41);
    b.push(info_type);
    b.push(class);
    put_u32(&mut b, out_len);
    put_u16(&mut b, 0); // InputBufferOffset
    put_u16(&mut b, 0); // Reserved
    put_u32(&mut b, 0); // InputBufferLength
    put_u32(&mut b, 0); // AdditionalInformation
    put_u32(&mut b, 0); // Flags
    b.extend_from_slice(&id.0);
    b.push(0); // the variable part, empty
    b
}

/// The capacity of a share's file system (FileFsFullSizeInformation), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsSize {
    pub total: u64,
    /// What the caller (quotas applied) may still use.
    pub caller_available: u64,
    /// The allocation unit.
    pub unit: u64,
}

/// A QUERY_INFO reply holding FileFsFullSizeInformation.
pub fn parse_fs_full_size(msg: &[u8]) -> Result<FsSize, DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, 9)?;
    let off = r.u16()? as usize;
    let len = r.u32()? as usize;
    let buf = slice(msg, off, len)?;
    let mut e = Rd::at(buf, 0)?;
    let total_units = e.u64()?;
    let caller_units = e.u64()?;
    e.skip(8)?; // ActualAvailableAllocationUnits
    let sectors = u64::from(e.u32()?);
    let sector = u64::from(e.u32()?);
    let unit = sectors.saturating_mul(sector);
    Ok(FsSize {
        total: total_units.saturating_mul(unit),
        caller_available: caller_units.saturating_mul(unit),
        unit,
    })
}

/// QUERY_DIRECTORY with pattern `*`; `restart` on the first call.
pub fn query_directory_body(id: FileId, restart: bool, out_len: u32) -> Vec<u8> {
    let pat = utf16("*");
    let mut b = Vec::with_capacity(32 + pat.len());
    put_u16(&mut b, 33);
    b.push(FILE_DIRECTORY_INFORMATION);
    b.push(if restart { 1 } else { 0 });
    put_u32(&mut b, 0); // FileIndex
    b.extend_from_slice(&id.0);
    put_u16(&mut b, (HEADER_LEN + 32) as u16);
    put_u16(&mut b, pat.len() as u16);
    put_u32(&mut b, out_len);
    b.extend_from_slice(&pat);
    b
}

/// One entry of a FileDirectoryInformation listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub size: u64,
    pub attributes: u32,
}

/// The entries of a QUERY_DIRECTORY reply (`.` and `..` included, as the server sent them).
pub fn parse_query_directory(msg: &[u8], out: &mut Vec<DirEntry>) -> Result<(), DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, 9)?;
    let off = r.u16()? as usize;
    let len = r.u32()? as usize;
    let buf = slice(msg, off, len)?;
    let mut at = 0usize;
    loop {
        let mut e = Rd::at(buf, at)?;
        let next = e.u32()? as usize;
        e.skip(4 + 8 * 4)?; // FileIndex, times
        let size = e.u64()?;
        e.skip(8)?; // AllocationSize
        let attributes = e.u32()?;
        let name_len = e.u32()? as usize;
        let name = from_utf16(e.bytes(name_len)?);
        out.push(DirEntry {
            name,
            size,
            attributes,
        });
        if next == 0 {
            return Ok(());
        }
        at = at
            .checked_add(next)
            .ok_or(DecodeError::Invalid("directory entry offset overflows"))?;
    }
}

/// A generic reply with a StructureSize only (CLOSE, FLUSH, SET_INFO, LOGOFF, ...).
pub fn parse_empty(msg: &[u8], size: u16) -> Result<(), DecodeError> {
    let mut r = Rd::at(msg, HEADER_LEN)?;
    expect_size(r.u16()?, size)
}

/// An error reply's body (StructureSize 9) is accepted wherever a status is not success.
fn expect_size(got: u16, want: u16) -> Result<(), DecodeError> {
    if got == want {
        Ok(())
    } else {
        Err(DecodeError::BadValue {
            what: "StructureSize",
            value: got.into(),
        })
    }
}

/// Pads a body to 8 bytes (for compounded requests).
pub fn align8(b: &mut Vec<u8>) {
    pad8(b);
}
