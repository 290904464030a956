//! fio's per-IO priorities (`cmdprio_percentage`, `cmdprio_bssplit`, as in fio's
//! `engines/cmdprio.c`): which reads and writes carry a priority of their own, and the
//! entry of the per-priority latencies each IO counts in (entry 0: the job's own priority,
//! `prioclass`/`prio`, which IOs without one of their own run at).

use storbench_job::JobSpec;
use storbench_job::cmdprio::{CLASS_RT, PrioChoice, ioprio_value};
use storbench_model::rng::Rng;

use crate::error::EngineError;

/// Per direction, the priorities of the per-priority latencies, in entry order.
pub(super) type Entries = [Vec<u16>; 2];

pub(super) struct PrioDraw {
    /// Per direction: the choices, each priority with its entry in the latencies.
    choices: [Vec<(PrioChoice, Vec<u8>)>; 2],
    rng: Rng,
    /// Per IO slot, the priority drawn for its IO (0: none of its own) and its entry.
    drawn: Vec<(u16, u8)>,
}

impl PrioDraw {
    /// The job's draw and each direction's priorities (the latencies' entries), when the
    /// job gives IOs priorities. The real-time class without the privilege it needs is
    /// the job's error, before any IO.
    pub(super) fn new(
        job: &JobSpec,
        seed: u64,
        slots: u32,
    ) -> Result<Option<(PrioDraw, Entries)>, EngineError> {
        let c = &job.engine_options.cmdprio;
        if !c.active() {
            return Ok(None);
        }
        let own = own_ioprio(job);
        let mut lists: [Vec<u16>; 2] = Default::default();
        let choices = std::array::from_fn(|d| {
            let used = [job.rw.kind.reads(), job.rw.kind.writes()][d];
            let choices = if used { c.choices(d) } else { Vec::new() };
            if !choices.is_empty() {
                lists[d].push(own);
            }
            choices
                .into_iter()
                .map(|choice| {
                    let entries = choice
                        .prios
                        .iter()
                        .map(|&(_, p)| entry(&mut lists[d], p))
                        .collect();
                    (choice, entries)
                })
                .collect()
        });
        let real_time = lists
            .iter()
            .flatten()
            .any(|&p| p >> 13 == u16::from(CLASS_RT));
        if real_time && !may_use_real_time() {
            return Err(EngineError::unsupported(
                "cmdprio: the real-time IO class (cmdprio_class=1, the default) needs \
                 CAP_SYS_ADMIN or CAP_SYS_NICE; give cmdprio_class=2 (best-effort) or 3 (idle)",
            ));
        }
        let draw = PrioDraw {
            choices,
            rng: Rng::seeded(seed ^ 0x0043_4d44_5052_494f),
            drawn: vec![(0, 0); slots as usize],
        };
        Ok(Some((draw, lists)))
    }

    /// Draws the priority of the IO in `slot` of direction `d` and `len` bytes (0: none
    /// of its own; syncs and trims have none), kept with its entry in the latencies until
    /// the IO completes.
    #[inline(never)]
    pub(super) fn draw(&mut self, slot: u32, d: u8, len: u32, sync: bool) -> u16 {
        let drawn = if d < 2 && !sync {
            self.pick(d, len)
        } else {
            (0, 0)
        };
        self.drawn[slot as usize] = drawn;
        drawn.0
    }

    /// The priority drawn for the IO in `slot` (0: none of its own).
    pub(super) fn ioprio(&self, slot: u32) -> u16 {
        self.drawn[slot as usize].0
    }

    /// The entry in the per-priority latencies of the IO in `slot`.
    pub(super) fn entry(&self, slot: u32) -> u8 {
        self.drawn[slot as usize].1
    }

    /// The priority of an IO of direction `d` and `len` bytes (0: none of its own) and
    /// its entry in the latencies.
    fn pick(&mut self, d: u8, len: u32) -> (u16, u8) {
        let Some(choices) = self.choices.get(usize::from(d)) else {
            return (0, 0);
        };
        let Some((choice, entries)) = choices
            .iter()
            .find(|(c, _)| c.bs.is_none_or(|bs| bs == u64::from(len)))
        else {
            return (0, 0);
        };
        let v = self.rng.below(100) as u32;
        if v >= choice.total {
            return (0, 0);
        }
        let mut upto = 0;
        for (&(perc, prio), &e) in choice.prios.iter().zip(entries) {
            upto += perc;
            if v < upto {
                return (prio, e);
            }
        }
        (0, 0)
    }
}

/// The job's own IO priority (`prioclass`, `prio`; class 0 is best-effort, as in fio's
/// `ioprio_value`), 0 when it gives none.
pub(super) fn own_ioprio(job: &JobSpec) -> u16 {
    const CLASS_BE: u8 = 2;
    if job.prioclass.is_none() && job.prio.is_none() {
        return 0;
    }
    let class = job.prioclass.filter(|&c| c != 0).unwrap_or(CLASS_BE);
    ioprio_value(class, job.prio.unwrap_or(0))
}

/// Whether this thread's effective capabilities include CAP_SYS_ADMIN or CAP_SYS_NICE,
/// which the kernel asks of an IO in the real-time class (`ioprio_check_cap`).
fn may_use_real_time() -> bool {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const SYS_ADMIN: u32 = 21;
    const SYS_NICE: u32 = 23;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget fills the header and two data words of version 3.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    rc == 0 && data[0].effective & (1 << SYS_ADMIN | 1 << SYS_NICE) != 0
}

/// The entry of priority `p` in `list`, added when new.
fn entry(list: &mut Vec<u16>, p: u16) -> u8 {
    match list.iter().position(|&q| q == p) {
        Some(i) => i as u8,
        None => {
            list.push(p);
            (list.len() - 1) as u8
        }
    }
}
