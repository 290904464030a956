//! What is written while a run is going, not reports of a finished run: the live status
//! line ([`status`]) and fio's log files ([`logs`]), fed by the runner's sampler through
//! the CLI's observer. The reporters (the [`crate::registry`]) only read a finished result.

pub mod logs;
pub mod status;
pub mod unit_logs;
