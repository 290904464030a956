//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod clat2csv;
pub mod fio;
pub mod sample;
