//! storbench-testkit

pub mod ganesha;
pub mod netns;
pub mod tgtd;
