//! Which CPUs a job's clones run on and at which CPU priority: fio's `cpus_allowed`,
//! `cpumask`, `cpus_allowed_policy`, `nice`, and the IO priority `prio`/`prioclass`.

use super::{Category as C, Kind as K, OptDef, val};
use crate::units::{parse_small, parse_u64};

/// fio's range of `nice`.
const NICE: std::ops::RangeInclusive<i32> = -20..=19;

fn parse_nice(v: &str) -> Result<i32, String> {
    let n: i32 = v
        .trim()
        .parse()
        .map_err(|_| format!("'{v}' is not a whole number"))?;
    if !NICE.contains(&n) {
        return Err(format!("{n} is out of range (-20 to 19)"));
    }
    Ok(n)
}

/// A NUMA node list (`0`, `0-1`, `0,2`, `all`); which nodes exist is checked as each
/// clone starts, on the host that runs it.
fn parse_nodes(text: &str) -> Result<Option<Vec<u32>>, String> {
    if text.trim() == "all" {
        return Ok(None);
    }
    parse_cpu_list(text, MAX_NODES)
        .map(Some)
        .map_err(|e| e.replace("CPU", "node"))
}

/// Linux's largest node number plus one (MAX_NUMNODES with NODES_SHIFT 10).
const MAX_NODES: u32 = 1024;

/// fio's `numa_mem_policy`: `mode[:nodes]`.
fn parse_mem_policy(text: &str) -> Result<crate::spec::NumaMem, String> {
    use crate::spec::NumaMode as M;
    let (mode, nodes) = match text.split_once(':') {
        Some((m, n)) => (m.trim(), Some(n)),
        None => (text.trim(), None),
    };
    let mode = match mode {
        "default" => M::Default,
        "prefer" => M::Prefer,
        "bind" => M::Bind,
        "interleave" => M::Interleave,
        "local" => M::Local,
        other => {
            return Err(format!(
                "'{other}' is not a memory policy (default, prefer, bind, interleave, local)"
            ));
        }
    };
    let nodes = match (mode, nodes) {
        (M::Default | M::Local, _) => None,
        (_, None) => return Err(format!("{text}: the policy needs a node list")),
        (_, Some(n)) => parse_nodes(n)?,
    };
    if mode == M::Prefer && nodes.as_ref().is_none_or(|n| n.len() != 1) {
        return Err(format!("{text}: prefer takes one node"));
    }
    Ok(crate::spec::NumaMem { mode, nodes })
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "numa_cpu_nodes",
        K::Str,
        C::Job,
        "",
        "Run each clone on the CPUs of these NUMA nodes (0,2 or 0-1 or all)",
        |b, v| {
            b.spec.numa_cpu_nodes = Some(parse_nodes(val(v)?)?.unwrap_or_default());
            Ok(())
        },
    )
    .note("Set with sched_setaffinity from the nodes' CPUs in /sys as each clone starts; a node the host does not have ends the job with that reason before any IO."),
    OptDef::new(
        "numa_mem_policy",
        K::Str,
        C::Job,
        "",
        "Memory policy of each clone: default, prefer:N, bind:NODES, interleave:NODES or local",
        |b, v| {
            b.spec.numa_mem = Some(parse_mem_policy(val(v)?)?);
            Ok(())
        },
    )
    .note("Set with set_mempolicy on each clone's thread as it starts, before its buffers are allocated; a node the host does not have ends the job with that reason."),
    OptDef::new(
        "prio",
        K::Int,
        C::Job,
        "",
        "IO priority level of each clone within its class (0 to 7, 0 highest)",
        |b, v| {
            b.spec.prio = Some(parse_small(val(v)?, 7)?);
            Ok(())
        },
    )
    .note("Set with ioprio_set on each clone's thread (or process) as it starts."),
    OptDef::new(
        "prioclass",
        K::Int,
        C::Job,
        "",
        "IO priority class of each clone (1 real-time, 2 best-effort, 3 idle; 0: best-effort)",
        |b, v| {
            b.spec.prioclass = Some(parse_small(val(v)?, 3)?);
            Ok(())
        },
    )
    .note(
        "The real-time class needs CAP_SYS_ADMIN: without it the job ends with the system's \
         refusal and that reason before any IO.",
    ),
    OptDef::new(
        "nice",
        K::Int,
        C::Job,
        "0",
        "Add this to the nice value of each clone as it starts (-20 to 19)",
        |b, v| {
            b.spec.nice = parse_nice(val(v)?)?;
            Ok(())
        },
    )
    .note(
        "Set on each clone's thread (or process) as fio sets it on its process; a value the \
         system refuses (a negative one without CAP_SYS_NICE) ends the job with the \
         system's reason before any IO.",
    ),
    OptDef::new(
        "cpus_allowed",
        K::Str,
        C::Job,
        "",
        "CPUs the job may run on, counted from 0: a list of numbers and ranges (0,5,8-15)",
        |b, v| {
            b.spec.cpus = Some(parse_cpu_list(val(v)?, configured_cpus())?);
            Ok(())
        },
    ),
    OptDef::new(
        "cpumask",
        K::Int,
        C::Job,
        "",
        "CPUs the job may run on, as a bit mask (34 = CPUs 1 and 5); only CPUs 0 to 31",
        |b, v| {
            b.spec.cpus = Some(parse_cpu_mask(val(v)?, configured_cpus())?);
            Ok(())
        },
    ),
    OptDef::new(
        "cpus_allowed_policy",
        K::Choice(POLICIES),
        C::Job,
        "shared",
        "How the clones use the CPUs of cpus_allowed or cpumask",
        |b, v| {
            b.spec.cpus_split = match val(v)? {
                "shared" => false,
                "split" => true,
                other => return Err(format!("'{other}' is not one of shared, split")),
            };
            Ok(())
        },
    ),
];

const POLICIES: &[(&str, &str)] = &[
    ("shared", "Every clone may run on all of the CPUs"),
    (
        "split",
        "Each clone gets one CPU of the set, in turn over all the run's clones (as fio's thread numbers)",
    ),
];

/// The CPUs this machine has configured, as fio's `cpus_configured`.
fn configured_cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    u32::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
}

/// `0,5,8-15` as a sorted list of CPUs below `max`.
pub fn parse_cpu_list(text: &str, max: u32) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (lo, hi) = match item.split_once('-') {
            Some((lo, hi)) => (cpu_number(lo)?, cpu_number(hi)?),
            None => (cpu_number(item)?, cpu_number(item)?),
        };
        if lo > hi {
            return Err(format!(
                "'{item}': a range goes from the lower CPU to the higher"
            ));
        }
        for cpu in lo..=hi {
            cpus.push(check_cpu(cpu, max)?);
        }
    }
    finish(cpus)
}

/// A decimal bit mask of CPUs 0 to 31, as fio's `cpumask`.
pub fn parse_cpu_mask(text: &str, max: u32) -> Result<Vec<u32>, String> {
    let mask = parse_u64(text, 1000)?;
    if mask > u64::from(u32::MAX) {
        return Err("a cpumask covers CPUs 0 to 31 only; use cpus_allowed".into());
    }
    let cpus = (0..32).filter(|i| mask & (1 << i) != 0);
    finish(
        cpus.map(|cpu| check_cpu(cpu, max))
            .collect::<Result<_, _>>()?,
    )
}

fn cpu_number(text: &str) -> Result<u32, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a CPU number"))
}

fn check_cpu(cpu: u32, max: u32) -> Result<u32, String> {
    if cpu >= max {
        return Err(format!(
            "CPU {cpu} is not on this machine (its CPUs are 0 to {})",
            max - 1
        ));
    }
    Ok(cpu)
}

fn finish(mut cpus: Vec<u32>) -> Result<Vec<u32>, String> {
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return Err("no CPU given".into());
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_ranges_and_masks() {
        assert_eq!(parse_cpu_list("0,5,8-10", 16).unwrap(), [0, 5, 8, 9, 10]);
        assert_eq!(parse_cpu_list(" 3 , 1-2,2", 4).unwrap(), [1, 2, 3]);
        assert_eq!(parse_cpu_mask("34", 8).unwrap(), [1, 5]);
        let err = parse_cpu_list("0-4", 2).unwrap_err();
        assert!(
            err.contains("CPU 2 is not on this machine (its CPUs are 0 to 1)"),
            "{err}"
        );
        assert!(parse_cpu_list("x", 2).unwrap_err().contains("'x'"));
        assert!(parse_cpu_list("3-1", 4).unwrap_err().contains("lower CPU"));
        assert!(parse_cpu_list(",", 4).unwrap_err().contains("no CPU"));
        assert!(parse_cpu_mask("0", 4).unwrap_err().contains("no CPU"));
        assert!(
            parse_cpu_mask("4294967296", 64)
                .unwrap_err()
                .contains("cpus_allowed")
        );
    }
}
