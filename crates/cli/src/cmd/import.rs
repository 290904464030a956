//! `storbench import`: fio JSON/json+ output, bonnie++ CSV lines and storbench's own exports
//! (`.sbr`) join the history; another results database is merged run by run. All files are
//! read first; one unreadable file imports nothing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use storbench_store::import::import_file_with_meta;
use storbench_store::{ImportRun, Imported, RunMeta, Store};

use crate::StoreArgs;
use crate::cmd::save::{check_label, db_path, open_store};

/// Import fio JSON/json+ output, bonnie++ CSV (formats 1.03, 1.9x, 1.98), storbench exports
/// (.sbr) and other storbench results databases.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// Files to import; --label and --tag apply to every run imported (an export's own
    /// label and tags are kept where none is given).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// --label, --tag for every run imported; --no-save reads the files and saves nothing.
    #[command(flatten)]
    pub run: crate::RunFlags,
}

/// Every SQLite database file starts with these 16 bytes.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// A regular file that opens like a SQLite database (a FIFO is never opened here: that
/// would wait for a writer).
fn is_sqlite(path: &Path) -> bool {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| &head == SQLITE_MAGIC)
}

pub fn run_import(args: ImportArgs, store: &StoreArgs) -> anyhow::Result<ExitCode> {
    check_label(store)?;
    let (databases, files): (Vec<&PathBuf>, Vec<&PathBuf>) =
        args.files.iter().partition(|p| is_sqlite(p));
    let mut batch = Vec::new();
    let mut per_file = Vec::new();
    for path in files {
        let runs = import_file_with_meta(path)?;
        per_file.push((path, runs.len()));
        for b in runs {
            let meta = RunMeta {
                label: store.label.clone().or(b.label),
                tags: if store.tags.is_empty() {
                    b.tags
                } else {
                    store.tags.clone()
                },
                source: Some(path.display().to_string()),
            };
            batch.push(ImportRun {
                run: b.run,
                meta,
                exported_id: b.id,
            });
        }
    }
    // Databases are opened (and refused when foreign or damaged) before anything is saved.
    let mut others = Vec::new();
    for path in databases {
        if store.label.is_some() || !store.tags.is_empty() {
            anyhow::bail!(
                "{}: a results database keeps its runs' own labels and tags; import it without \
                 --label/--tag",
                path.display()
            );
        }
        if same_file(path, &db_path(store)?) {
            anyhow::bail!("{}: this is the results database itself", path.display());
        }
        others.push((path, Store::open_to_import(path)?));
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
    let outcomes = db.import_all(&batch)?;
    let mut next = batch.iter().zip(outcomes);
    for (path, n) in per_file {
        let mine: Vec<_> = next.by_ref().take(n).collect();
        report_file(path, &mine);
    }
    for (path, other) in others {
        let (added, skipped) = db.merge_from(&other)?;
        eprintln!(
            "storbench: {}: merged {added} run(s){}",
            path.display(),
            if skipped > 0 {
                format!("; {skipped} already here")
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Says on stderr which runs of one file were added and which were held already.
fn report_file(path: &Path, runs: &[(&ImportRun, Imported)]) {
    let mut added = Vec::new();
    for (k, (run, outcome)) in runs.iter().enumerate() {
        let theirs = match run.exported_id {
            Some(id) => format!("run {id}"),
            None => format!("the file's run {}", k + 1),
        };
        match outcome {
            Imported::Added(id) => added.push(id.to_string()),
            Imported::Held(id) => eprintln!(
                "storbench: {}: {theirs} already held as run {id}, skipped",
                path.display()
            ),
            Imported::AddedBesideSameId { id } => {
                added.push(id.to_string());
                eprintln!(
                    "storbench: {}: {theirs} differs from this database's run of that id; \
                     imported as new run {id}",
                    path.display()
                );
            }
        }
    }
    if !added.is_empty() {
        eprintln!(
            "storbench: {}: imported as run{} {}",
            path.display(),
            if added.len() == 1 { "" } else { "s" },
            added.join(", ")
        );
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}
