//! storbench-testkit

pub mod ganesha;
