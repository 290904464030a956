//! A user-space SMB2/3 client for benchmarking: Direct TCP, MessageId-pipelined requests
//! with credits as the window, NTLMv2 over NTLMSSP (in SPNEGO), signing, encryption and key
//! derivation of dialects 2.0.2 to 3.1.1, and the file commands a storage benchmark needs.
//! No system library, no async runtime, no data cache (no oplocks or leases are requested).

pub mod client;
pub mod conn;
pub mod crypto;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod header;
pub mod lease;
pub mod ntlm;
pub mod proto;
pub mod reconnect;
pub mod rpc;
pub mod seal;
pub mod spnego;
pub mod url;
pub mod wire;

pub use client::{Client, ClientConfig, SessionInfo};
pub use conn::{Completion, Submit};
pub use error::{DecodeError, NtStatus, SmbError};
pub use lease::Durable;
pub use proto::{DirEntry, FileId, FileInfo};
pub use url::SmbUrl;
