//! storbench-testkit

pub mod ganesha;
pub mod tgtd;
