//! `storbench import`: fio JSON/json+ output and bonnie++ CSV lines join the history.
//! All files are read first; one unreadable file imports nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use storbench_store::RunMeta;
use storbench_store::import::import_file;

use crate::StoreArgs;
use crate::cmd::save::{check_label, open_store};

/// Import fio JSON/json+ output and bonnie++ CSV (formats 1.03, 1.9x, 1.98).
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// Files to import; --label and --tag apply to every run imported.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

pub fn run_import(args: ImportArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    check_label(store)?;
    let mut batch = Vec::new();
    let mut per_file = Vec::new();
    for path in &args.files {
        let runs = import_file(path)?;
        per_file.push((path, runs.len()));
        let meta = RunMeta {
            label: store.label.clone(),
            tags: store.tags.clone(),
            source: Some(path.display().to_string()),
        };
        batch.extend(runs.into_iter().map(|r| (r, meta.clone())));
    }
    if store.no_save {
        for (path, n) in per_file {
            eprintln!(
                "storbench: {}: {n} run(s) readable; not saved (--no-save)",
                path.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut db = open_store(store)?;
    let ids = db.save_all(&batch)?;
    let mut next = ids.iter();
    for (path, n) in per_file {
        let mine: Vec<String> = next.by_ref().take(n).map(|id| id.to_string()).collect();
        eprintln!(
            "storbench: {}: imported as run{} {}",
            path.display(),
            if n == 1 { "" } else { "s" },
            mine.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
