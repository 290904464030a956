//! One file per subcommand. Each exposes a clap `Args` struct and
//! `pub fn run(args, store: &StoreArgs) -> anyhow::Result<ExitCode>`.

use std::process::ExitCode;

use crate::{Cli, Command};

pub mod bonnie;
pub mod clean;
pub mod compare;
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
    match cli.command {
        Command::History(args) => history::run_history(args, &cli.store),
        Command::Show(args) => show::run_show(args, &cli.store),
        Command::Rm(args) => rm::run_rm(args, &cli.store),
        Command::Compare(args) => compare::run_compare(args, &cli.store),
        Command::Import(args) => import::run_import(args, &cli.store),
        Command::Export(args) => export::run_export(args, &cli.store),
        Command::Report(args) => report::run_report(args, &cli.store),
        Command::Fio(args) => fio::run_fio(args, &cli.store),
        Command::Quick(args) => quick::run_quick(args, &cli.store),
        Command::Bonnie(args) => bonnie::run_bonnie(args, &cli.store),
        Command::Iscsi(args) => iscsi::run(args, &cli.store),
        Command::Smb(args) => smb::run(args),
        Command::Clean(args) => clean::run_clean(args, &cli.store),
        Command::Completions(args) => shell::run_completions(args),
        Command::Man(args) => shell::run_man(args),
    }
}
