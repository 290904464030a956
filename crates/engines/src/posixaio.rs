//! `posixaio`: real POSIX AIO through glibc's `aio_read`/`aio_write`/`aio_fsync`, collected
//! with `aio_error`/`aio_return` and waited for with `aio_suspend`, as fio's engine does.
//!
//! glibc runs these requests in helper threads of this process (unnamed, idle ones exit after
//! a second) and serves the requests of one file descriptor one at a time, in the order they
//! were queued, so iodepth > 1 on a single file adds no parallelism; fio on Linux behaves the
//! same. Their CPU time belongs to the process: count it with `RUSAGE_SELF`, not
//! `RUSAGE_THREAD`.
//!
//! fio runs each job in a process of its own, so each job has glibc's AIO state to itself;
//! here every job is a thread of one process and they share it, behind one mutex. Two things
//! keep that sharing from costing more than fio's processes do:
//! - the pool is sized for the run before the first request ([`pool`]): at least one helper
//!   thread per file descriptor the jobs keep busy (glibc's default of 20 would make the
//!   21st job's file wait, where fio's 21st process has its own 20);
//! - glibc completes one descriptor's requests in queue order, so the oldest unfinished
//!   request of each descriptor is the one to ask about. `aio_error` takes that shared
//!   mutex, and `aio_suspend` holds it while it searches every descriptor's queue for each
//!   entry of its list, on the way in and again on the way out: asking about and waiting
//!   for all 32 requests of each of 12 jobs cost about 9,000 instructions per IO in glibc
//!   (callgrind: `__aio_find_req`, the mutex, `aio_suspend`, `aio_error`), as much as all
//!   of fio's user-space work per IO (docs/BENCHMARKS.md).
//!
//! Which request to wait for decides how often the job sleeps ([`wait_rank`]). Each sleep
//! in `aio_suspend` costs about five `futex` calls and two context switches (`perf record`
//! of the calls): the job's wait; the helper's wake-up, sent while it holds glibc's mutex;
//! the job blocking on that mutex as it wakes; the wake-ups as each lets go of it. Waiting
//! for the oldest unfinished request slept once per IO or two on the page cache, where the
//! helper finishes a 4 KiB read in a few microseconds, about as long as the job takes to
//! queue the next one; polling it first did not help (the helper, waiting for a CPU too,
//! often took longer than a sleep costs).

use storbench_core::{Caps, Completion, Engine, EngineError, EngineInfo, IoKind, IoUnit, Queued};
use storbench_job::JobSpec;

use crate::local::{LocalFiles, delegate_local_files, last_errno};

pub mod pool;

pub struct PosixAio {
    files: LocalFiles,
    depth: usize,
    /// One control block per tag; glibc reads and updates it until the request completes,
    /// so the slice never moves while anything is in flight.
    cbs: Box<[libc::aiocb]>,
    /// Tags of requests handed to glibc and not yet reaped, oldest first.
    inflight: Vec<u32>,
    /// Scratch list for `aio_suspend`: the oldest unfinished request of each file
    /// descriptor, as the last [`Self::collect`] found them.
    waitlist: Vec<*const libc::aiocb>,
}

// SAFETY: the control blocks and raw pointers belong to this instance; glibc's helper threads
// only touch control blocks of requests in flight, which the instance waits for on drop.
unsafe impl Send for PosixAio {}

fn blank_cb() -> libc::aiocb {
    // SAFETY: aiocb is plain data; all-zero is a valid starting value.
    let mut cb: libc::aiocb = unsafe { std::mem::zeroed() };
    cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
    cb
}

fn blank_cbs(n: usize) -> Box<[libc::aiocb]> {
    (0..n).map(|_| blank_cb()).collect()
}

/// Which of a descriptor's `unfinished` requests (1 = the oldest, in queue order) a reap
/// that must wait sleeps on: about the eighth of them, at least the first.
///
/// fio 3.33's posixaio engine asks `aio_error` about every request in flight and then
/// sleeps in `aio_suspend` on the first 8 unfinished ones in the order of its io_u array,
/// which is not the order they were queued in (freed io_us are reused last-in first-out).
/// The first of 8 requests placed at random among n in queue order is on average the
/// (n + 1) / 9-th: fio's reaps of 32 requests sleep until about 4 of them are done, and
/// count their completion time from that moment. Sleeping on the n / 8-th does the same
/// on purpose: on the page cache a sleep serves about 4 IOs instead of one (the futex
/// calls and context switches per IO are fio's), and the requests behind it keep the
/// helper busy, so no IO waits for the engine. At iodepth 8 or less it is the oldest.
pub fn wait_rank(unfinished: usize) -> usize {
    (unfinished / WAIT_SHARE).max(1)
}

/// See [`wait_rank`]: a reap that must sleep lets about one request in this many finish.
const WAIT_SHARE: usize = 8;

/// This engine's entry in the catalogue (`storbench_job::catalogue::ENGINES`).
pub const NAME: &str = "posixaio";

pub fn create(job: &JobSpec) -> Result<Box<dyn Engine>, EngineError> {
    let depth = job.iodepth.max(1) as usize;
    let files = job.nrfiles.max(job.filenames.len() as u32).max(1);
    pool::reserve(files.min(depth as u32), depth as u32);
    Ok(Box::new(PosixAio {
        files: LocalFiles::default(),
        depth,
        cbs: blank_cbs(depth),
        inflight: Vec::with_capacity(depth),
        waitlist: Vec::with_capacity(depth),
    }))
}

impl PosixAio {
    /// Makes room for `tag`; only possible while nothing is in flight.
    #[cold]
    fn grow(&mut self, tag: usize) -> Result<(), EngineError> {
        if !self.inflight.is_empty() {
            return Err(EngineError::new(
                storbench_core::ErrorKind::Os,
                format!("posixaio: tag {tag} is beyond iodepth {}", self.depth),
            ));
        }
        self.cbs = blank_cbs(tag + 1);
        Ok(())
    }

    /// Collects finished requests into `out`; returns how many. Walks the requests in
    /// flight oldest first and asks glibc (`aio_error`, which takes glibc's process-wide
    /// AIO mutex) only about each descriptor's requests up to its first unfinished one:
    /// the later ones of that descriptor have not started. Those first unfinished ones are
    /// left in `waitlist` for [`Self::suspend`] (one per descriptor); the requests still in
    /// flight keep their order.
    fn collect(&mut self, out: &mut Vec<Completion>) -> usize {
        self.waitlist.clear();
        let mut kept = 0;
        for i in 0..self.inflight.len() {
            let tag = self.inflight[i];
            let cb = &mut self.cbs[tag as usize];
            let fd = cb.aio_fildes;
            // SAFETY: every pointer in the list is a control block of `self.cbs`.
            let behind = self
                .waitlist
                .iter()
                .any(|&w| unsafe { (*w).aio_fildes } == fd);
            // SAFETY: cb is a request we submitted and have not yet reaped.
            let err = if behind {
                libc::EINPROGRESS
            } else {
                unsafe { libc::aio_error(cb) }
            };
            if err == libc::EINPROGRESS {
                if !behind {
                    self.waitlist.push(cb as *const libc::aiocb);
                }
                self.inflight[kept] = tag;
                kept += 1;
                continue;
            }
            // SAFETY: as above; aio_return is called once per finished request.
            let ret = unsafe { libc::aio_return(cb) };
            let result = if err == 0 {
                ret as i64
            } else {
                -i64::from(err)
            };
            out.push(Completion { tag, result });
        }
        let done = self.inflight.len() - kept;
        self.inflight.truncate(kept);
        done
    }

    /// Moves each entry of `waitlist` (the oldest unfinished request of its descriptor) to
    /// the request of that descriptor that [`wait_rank`] picks, counting in queue order.
    /// No glibc call: only the job's own list of requests in flight.
    fn pick_waits(&mut self) {
        let (cbs, inflight) = (&self.cbs, &self.inflight);
        for w in self.waitlist.iter_mut() {
            // SAFETY: every pointer in the list is a control block of `self.cbs`.
            let fd = unsafe { (**w).aio_fildes };
            let of_fd = || inflight.iter().filter(|&&t| cbs[t as usize].aio_fildes == fd);
            let rank = wait_rank(of_fd().count());
            if let Some(&tag) = of_fd().nth(rank - 1) {
                *w = &cbs[tag as usize];
            }
        }
    }

    /// Blocks until at least one in-flight request finishes: waits for the requests
    /// [`Self::pick_waits`] chose, one per descriptor.
    fn suspend(&mut self) -> Result<(), EngineError> {
        self.pick_waits();
        // SAFETY: the list holds valid control blocks of requests in flight; no timeout.
        let rc = unsafe {
            libc::aio_suspend(
                self.waitlist.as_ptr(),
                self.waitlist.len() as libc::c_int,
                std::ptr::null(),
            )
        };
        if rc < 0 {
            let errno = last_errno();
            if errno != libc::EINTR && errno != libc::EAGAIN {
                return Err(EngineError::errno("aio_suspend", "(POSIX AIO)", errno));
            }
        }
        Ok(())
    }
}

impl Engine for PosixAio {
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

    delegate_local_files!();

    fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
        if io.kind == IoKind::Trim {
            return self.files.get(io.file)?.other_io(io);
        }
        if self.inflight.len() >= self.depth {
            return Ok(Queued::Busy);
        }
        let tag = io.tag as usize;
        if tag >= self.cbs.len() {
            self.grow(tag)?;
        }
        let f = self.files.get(io.file)?;
        if matches!(io.kind, IoKind::Read | IoKind::Write) {
            f.check_direct(io)?;
        }
        let cb = &mut self.cbs[tag];
        cb.aio_fildes = f.raw();
        cb.aio_buf = io.buf.as_ptr().cast();
        cb.aio_nbytes = io.len as usize;
        cb.aio_offset = io.offset as i64;
        // SAFETY: the control block and buffer stay valid until this request is reaped.
        let rc = unsafe {
            match io.kind {
                IoKind::Read => libc::aio_read(cb),
                IoKind::Write => libc::aio_write(cb),
                IoKind::Fdatasync => libc::aio_fsync(libc::O_DSYNC, cb),
                _ => libc::aio_fsync(libc::O_SYNC, cb),
            }
        };
        if rc < 0 {
            let errno = last_errno();
            if errno == libc::EAGAIN && !self.inflight.is_empty() {
                return Ok(Queued::Busy);
            }
            return Err(f.io_error(io.kind, errno));
        }
        self.inflight.push(io.tag);
        Ok(Queued::Pending)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> Result<(), EngineError> {
        let want = min.min(self.inflight.len());
        let mut got = self.collect(out);
        while got < want {
            self.suspend()?;
            got += self.collect(out);
        }
        Ok(())
    }

    fn info(&mut self) -> EngineInfo {
        EngineInfo {
            details: vec![(
                "helper_threads".into(),
                "glibc POSIX AIO threads (unnamed, process-wide)".into(),
            )],
            notes: Vec::new(),
            interface: None,
        }
    }
}

impl Drop for PosixAio {
    /// glibc's threads would write into freed memory: cancel, then wait for every request.
    fn drop(&mut self) {
        for &tag in &self.inflight {
            let cb = &mut self.cbs[tag as usize];
            // SAFETY: cb is a request in flight.
            unsafe { libc::aio_cancel(cb.aio_fildes, cb) };
        }
        let mut sink = Vec::with_capacity(self.inflight.len());
        while !self.inflight.is_empty() {
            self.collect(&mut sink);
            if !self.inflight.is_empty() && self.suspend().is_err() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wait_rank;

    #[test]
    fn a_wait_lets_about_an_eighth_of_the_requests_finish() {
        assert_eq!(wait_rank(0), 1);
        assert_eq!(wait_rank(1), 1);
        assert_eq!(wait_rank(15), 1);
        assert_eq!(wait_rank(16), 2);
        assert_eq!(wait_rank(32), 4);
        assert_eq!(wait_rank(1024), 128);
    }
}
