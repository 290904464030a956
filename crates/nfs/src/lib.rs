//! A user-space NFSv3 and NFSv4.1/4.2 client for benchmarking: ONC RPC over TCP with record marking,
//! XID-pipelined calls on one or more connections, AUTH_SYS, PORTMAP, MOUNT v3 and the NFSv3
//! procedures a storage benchmark needs; `v4` adds sessions and COMPOUNDs over the same transport. No system library, no async runtime, no data cache.

pub mod client;
pub mod conn;
pub mod error;
pub mod framing;
#[doc(hidden)]
pub mod fuzzing;
mod mount;
pub mod proto;
mod reply;
pub mod rpc;
pub mod select;
pub mod transport;
pub mod url;
pub mod v4;
pub mod xdr;

pub use client::{At, Client};
pub use error::{DecodeError, MountStat, NfsError};
pub use proto::{Fattr, Fh, FsInfo, FsStat, NfsStat, Stable};
pub use transport::{DurabilityStats, Outage, Transport, TransportConfig};
pub use url::{NfsUrl, NfsVersion};
