//! The CPU of the servers on this host that a batch's connections reached (an NFS or iSCSI
//! target on 127.0.0.1), read by the sampler thread around the batch's measured phase: from
//! when its first worker begins measuring to when its last one has ended, as the client's
//! own CPU is read around each worker's measurement.

use std::net::SocketAddr;

use crate::result::ServerCpu;
use crate::server::{ServerProcess, ServerSample};

use super::CloneSlot;

#[derive(Default)]
pub(super) struct ServerWatch {
    servers: Vec<Watched>,
}

struct Watched {
    addr: SocketAddr,
    /// None when the address is not this host's or its server cannot be seen.
    process: Option<ServerProcess>,
    start: Option<ServerSample>,
    cpu: Option<ServerCpu>,
}

impl ServerWatch {
    /// Looks for the servers the workers have connected to (once per address), and reads
    /// a server's CPU when the first worker using it begins measuring.
    pub(super) fn poll(&mut self, clones: &[CloneSlot]) {
        for c in clones {
            let Some(addr) = c.counters.server() else {
                continue;
            };
            let i = match self.servers.iter().position(|w| w.addr == addr) {
                Some(i) => i,
                None => {
                    self.servers.push(Watched {
                        addr,
                        process: ServerProcess::find(addr),
                        start: None,
                        cpu: None,
                    });
                    self.servers.len() - 1
                }
            };
            let w = &mut self.servers[i];
            if w.start.is_none() && c.counters.measure_start_ns().is_some() {
                w.start = w.process.as_ref().and_then(ServerProcess::sample);
            }
        }
    }

    /// Reads every watched server's CPU again once the batch's workers have ended.
    pub(super) fn finish(&mut self) {
        for w in &mut self.servers {
            let (Some(p), Some(start)) = (&w.process, &w.start) else {
                continue;
            };
            w.cpu = p
                .sample()
                .map(|end| end.since(start, p))
                .filter(|cpu| cpu.duration_ms > 0);
        }
    }

    /// The figure for the server at `addr`, if it was measured.
    pub(super) fn of(&self, addr: Option<SocketAddr>) -> Vec<ServerCpu> {
        self.servers
            .iter()
            .filter(|w| Some(w.addr) == addr)
            .filter_map(|w| w.cpu.clone())
            .collect()
    }
}
