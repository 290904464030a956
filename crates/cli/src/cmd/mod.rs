//! One file per subcommand. Each exposes a clap `Args` struct and
//! `pub fn run(args, store: &StoreArgs) -> anyhow::Result<ExitCode>`.

use std::process::ExitCode;

use crate::{Cli, Command};

pub mod bonnie;
pub mod clean;
pub mod compare;
pub mod diagnose;
pub mod export;
pub mod fio;
pub mod history;
pub mod import;
pub mod iscsi;
pub mod quick;
pub mod report;
pub mod rm;
pub mod save;
pub mod shell;
pub mod show;
pub mod smb;
pub mod time;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    // Under mpirun/srun: joins the other ranks (or refuses); held until the command ends.
    let _part = crate::multihost::enter(&cli.command)?;
    let early = cli.early.as_run_flags();
    // A label or tag given where no run is made would be silently lost: refused. An early
    // `--no-save` (scripts put it before every subcommand) asks for what any subcommand that
    // makes no run already does, so it is accepted there.
    if (early.label.is_some() || !early.tags.is_empty()) && !makes_runs(&cli.command) {
        anyhow::bail!(
            "--label and --tag name a run being made (fio, quick, bonnie, diagnose, import); {}",
            match &cli.command {
                Command::History(_) => "to filter, give them after `history`",
                _ => "this subcommand makes none",
            }
        );
    }
    let store = cli.store.with_run(&early);
    match cli.command {
        Command::History(args) => history::run_history(args, &cli.store),
        Command::Show(args) => show::run_show(args, &cli.store),
        Command::Rm(args) => rm::run_rm(args, &cli.store),
        Command::Compare(args) => compare::run_compare(args, &cli.store),
        Command::Import(args) => {
            let store = store.with_run(&args.run);
            import::run_import(args, &store)
        }
        Command::Export(args) => export::run_export(args, &cli.store),
        Command::Report(args) => report::run_report(args, &cli.store),
        Command::Fio(args) => fio::run_fio(args, &store),
        Command::Quick(args) => {
            let store = store.with_run(&args.run);
            quick::run_quick(args, &store)
        }
        Command::Bonnie(args) => {
            let store = store.with_run(&args.run);
            bonnie::run_bonnie(args, &store)
        }
        Command::Diagnose(args) => {
            let store = store.with_run(&args.run);
            diagnose::run_diagnose(args, &store)
        }
        Command::Iscsi(args) => iscsi::run(args, &cli.store),
        Command::Smb(args) => smb::run(args),
        Command::Clean(args) => clean::run_clean(args, &cli.store),
        Command::Completions(args) => shell::run_completions(args, &cli.store),
        Command::Man(args) => shell::run_man(args),
    }
}

/// The subcommands that add runs to the results database, and so take `--label`, `--tag`
/// (and, but for import, `--no-save`).
fn makes_runs(command: &Command) -> bool {
    matches!(
        command,
        Command::Fio(_)
            | Command::Quick(_)
            | Command::Bonnie(_)
            | Command::Diagnose(_)
            | Command::Import(_)
    )
}
