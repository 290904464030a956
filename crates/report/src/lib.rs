//! storbench's reporters. Each reads a finished [`storbench_core::result::RunResult`] and
//! writes one output format; none of them measures anything.
//!
//! One module per format family; other reporters append their `pub mod` line here.

pub mod bonnie_csv;
pub mod bonnie_table;
pub mod compare;
pub mod fio;
pub mod html;
pub mod notes;
pub mod quick;
pub mod status;
pub mod terminal;
