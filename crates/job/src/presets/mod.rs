//! Built-in workloads that are not parsed from fio input.

pub mod quick;
