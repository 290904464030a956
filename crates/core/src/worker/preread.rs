//! fio's `pre_read`: before its IO starts, a clone reads the regions of its local files
//! into the page cache with plain reads of the job's largest read block, untimed (fio's
//! `pre_read_files`). Character devices are skipped as fio skips them; the job refuses URL
//! targets before it runs.

use std::os::unix::fs::FileExt;

use storbench_job::target::Target;

use super::WorkerPlan;
use crate::error::EngineError;
use crate::stop;

/// Reads every local file's region of `plan` once; an error ends the job, as fio's does.
pub(super) fn pre_read(plan: &WorkerPlan) -> Result<(), EngineError> {
    let bs = plan.job.bs[0].max().max(1) as usize;
    let mut buf = vec![0u8; bs];
    for f in &plan.files {
        let (Target::Path(path) | Target::Device(path)) = &f.spec.target else {
            continue;
        };
        if crate::plan::is_char_device(&f.spec.target) {
            continue;
        }
        let file = std::fs::File::open(path).map_err(|e| EngineError::os("pre-read", path, e))?;
        let end = f.start.saturating_add(f.len);
        let mut at = f.start;
        while at < end && !stop::requested() {
            let n = (end - at).min(bs as u64) as usize;
            match file.read_at(&mut buf[..n], at) {
                Ok(0) => break,
                Ok(got) => at += got as u64,
                Err(e) => return Err(EngineError::os("pre-read", path, e)),
            }
        }
    }
    Ok(())
}
