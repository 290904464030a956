//! NFSv4.1 and 4.2 (RFC 8881, RFC 7862) over the crate's RPC transport: a session with a
//! slot table as wide as the depth asked for, every COMPOUND headed by SEQUENCE, the
//! operations a storage benchmark needs, and pipelined READ/WRITE. No pNFS, delegations
//! (OPEN asks for none and returns any it gets), back channel or Kerberos.

mod client;
mod decode;
mod dirs;
mod kept;
mod pipe;
mod retry;
mod session;
mod stat;
mod types;
pub mod wire;

#[cfg(test)]
mod tests;

pub use client::{Client4, NFS4_PORT, SHARE_ACCESS_BOTH, SHARE_ACCESS_READ, SHARE_ACCESS_WRITE};
pub(crate) use decode::locate_read;
pub use decode::{Reply, V4Error, WriteRes, walk};
pub use retry::RETRY_FOR;
pub use stat::Nfs4Stat;
pub use types::{Attrs4, Fh4, FileType4, SessionId, Stateid, Verifier};
pub use wire::{Content, Create, Stable4};
