//! How a clone goes along with other jobs and programs: fio's `flow` (a counter shared by
//! the jobs of one `flow_id`), `wait_for` (another job's clones end first) and the
//! `exec_prerun`/`exec_postrun` commands around its IO, and the clones whose buffers its
//! deduplicated writes repeat (`dedupe_global`).

use std::fs::File;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use storbench_job::JobSpec;

use crate::error::{EngineError, ErrorKind};
use crate::progress::{WorkerCounters, WorkerState};
use crate::stop;

/// The IOs counted by the jobs of one `flow_id` running together, and their weights.
#[derive(Debug, Default)]
pub struct Flow {
    ios: AtomicU64,
    weight: u64,
}

impl Flow {
    /// A flow of jobs whose weights add up to `weight`.
    pub fn new(weight: u64) -> Flow {
        Flow {
            ios: AtomicU64::new(0),
            weight: weight.max(1),
        }
    }
}

/// What a clone shares with the other jobs of its batch.
#[derive(Default)]
pub struct Together {
    /// The counters of every clone of the job named by `wait_for`, when it runs in this
    /// batch.
    pub waitees: Vec<Arc<WorkerCounters>>,
    /// The flow of its `flow_id`, when the job has a `flow` weight.
    pub flow: Option<Arc<Flow>>,
    /// The thread numbers of the batch's clones that share a dedupe working set
    /// (`dedupe_global`), in order, when this clone is one of them.
    pub dedupe_peers: Vec<u32>,
}

/// One clone's place in its flow: fio's `flow_threshold_exceeded`.
pub(super) struct FlowShare {
    flow: Arc<Flow>,
    mine: u64,
    weight: u64,
    sleep: Duration,
}

impl FlowShare {
    pub(super) fn new(together: &Together, job: &JobSpec) -> Option<FlowShare> {
        let flow = together.flow.clone()?;
        Some(FlowShare {
            flow,
            mine: 0,
            weight: u64::from(job.coord.flow),
            sleep: Duration::from_micros(u64::from(job.coord.flow_sleep_us)),
        })
    }

    /// Whether this clone is above its share of the flow's IOs (it waits), else counts
    /// one IO in: `mine / all > weight / total`, compared without division.
    #[inline]
    pub(super) fn exceeded(&mut self) -> bool {
        let all = self.flow.ios.load(Ordering::Relaxed);
        if all > 0
            && u128::from(self.mine) * u128::from(self.flow.weight)
                > u128::from(self.weight) * u128::from(all)
        {
            return true;
        }
        self.flow.ios.fetch_add(1, Ordering::Relaxed);
        self.mine += 1;
        false
    }

    /// How long to wait when above the share (fio's `flow_sleep`; zero: try again).
    pub(super) fn sleep(&self) -> Duration {
        self.sleep
    }
}

/// How often a waiting clone looks at its waitee's clones.
const WAIT_POLL: Duration = Duration::from_millis(1);

/// Waits until every clone in `waitees` has ended, or a stop is requested, calling `idle`
/// (the engine's [`Engine::idle`](crate::Engine::idle), which keeps a server's lease) at
/// the start and then every `idle_every`.
pub(super) fn wait_for(
    waitees: &[Arc<WorkerCounters>],
    idle_every: Duration,
    idle: &mut dyn FnMut() -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let ended =
        |c: &Arc<WorkerCounters>| matches!(c.state(), WorkerState::Done | WorkerState::Error);
    let mut next_idle = Instant::now();
    while !waitees.iter().all(ended) && !stop::requested() {
        if Instant::now() >= next_idle {
            idle()?;
            next_idle = Instant::now() + idle_every;
        }
        std::thread::sleep(WAIT_POLL);
    }
    Ok(())
}

/// Runs `command` with `sh -c` (fio's system(3)) in the current directory, its output in
/// `NAME.WHEN.txt`; the exit status when it fails.
pub(super) fn exec(job: &JobSpec, command: &str, when: &str) -> Result<(), EngineError> {
    let out_name = format!("{}.{when}.txt", job.name);
    let out = File::create(&out_name).map_err(|e| EngineError::os("create", &out_name, e))?;
    let err = out
        .try_clone()
        .map_err(|e| EngineError::os("dup", &out_name, e))?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| EngineError::os(&format!("exec_{when}"), "sh", e))?;
    if status.success() {
        return Ok(());
    }
    let why = match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "was killed by a signal".to_string(),
    };
    Err(EngineError::new(
        ErrorKind::Os,
        format!("exec_{when} {why} (its output is in {out_name})"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_waiting_for_another_is_idle_at_once_and_every_step_until_it_ends() {
        let waitee = Arc::new(WorkerCounters::default());
        waitee.set_state(WorkerState::Running);
        let mut calls = 0u32;
        let t = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(290));
                waitee.set_state(WorkerState::Done);
            });
            wait_for(
                std::slice::from_ref(&waitee),
                Duration::from_millis(100),
                &mut || {
                    calls += 1;
                    Ok(())
                },
            )
            .unwrap();
        });
        let steps = (t.elapsed().as_millis() / 100) as u32;
        assert!(
            calls >= 2 && calls <= steps + 1,
            "{calls} idle calls in {steps} steps"
        );
        // An idle call that fails (the server is gone) ends the wait with its error.
        waitee.set_state(WorkerState::Running);
        let e = wait_for(
            std::slice::from_ref(&waitee),
            Duration::from_millis(10),
            &mut || Err(EngineError::protocol("server lost")),
        );
        assert!(e.is_err());
    }
}
