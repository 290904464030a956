//! `storbench completions SHELL` and `storbench man [--dir DIR]`: shell completions and man
//! pages generated from the clap definition itself, so they cannot drift from the options.
//! Both are hidden from `--help`; packaging (packaging/deb.sh) and users who install by hand
//! call them once.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write storbench.1 and one page per subcommand (storbench-quick.1, …) into DIR
    /// instead of printing storbench.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run_completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "storbench", &mut out);
    crate::running::print_out(&String::from_utf8_lossy(&out))?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    match args.dir {
        Some(dir) => {
            let mut pages = Vec::new();
            collect_pages(cmd, &mut pages)?;
            for (name, text) in pages {
                let path = dir.join(&name);
                crate::outfile::write(&path, text.as_bytes())?;
            }
        }
        None => crate::running::print_out(&page(clap_mangen::Man::new(cmd))?)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The page of `cmd` and of each of its visible subcommands, named as clap_mangen names
/// them (`storbench-iscsi-discover.1`).
fn collect_pages(cmd: clap::Command, out: &mut Vec<(String, String)>) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        collect_pages(sub, out)?;
    }
    let man = clap_mangen::Man::new(cmd);
    out.push((man.get_filename(), page(man)?));
    Ok(())
}

/// One page as roff in plain ASCII: help texts hold `—`, `…` and `µ`, which groff reads as
/// Latin-1 unless `man` happens to run preconv first; `\[uXXXX]` is read the same by all.
fn page(man: clap_mangen::Man) -> anyhow::Result<String> {
    let mut out = Vec::new();
    man.render(&mut out)?;
    let text = String::from_utf8(out)?;
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            ascii.push_str(&format!("\\[u{:04X}]", c as u32));
        }
    }
    Ok(ascii)
}
