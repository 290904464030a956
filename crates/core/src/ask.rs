//! What a protocol needs before a run, written beside its engine's `create`: an engine
//! file's `pub fn prepare` (a [`Prepare`]) checks a target of its protocol once before any
//! IO (the server reachable, the directory there, a secret found), asking the person
//! running storbench through [`Ask`] when a secret is missing. The engines crate lists
//! every engine file's `prepare` by the engine's catalogue name; the front ends run the one
//! a target's engine has.

use storbench_job::target::Target;

use crate::EngineError;

/// What a pre-run check may ask of the person running storbench.
pub trait Ask {
    /// A secret typed after `question` without echo; `Ok(None)` when there is no terminal
    /// to ask on. `what` names it in an error ("CHAP secret").
    fn secret(&self, question: &str, what: &str) -> Result<Option<String>, EngineError>;
    /// A warning for the person (one line, no secret).
    fn warn(&self, message: &str);
}

/// A protocol's checks of `target` before a run; `directory` when storbench creates files
/// in it.
pub type Prepare = fn(target: &Target, directory: bool, ask: &dyn Ask) -> Result<(), EngineError>;
