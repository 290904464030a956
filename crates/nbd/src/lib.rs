//! A user-space NBD client for benchmarking: the fixed newstyle handshake with `NBD_OPT_GO`
//! (export name, size, flags and block-size constraints), structured or simple replies, and
//! READ/WRITE/FLUSH/TRIM/WRITE_ZEROES requests pipelined by cookie within a bounded window
//! over one TCP or Unix-domain connection. No system library, no async runtime, no TLS.
//!
//! The protocol is the one in the NBD project's `doc/proto.md`; nbdkit and qemu-nbd are the
//! servers it is tested and used with.

pub mod client;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod handshake;
pub mod proto;
pub mod reply;
mod sock;
pub mod url;

pub use client::{Client, Cmd, Config};
pub use error::{NbdError, Result};
pub use handshake::Export;
pub use url::NbdUrl;
