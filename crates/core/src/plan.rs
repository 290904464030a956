//! Which files each job clone uses, and which byte range of each: fio's naming, sizing and
//! offset rules, as pure functions (the runner does the IO).

use storbench_job::target::Target;
use storbench_job::{JobSpec, SizeSpec};

/// A file a job uses, before it is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePlan {
    /// Path or URL, as engines open it.
    pub path: String,
    /// What `path` is, classified once here: the runner asks its capabilities.
    pub target: Target,
    /// Bytes the job does IO over (the file is laid out to at least `offset + len`).
    pub len: Option<u64>,
}

/// True for local character devices (/dev/null, /dev/zero, /dev/full): no size, nothing to
/// lay out, never removed, as fio treats them.
pub fn is_char_device(target: &Target) -> bool {
    use std::os::unix::fs::FileTypeExt;
    matches!(target, Target::Path(path)
        if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device()))
}

/// Where a file named `name` lies under the directory `dir`, both classified once: under
/// a local directory the name joined as written (fio's rule: `../x` and `/abs` reach where
/// they say); under a URL target a [`RelPath`](storbench_job::relpath::RelPath) below it (an absolute name inside the
/// target's path made relative to it, see [`Target::rel_name`]), joined by the target's
/// protocol. The error is one line naming the job's root.
fn below(dir: &Target, name: &str) -> Result<Target, String> {
    match dir.protocol() {
        None => Ok(Target::local_join(dir.expose(), name)),
        Some(_) => dir.join(dir.rel_name(name)?),
    }
}

/// fio's `filename_format` expansion.
pub fn expand_name(format: &str, job: &str, jobnum: u32, filenum: u32) -> String {
    format
        .replace("$jobname", job)
        .replace("$jobnum", &jobnum.to_string())
        .replace("$filenum", &filenum.to_string())
        .replace("$clientuid", &crate::coord::rank().to_string())
}

/// The files clone `jobnum` of `job` uses, with the size of each when the job states one.
/// Explicit `filename`s are shared by all clones (a plain one below `directory=`, which the
/// nfs engine's `nfs_url` gives when the job names none); generated names are per clone, with
/// directories handed out round-robin to clones as fio does. A job whose engine does no IO
/// on a file (cpuio, exec) has none, whatever `filename` says: fio never opens it either.
pub fn files_for_clone(job: &JobSpec, jobnum: u32) -> Vec<FilePlan> {
    if job.has_no_file() {
        return Vec::new();
    }
    let targets: Vec<Target> = if job.filenames.is_empty() {
        let dir = match job.directories.len() {
            0 => Target::Path(".".into()),
            n => job.directories[jobnum as usize % n].clone(),
        };
        let format = crate::coord::file_format(&job.filename_format, job.unique_filename);
        (0..job.nrfiles.max(1))
            .map(|f| {
                let name = expand_name(&format, &job.name, jobnum, f);
                // `check_names` refused a name that does not fit under a URL target
                // before any plan was made; the name alone is what an engine refuses.
                below(&dir, &name).unwrap_or(Target::Path(name))
            })
            .collect()
    } else {
        let dir = job.directories.first();
        job.filenames.iter().map(|f| explicit(dir, f)).collect()
    };
    let per_file = match (job.filesize, job.size) {
        (Some((lo, _)), _) => Some(lo),
        (None, Some(SizeSpec::Bytes(total))) => Some(total / targets.len().max(1) as u64),
        (None, _) => None,
    };
    targets
        .into_iter()
        .map(|target| FilePlan {
            path: target.expose().to_string(),
            target,
            len: per_file,
        })
        .collect()
}

/// The target of an explicit `filename=`: a URL of its own as it is; a plain name under
/// `directory=` when one is given, except an absolute name under a local directory (fio
/// opens it as written); else the name alone.
fn explicit(dir: Option<&Target>, own: &Target) -> Target {
    let name = own.expose();
    match dir {
        _ if own.protocol().is_some() => own.clone(),
        Some(d) if d.protocol().is_some() || !name.starts_with('/') => {
            below(d, name).unwrap_or_else(|_| own.clone())
        }
        _ => own.clone(),
    }
}

/// Checks the names the plan puts under a URL target (an export or share given as
/// `directory=`, which the nfs engine's `nfs_url` gives): each generated name and each plain
/// `filename=` must be a [`RelPath`](storbench_job::relpath::RelPath) below that root (an absolute one is a path on the
/// server inside the root's path, made relative to it), so `..` or a name outside cannot
/// reach beyond it; the error is one line before the run. A local directory keeps fio's
/// rule (the name is joined as written: `../x` and `/abs` reach where they say).
pub fn check_names(job: &JobSpec) -> Result<(), String> {
    let Some(root) = job.directories.iter().find(|t| t.protocol().is_some()) else {
        return Ok(());
    };
    let bad = |what: &str, e: String| format!("{}: {what} {e} (under {root})", job.name);
    if job.filenames.is_empty() {
        let format = crate::coord::file_format(&job.filename_format, job.unique_filename);
        for jobnum in 0..job.numjobs.max(1) {
            for f in 0..job.nrfiles.max(1) {
                let name = expand_name(&format, &job.name, jobnum, f);
                below(root, &name).map_err(|e| bad("filename_format gives", e))?;
            }
        }
        return Ok(());
    }
    for f in job.filenames.iter().filter(|f| f.protocol().is_none()) {
        below(root, f.expose()).map_err(|e| bad("filename", e))?;
    }
    Ok(())
}

/// The region of a file that `fill_device` fills without a size: no end the storage
/// reaches first (fio's size of -1), and far from overflowing an offset.
pub const FILL_LEN: u64 = 1 << 62;

/// Resolves a size that may be a percentage against the existing size of the target.
pub fn resolve_len(
    job: &JobSpec,
    planned: Option<u64>,
    existing: Option<u64>,
    nfiles: usize,
) -> Option<u64> {
    match (planned, job.size, existing) {
        (Some(len), _, _) => Some(len),
        (None, Some(SizeSpec::Percent(p)), Some(size)) => {
            Some((size as f64 * p / 100.0) as u64 / nfiles.max(1) as u64)
        }
        (None, _, Some(size)) => Some(size),
        _ => None,
    }
}

/// Start offset of clone `jobnum` inside a file of `file_size` bytes, as fio's
/// `get_start_offset`: offset + jobnum × increment, where a percentage is of the file's
/// size, and with any percentage the sum is rounded up to a multiple of `align` (the
/// smallest block size).
pub fn start_offset(job: &JobSpec, jobnum: u32, file_size: Option<u64>, align: u64) -> u64 {
    let of_file = |spec: SizeSpec| match spec {
        SizeSpec::Bytes(b) => (b, false),
        SizeSpec::Percent(p) => {
            let size = u128::from(file_size.unwrap_or(0));
            ((size * p as u128 / 100) as u64, true)
        }
    };
    let (base, base_pct) = of_file(job.offset);
    let (increment, increment_pct) = of_file(job.offset_increment);
    // In a multi-host run the clones of all ranks count on, rank after rank, so one shared
    // file with `offset_increment` is divided into per-rank regions (IOR's shared file).
    let slot = u64::from(crate::coord::rank()) * u64::from(job.numjobs.max(1)) + u64::from(jobnum);
    let offset = base.saturating_add(increment.saturating_mul(slot));
    if base_pct || increment_pct {
        offset.div_ceil(align.max(1)) * align.max(1)
    } else {
        offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str) -> Target {
        Target::classify(text)
    }

    #[test]
    fn generated_names_per_clone_and_file() {
        let mut job = JobSpec::new("nf");
        job.nrfiles = 2;
        job.directories = vec![t("/a"), t("/b/")];
        job.size = Some(SizeSpec::Bytes(8192));
        let c0 = files_for_clone(&job, 0);
        let c1 = files_for_clone(&job, 1);
        assert_eq!(c0[0].path, "/a/nf.0.0");
        assert_eq!(c0[1].path, "/a/nf.0.1");
        assert_eq!(c1[0].path, "/b/nf.1.0");
        assert_eq!(c0[0].len, Some(4096));
    }

    #[test]
    fn explicit_filenames_are_shared_and_url_queries_kept() {
        let mut job = JobSpec::new("j");
        job.filenames = vec![t("/dev/sdx")];
        assert_eq!(files_for_clone(&job, 3)[0].path, "/dev/sdx");
        assert_eq!(files_for_clone(&job, 3)[0].len, None);
        job.directories = vec![t("nfs://h/export/d?version=3")];
        job.filenames = vec![t("f.0.0"), t("/export/d/sub/f")];
        let files = files_for_clone(&job, 0);
        assert_eq!(files[0].path, "nfs://h/export/d/f.0.0?version=3");
        assert_eq!(files[1].path, "nfs://h/export/d/sub/f?version=3");
        let Target::Nfs(u) = &files[1].target else {
            panic!("{:?}", files[1].target)
        };
        assert_eq!(u.url.path, "/export/d/sub/f");
        job.directories = vec![t("nfs://h/export?uid=0")];
        job.filenames = vec![t("/export/sub/f"), t("g")];
        let files = files_for_clone(&job, 0);
        assert_eq!(files[0].path, "nfs://h/export/sub/f?uid=0");
        assert_eq!(files[1].path, "nfs://h/export/g?uid=0");
        job.filenames.clear();
        job.directories = vec![t("smb://u:pw@h/share/dir?seal=1")];
        let files = files_for_clone(&job, 2);
        assert_eq!(files[0].path, "smb://u:pw@h/share/dir/j.2.0?seal=1");
        let Target::Smb(u) = &files[0].target else {
            panic!("{:?}", files[0].target)
        };
        assert_eq!(u.url.path, "dir/j.2.0");
    }

    #[test]
    fn sizes_and_offsets() {
        let mut job = JobSpec::new("j");
        job.size = Some(SizeSpec::Percent(50.0));
        assert_eq!(resolve_len(&job, None, Some(1 << 30), 1), Some(1 << 29));
        // fio: 25% of 10,000 is 2,500, plus 2 × 4,096, rounded up to 4 KiB.
        job.offset = SizeSpec::Percent(25.0);
        job.offset_increment = SizeSpec::Bytes(4096);
        assert_eq!(start_offset(&job, 2, Some(10_000), 4096), 12_288);
        assert_eq!(start_offset(&job, 0, Some(40_000), 4096), 12_288);
        assert_eq!(start_offset(&job, 0, Some(1 << 20), 4096), 1 << 18);
        // An increment in percent: clone 3 of a 1,000,000-byte file starts at 750,000,
        // rounded up.
        job.offset = SizeSpec::Bytes(0);
        job.offset_increment = SizeSpec::Percent(25.0);
        assert_eq!(start_offset(&job, 3, Some(1_000_000), 4096), 753_664);
        // Bytes alone are taken as given.
        job.offset = SizeSpec::Bytes(1000);
        job.offset_increment = SizeSpec::Bytes(10);
        assert_eq!(start_offset(&job, 2, Some(1 << 20), 4096), 1020);
    }

    #[test]
    fn names_under_a_url_target_stay_below_it() {
        let mut job = JobSpec::new("j");
        job.directories = vec![t("nfs://h/export/d")];
        job.filenames = vec![t("ok/f"), t("nfs://h/export/other"), t("/export/d/sub/f")];
        assert_eq!(check_names(&job), Ok(()));
        for bad in [
            "../x",
            "/etc/passwd",
            "a/../../x",
            "/export/d/../x",
            "/export/e/f",
        ] {
            job.filenames = vec![t(bad)];
            let e = check_names(&job).unwrap_err();
            assert!(
                e.starts_with(&format!("j: filename {bad:?} cannot name")),
                "{e}"
            );
            assert!(
                e.ends_with("(under nfs://h/export/d)") && !e.contains('\n'),
                "{e}"
            );
        }
        job.filenames.clear();
        job.filename_format = "../$jobname".into();
        assert!(
            check_names(&job)
                .unwrap_err()
                .contains("filename_format gives")
        );
        // Locally fio's rule stands: the name is joined as written.
        job.directories = vec![t("/tmp/d")];
        job.filenames = vec![t("../x")];
        assert_eq!(check_names(&job), Ok(()));
        assert_eq!(files_for_clone(&job, 0)[0].path, "/tmp/d/../x");
    }

    #[test]
    fn devices_and_urls() {
        assert!(is_char_device(&t("/dev/null")));
        assert!(!is_char_device(&t("/etc/hostname")));
        assert!(t("iscsi://h/iqn.x/1").caps().device_like);
        assert!(!t("nfs://h/export/f").caps().device_like);
        assert!(!t("/etc/hostname").caps().device_like);
    }
}
