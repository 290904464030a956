//! `io_uring`: SQEs are pushed in `queue`, submitted in `commit`, and completions read from
//! the CQ in `reap` (`submit_and_wait` when it must block).
//!
//! fio's options: `fixedbufs` (register the worker's arena, READ/WRITE_FIXED), `registerfiles`
//! (fixed file table), `hipri` (IOPOLL: polled completions, needs O_DIRECT), `sqthread_poll`
//! (SQPOLL: a kernel thread submits, `sqthread_poll_cpu` pins it) and `nowait` (RWF_NOWAIT).
//!
//! Threads doing this job's IO besides the worker: io-wq workers `iou-wrk-<tid>` (for IO that
//! cannot complete inline, e.g. buffered writes) and with SQPOLL `iou-sqp-<tid>`, where
//! `<tid>` is the worker that built the ring; [`Engine::info`] names them.

use std::io;

use io_uring::{IoUring, opcode, squeue, types};
use storbench_core::{
    Access, Caps, Completion, Engine, EngineError, EngineInfo, EngineSetup, ErrorKind, FileId,
    FileSpec, IoKind, IoUnit, MetaOps, Queued,
};
use storbench_job::JobSpec;

use crate::local::LocalFiles;

/// What the job asked of the ring.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingConfig {
    pub entries: u32,
    pub iopoll: bool,
    /// SQPOLL, optionally pinned to a CPU.
    pub sqpoll: Option<Option<u32>>,
    pub fixedbufs: bool,
    /// Size of the fixed file table (0: no registered files).
    pub fixed_files: u32,
    pub nowait: bool,
}

impl RingConfig {
    pub fn from_job(job: &JobSpec) -> Result<RingConfig, EngineError> {
        let o = &job.engine_options;
        let files = job.nrfiles.max(job.filenames.len() as u32).max(1);
        Ok(RingConfig {
            entries: job.iodepth.clamp(1, 32768),
            iopoll: o.hipri,
            sqpoll: o.sqthread_poll.then_some(o.sqthread_poll_cpu),
            fixedbufs: o.fixedbufs,
            fixed_files: if o.registerfiles { files.min(32768) } else { 0 },
            nowait: o.nowait,
        })
    }

    /// Builds the ring with the flags of `lean` that cut per-IO kernel work.
    fn build_with(&self, entries: u32, lean: Lean) -> io::Result<IoUring> {
        let mut builder = IoUring::builder();
        if lean >= Lean::Cooperative {
            builder.setup_coop_taskrun().setup_single_issuer();
        }
        if lean == Lean::Deferred {
            // Completions of work punted to io-wq (buffered reads of tmpfs, for one) are
            // then posted when this thread waits, not by a wake-up per completion; the flag
            // makes non-waiting enters pick them up too (the crate adds GETEVENTS).
            builder.setup_defer_taskrun().setup_taskrun_flag();
        }
        if self.iopoll {
            builder.setup_iopoll();
        }
        if let Some(cpu) = self.sqpoll {
            builder.setup_sqpoll(1000);
            if let Some(cpu) = cpu {
                builder.setup_sqpoll_cpu(cpu);
            }
        }
        builder.build(entries)
    }

    /// The leanest ring the kernel accepts: deferred task running (6.1), cooperative task
    /// running with one issuer (5.19 and 6.0), then plain. Deferred task running rules out
    /// an SQ polling thread.
    fn build(&self, entries: u32) -> io::Result<IoUring> {
        let mut lean = if self.sqpoll.is_some() {
            Lean::Cooperative
        } else {
            Lean::Deferred
        };
        loop {
            match self.build_with(entries, lean) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) && lean > Lean::Plain => {
                    lean = if lean == Lean::Deferred {
                        Lean::Cooperative
                    } else {
                        Lean::Plain
                    };
                }
                other => return other,
            }
        }
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.iopoll {
            parts.push("hipri (IOPOLL)");
        }
        if self.sqpoll.is_some() {
            parts.push("sqthread_poll (SQPOLL)");
        }
        if parts.is_empty() {
            "no special flags".into()
        } else {
            parts.join(" and ")
        }
    }
}

/// Setup flags that trade generality for less kernel work per IO, newest last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Lean {
    Plain,
    Cooperative,
    Deferred,
}

/// The error for a failed `io_uring_setup`, saying what to do instead.
pub fn setup_error(errno: i32, cfg: &RingConfig) -> EngineError {
    let message = match errno {
        libc::EPERM | libc::ENOSYS | libc::EACCES => format!(
            "io_uring is disabled here ({} from io_uring_setup: kernel.io_uring_disabled, \
             seccomp or an old kernel); use --ioengine=psync or libaio",
            errno_name(errno)
        ),
        libc::EINVAL => format!(
            "io_uring_setup refused a ring with {} (EINVAL): this kernel lacks the feature; \
             drop those options or use --ioengine=psync or libaio",
            cfg.describe()
        ),
        libc::ENOMEM => format!(
            "io_uring_setup: not enough lockable memory for {} entries (ENOMEM); raise \
             `ulimit -l`, lower iodepth, or use --ioengine=libaio",
            cfg.entries
        ),
        _ => return EngineError::errno("io_uring_setup", "(new ring)", errno),
    };
    EngineError {
        kind: ErrorKind::Unsupported,
        errno: Some(errno),
        message,
    }
}

fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOSYS => "ENOSYS",
        libc::EACCES => "EACCES",
        _ => "error",
    }
}

/// The kernel threads of this process that serve rings built by thread `owner_tid`
/// (`iou-wrk-<tid>` io-wq workers, `iou-sqp-<tid>` SQPOLL threads), as (tid, name): what a
/// per-job CPU account adds to the worker's own time. Workers come and go; sample while the
/// job runs (their CPU also stays in RUSAGE_SELF after they exit).
pub fn kernel_helper_threads(owner_tid: i32) -> Vec<(i32, String)> {
    let wanted = [
        format!("iou-wrk-{owner_tid}"),
        format!("iou-sqp-{owner_tid}"),
    ];
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| {
            let t = t.ok()?;
            let tid = t.file_name().to_str()?.parse::<i32>().ok()?;
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            let comm = comm.trim_end();
            wanted
                .iter()
                .any(|w| w == comm)
                .then(|| (tid, comm.to_string()))
        })
        .collect()
}

pub struct IoUringEngine {
    cfg: RingConfig,
    files: LocalFiles,
    ring: Option<IoUring>,
    /// Fixed-table slot of each FileId, or `u32::MAX` for a plain descriptor.
    slots: Vec<u32>,
    /// Registered buffers (0 without `fixedbufs`).
    nbufs: u32,
    /// IOs pushed and not yet completed; never above `capacity`.
    outstanding: usize,
    capacity: usize,
    /// Each in-flight IO by tag, to resubmit after -EAGAIN.
    ios: Vec<Option<IoUnit>>,
    /// Tags to resubmit, gathered while the CQ is borrowed.
    retry: Vec<u32>,
    /// Thread that built the ring (names its kernel helper threads).
    owner_tid: i32,
}

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "io_uring";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    create_with_probe(job, |cfg| cfg.build(1).map(drop))
}

/// `create` with the probe replaced, so tests can play a kernel without io_uring.
#[doc(hidden)]
pub fn create_with_probe(
    job: &JobSpec,
    probe: impl FnOnce(&RingConfig) -> io::Result<()>,
) -> Result<Box<dyn Engine>, EngineError> {
    let cfg = RingConfig::from_job(job)?;
    probe(&cfg).map_err(|e| setup_error(e.raw_os_error().unwrap_or(libc::EIO), &cfg))?;
    let depth = cfg.entries as usize;
    Ok(Box::new(IoUringEngine {
        cfg,
        files: LocalFiles::default(),
        ring: None,
        slots: Vec::new(),
        nbufs: 0,
        outstanding: 0,
        capacity: 0,
        ios: vec![None; depth],
        retry: Vec::with_capacity(depth),
        owner_tid: 0,
    }))
}

impl IoUringEngine {
    /// Builds the ring on first use, in the worker thread (so helper threads are its own).
    fn ring(&mut self) -> Result<&mut IoUring, EngineError> {
        if self.ring.is_none() {
            let ring = self
                .cfg
                .build(self.cfg.entries)
                .map_err(|e| setup_error(e.raw_os_error().unwrap_or(libc::EIO), &self.cfg))?;
            if self.cfg.fixed_files > 0 {
                register_file_table(&ring, self.cfg.fixed_files)?;
            }
            self.capacity = ring.params().sq_entries() as usize;
            // SAFETY: gettid has no preconditions.
            self.owner_tid = unsafe { libc::gettid() };
            self.ring = Some(ring);
        }
        Ok(self.ring.as_mut().expect("ring was just built"))
    }

    fn register_buffers(&mut self, setup: &EngineSetup) -> Result<(), EngineError> {
        let iovecs: Vec<libc::iovec> = (0..setup.slots as usize)
            .map(|i| libc::iovec {
                // SAFETY: slot i lies inside the arena of `slots * slot_len` bytes.
                iov_base: unsafe { setup.arena.as_ptr().add(i * setup.slot_len) }.cast(),
                iov_len: setup.slot_len,
            })
            .collect();
        let ring = self.ring()?;
        // SAFETY: the arena outlives the engine (the worker owns both and drops the engine
        // first); the kernel pins the pages until the ring is closed.
        unsafe { ring.submitter().register_buffers(&iovecs) }.map_err(|e| EngineError {
            kind: ErrorKind::Os,
            errno: e.raw_os_error(),
            message: format!(
                "io_uring register_buffers (fixedbufs) of {} buffers of {} bytes: {e}; raise \
                 `ulimit -l` or drop fixedbufs",
                setup.slots, setup.slot_len
            ),
        })?;
        self.nbufs = setup.slots;
        Ok(())
    }

    /// The SQE for a read, write or sync.
    #[inline]
    fn entry(&self, io: &IoUnit, fd: i32, fixed_file: bool) -> squeue::Entry {
        let (buf, len, off) = (io.buf.as_ptr(), io.len, io.offset);
        let rw_flags = if self.cfg.nowait { libc::RWF_NOWAIT } else { 0 };
        let fixed_buf = io.buf_index < self.nbufs;
        let target = types::Fd(fd);
        let entry = match (io.kind, fixed_buf) {
            (IoKind::Read, false) => opcode::Read::new(target, buf, len)
                .offset(off)
                .rw_flags(rw_flags)
                .ioprio(io.ioprio)
                .build(),
            (IoKind::Read, true) => opcode::ReadFixed::new(target, buf, len, io.buf_index as u16)
                .offset(off)
                .rw_flags(rw_flags)
                .ioprio(io.ioprio)
                .build(),
            (IoKind::Write, false) => opcode::Write::new(target, buf, len)
                .offset(off)
                .rw_flags(rw_flags)
                .ioprio(io.ioprio)
                .build(),
            (IoKind::Write, true) => opcode::WriteFixed::new(target, buf, len, io.buf_index as u16)
                .offset(off)
                .rw_flags(rw_flags)
                .ioprio(io.ioprio)
                .build(),
            (IoKind::Fdatasync, _) => opcode::Fsync::new(target)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
            _ => opcode::Fsync::new(target).build(),
        };
        let entry = entry.user_data(u64::from(io.tag));
        if fixed_file {
            entry.flags(squeue::Flags::FIXED_FILE)
        } else {
            entry
        }
    }

    /// Pushes the SQE for `io`; false when the SQ is full.
    #[inline]
    fn push(&mut self, io: &IoUnit) -> Result<bool, EngineError> {
        let f = self.files.get(io.file)?;
        if matches!(io.kind, IoKind::Read | IoKind::Write) {
            f.check_direct(io)?;
        }
        let slot = self
            .slots
            .get(io.file as usize)
            .copied()
            .unwrap_or(u32::MAX);
        let entry = if slot == u32::MAX {
            self.entry(io, f.raw(), false)
        } else {
            self.entry(io, slot as i32, true)
        };
        let Some(ring) = self.ring.as_mut() else {
            return Err(EngineError::new(
                ErrorKind::Os,
                "io_uring: queue before open",
            ));
        };
        // SAFETY: the buffer stays valid until the IO with this tag completes (IoUnit
        // contract) and the fd or fixed slot stays open until `close`.
        Ok(unsafe { ring.submission().push(&entry) }.is_ok())
    }

    /// Reads every ready CQE; returns how many IOs completed (resubmissions not counted).
    #[inline]
    /// Whether the kernel holds completions that an enter would post.
    fn work_pending(&mut self) -> bool {
        self.ring
            .as_mut()
            .is_some_and(|ring| ring.submission().taskrun())
    }

    fn drain(&mut self, out: &mut Vec<Completion>) -> usize {
        let Some(ring) = self.ring.as_mut() else {
            return 0;
        };
        let mut done = 0;
        for cqe in ring.completion() {
            let tag = cqe.user_data() as u32;
            let res = cqe.result();
            if res == -libc::EAGAIN && !self.cfg.nowait {
                self.retry.push(tag);
                continue;
            }
            out.push(Completion {
                tag,
                result: i64::from(res),
            });
            done += 1;
        }
        self.outstanding -= done;
        done
    }

    /// Pushes again the IOs the kernel answered with -EAGAIN.
    fn resubmit(&mut self) -> Result<(), EngineError> {
        while let Some(tag) = self.retry.pop() {
            let Some(io) = self.ios.get(tag as usize).copied().flatten() else {
                continue;
            };
            if !self.push(&io)? {
                self.submit(0)?;
                if !self.push(&io)? {
                    self.retry.push(tag);
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn submit(&mut self, want: usize) -> Result<(), EngineError> {
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        loop {
            match ring.submit_and_wait(want) {
                Ok(_) => return Ok(()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // Kernel out of resources or CQ full: completions will make room.
                    Some(libc::EAGAIN | libc::EBUSY) => return Ok(()),
                    // SINGLE_ISSUER: only the thread that built the ring may submit.
                    Some(libc::EEXIST) => {
                        return Err(EngineError::new(
                            ErrorKind::Os,
                            "io_uring_enter: the ring was used from a thread other than the one \
                             that set it up (EEXIST); create, set up and drive an engine on one \
                             thread",
                        ));
                    }
                    _ => return Err(EngineError::os("io_uring_enter", "(submit)", e)),
                },
            }
        }
    }
}

fn register_file_table(ring: &IoUring, n: u32) -> Result<(), EngineError> {
    let submitter = ring.submitter();
    if submitter.register_files_sparse(n).is_ok() {
        return Ok(());
    }
    // Kernels before 5.19 lack sparse tables but accept -1 placeholders.
    submitter
        .register_files(&vec![-1; n as usize])
        .map_err(|e| EngineError::os("io_uring register_files", "(registerfiles)", e))
}

impl Engine for IoUringEngine {
    fn name(&self) -> &'static str {
        NAME
    }

    fn caps(&self) -> Caps {
        Caps {
            synchronous: false,
            has_slat: true,
            trim: true,
            meta: true,
            no_data: false,
        }
    }

    fn setup(&mut self, setup: &EngineSetup) -> Result<(), EngineError> {
        self.ring()?;
        if self.cfg.fixedbufs && self.nbufs == 0 && setup.slots > 0 {
            self.register_buffers(setup)?;
        }
        Ok(())
    }

    fn open(&mut self, spec: &FileSpec) -> Result<FileId, EngineError> {
        if self.cfg.iopoll && !spec.open.direct {
            return Err(EngineError::unsupported(format!(
                "hipri (IOPOLL) on {} needs --direct=1: polled completion works only for O_DIRECT",
                spec.path
            )));
        }
        self.ring()?;
        let id = self.files.open(spec)?;
        let fd = self.files.get(id)?.raw();
        if self.slots.len() <= id as usize {
            self.slots.resize(id as usize + 1, u32::MAX);
        }
        self.slots[id as usize] = u32::MAX;
        if id < self.cfg.fixed_files {
            let ring = self.ring()?;
            ring.submitter()
                .register_files_update(id, &[fd])
                .map_err(|e| EngineError::os("io_uring register_files_update", &spec.path, e))?;
            self.slots[id as usize] = id;
        }
        Ok(id)
    }

    fn size(&mut self, file: FileId) -> Result<u64, EngineError> {
        self.files.get(file)?.size()
    }

    #[inline]
    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        // Trim has no io_uring opcode for devices, and an IOPOLL ring takes only reads and
        // writes: those run synchronously here, as in fio.
        let sync_here = io.kind == IoKind::Trim
            || (self.cfg.iopoll && matches!(io.kind, IoKind::Fsync | IoKind::Fdatasync));
        if sync_here {
            return self.files.get(io.file)?.other_io(io);
        }
        if self.outstanding >= self.capacity {
            return Ok(Queued::Busy);
        }
        if !self.push(io)? {
            return Ok(Queued::Busy);
        }
        let tag = io.tag as usize;
        if tag >= self.ios.len() {
            self.ios.resize(tag + 1, None);
        }
        self.ios[tag] = Some(*io);
        self.outstanding += 1;
        Ok(Queued::Pending)
    }

    #[inline]
    fn commit(&mut self) -> Result<(), EngineError> {
        self.submit(0)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let want = min.min(self.outstanding);
        let mut got = self.drain(out);
        let mut polled = false;
        loop {
            if !self.retry.is_empty() {
                self.resubmit()?;
            }
            // Polled rings, and deferred task running with completions waiting to be posted
            // (the kernel's TASKRUN flag), need an enter even when nothing is awaited.
            let must_poll = !polled
                && got == 0
                && self.outstanding > 0
                && (self.cfg.iopoll || self.work_pending());
            if got >= want && self.retry.is_empty() && !must_poll {
                return Ok(());
            }
            self.submit(want.saturating_sub(got))?;
            polled = true;
            got += self.drain(out);
            if want == 0 && self.retry.is_empty() {
                return Ok(());
            }
        }
    }

    fn close(&mut self, file: FileId) -> Result<(), EngineError> {
        if let Some(slot) = self.slots.get_mut(file as usize) {
            if *slot != u32::MAX
                && let Some(ring) = self.ring.as_ref()
            {
                // A failed unregister only leaves a reference until the ring closes.
                let _ = ring.submitter().register_files_update(*slot, &[-1]);
            }
            *slot = u32::MAX;
        }
        self.files.close(file).map(drop)
    }

    fn invalidate(&mut self, file: FileId) -> Result<(), EngineError> {
        self.files.get(file)?.invalidate()
    }

    fn invalidate_range(&mut self, file: FileId, offset: u64, len: u64) -> Result<(), EngineError> {
        self.files.get(file)?.invalidate_range(offset, len)
    }

    fn advise(&mut self, file: FileId, access: Access) -> Result<(), EngineError> {
        self.files.get(file)?.advise(access)
    }

    fn meta(&mut self) -> Option<&mut dyn MetaOps> {
        Some(&mut self.files)
    }

    fn info(&mut self) -> EngineInfo {
        let mut details = vec![
            ("io_uring_entries".to_string(), self.capacity.to_string()),
            ("io_uring_flags".to_string(), self.cfg.describe()),
            (
                "io_uring_fixedbufs".to_string(),
                (self.nbufs > 0).to_string(),
            ),
            (
                "io_uring_registerfiles".to_string(),
                (self.cfg.fixed_files > 0).to_string(),
            ),
        ];
        details.push(("io_uring_owner_tid".to_string(), self.owner_tid.to_string()));
        let mut threads = format!("iou-wrk-{}", self.owner_tid);
        if self.cfg.sqpoll.is_some() {
            threads.push_str(&format!(" iou-sqp-{}", self.owner_tid));
        }
        details.push(("helper_threads".to_string(), threads));
        EngineInfo {
            details,
            ..EngineInfo::default()
        }
    }
}

impl Drop for IoUringEngine {
    /// The kernel may still write into the worker's buffers after the ring fd closes: wait
    /// (bounded) for IOs in flight before the arena can go away.
    fn drop(&mut self) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        // IOs waiting to be resubmitted after -EAGAIN are not in the kernel.
        self.outstanding = self.outstanding.saturating_sub(self.retry.len());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let tick = types::Timespec::new().nsec(100_000_000);
        let args = types::SubmitArgs::new().timespec(&tick);
        while self.outstanding > 0 && std::time::Instant::now() < deadline {
            let _ = ring.submitter().submit_with_args(1, &args);
            let done = ring.completion().count();
            self.outstanding = self.outstanding.saturating_sub(done);
        }
    }
}
