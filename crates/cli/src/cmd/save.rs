//! Access to the results database for every subcommand: opening it from the global flags,
//! and saving a finished run ([`save_to`], called by the run's session).

use std::path::PathBuf;

use storbench_model::result::RunResult;
use storbench_store::{RunMeta, Store};

use crate::StoreArgs;

/// `--db` / `$STORBENCH_DB`, else the default under the user's data folder.
pub fn db_path(store: &StoreArgs) -> anyhow::Result<PathBuf> {
    Ok(match &store.db {
        Some(p) => p.clone(),
        None => Store::default_path()?,
    })
}

/// Opens (creating if needed) the results database named by the global flags.
pub fn open_store(store: &StoreArgs) -> anyhow::Result<Store> {
    Ok(Store::open(db_path(store)?)?)
}

/// Opens the database for commands that change stored runs but never create it (rm).
pub fn open_existing_store(store: &StoreArgs) -> anyhow::Result<Store> {
    Ok(Store::open(existing_db_path(store)?)?)
}

/// Opens an existing database for commands that only read (history, show, compare, report):
/// read-only, so a database in a read-only directory works and no WAL files are left.
pub fn open_store_read_only(store: &StoreArgs) -> anyhow::Result<Store> {
    Ok(Store::open_read_only(existing_db_path(store)?)?)
}

/// The database's path, which must exist: commands other than runs and imports never
/// create it.
fn existing_db_path(store: &StoreArgs) -> anyhow::Result<std::path::PathBuf> {
    let path = db_path(store)?;
    if !path.exists() {
        anyhow::bail!(
            "no results database at {} yet: runs are saved there once a benchmark has run \
             (or use --db)",
            path.display()
        );
    }
    Ok(path)
}

/// Rejects a `--label` that `compare` would read as a run id, blank labels and tags and
/// those longer than [`storbench_report::label::MAX_CHARS`]
/// (fio's own flags bypass clap); call before a long run so the save at its end cannot fail
/// on it.
pub fn check_label(store: &StoreArgs) -> anyhow::Result<()> {
    let blank = |t: &String| t.trim().is_empty();
    let flag = (store.label.iter().any(blank).then_some("--label"))
        .or_else(|| store.tags.iter().any(blank).then_some("--tag"));
    if let Some(flag) = flag {
        anyhow::bail!("{flag} is empty: {}", crate::BLANK);
    }
    let long = (store
        .label
        .iter()
        .find_map(|l| crate::too_long(l))
        .map(|w| ("--label", w)))
    .or_else(|| {
        store
            .tags
            .iter()
            .find_map(|t| crate::too_long(t))
            .map(|w| ("--tag", w))
    });
    if let Some((flag, why)) = long {
        anyhow::bail!("{flag}: {why}");
    }
    if let Some(l) = &store.label
        && l.trim_start_matches('#').parse::<i64>().is_ok()
    {
        anyhow::bail!("--label {l}: a plain number would read as a run id; choose another label");
    }
    Ok(())
}

/// Saves `run` in `db` with the flags' label and tags. Returns the run id; [`say_saved`]
/// tells the user. The measuring subcommands reach it through
/// [`crate::session::Session`], which opened `db` before the run.
pub fn save_to(db: &mut Store, store: &StoreArgs, run: &RunResult) -> anyhow::Result<i64> {
    let meta = RunMeta {
        label: store.label.clone(),
        tags: store.tags.clone(),
        source: None,
    };
    Ok(db.save(run, &meta)?)
}

/// `storbench: saved as run N in PATH` on stderr, unless the flags asked for quiet.
pub fn say_saved(db: &Store, store: &StoreArgs, id: i64) {
    if !store.quiet_save {
        eprintln!("storbench: saved as run {id} in {}", db.path().display());
    }
}
