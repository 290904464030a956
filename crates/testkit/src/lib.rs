//! storbench-testkit

pub mod alloc;
pub mod ganesha;
pub mod netns;
pub mod tgtd;
