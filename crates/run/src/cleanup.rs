//! Removing what a run created, on every exit path.

use std::sync::Arc;

use storbench_job::JobSpec;
use storbench_job::target::Target;

use super::*;
/// One file a batch created, to remove afterwards when asked to.
pub(super) struct Created {
    pub(super) job: Arc<JobSpec>,
    /// As the plan typed it: removed through the engine by it, named (masked) by it.
    pub(super) target: Target,
    pub(super) remove: bool,
}

/// Removes created files on every exit path, including errors and interruption.
pub(super) struct Cleanup<'f> {
    pub(super) factory: &'f EngineFactory,
    pub(super) files: Vec<Created>,
    pub(super) notes: Vec<Note>,
}

impl Cleanup<'_> {
    pub(super) fn run(&mut self) {
        for c in self.files.drain(..).filter(|c| c.remove) {
            let result =
                (self.factory)(&c.job).and_then(|mut e| layout::remove(e.as_mut(), &c.target));
            if let Err(e) = result {
                self.notes.push(Note {
                    level: NoteLevel::Warning,
                    code: "warn.cleanup".into(),
                    message: format!("could not remove {}, it is left behind: {e}", c.target),
                });
            }
        }
    }
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        self.run();
    }
}
