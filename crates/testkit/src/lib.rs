//! storbench-testkit

pub mod alloc;
pub mod fuzz;
pub mod ganesha;
pub mod netns;
pub mod ports;
pub mod smbd;
pub mod tgtd;
