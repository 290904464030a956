//! Before a job runs: its files laid out and sized per clone, directories and devices checked.

use std::sync::Arc;

use storbench_job::target::Target;
use storbench_job::{JobSpec, SizeSpec};

use super::*;
use storbench_core::worker::region_pass;
/// Files of one job after lay-out: per-clone regions.
pub(super) struct PreparedJob {
    /// By path: shared by clones for explicit files, one per clone otherwise.
    pub(super) files: std::collections::HashMap<String, PreparedFile>,
}

/// One file after lay-out.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PreparedFile {
    /// Its size now.
    pub(super) size: u64,
    /// Bytes a clone does IO over.
    pub(super) len: u64,
    /// Its size before this run (None: it did not exist). Percentages (`size=50%`,
    /// `offset=25%`) are of this size, as in fio: a new file has its IO at offset 0.
    pub(super) basis: Option<u64>,
}

impl PreparedJob {
    pub(super) fn files_for(&self, job: &JobSpec, clone: u32) -> Vec<WorkerFile> {
        let open = open_options(job);
        plan::files_for_clone(job, clone)
            .into_iter()
            .map(|f| {
                let p = self.files.get(&f.path).copied().unwrap_or_default();
                let align = job.bs.iter().map(|b| b.min()).min().unwrap_or(4096).max(1);
                let start = plan::start_offset(job, clone, p.basis, align);
                let len = p.len.min(p.size.saturating_sub(start));
                WorkerFile {
                    spec: storbench_core::engine::FileSpec {
                        path: f.path,
                        target: f.target,
                        open: open.clone(),
                    },
                    start,
                    len,
                    size: p.size,
                    ends_file: start + len >= p.size,
                    skip_wraps: region_pass(job, start, len, p.size).skip_wraps,
                }
            })
            .collect()
    }
}

/// The bytes a size-bound job issues over a file's region in one pass, as fio does (see
/// `worker::passes::region_pass`).
pub(super) fn pass_bytes(job: &JobSpec, file: &WorkerFile) -> u64 {
    region_pass(job, file.start, file.len, file.size).bytes
}

pub(super) fn open_options(job: &JobSpec) -> storbench_core::engine::OpenOptions {
    storbench_core::engine::OpenOptions {
        read: true,
        write: job.rw.kind.writes(),
        // A file being filled is written from nothing, never laid out.
        create: job.create_on_open || job.fill_device,
        exclusive: false,
        direct: job.direct,
        sync: job.sync,
        truncate: false,
        nofollow: generated_names(job),
    }
}

/// fio mode names the files itself (jobname.N.M in directory=) when no filename= is given;
/// quick names its test file itself.
pub(super) fn generated_names(job: &JobSpec) -> bool {
    job.names_generated()
}

/// Lays out a job's files, checks devices before writes, and records what it created.
pub(super) fn prepare_job(
    job: &Arc<JobSpec>,
    req: &RunRequest,
    factory: &EngineFactory,
    observer: &mut dyn Observer,
    cleanup: &mut Cleanup,
) -> Result<PreparedJob, EngineError> {
    plan::check_names(job).map_err(|e| EngineError::new(ErrorKind::Refused, e))?;
    let mut engine = factory(&super::forked::layout_job(job))?;
    let lines = engine.start_lines();
    if !lines.is_empty() {
        for _ in 0..job.numjobs.max(1) {
            observer.engine_lines(&lines);
        }
    }
    let no_data = engine.caps().no_data;
    let mut files: std::collections::HashMap<String, PreparedFile> = Default::default();
    // A job that fills the storage writes until it is full, by design.
    if !no_data && !job.fill_device {
        check_space(job, engine.as_mut())?;
    }
    create_scratch(job, cleanup)?;
    for clone in 0..job.numjobs.max(1) {
        // fio says "Laying out IO file" once for every clone that lays files out.
        let mut announced = false;
        // Bytes this clone's earlier files took to lay out, for the progress shown.
        let mut laid = 0u64;
        let planned = plan::files_for_clone(job, clone);
        let nfiles = planned.len();
        for (i, f) in planned.iter().enumerate() {
            // A file shared by clones (filename=) is prepared by the first and extended
            // when a later clone's sized slice (offset_increment) reaches past its end.
            let known = files.get(&f.path).copied();
            if known.is_none() && generated_names(job) {
                layout::refuse_symlink(&job.name, &f.target)?;
            }
            let basis = match known {
                Some(p) => p.basis,
                None => layout::probe(engine.as_mut(), &f.target),
            };
            let (len, need) = extent(job, clone, f, basis, nfiles)?;
            if known.is_some_and(|p| p.size >= need || f.len.is_none()) {
                continue;
            }
            if no_data {
                // Engines that move no data (null, metadata engines) need no lay-out.
                let size = need.max(known.map_or(0, |p| p.size));
                files.insert(f.path.clone(), PreparedFile { size, len, basis });
                continue;
            }
            let total: u64 = planned.iter().filter_map(|p| p.len).sum::<u64>().max(len);
            let mut announce = |written: Option<u64>| match written {
                None if !announced => {
                    observer.laying_out(&job.name, nfiles, total);
                    announced = true;
                }
                None => {}
                Some(w) => observer.layout_progress(&job.name, laid + w, total),
            };
            let remove = job.unlink || req.always_remove_created;
            if remove && known.is_none() && basis.is_none() {
                // Named before the lay-out, the likeliest time for a third Ctrl-C.
                storbench_core::stop::name_leftovers(&f.path);
            }
            let laid_out = layout::prepare_file(
                engine.as_mut(),
                job,
                &f.target,
                need,
                seed_for(job, clone) ^ i as u64,
                &mut announce,
            );
            // A file whose lay-out failed half-way (ENOSPC, Ctrl-C) was still created by
            // us: it is removed whatever `unlink` says, as it holds nothing usable.
            let created = match &laid_out {
                Ok(p) => p.created,
                Err(e) => e.created,
            };
            if created {
                cleanup.files.push(Created {
                    job: job.clone(),
                    target: f.target.clone(),
                    remove: remove || laid_out.is_err(),
                });
            }
            let prepared = laid_out.map_err(|e| e.error)?;
            // Block devices too (BLKFLSBUF), as fio does on open; an iSCSI LUN has no local
            // cache and opening one costs a login.
            if job.invalidate
                && f.target.caps().page_cache
                && let Err(e) = invalidate(engine.as_mut(), &f.target)
                && !job.direct
            {
                // Not fatal, as in fio; but buffered reads may now come from memory.
                cleanup.notes.push(Note {
                    level: NoteLevel::Warning,
                    code: "warn.cache-drop".into(),
                    message: format!(
                        "{}: the page cache of {} was not dropped ({e}): buffered reads may be served from memory",
                        job.name, f.path
                    ),
                });
            }
            laid += prepared.written;
            let size = prepared.size;
            // A reading job's file filled until the storage was full is read to its end.
            let len = if layout::fills_for_reads(job) {
                len.min(size)
            } else {
                len
            };
            files.insert(f.path.clone(), PreparedFile { size, len, basis });
        }
    }
    Ok(PreparedJob { files })
}

/// Creates the files the job's engine writes besides the job's own (e4defrag's donor),
/// each once per run and removed after it. One that exists and was not made by this run
/// is refused: the engine would rewrite it.
fn create_scratch(job: &Arc<JobSpec>, cleanup: &mut Cleanup) -> Result<(), EngineError> {
    use std::os::unix::fs::OpenOptionsExt;
    for (target, option) in job.scratch_files() {
        if cleanup.files.iter().any(|c| c.target == target) {
            continue;
        }
        let refused = |why: String| EngineError::new(ErrorKind::Refused, why);
        let Target::Path(path) = &target else {
            return Err(refused(format!(
                "{}: {option}={target}: storbench makes it only as a local file",
                job.name
            )));
        };
        let made = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path);
        match made {
            Ok(_) => cleanup.files.push(Created {
                job: job.clone(),
                target,
                remove: true,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(refused(format!(
                    "{}: {path} ({option}=) exists and was not made by this run; storbench \
                     writes it only when it creates it (remove it, or name another)",
                    job.name
                )));
            }
            Err(e) => {
                return Err(EngineError::os(
                    &format!("{}: {option}=", job.name),
                    path,
                    e,
                ));
            }
        }
    }
    Ok(())
}

/// The bytes clone `clone` does IO over in `f` and the size the file must have for it.
fn extent(
    job: &JobSpec,
    clone: u32,
    f: &plan::FilePlan,
    basis: Option<u64>,
    nfiles: usize,
) -> Result<(u64, u64), EngineError> {
    let unbounded = job.fill_device && f.len.is_none() && !f.target.caps().device_like;
    let len = if unbounded {
        Some(plan::FILL_LEN)
    } else {
        plan::resolve_len(job, f.len, basis, nfiles)
    };
    let Some(len) = len else {
        return Err(EngineError::new(
            ErrorKind::Refused,
            format!(
                "{}: no size given and {} does not exist (set size= or filesize=)",
                job.name, f.path
            ),
        ));
    };
    let align = job.bs.iter().map(|b| b.min()).min().unwrap_or(4096).max(1);
    let start = plan::start_offset(job, clone, basis, align);
    // Without size=, a clone's slice runs from its offset to the end (fio's io_size).
    let slice = match (f.len, job.size) {
        _ if unbounded => len,
        (None, Some(SizeSpec::Percent(_))) | (Some(_), _) => len,
        (None, _) => len.min(basis.unwrap_or(len).saturating_sub(start)),
    };
    Ok((len, start.saturating_add(slice)))
}

/// Refuses a job whose files cannot grow to the sizes it needs in the free space of their
/// file systems (and, on tmpfs, in the memory available), as quick and bonnie do, before
/// anything is written, so `--size=1P` never writes until the disk is full. Local file
/// systems are measured with statfs; a server's (NFS, SMB) is what its engine reports
/// (`Engine::free_space`). Existing files count with the size they have; the job's own
/// writes fill the rest, so jobs that only write are counted too. Device
/// targets are bounded by their capacity, which the lay-out and device checks enforce.
fn check_space(
    job: &JobSpec,
    engine: &mut dyn storbench_core::engine::Engine,
) -> Result<(), EngineError> {
    use std::collections::HashMap;
    // By path: the largest size any clone needs, the size the file has, and its target.
    let mut sizes: HashMap<String, (u64, Option<u64>, &Target)> = HashMap::new();
    let planned: Vec<_> = (0..job.numjobs.max(1))
        .map(|clone| (clone, plan::files_for_clone(job, clone)))
        .collect();
    for (clone, files) in &planned {
        for f in files {
            if f.target.caps().device_like || plan::is_char_device(&f.target) {
                continue;
            }
            let basis = match sizes.get(&f.path) {
                Some(&(_, basis, _)) => basis,
                None => layout::probe(engine, &f.target),
            };
            let Ok((_, need)) = extent(job, *clone, f, basis, files.len()) else {
                return Ok(()); // The lay-out says why.
            };
            let e = sizes.entry(f.path.clone()).or_insert((0, basis, &f.target));
            e.0 = e.0.max(need);
        }
    }
    // By file system: where it is, bytes still to be written, and one of its files.
    let mut by_fs: HashMap<SpaceKey, (String, u64, &Target)> = HashMap::new();
    for (path, (need, have, target)) in sizes {
        let Some((key, shown)) = space_key(&path, target) else {
            continue;
        };
        let e = by_fs.entry(key).or_insert((shown, 0, target));
        e.1 = e.1.saturating_add(need.saturating_sub(have.unwrap_or(0)));
    }
    for (key, (shown, extra, target)) in by_fs {
        let fs = match key {
            SpaceKey::Local(_) => storbench_core::space::statfs(&parent_dir(target.expose())).ok(),
            SpaceKey::Remote(_) => {
                let spec =
                    storbench_core::engine::FileSpec::new(target.clone(), Default::default());
                engine.free_space(&spec)?
            }
        };
        let Some(fs) = fs else {
            continue;
        };
        let memory = storbench_core::space::mem_and_swap_available().filter(|_| fs.tmpfs);
        let (have, what) = match memory {
            Some(m) if m < extra && m < fs.free => {
                (m, "available in memory (tmpfs keeps its files in RAM)")
            }
            _ if !fs.fits(extra) => (fs.free, "free"),
            _ => continue,
        };
        return Err(EngineError::new(
            ErrorKind::Refused,
            format!(
                "{}: not enough space in {shown}: the files need {} more but only {} is {what} \
                 (use a smaller size=)",
                job.name,
                storbench_core::space::human(extra),
                storbench_core::space::human(have),
            ),
        ));
    }
    Ok(())
}

/// A file system files are grouped by for the free-space check.
#[derive(Clone, PartialEq, Eq, Hash)]
enum SpaceKey {
    /// A local one, by the device number of the file's directory.
    Local(u64),
    /// A server's, by the file's directory as shown (secrets masked).
    Remote(String),
}

/// The file system `path` lies on and the directory shown for it; None when its
/// directory cannot be reached (the lay-out then says why).
fn space_key(path: &str, target: &Target) -> Option<(SpaceKey, String)> {
    use std::os::unix::fs::MetadataExt;
    if target.caps().network {
        let shown = target.to_string();
        let dir = shown.split('?').next().unwrap_or_default();
        let dir = dir.rsplit_once('/').map_or(dir, |(d, _)| d).to_string();
        return Some((SpaceKey::Remote(dir.clone()), dir));
    }
    let dir = parent_dir(path);
    let meta = std::fs::metadata(&dir).ok()?;
    Some((SpaceKey::Local(meta.dev()), dir.display().to_string()))
}

/// The directory a local file is (to be) in.
fn parent_dir(path: &str) -> std::path::PathBuf {
    match std::path::Path::new(path).parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    }
}

/// Drops the page cache of `target`. A file that cannot be opened is no error here: the
/// job opening it says why.
pub(super) fn invalidate(
    engine: &mut dyn storbench_core::engine::Engine,
    target: &Target,
) -> Result<(), EngineError> {
    let spec = storbench_core::engine::FileSpec::new(
        target.clone(),
        storbench_core::engine::OpenOptions {
            read: true,
            ..Default::default()
        },
    );
    let Ok(id) = engine.open(&spec) else {
        return Ok(());
    };
    let dropped = engine.invalidate(id);
    let _ = engine.close(id);
    dropped
}

/// Before any IO of the run: every device-like target (block device, LUN) that a job will
/// write or trim is checked once per region a clone writes (in use: always; data in it:
/// unless `--allow-destructive`), so a later job never mistakes what an earlier job of the
/// same run wrote for the user's data, and a refusal comes before anything ran.
pub(super) fn check_devices(
    jobs: &[Arc<JobSpec>],
    factory: &EngineFactory,
) -> Result<(), EngineError> {
    let mut checked: Vec<(String, u64, u64)> = Vec::new();
    // A verify_only job of a write workload reads and checks: it writes nothing.
    for job in jobs.iter().filter(|j| j.rw.kind.writes() && !j.verify.only) {
        let align = job.bs.iter().map(|b| b.min()).min().unwrap_or(4096).max(1);
        for clone in 0..job.numjobs.max(1) {
            let planned = plan::files_for_clone(job, clone);
            let nfiles = planned.len();
            for f in planned {
                if !f.target.caps().device_like {
                    continue;
                }
                // Never posixaio's engine, so this process has issued no POSIX AIO when it
                // forks clones (`forked.rs`).
                let mut engine = factory(&super::forked::layout_job(job))?;
                let Some(size) = layout::probe(engine.as_mut(), &f.target) else {
                    return Err(layout::open_error(engine.as_mut(), &f.target));
                };
                // The bytes this clone writes, as the lay-out computes them.
                let start = plan::start_offset(job, clone, Some(size), align).min(size);
                let len = plan::resolve_len(job, f.len, Some(size), nfiles)
                    .unwrap_or(size)
                    .min(size - start);
                let key = (f.path.clone(), start, len);
                if checked.contains(&key) {
                    continue;
                }
                layout::check_device_before_write(
                    engine.as_mut(),
                    &f.target,
                    size,
                    (start, len),
                    job.allow_destructive,
                )?;
                checked.push(key);
            }
        }
    }
    Ok(())
}

/// Local directories of generated file names must exist: say so before anything runs.
pub(super) fn check_directories(jobs: &[Arc<JobSpec>]) -> Result<(), EngineError> {
    for job in jobs {
        if !job.filenames.is_empty() {
            continue;
        }
        for target in &job.directories {
            if target.caps().network {
                continue;
            }
            let dir = target.expose();
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(EngineError::new(
                        ErrorKind::Refused,
                        format!("{}: directory={dir} is not a directory", job.name),
                    ));
                }
                Err(e) => {
                    return Err(EngineError::os(
                        &format!("{}: directory=", job.name),
                        dir,
                        e,
                    ));
                }
            }
        }
    }
    Ok(())
}
