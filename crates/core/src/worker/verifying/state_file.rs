//! fio's verify state file in the worker: the last write completions of each file kept
//! in a ring (fio's `file_log_write_comp`), written as fio's `local-NAME-N-verify.state`
//! when a verifying write job ends, and read by `verify_state_load` to stop the checks
//! where the writes stopped.

use storbench_job::JobSpec;

use super::{Piece, Slot, VerifyState, Worker};
use crate::error::{EngineError, ErrorKind};
use crate::verify::state::{StateFile, file_name};

impl VerifyState {
    /// A write completed: into its file's ring of the last completions (fio's
    /// `file_log_write_comp`), for the state file.
    #[inline]
    fn wrote(&mut self, file: u32, offset: u64) {
        if self.comp_depth == 0 {
            return;
        }
        self.writes_done += 1;
        let f = file as usize;
        let at = self.comp_next[f] as usize;
        self.comps[f * self.comp_depth + at] = offset;
        self.comp_next[f] = ((at + 1) % self.comp_depth) as u32;
    }

    /// fio's state of this job clone (`get_all_io_list`): per file, the last
    /// completions, newest first.
    fn state(&self, job: &JobSpec, thread: u32) -> StateFile {
        let per_file = self.writes_done.min(self.comp_depth as u64) as usize;
        let mut comps = Vec::with_capacity(per_file * self.comp_next.len());
        for (f, &next) in self.comp_next.iter().enumerate() {
            let ring = &self.comps[f * self.comp_depth..(f + 1) * self.comp_depth];
            for i in 0..per_file {
                let at = (next as usize + self.comp_depth - 1 - i) % self.comp_depth;
                comps.push((f as u64, ring[at]));
            }
        }
        StateFile {
            depth: job.iodepth,
            nofiles: self.comp_next.len() as u32,
            numberio: self.writes,
            index: u64::from(thread),
            name: job.name.clone(),
            comps,
        }
    }
}

impl VerifyState {
    /// With a loaded state: whether `p` is past where the writes stopped.
    pub(super) fn past_saved_writes(&self, p: &Piece) -> bool {
        self.loaded
            .as_ref()
            .is_some_and(|st| st.should_stop(self.reads_done, u64::from(p.file), p.offset))
    }
}

impl Worker<'_> {
    /// A write completed (its bytes all moved): logged for the state file.
    #[inline]
    pub(in crate::worker) fn verify_wrote(&mut self, s: &Slot) {
        if let Some(v) = self.verify.as_mut() {
            v.wrote(s.file, s.offset);
        }
    }

    /// fio's `verify_save_state` at the end of a verifying write job: its state file in
    /// the working directory. A file that cannot be written is a warning, as in fio.
    pub(in crate::worker) fn save_verify_state(&self) {
        let Some(v) = self.verify.as_ref().filter(|v| v.save) else {
            return;
        };
        let name = file_name(&self.job.name, self.plan.thread);
        let bytes = v.state(self.job, self.plan.thread).encode();
        if let Err(e) = write_state(&name, &bytes) {
            eprintln!("storbench: verify state file {name}: {e}");
        }
    }
}

/// Writes a state file, never through a symbolic link planted at its name.
fn write_state(name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(name)?;
    f.write_all(bytes)
}

/// `verify_state_load`: this clone's state file from the working directory, read with a
/// bound; a missing or foreign file is the job's one-line error.
pub(super) fn load_state(job: &str, thread: u32) -> Result<StateFile, EngineError> {
    use std::io::Read;
    let name = file_name(job, thread);
    let fail =
        |why: String| EngineError::new(ErrorKind::Os, format!("verify_state_load: {name}: {why}"));
    let f = std::fs::File::open(&name).map_err(|e| fail(e.to_string()))?;
    let mut bytes = Vec::new();
    f.take(crate::verify::state::MAX_FILE)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(e.to_string()))?;
    StateFile::decode(&bytes).map_err(fail)
}
