//! A user-space SMB2/3 client for benchmarking: Direct TCP, MessageId-pipelined requests
//! with credits as the window, NTLMv2 over NTLMSSP, signing and key derivation of dialects
//! 2.0.2 to 3.1.1, and the file commands a storage benchmark needs. No system library, no
//! async runtime, no data cache (no oplocks or leases are requested).

pub mod crypto;
pub mod error;
pub mod header;
pub mod ntlm;
pub mod proto;
pub mod wire;

pub use error::{DecodeError, NtStatus, SmbError};
