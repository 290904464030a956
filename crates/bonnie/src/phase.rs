//! Running one test on every concurrent copy: each copy prepares untimed (opens its file),
//! all start together once every copy has prepared (and, in a multi-host run, after the
//! ranks agree), and the test's time runs from the first copy's start to the last copy's
//! end, with process CPU over the same stretch. A copy that waits for the others, before
//! the start or after its own end, keeps its engine's server state alive (`waiting.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::error::{BonnieError, Result};
use crate::timing::{MaxLatency, Measured, Span, process_cpu_ns};
use crate::waiting::Waiting;
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

/// Told whether every copy prepared, before any copy's clock starts: in a multi-host run
/// the ranks agree there, so the test starts on every host together (docs/multihost.md);
/// `Err` stops the test before it starts.
pub(crate) type Start<'a> = &'a dyn Fn(bool) -> Result<()>;

/// Runs `phase` once on each worker, all at the same time.
pub(crate) fn run_phase<P: Phase>(
    workers: &mut [Worker],
    phase: &P,
    start: Start,
) -> Result<Measured> {
    if let [w] = workers {
        return run_inline(w, phase, start);
    }
    let n = workers.len();
    let prepared_ok = AtomicBool::new(true);
    let go = AtomicBool::new(false);
    let shared = Shared {
        prepared: &Waiting::new(n),
        prepared_ok: &prepared_ok,
        decided: &Waiting::new(1),
        go: &go,
        running: &Waiting::new(n),
    };
    let (outcomes, started, cpu_start) = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|w| s.spawn(|| run_one(w, phase, &shared)))
            .collect();
        // Every copy has prepared; then the start is agreed; then the clocks run.
        shared.prepared.wait();
        let started = start(prepared_ok.load(Ordering::SeqCst));
        go.store(started.is_ok(), Ordering::SeqCst);
        let cpu_start = process_cpu_ns();
        shared.decided.arrive();
        let outcomes: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(panicked())))
            .collect();
        (outcomes, started, cpu_start)
    });
    let cpu_ns = process_cpu_ns().saturating_sub(cpu_start);
    let mut span: Option<Span> = None;
    let mut lat = MaxLatency::default();
    // A copy's own error first (it says more than a start that was called off for it).
    let timed: Vec<_> = outcomes.into_iter().collect::<Result<_>>()?;
    started?;
    for (s, l) in timed.into_iter().flatten() {
        span = Some(span.map_or(s, |u| u.union(s)));
        lat.merge(l);
    }
    let span = span.expect("at least one worker");
    Ok(Measured {
        start: span.start,
        elapsed_ns: span.end.duration_since(span.start).as_nanos() as u64,
        cpu_ns,
        max_latency_ns: lat.max_ns,
    })
}

/// What the copies of one test share with the thread that starts them.
struct Shared<'a> {
    /// Copies still preparing.
    prepared: &'a Waiting,
    /// Every copy prepared without an error.
    prepared_ok: &'a AtomicBool,
    /// The start is not decided yet.
    decided: &'a Waiting,
    /// The start was agreed: the copies run.
    go: &'a AtomicBool,
    /// Copies not through with the test yet.
    running: &'a Waiting,
}

/// One copy runs on the calling thread: no thread is started before bonnie++ would start
/// one (its seekers), so the C library keeps its single-threaded fast path for the per-char
/// tests' millions of 1-byte calls, as it does for bonnie++.
fn run_inline<P: Phase>(w: &mut Worker, phase: &P, start: Start) -> Result<Measured> {
    let ready = phase.prepare(w);
    let started = start(ready.is_ok());
    let ready = ready?;
    started?;
    let cpu_start = process_cpu_ns();
    let (span, lat) = timed(w, phase, ready)?;
    Ok(Measured {
        start: span.start,
        elapsed_ns: span.end.duration_since(span.start).as_nanos() as u64,
        cpu_ns: process_cpu_ns().saturating_sub(cpu_start),
        max_latency_ns: lat.max_ns,
    })
}

/// One copy: prepares, waits for the others and the agreed start, then runs timed; None
/// when the start was called off. It then waits for the copies still running, so that
/// its engine is kept alive until the test ends.
fn run_one<P: Phase>(
    w: &mut Worker,
    phase: &P,
    shared: &Shared,
) -> Result<Option<(Span, MaxLatency)>> {
    let outcome = {
        // Counted as through on every path, a panic too, so no copy waits forever.
        let _through = shared.running.arrival();
        let prepared = shared.prepared.arrival();
        let ready = phase.prepare(w);
        if ready.is_err() {
            shared.prepared_ok.store(false, Ordering::SeqCst);
        }
        drop(prepared);
        let decided = shared.decided.wait_idle(&mut w.io);
        match (decided, ready) {
            (Err(e), _) | (_, Err(e)) => Err(e),
            (Ok(()), Ok(_)) if !shared.go.load(Ordering::SeqCst) => Ok(None),
            (Ok(()), Ok(ready)) => timed(w, phase, ready).map(Some),
        }
    };
    let kept = shared.running.wait_idle(&mut w.io);
    let outcome = outcome?;
    kept.map(|()| outcome)
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
