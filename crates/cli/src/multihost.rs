//! Multi-host runs (docs/multihost.md): one storbench per MPI rank, started by `mpirun`
//! or `srun`. This file is what every build has: finding out whether a launcher started
//! this process, refusing such a start in a build without MPI (N independent runs against
//! one target would each report a share of it as if it were the whole), and the two hooks
//! the session calls. The MPI side is `multihost/mpi.rs`, behind the `mpi` feature.

use std::process::ExitCode;

use storbench_model::result::RunResult;

use crate::Command;

#[cfg(feature = "mpi")]
mod mpi;

/// A launcher that started this process as one of several.
#[derive(Debug, PartialEq, Eq)]
pub struct Launcher {
    /// How the user would call it, for messages.
    pub name: &'static str,
    /// How many processes it started, when it says.
    pub size: Option<u32>,
}

/// The launcher that started this process, from the variables Open MPI, MPICH/Hydra, PMI,
/// PMIx and Slurm's `srun` set in each process they start. None for a plain start, and for
/// a launcher that started just this one process.
pub fn launcher(env: &dyn Fn(&str) -> Option<String>) -> Option<Launcher> {
    let number = |k: &str| env(k).and_then(|v| v.trim().parse::<u32>().ok());
    let found = if let Some(n) = number("OMPI_COMM_WORLD_SIZE") {
        Launcher {
            name: "mpirun",
            size: Some(n),
        }
    } else if let Some(n) = number("SLURM_STEP_NUM_TASKS") {
        Launcher {
            name: "srun",
            size: Some(n),
        }
    } else if let Some(n) = number("PMI_SIZE").or_else(|| number("MPI_LOCALNRANKS")) {
        Launcher {
            name: "mpirun",
            size: Some(n),
        }
    } else if env("PMIX_RANK").is_some() || env("PMI_RANK").is_some() {
        Launcher {
            name: "an MPI launcher",
            size: None,
        }
    } else {
        return None;
    };
    (found.size != Some(1)).then_some(found)
}

/// The subcommands that run across ranks.
fn runs_across_ranks(command: &Command) -> bool {
    matches!(
        command,
        Command::Fio(_) | Command::Quick(_) | Command::Bonnie(_)
    )
}

/// How this process takes part: alone, or as one rank of a coordinated run (which ends
/// MPI when dropped).
pub enum Part {
    Alone,
    #[cfg(feature = "mpi")]
    Rank(mpi::Rank),
}

/// Called before a subcommand runs: a plain start goes on alone; a start by a launcher
/// joins the other ranks (with the `mpi` feature) or is refused with one line.
pub fn enter(command: &Command) -> anyhow::Result<Part> {
    let env = |k: &str| std::env::var(k).ok();
    let Some(l) = launcher(&env) else {
        return Ok(Part::Alone);
    };
    let count = l.size.map_or_else(
        || "several processes".to_string(),
        |n| format!("{n} processes"),
    );
    if !runs_across_ranks(command) {
        anyhow::bail!(
            "started by {} as {count}: only `fio`, `quick` and `bonnie` run across hosts; run this subcommand once, without {}",
            l.name,
            l.name
        );
    }
    #[cfg(feature = "mpi")]
    {
        mpi::Rank::join().map(Part::Rank)
    }
    #[cfg(not(feature = "mpi"))]
    {
        anyhow::bail!(
            "started by {} as {count}, but this storbench was built without MPI, so each would run the whole benchmark alone against the same target; build it with `--features mpi` (docs/multihost.md) or run it without {}",
            l.name,
            l.name
        )
    }
}

/// What the session does with a rank's own measurement.
pub enum Combined {
    /// The run to save and render here (a single-host run, or rank 0's merged one).
    Here(Box<RunResult>),
    /// Another rank: its result went to rank 0; it exits with this code.
    Sent(ExitCode),
}

/// Hands a finished measurement on: alone, it stays here; as a rank, every rank's goes to
/// rank 0, which gets the merged run.
pub fn combine(measured: anyhow::Result<RunResult>) -> anyhow::Result<Combined> {
    #[cfg(feature = "mpi")]
    if let Some(rank) = mpi::current() {
        return rank.combine(measured);
    }
    measured.map(|run| Combined::Here(Box::new(run)))
}

/// True on ranks other than 0: they neither save nor print results.
pub fn secondary() -> bool {
    storbench_core::coord::active() && storbench_core::coord::rank() != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn launchers_are_found_by_their_variables() {
        let l = launcher(&env_of(&[("OMPI_COMM_WORLD_SIZE", "3")])).unwrap();
        assert_eq!((l.name, l.size), ("mpirun", Some(3)));
        let l = launcher(&env_of(&[
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_PROCID", "1"),
        ]))
        .unwrap();
        assert_eq!((l.name, l.size), ("srun", Some(4)));
        assert_eq!(
            launcher(&env_of(&[("PMI_SIZE", "2")])).unwrap().size,
            Some(2)
        );
        assert_eq!(launcher(&env_of(&[("PMIX_RANK", "0")])).unwrap().size, None);
    }

    #[test]
    fn a_plain_start_or_one_process_is_no_multi_host_run() {
        assert_eq!(launcher(&env_of(&[])), None);
        assert_eq!(launcher(&env_of(&[("OMPI_COMM_WORLD_SIZE", "1")])), None);
        // An sbatch script's own shell has Slurm's job variables but no step of tasks.
        assert_eq!(
            launcher(&env_of(&[("SLURM_NTASKS", "4"), ("SLURM_JOB_ID", "7")])),
            None
        );
    }
}
