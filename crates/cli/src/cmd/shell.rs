//! `storbench completions SHELL` and `storbench man [--dir DIR]`: shell completions and man
//! pages generated from the clap definition itself, so they cannot drift from the options;
//! the pages' EXAMPLES and fio's options come from the README and the option table
//! (`crate::manpage`). Packaging (packaging/deb.sh) and users who install by hand call them
//! once.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::{Cli, StoreArgs};

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    #[arg(required_unless_present = "labels")]
    pub shell: Option<Shell>,
    /// The labels of the stored runs, one a line (the completion scripts ask for them).
    #[arg(long, hide = true, conflicts_with = "shell")]
    pub labels: bool,
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write storbench.1 and one page per subcommand (storbench-quick.1, …) into DIR
    /// instead of printing storbench.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn run_completions(args: CompletionsArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let Some(shell) = args.shell else {
        return print_labels(store);
    };
    let script = crate::completion::script(shell, Cli::command());
    crate::running::print_out(&script)?;
    Ok(ExitCode::SUCCESS)
}

/// The stored runs' labels, newest first, each once; a label a shell cannot take as one
/// word of a line (a control character) is left out. No database: no labels.
fn print_labels(store: &StoreArgs) -> anyhow::Result<ExitCode> {
    let Ok(db) = crate::cmd::save::open_store_read_only(store) else {
        return Ok(ExitCode::SUCCESS);
    };
    let mut labels: Vec<String> = Vec::new();
    for run in db.list(&Default::default())? {
        if let Some(label) = run.meta.label
            && !label.chars().any(char::is_control)
            && !labels.contains(&label)
        {
            labels.push(label);
        }
    }
    let mut text = labels.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    crate::running::print_out(&text)?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    match args.dir {
        Some(dir) => {
            let mut pages = Vec::new();
            collect_pages(cmd, &[], &mut pages)?;
            for (name, text) in pages {
                let path = dir.join(&name);
                crate::outfile::write(&path, text.as_bytes())?;
            }
        }
        None => crate::running::print_out(&page(clap_mangen::Man::new(cmd), &[])?)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The page of `cmd` (subcommand `path` of storbench) and of each of its visible
/// subcommands, named as clap_mangen names them (`storbench-iscsi-discover.1`).
fn collect_pages(
    cmd: clap::Command,
    path: &[String],
    out: &mut Vec<(String, String)>,
) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        let mut sub_path = path.to_vec();
        sub_path.push(sub.get_name().to_string());
        collect_pages(sub, &sub_path, out)?;
    }
    let man = clap_mangen::Man::new(cmd);
    out.push((man.get_filename(), page(man, path)?));
    Ok(())
}

/// One page, with its EXAMPLES (and fio's options) added, as roff in plain ASCII: help
/// texts hold `—`, `…` and `µ`, which groff reads as Latin-1 unless `man` happens to run
/// preconv first; `\[uXXXX]` is read the same by all.
fn page(man: clap_mangen::Man, path: &[String]) -> anyhow::Result<String> {
    let mut out = Vec::new();
    man.render(&mut out)?;
    let text = crate::manpage::with_sections(&String::from_utf8(out)?, path);
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
