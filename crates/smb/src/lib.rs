//! A user-space SMB2/3 client for benchmarking: Direct TCP, MessageId-pipelined requests
//! with credits as the window, NTLMv2 over NTLMSSP (in SPNEGO), signing, encryption and key
//! derivation of dialects 2.0.2 to 3.1.1, and the file commands a storage benchmark needs.
//! No system library, no async runtime, no data cache (the leases asked for with durable
//! handles cache nothing).
//!
//! [`conn::Conn`] is one TCP connection, [`Client`] one login and share on it, and
//! [`Session`] a share worked on across lost connections: it makes the connection again
//! within `reconnect=`, reclaims or reopens the files and sends the IOs in flight again;
//! [`reconnect`] keeps which servers answered or were given up on in this process.

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
pub mod session;
pub mod spnego;
pub mod url;
pub mod wire;

pub use client::{Client, ClientConfig, SessionInfo};
pub use conn::{Completion, Submit};
pub use error::{DecodeError, NtStatus, SmbError};
pub use lease::Durable;
pub use proto::{DirEntry, FileId, FileInfo};
pub use session::Session;
pub use url::SmbUrl;
