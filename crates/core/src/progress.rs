//! Counters each worker publishes for the one sampler/UI thread.
//!
//! Each worker is the single writer of its own cache-line-aligned block, so publishing is a
//! plain relaxed store (no read-modify-write, no lock); the sampler only loads.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use crate::server::ServerProcess;

/// What a worker is doing, as fio's status characters show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum WorkerState {
    Setup = 0,
    LayingOut = 1,
    Ramp = 2,
    Running = 3,
    Finishing = 4,
    Done = 5,
    Error = 6,
}

impl WorkerState {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => WorkerState::LayingOut,
            2 => WorkerState::Ramp,
            3 => WorkerState::Running,
            4 => WorkerState::Finishing,
            5 => WorkerState::Done,
            6 => WorkerState::Error,
            _ => WorkerState::Setup,
        }
    }
}

/// A copy of one worker's counters (defined with the result model, which the log-file
/// writers read).
pub use storbench_model::live::CounterSnapshot;

/// One worker's published counters. Byte/IO counters are cumulative since the worker
/// started measuring; the sampler computes deltas.
///
/// The counters themselves ([`Cells`]) live in a page mapped shared, so a worker that runs
/// in a process of its own (`crates/run/src/forked.rs`) publishes to the same memory the sampler
/// reads: the child inherits this handle, and with it the mapping, across `fork`.
pub struct WorkerCounters {
    cells: SharedCells,
    /// The server the worker's engine is connected to, once its files are open.
    server: OnceLock<SocketAddr>,
    /// The process on this host serving that connection, found before measuring.
    server_process: OnceLock<ServerProcess>,
}

impl Default for WorkerCounters {
    fn default() -> Self {
        WorkerCounters {
            cells: SharedCells::new(),
            server: OnceLock::new(),
            server_process: OnceLock::new(),
        }
    }
}

impl std::ops::Deref for WorkerCounters {
    type Target = Cells;
    #[inline(always)]
    fn deref(&self) -> &Cells {
        self.cells.get()
    }
}

/// The atomics a worker publishes, each written by that worker alone.
#[repr(align(128))]
#[derive(Default)]
pub struct Cells {
    state: AtomicU8,
    bytes: [AtomicU64; 3],
    ios: [AtomicU64; 3],
    lat_sum_ns: [AtomicU64; 3],
    /// Sums of total latency and of submission latency, and the count of the latter, for
    /// the latency logs.
    tlat_sum_ns: [AtomicU64; 3],
    slat_sum_ns: [AtomicU64; 3],
    slat_n: [AtomicU64; 3],
    /// Bytes issued during ramp and lay-out, for the ETA of size-bound jobs.
    pre_bytes: AtomicU64,
    /// When measurement began, ns since the run epoch (0: not yet).
    measure_start_ns: AtomicU64,
    /// When measurement ended, ns since the run epoch (0: not yet): the sampler closes
    /// this worker's series there, not when it sees the thread gone after closing its
    /// files, and reads a server's CPU when the last worker using it got here.
    measure_end_ns: AtomicU64,
    /// Set by the sampler when the job is to end now (its steady state was attained),
    /// as fio's `fio_mark_td_terminate`: the worker stops issuing at its next check.
    terminate: AtomicBool,
}

/// [`Cells`] in an anonymous shared mapping of their own, or on the heap where mapping
/// failed (such a worker always runs as a thread).
struct SharedCells {
    ptr: std::ptr::NonNull<Cells>,
    mapped: bool,
}

// SAFETY: `Cells` holds atomics only; the pointer is owned and never aliased mutably.
unsafe impl Send for SharedCells {}
unsafe impl Sync for SharedCells {}

impl SharedCells {
    fn new() -> Self {
        let size = std::mem::size_of::<Cells>();
        // SAFETY: a fresh anonymous mapping, checked before use; the zeroed page is a
        // valid `Cells` (atomics of 0) and it is written once more as a default below.
        let mapped = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            let boxed = Box::new(Cells::default());
            return SharedCells {
                ptr: std::ptr::NonNull::from(Box::leak(boxed)),
                mapped: false,
            };
        }
        let ptr = mapped.cast::<Cells>();
        // SAFETY: page-aligned (so 128-aligned) writable memory of at least `size` bytes.
        unsafe { ptr.write(Cells::default()) };
        SharedCells {
            // SAFETY: mmap returned a pointer that is not MAP_FAILED, so not null.
            ptr: unsafe { std::ptr::NonNull::new_unchecked(ptr) },
            mapped: true,
        }
    }

    #[inline(always)]
    fn get(&self) -> &Cells {
        // SAFETY: valid for the handle's life (unmapped or freed only in drop).
        unsafe { self.ptr.as_ref() }
    }
}

impl Drop for SharedCells {
    fn drop(&mut self) {
        // SAFETY: the pointer came from the matching mmap or Box in `new`.
        unsafe {
            if self.mapped {
                libc::munmap(self.ptr.as_ptr().cast(), std::mem::size_of::<Cells>());
            } else {
                drop(Box::from_raw(self.ptr.as_ptr()));
            }
        }
    }
}

impl WorkerCounters {
    /// Whether a worker in another process sees these counters (false only where the
    /// shared mapping could not be made).
    pub fn shared(&self) -> bool {
        self.cells.mapped
    }

    /// Publishes the server the worker's engine reached and the process on this host
    /// serving it, if found (set once, before measuring).
    pub fn set_server(&self, addr: SocketAddr, process: Option<ServerProcess>) {
        let _ = self.server.set(addr);
        if let Some(p) = process {
            let _ = self.server_process.set(p);
        }
    }

    pub fn server_process(&self) -> Option<&ServerProcess> {
        self.server_process.get()
    }

    pub fn server(&self) -> Option<SocketAddr> {
        self.server.get().copied()
    }
}

impl Cells {
    #[inline]
    pub fn set_state(&self, s: WorkerState) {
        self.state.store(s as u8, Ordering::Release);
    }

    pub fn state(&self) -> WorkerState {
        WorkerState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Asks the worker to end its job now, without an error.
    pub fn terminate(&self) {
        self.terminate.store(true, Ordering::Relaxed);
    }

    #[inline]
    pub fn terminate_requested(&self) -> bool {
        self.terminate.load(Ordering::Relaxed)
    }

    /// Publishes the worker's running totals for direction `d` (single writer).
    #[inline]
    pub fn publish(&self, d: usize, bytes: u64, ios: u64, lat_sum_ns: u64) {
        self.bytes[d].store(bytes, Ordering::Relaxed);
        self.ios[d].store(ios, Ordering::Relaxed);
        self.lat_sum_ns[d].store(lat_sum_ns, Ordering::Relaxed);
    }

    /// Publishes the running sums the latency logs need for direction `d` (single writer).
    #[inline]
    pub fn publish_lat(&self, d: usize, tlat_sum_ns: u64, slat_sum_ns: u64, slat_n: u64) {
        self.tlat_sum_ns[d].store(tlat_sum_ns, Ordering::Relaxed);
        self.slat_sum_ns[d].store(slat_sum_ns, Ordering::Relaxed);
        self.slat_n[d].store(slat_n, Ordering::Relaxed);
    }

    /// Marks the start of measurement; counters restart from zero at this point.
    pub fn set_measure_start(&self, ns_since_epoch: u64) {
        for d in 0..3 {
            self.publish(d, 0, 0, 0);
            self.publish_lat(d, 0, 0, 0);
        }
        self.measure_start_ns
            .store(ns_since_epoch.max(1), Ordering::Release);
    }

    /// ns since the run epoch when measurement began, if it has.
    pub fn measure_start_ns(&self) -> Option<u64> {
        match self.measure_start_ns.load(Ordering::Acquire) {
            0 => None,
            v => Some(v),
        }
    }

    /// Marks the end of measurement, after the last measured counts were published (the
    /// release store makes them visible to whoever sees the end).
    pub fn set_measure_end(&self, ns_since_epoch: u64) {
        self.measure_end_ns
            .store(ns_since_epoch.max(1), Ordering::Release);
    }

    /// ns since the run epoch when measurement ended, if it has.
    pub fn measure_end_ns(&self) -> Option<u64> {
        match self.measure_end_ns.load(Ordering::Acquire) {
            0 => None,
            v => Some(v),
        }
    }

    #[inline]
    pub fn publish_pre(&self, bytes: u64) {
        self.pre_bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CounterSnapshot {
        let load = |a: &[AtomicU64; 3]| std::array::from_fn(|i| a[i].load(Ordering::Relaxed));
        CounterSnapshot {
            bytes: load(&self.bytes),
            ios: load(&self.ios),
            lat_sum_ns: load(&self.lat_sum_ns),
            tlat_sum_ns: load(&self.tlat_sum_ns),
            slat_sum_ns: load(&self.slat_sum_ns),
            slat_n: load(&self.slat_n),
            pre_bytes: self.pre_bytes.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_and_snapshot() {
        let c = WorkerCounters::default();
        assert_eq!(c.state(), WorkerState::Setup);
        c.set_state(WorkerState::Running);
        c.publish(1, 4096, 1, 100);
        let a = c.snapshot();
        c.publish(1, 12288, 3, 400);
        let d = c.snapshot().since(&a);
        assert_eq!(d.bytes, [0, 8192, 0]);
        assert_eq!(d.ios, [0, 2, 0]);
        assert_eq!(c.state(), WorkerState::Running);
        assert_eq!(std::mem::align_of::<Cells>(), 128);
        assert!(c.shared());
    }

    #[test]
    fn a_forked_child_publishes_to_the_counters_the_parent_reads() {
        let c = WorkerCounters::default();
        // SAFETY: the child only stores to atomics and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            c.publish(0, 4096, 1, 10);
            c.set_state(WorkerState::Done);
            unsafe { libc::_exit(0) };
        }
        assert!(pid > 0);
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert_eq!(c.snapshot().bytes, [4096, 0, 0]);
        assert_eq!(c.state(), WorkerState::Done);
    }
}
