//! A job clone in a process of its own, as fio runs every clone unless told `thread`.
//!
//! Only posixaio needs it. glibc serves POSIX AIO from one pool of helper threads per
//! process, behind one lock: two jobs in one process share them, and their requests wake
//! each other's helpers across CPUs. fio's jobs are processes with a pool each; with two
//! posixaio jobs storbench's threads ran at 0.38× fio's IOPS (QD1) until they were given
//! processes too, while against `fio --thread` they were level (docs/BENCHMARKS.md). Other
//! engines keep their threads, which cost them nothing measurable.
//!
//! The runner forks the clone before it starts any thread of the batch, so the child holds
//! the clone's plan, the engine factory and its counters. The counters live in a shared
//! mapping (`progress.rs`): the sampler reads the child's progress as it reads a thread's. A
//! proxy thread then stands in for the clone: it waits at the group's start gate for it (the
//! gate also speaks for the host in a multi-host run, which only the parent may), passes a
//! stop on, and reads the child's result from a pipe when it ends. The child ends with
//! `_exit`, so nothing the parent buffered or registered runs twice.
//!
//! A fork copies one thread, and every lock as it was. Forking before the batch's threads
//! exist means no worker, log writer or sampler holds a lock the child needs. glibc keeps
//! its AIO pool in the copied state, and a pool forked with idle helpers would hand the
//! child's requests to threads that are not there. So this process never issues POSIX AIO
//! before it forks: lay-out and the device checks never go through posixaio (`prepare.rs`).
//! A batch forks all of its posixaio clones or none. None when one of them runs on a thread:
//! `thread` given, or per-IO logs, which go to a writer thread. Once one has, every later
//! batch keeps threads too.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use storbench_job::{JobSpec, catalogue};

use storbench_core::cpu::Usage;
use storbench_core::engine::EngineInfo;
use storbench_core::error::{EngineError, ErrorKind};
use storbench_core::gate::{Gate, StartGate};
use storbench_core::stats::WorkerStats;
use storbench_core::stop;
use storbench_core::worker::{EngineFactory, WorkerOutput, WorkerPlan, run_worker};

/// Set once a posixaio clone ran as a thread of this process: glibc's pool is in use here.
static AIO_IN_THIS_PROCESS: AtomicBool = AtomicBool::new(false);

/// How often the proxy looks at the child and at a stop while it waits.
const POLL: Duration = Duration::from_millis(50);

/// The child's messages: ready at the gate, or abandoning it; then its result.
const READY: u8 = b'r';
const ABANDON: u8 = b'a';
/// The start the proxy sends for an abandoned gate.
const NO_START: u64 = u64::MAX;

/// Whether `job`'s engine keeps helpers per process (posixaio: the catalogue says so).
fn per_process(job: &JobSpec) -> bool {
    catalogue::find(&job.ioengine).is_some_and(|e| e.process_per_clone)
}

/// Whether `job`'s clones want processes of their own: posixaio's, unless `thread` (fio's
/// default), per-IO logs (their writer is a thread of this process) or a `flow` (its
/// shared counter is in this process's memory).
fn forks(job: &JobSpec) -> bool {
    per_process(job) && !job.thread && !job.logs.streamed() && job.coord.flow == 0
}

/// Which of `batches`' jobs, in the run's order, will run their clones in processes, as
/// [`batch_forks`] will decide batch by batch (for fio's `Starting …` line).
pub(super) fn processes(batches: &[Vec<std::sync::Arc<JobSpec>>]) -> Vec<bool> {
    let mut in_use = AIO_IN_THIS_PROCESS.load(Ordering::SeqCst);
    batches
        .iter()
        .flat_map(|batch| {
            let fork = decide(batch.iter().map(|j| &**j), in_use);
            in_use |= fork == Some(false);
            let fork = fork == Some(true);
            batch.iter().map(move |job| fork && per_process(job))
        })
        .collect()
}

/// Whether a batch of `jobs` forks its posixaio clones (None: it has none): all of them or
/// none, since one on a thread would use glibc's pool and its locks in this process while
/// the others fork. Once one has run on a thread (`in_use`), none forks again.
fn decide<'j>(mut jobs: impl Iterator<Item = &'j JobSpec> + Clone, in_use: bool) -> Option<bool> {
    jobs.clone()
        .any(per_process)
        .then(|| !in_use && jobs.all(|j| !per_process(j) || forks(j)))
}

/// Whether this batch's posixaio clones run in processes of their own (each clone's
/// counters must be shared with a child); decided once, before any of them starts.
pub(super) fn batch_forks<'j>(
    jobs: impl Iterator<Item = &'j JobSpec> + Clone,
    counters_shared: bool,
) -> bool {
    let in_use = AIO_IN_THIS_PROCESS.load(Ordering::SeqCst) || !counters_shared;
    match decide(jobs, in_use) {
        None => false,
        Some(fork) => {
            if !fork {
                AIO_IN_THIS_PROCESS.store(true, Ordering::SeqCst);
            }
            fork
        }
    }
}

/// The engine lay-out and the device checks go through for `job`: a posixaio job's with
/// the default engine's plain calls (psync), as fio lays out every file, so this process
/// never issues POSIX AIO before it forks.
pub(super) fn layout_job(job: &JobSpec) -> std::borrow::Cow<'_, JobSpec> {
    if !per_process(job) {
        return std::borrow::Cow::Borrowed(job);
    }
    let mut plain = job.clone();
    plain.ioengine = catalogue::DEFAULT_ENGINE.into();
    std::borrow::Cow::Owned(plain)
}

/// Whether `plan`'s clone is one a forking batch runs in a process.
pub(super) fn is_per_process(plan: &WorkerPlan) -> bool {
    per_process(&plan.job)
}

/// A clone's process, as its proxy thread sees it; killed and reaped if dropped unserved
/// (a batch whose threads could not all start).
pub(super) struct Child {
    pid: libc::pid_t,
    from_child: std::fs::File,
    to_child: std::fs::File,
    stop_passed: bool,
    reaped: bool,
}

/// Forks the clone's process. Called on the runner's thread before any thread of the
/// batch starts, so no lock the child could need is held by a thread it does not have.
pub(super) fn start(mut plan: WorkerPlan, factory: &EngineFactory) -> Result<Child, EngineError> {
    plan.own_process = true;
    let not_started = |e: std::io::Error| {
        EngineError::new(
            ErrorKind::Os,
            format!("could not start the clone's process: {e}"),
        )
    };
    let ((up_read, up_write), (down_read, down_write)) =
        (pipe().map_err(not_started)?, pipe().map_err(not_started)?);
    let parent = std::process::id();
    // SAFETY: the child runs only the worker and leaves by _exit; see above for locks.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(not_started(std::io::Error::last_os_error()));
    }
    if pid == 0 {
        drop((up_read, down_write));
        child(plan, factory, parent, up_write, down_read);
    }
    Ok(Child {
        pid,
        from_child: std::fs::File::from(up_read),
        to_child: std::fs::File::from(down_write),
        stop_passed: false,
        reaped: false,
    })
}

/// The child's whole life: the worker, its result up the pipe, `_exit`.
fn child(plan: WorkerPlan, factory: &EngineFactory, parent: u32, up: OwnedFd, down: OwnedFd) -> ! {
    // SAFETY: prctl and getppid only; a child whose parent is already gone leaves at once.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() as u32 != parent {
            libc::_exit(1);
        }
    }
    // A Ctrl-C reaches this process and the parent, and the parent passes its stops on:
    // counting them here would end this process at a second Ctrl-C, with its result.
    stop::install_clone_handlers();
    let gate = PipeGate {
        up: std::cell::RefCell::new(std::fs::File::from(up)),
        down: std::cell::RefCell::new(std::fs::File::from(down)),
    };
    let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let out = run_worker(plan, factory, &gate);
        let sent = serde_json::to_vec(&Sent::from(out)).unwrap_or_default();
        let mut up = gate.up.borrow_mut();
        up.write_all(&(sent.len() as u64).to_le_bytes())
            .and_then(|()| up.write_all(&sent))
            .is_ok()
    })) {
        Ok(true) => 0,
        _ => 1,
    };
    // SAFETY: ends the child without running the parent's exit handlers or flushing its
    // buffers a second time.
    unsafe { libc::_exit(code) }
}

/// The child's side of the start gate: a byte up, the group's start back.
struct PipeGate {
    up: std::cell::RefCell<std::fs::File>,
    down: std::cell::RefCell<std::fs::File>,
}

impl Gate for PipeGate {
    fn arrive_and_wait(&self) -> Option<u64> {
        self.up.borrow_mut().write_all(&[READY]).ok()?;
        let mut start = [0u8; 8];
        self.down.borrow_mut().read_exact(&mut start).ok()?;
        Some(u64::from_le_bytes(start)).filter(|&s| s != NO_START)
    }

    fn abandon(&self) {
        let _ = self.up.borrow_mut().write_all(&[ABANDON]);
    }
}

impl Child {
    /// Stands in for the clone on its proxy thread: waits at the gate for it, passes a
    /// stop on, and hands back its output, as [`run_worker`] does.
    pub(super) fn serve(mut self, gate: &StartGate) -> WorkerOutput {
        let mut byte = [0u8; 1];
        match self.read(&mut byte) {
            Ok(()) if byte[0] == READY => {
                let start = gate.arrive_and_wait().unwrap_or(NO_START);
                // A child gone meanwhile is found below.
                let _ = self.to_child.write_all(&start.to_le_bytes());
            }
            Ok(()) => gate.abandon(),
            Err(e) => {
                gate.abandon();
                return failed(self.end(), e);
            }
        }
        let mut len = [0u8; 8];
        let result = self.read(&mut len).and_then(|()| {
            let mut sent = vec![0u8; u64::from_le_bytes(len).min(1 << 30) as usize];
            self.read(&mut sent)?;
            serde_json::from_slice::<Sent>(&sent).map_err(|e| e.to_string())
        });
        let status = self.end();
        match result {
            Ok(sent) => sent.into(),
            Err(e) => failed(status, e),
        }
    }

    /// Fills `buf` from the child, passing a stop on and noticing a child that died.
    fn read(&mut self, buf: &mut [u8]) -> Result<(), String> {
        let mut at = 0;
        while at < buf.len() {
            if stop::requested() && !self.stop_passed {
                // A Ctrl-C reached the child with the parent; a signal sent to this
                // process alone did not.
                self.stop_passed = true;
                // SAFETY: signals the child this thread forked and has not reaped.
                unsafe { libc::kill(self.pid, libc::SIGTERM) };
            }
            if !readable(&self.from_child, POLL) {
                // What it wrote before it ended is read first.
                if self.exited() && !readable(&self.from_child, Duration::ZERO) {
                    return Err("ended before it handed on its result".into());
                }
                continue;
            }
            match self.from_child.read(&mut buf[at..]) {
                Ok(0) => return Err("ended before it handed on its result".into()),
                Ok(n) => at += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    /// Whether the child has ended (without reaping it).
    fn exited(&self) -> bool {
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: WNOWAIT leaves the child to be reaped by `end`.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: si_pid is set when waitid found a child.
        r != 0 || unsafe { info.si_pid() } != 0
    }

    /// Reaps the child (its CPU then counts in this process's children's), killing it
    /// first if it is still there; its wait status.
    fn end(&mut self) -> libc::c_int {
        if !self.exited() {
            // SAFETY: the child is ours and not yet reaped.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
        }
        let mut status = 0;
        // SAFETY: reaps the child this thread forked.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
        self.reaped = true;
        status
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            self.end();
        }
    }
}

/// Waits up to `timeout` for `file` to have something to read (or its end).
fn readable(file: &std::fs::File, timeout: Duration) -> bool {
    let mut fd = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on a descriptor this thread owns.
    unsafe { libc::poll(&mut fd, 1, timeout.as_millis() as libc::c_int) > 0 }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two descriptors, owned from here on.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both are fresh descriptors of this process.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The child ended without a result (killed, or a panic).
fn failed(status: libc::c_int, why: String) -> WorkerOutput {
    let how = if libc::WIFSIGNALED(status) {
        format!("killed by signal {}", libc::WTERMSIG(status))
    } else {
        format!("exit status {}", libc::WEXITSTATUS(status))
    };
    super::failed_output(EngineError::new(
        ErrorKind::Os,
        format!("the clone's process {why} ({how})"),
    ))
}

/// A [`WorkerOutput`] as it crosses the pipe.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sent {
    stats: WorkerStats,
    cpu: Usage,
    measure_start: Duration,
    measure_end: Duration,
    elapsed: Duration,
    error: Option<EngineError>,
    engine_name: String,
    engine_info: EngineInfo,
    latency_depth: Option<u32>,
    helper_ns: Option<u64>,
    pid: Option<u32>,
}

impl From<WorkerOutput> for Sent {
    fn from(o: WorkerOutput) -> Sent {
        Sent {
            stats: o.stats,
            cpu: o.cpu,
            measure_start: o.measure_start,
            measure_end: o.measure_end,
            elapsed: o.elapsed,
            error: o.error,
            engine_name: o.engine_name.to_string(),
            engine_info: o.engine_info,
            latency_depth: o.latency_depth,
            helper_ns: o.helper_ns,
            // Sent from the child: its own process.
            pid: Some(std::process::id()),
        }
    }
}

impl From<Sent> for WorkerOutput {
    fn from(s: Sent) -> WorkerOutput {
        WorkerOutput {
            stats: s.stats,
            cpu: s.cpu,
            measure_start: s.measure_start,
            measure_end: s.measure_end,
            elapsed: s.elapsed,
            error: s.error,
            // The child's engine is the job's, whose name the catalogue holds.
            engine_name: engine_name(&s.engine_name),
            engine_info: s.engine_info,
            latency_depth: s.latency_depth,
            helper_ns: s.helper_ns,
            pid: s.pid,
        }
    }
}

/// The `'static` name a result carries for the engine the child named.
fn engine_name(name: &str) -> &'static str {
    storbench_job::catalogue::find(name).map_or("", |e| e.name)
}
