//! storbench-testkit

pub mod ganesha;
pub mod tgtd;
pub mod netns;
