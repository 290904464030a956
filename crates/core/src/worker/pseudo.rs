//! The loop of a job whose engine does no IO on any file (fio's `FIO_NOIO` engines:
//! cpuio, exec). Such a job has no file, no size and no offsets, so it does not go through
//! the IO loop at all: the worker decides once, when it starts, and the IO loop of every
//! other job keeps its instructions (no flag is asked per IO).
//!
//! As in fio, each pass is one IO of zero bytes, counted as a read whatever `rw` says, and
//! timed (a cpuio busy period, an exec look at the program); after it the engine's pause
//! (`Engine::pause_ns`, fio's thinktime of these engines) is slept. Only the runtime, a
//! stop, the runner's terminate (exitall, exit_on_io_done) or the engine's `Busy` (exec:
//! the program ended and the job has no runtime) end the job.

use std::time::Duration;

use super::Worker;
use crate::engine::{IoKind, IoUnit, Queued};
use crate::error::EngineError;
use crate::stop;

/// How often a pause looks at the stop flag and the runner's terminate.
const PAUSE_STEP: Duration = Duration::from_millis(10);

impl Worker<'_> {
    /// Runs the job's zero-byte IOs until its end, then ends what the engine started.
    pub(super) fn pseudo_loop(&mut self) -> Result<(), EngineError> {
        let result = self.pseudo_ios();
        let ended = self.engine.end();
        result.and(ended)
    }

    fn pseudo_ios(&mut self) -> Result<(), EngineError> {
        let io = IoUnit {
            file: 0,
            kind: IoKind::Read,
            offset: 0,
            len: 0,
            buf: self.arena.slot_ptr(0),
            buf_index: 0,
            tag: 0,
            ioprio: 0,
        };
        while !self.pseudo_over() {
            let t_start = self.clock();
            match self.engine.queue(&io)? {
                Queued::Done(_) => {}
                // fio's cpuio says it is done with FIO_Q_BUSY; here every such engine does.
                Queued::Busy | Queued::End => return Ok(()),
                Queued::Pending => {
                    return Err(EngineError::protocol(
                        "an engine without files queued an IO it cannot complete",
                    ));
                }
            }
            let t_done = self.clock();
            self.issued_ios += 1;
            self.stats.mark_depth(1, 1);
            self.stats.mark_submit(1);
            self.stats.mark_complete(1);
            let took = t_done.saturating_sub(t_start);
            let clat = self.measure.clat.then_some(took);
            let lat = self.measure.lat.then_some(took);
            self.stats.complete(0, 0, false, clat, lat);
            if self.measuring {
                self.publish_dir(0);
            }
            let pause = self.engine.pause_ns();
            self.pseudo_pause(pause);
        }
        Ok(())
    }

    /// The stop rules of a job without files: a stop, the runner's terminate, the end of
    /// the ramp (measuring starts) and the runtime.
    fn pseudo_over(&mut self) -> bool {
        if stop::requested() || self.plan.counters.terminate_requested() {
            return true;
        }
        let now = self.clock();
        if !self.measuring && now >= self.ramp_end_ns {
            self.begin_measuring_at(self.ramp_end_ns);
        }
        self.measuring && now >= self.deadline_ns
    }

    /// Sleeps `ns`, never past the deadline (or the ramp's end), waking early for a stop
    /// or the runner's terminate.
    fn pseudo_pause(&mut self, ns: u64) {
        let limit = if self.measuring {
            self.deadline_ns
        } else {
            self.ramp_end_ns
        };
        let end = self.clock().saturating_add(ns).min(limit);
        loop {
            let now = self.clock();
            if now >= end || stop::requested() || self.plan.counters.terminate_requested() {
                return;
            }
            std::thread::sleep(Duration::from_nanos(end - now).min(PAUSE_STEP));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::Instant;

    use storbench_job::JobSpec;

    use super::*;
    use crate::clock::Clock;
    use crate::engine::{Caps, Engine, FileId, FileSpec};
    use crate::gate::StartGate;
    use crate::progress::WorkerCounters;
    use crate::worker::{WorkerOutput, WorkerPlan, run_worker};

    /// An engine without files: each IO counts, `Busy` after `busy_after` of them, a
    /// fixed pause after each, and `end` noted.
    struct Fake {
        ios: Arc<AtomicU32>,
        busy_after: u32,
        pause: Duration,
        ended: Arc<AtomicBool>,
    }

    impl Engine for Fake {
        fn name(&self) -> &'static str {
            "fake"
        }
        fn caps(&self) -> Caps {
            Caps {
                synchronous: true,
                no_data: true,
                ..Caps::default()
            }
        }
        fn open(&mut self, _file: &FileSpec) -> Result<FileId, EngineError> {
            panic!("a job without files opens none")
        }
        fn size(&mut self, _file: FileId) -> Result<u64, EngineError> {
            Ok(0)
        }
        fn queue(&mut self, io: &IoUnit) -> Result<Queued, EngineError> {
            assert_eq!((io.len, io.kind), (0, IoKind::Read));
            if self.ios.fetch_add(1, Ordering::Relaxed) >= self.busy_after {
                return Ok(Queued::Busy);
            }
            Ok(Queued::Done(0))
        }
        fn close(&mut self, _file: FileId) -> Result<(), EngineError> {
            Ok(())
        }
        fn pause_ns(&mut self) -> u64 {
            self.pause.as_nanos() as u64
        }
        fn end(&mut self) -> Result<(), EngineError> {
            self.ended.store(true, Ordering::Relaxed);
            Ok(())
        }
    }

    /// Runs a cpuio job (a job without files) over `Fake`; returns the output, whether
    /// `end` was called, and how long it took.
    fn run(
        runtime: Option<Duration>,
        busy_after: u32,
        pause: Duration,
        counters: Arc<WorkerCounters>,
    ) -> (WorkerOutput, bool, Duration) {
        let mut job = JobSpec::new("burn");
        job.ioengine = "cpuio".into();
        job.runtime = runtime;
        assert!(job.has_no_file());
        let plan = WorkerPlan {
            job: Arc::new(job),
            clone: 0,
            thread: 0,
            seed: 1,
            files: Vec::new(),
            io_limit: None,
            counters,
            clock: Clock::new(Instant::now()),
            log: None,
            own_process: false,
            together: Default::default(),
        };
        let ended = Arc::new(AtomicBool::new(false));
        let seen = ended.clone();
        let factory = move |_: &JobSpec| -> Result<Box<dyn Engine>, EngineError> {
            Ok(Box::new(Fake {
                ios: Arc::new(AtomicU32::new(0)),
                busy_after,
                pause,
                ended: seen.clone(),
            }))
        };
        let gate = StartGate::new(1, plan.clock);
        let t = Instant::now();
        let out = run_worker(plan, &factory, &gate);
        (out, ended.load(Ordering::Relaxed), t.elapsed())
    }

    #[test]
    fn busy_ends_the_job_after_its_zero_byte_reads() {
        let c = Arc::new(WorkerCounters::default());
        let (out, ended, _) = run(None, 5, Duration::from_millis(1), c);
        assert!(out.error.is_none(), "{:?}", out.error);
        let r = &out.stats.dirs[0];
        assert_eq!((r.total_ios, r.io_bytes), (5, 0));
        assert_eq!(out.stats.dirs[1].total_ios + out.stats.dirs[2].total_ios, 0);
        assert!(ended, "end was not called");
    }

    #[test]
    fn the_runtime_ends_the_job_inside_a_pause() {
        let c = Arc::new(WorkerCounters::default());
        let (out, ended, took) = run(
            Some(Duration::from_millis(300)),
            u32::MAX,
            Duration::from_millis(100),
            c,
        );
        assert!(ended);
        // One IO, then pauses of 100 ms: about 3 IOs before the deadline, not a 4th pause.
        let ios = out.stats.dirs[0].total_ios;
        assert!((2..=4).contains(&ios), "{ios} IOs");
        assert!(took < Duration::from_millis(1500), "took {took:?}");
    }

    #[test]
    fn terminate_ends_a_long_pause_at_once() {
        let c = Arc::new(WorkerCounters::default());
        let other = c.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            other.terminate();
        });
        let (out, ended, took) = run(None, u32::MAX, Duration::from_secs(60), c);
        t.join().unwrap();
        assert!(ended && out.error.is_none());
        assert_eq!(out.stats.dirs[0].total_ios, 1);
        assert!(took < Duration::from_secs(2), "took {took:?}");
    }
}
