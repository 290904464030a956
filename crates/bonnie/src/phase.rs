//! Running one test on every concurrent copy: each copy prepares untimed (opens its file),
//! all start together at a barrier, and the test's time runs from the first copy's start
//! to the last copy's end, with process CPU over the same stretch.

use std::sync::Barrier;
use std::time::Instant;

use crate::error::{BonnieError, Result};
use crate::timing::{MaxLatency, Measured, Span, process_cpu_ns};
use crate::worker::Worker;

/// One bonnie++ test.
pub(crate) trait Phase: Sync {
    /// What `prepare` hands to `run` (an open file, say).
    type Ready;
    /// Untimed set-up.
    fn prepare(&self, w: &mut Worker) -> Result<Self::Ready>;
    /// The timed part, including the final fsync and close. Returns its own span when the
    /// work happens in other threads (the seek test), otherwise None.
    fn run(&self, w: &mut Worker, ready: Self::Ready, lat: &mut MaxLatency)
    -> Result<Option<Span>>;
}

/// Runs `phase` once on each worker, all at the same time.
pub(crate) fn run_phase<P: Phase>(workers: &mut [Worker], phase: &P) -> Result<Measured> {
    if let [w] = workers {
        return run_inline(w, phase);
    }
    let barrier = Barrier::new(workers.len() + 1);
    let (outcomes, cpu_ns) = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|w| s.spawn(|| run_one(w, phase, &barrier)))
            .collect();
        barrier.wait();
        let cpu_start = process_cpu_ns();
        let outcomes: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked())))
            .collect();
        (outcomes, process_cpu_ns().saturating_sub(cpu_start))
    });
    let mut span: Option<Span> = None;
    let mut lat = MaxLatency::default();
    for outcome in outcomes {
        let (s, l) = outcome?;
        span = Some(span.map_or(s, |u| u.union(s)));
        lat.merge(l);
    }
    let span = span.expect("at least one worker");
    Ok(Measured {
        elapsed_ns: span.end.duration_since(span.start).as_nanos() as u64,
        cpu_ns,
        max_latency_ns: lat.max_ns,
    })
}

/// One copy runs on the calling thread: no thread is started before bonnie++ would start
/// one (its seekers), so the C library keeps its single-threaded fast path for the per-char
/// tests' millions of 1-byte calls, as it does for bonnie++.
fn run_inline<P: Phase>(w: &mut Worker, phase: &P) -> Result<Measured> {
    let ready = phase.prepare(w)?;
    let cpu_start = process_cpu_ns();
    let (span, lat) = timed(w, phase, ready)?;
    Ok(Measured {
        elapsed_ns: span.end.duration_since(span.start).as_nanos() as u64,
        cpu_ns: process_cpu_ns().saturating_sub(cpu_start),
        max_latency_ns: lat.max_ns,
    })
}

fn run_one<P: Phase>(w: &mut Worker, phase: &P, barrier: &Barrier) -> Result<(Span, MaxLatency)> {
    // Every worker reaches the barrier, even one whose set-up failed, so none waits forever.
    let ready = phase.prepare(w);
    barrier.wait();
    timed(w, phase, ready?)
}

/// The timed part of one copy: its span and its longest operation.
fn timed<P: Phase>(w: &mut Worker, phase: &P, ready: P::Ready) -> Result<(Span, MaxLatency)> {
    let mut lat = MaxLatency::default();
    let start = Instant::now();
    let own = phase.run(w, ready, &mut lat);
    let end = Instant::now();
    w.retired.clear();
    Ok((own?.unwrap_or(Span { start, end }), lat))
}

#[cold]
fn panicked() -> BonnieError {
    BonnieError::Check("a test thread panicked; see the message above".into())
}
