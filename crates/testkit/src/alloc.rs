//! A global allocator that counts the allocations made on chosen threads, for tests of the
//! hot-path rule (no allocation per IO). A test binary installs it with
//! `#[global_allocator] static GLOBAL: CountingAllocator = CountingAllocator;` and measures
//! a closure with [`allocations_during`]. With `STORBENCH_ALLOC_TRACE` set, each counted
//! allocation prints its backtrace.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn count() {
    // try_with: the allocator also serves thread set-up and tear-down, when the flag may be
    // gone; those allocations are not the ones being measured.
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // Counting pauses while this allocates (reading a set variable does), or the
        // allocation would count itself without end.
        COUNTING.with(|c| c.set(false));
        if std::env::var_os("STORBENCH_ALLOC_TRACE").is_some() {
            // Where it came from, for finding it.
            eprintln!(
                "counted allocation at:\n{}",
                std::backtrace::Backtrace::force_capture()
            );
        }
        COUNTING.with(|c| c.set(true));
    }
}

/// Runs `f` and returns how many allocations (and reallocations) it made on this thread.
/// Works only in a binary that installed [`CountingAllocator`]; elsewhere it returns 0.
pub fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}
