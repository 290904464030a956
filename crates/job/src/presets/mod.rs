//! Built-in workloads that are not parsed from fio input.

pub mod diagnose;
pub mod quick;
