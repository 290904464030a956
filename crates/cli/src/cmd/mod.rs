//! One file per subcommand. Each exposes a clap `Args` struct and
//! `pub fn run(args, store: &StoreArgs) -> anyhow::Result<ExitCode>`.

use std::process::ExitCode;

use crate::{Cli, Command};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {}
}
