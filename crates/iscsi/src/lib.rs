//! A user-space iSCSI initiator (RFC 7143): login with CHAP, pipelined SCSI commands within
//! the CmdSN window, Data-In/R2T/Data-Out, NOP liveness, ERL 0 reinstatement and discovery.
//!
//! It has no async runtime: one non-blocking socket per [`Session`], driven by the caller's
//! thread through [`Session::submit`], [`Session::flush`] and [`Session::wait_finished`].

pub mod chap;
mod datapath;
pub mod discovery;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod login;
pub mod pdu;
pub mod scsi;
pub mod sense;
pub mod session;
pub mod task;
pub mod text;
pub mod url;
pub mod wire;

pub use error::{Error, Result, ScsiFailure};
pub use scsi::{Capacity, Inquiry};
pub use sense::Sense;
pub use session::{Config, Session, Timeouts};
pub use task::{Dir, Finished, Outcome};
pub use text::{Digest, Negotiated, Offer};
pub use url::{Credentials, Url};
