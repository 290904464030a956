//! storbench-testkit

pub mod alloc;
pub mod fuzz;
pub mod ganesha;
pub mod nbdkit;
pub mod netns;
pub mod ports;
pub mod tgtd;
