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
        };
        while !self.pseudo_over() {
            let t_start = self.clock();
            match self.engine.queue(&io)? {
                Queued::Done(_) => {}
                // fio's cpuio says it is done with FIO_Q_BUSY; here every such engine does.
                Queued::Busy => return Ok(()),
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
