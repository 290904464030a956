//! The CPU of the servers on this host that a batch's connections reached (an NFS or iSCSI
//! target on 127.0.0.1), read by the sampler thread around the measured phase of the
//! workers using each: from when the first of them begins measuring to when the last one
//! has stopped (before closing its files, whose COMMIT or logout is not measured), as the
//! client's own CPU is read around each worker's measurement.
//!
//! The workers find the server processes before the start (see
//! [`WorkerCounters::server_process`]): here only their own /proc entries are read.

use storbench_core::progress::{WorkerCounters, WorkerState};
use storbench_core::server::{ServerProcess, ServerSample};
use storbench_model::result::ServerCpu;

use super::CloneSlot;

#[derive(Default)]
pub(super) struct ServerWatch {
    servers: Vec<Watched>,
}

struct Watched {
    process: ServerProcess,
    start: Option<ServerSample>,
    /// Read once the last worker using it stopped measuring.
    cpu: Option<ServerCpu>,
    ended: bool,
}

impl ServerWatch {
    /// Reads a server's CPU when the first worker using it begins measuring, and again
    /// when the last one has stopped.
    pub(super) fn poll(&mut self, clones: &[CloneSlot]) {
        for c in clones {
            let Some(p) = c.counters.server_process() else {
                continue;
            };
            let w = self.watch(p);
            if w.start.is_none() && !w.ended && c.counters.measure_start_ns().is_some() {
                w.start = w.process.sample();
            }
        }
        for w in &mut self.servers {
            let users = clones
                .iter()
                .filter(|c| c.counters.server_process() == Some(&w.process));
            if w.start.is_some() && !w.ended && users.clone().all(|c| stopped(&c.counters)) {
                w.end();
            }
        }
    }

    fn watch(&mut self, p: &ServerProcess) -> &mut Watched {
        let i = match self.servers.iter().position(|w| &w.process == p) {
            Some(i) => i,
            None => {
                self.servers.push(Watched {
                    process: p.clone(),
                    start: None,
                    cpu: None,
                    ended: false,
                });
                self.servers.len() - 1
            }
        };
        &mut self.servers[i]
    }

    /// Reads the CPU of any server whose workers ended without polling seeing it.
    pub(super) fn finish(&mut self) {
        for w in self.servers.iter_mut().filter(|w| !w.ended) {
            w.end();
        }
    }

    /// The figure for the server this worker's connection reached, if it was measured.
    pub(super) fn of(&self, counters: &WorkerCounters) -> Vec<ServerCpu> {
        self.servers
            .iter()
            .filter(|w| counters.server_process() == Some(&w.process))
            .filter_map(|w| w.cpu.clone())
            .collect()
    }
}

impl Watched {
    fn end(&mut self) {
        self.ended = true;
        let Some(start) = &self.start else {
            return;
        };
        self.cpu = self
            .process
            .sample()
            .map(|end| end.since(start, &self.process))
            .filter(|cpu| cpu.duration_ms > 0);
    }
}

/// The worker has stopped measuring (or never will: it failed or was stopped before).
fn stopped(c: &WorkerCounters) -> bool {
    c.measure_end_ns().is_some() || matches!(c.state(), WorkerState::Done | WorkerState::Error)
}
