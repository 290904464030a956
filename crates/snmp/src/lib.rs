//! A small SNMP (v2c and v3 with USM) client for `--server-stats snmp://…`: reads a NAS's CPU, NIC and disk
//! counters while a benchmark runs. Blocking UDP with a timeout on every request and no
//! async runtime (a protocol crate of storbench, docs/ARCHITECTURE.md). Only what the
//! sampler needs: GET and GETBULK walks, the BER subset they use.

pub mod ber;
pub mod client;
#[doc(hidden)]
pub mod fuzzing;
pub mod message;
pub mod url;
pub mod usm;
pub mod v3;
pub mod v3msg;

pub use ber::{Oid, Value};
pub use client::Client;
pub use url::SnmpUrl;

/// Why a request failed, as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Url(String),
    Io(String),
    Timeout(String),
    Protocol(String),
    Agent(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Url(m) => write!(f, "bad SNMP URL: {m}"),
            Error::Io(m) => write!(f, "SNMP: {m}"),
            Error::Timeout(m) => write!(f, "SNMP: {m}"),
            Error::Protocol(m) => write!(f, "SNMP reply: {m}"),
            Error::Agent(m) => write!(f, "SNMP agent: {m}"),
        }
    }
}

impl std::error::Error for Error {}
