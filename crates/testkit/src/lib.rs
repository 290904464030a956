//! storbench-testkit

pub mod alloc;
pub mod ganesha;
pub mod netns;
pub mod ports;
pub mod tgtd;
