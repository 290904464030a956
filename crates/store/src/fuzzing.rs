//! The body of the cargo-fuzz target in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through it on a stable toolchain (`tests/fuzz_corpus.rs`). Not an
//! API: it panics when the property it checks does not hold.

use crate::import::{bundle, import_text, import_text_with_meta};

/// Any bytes as an imported file (fio JSON/json+, bonnie++ CSV or a storbench export): the importers return runs
/// or one error line naming the file, never panic.
pub fn import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match import_text_with_meta("fuzz.in", text, 0) {
        Ok(runs) if bundle::is_bundle(text.trim_start()) => {
            // A storbench export read back from what was read is the same runs.
            let mut again = Vec::new();
            bundle::write_bundled(&runs, &mut again).expect("write to memory");
            let again = std::str::from_utf8(&again).expect("JSON is UTF-8");
            let back = import_text_with_meta("again.sbr", again, 0).expect("own export reads");
            assert!(back == runs, "an export does not read back as written");
            assert_eq!(
                import_text("fuzz.in", text, 0).map(|r| r.len()).ok(),
                Some(runs.len())
            );
        }
        Ok(runs) => assert!(!runs.is_empty()),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with("fuzz.in"),
                "error does not name the file: {msg}"
            );
            assert!(!msg.contains('\n'), "multi-line error: {msg}");
        }
    }
}

/// Any bytes as an imported file, imported twice into a new database: the first time each
/// run is added or found among those added before it, the second time every run is found
/// held as the run it became the first time, and the database holds as many runs as were
/// added.
pub fn import_dedupe(data: &[u8]) {
    use crate::store::{ImportRun, Imported, RunMeta, Store};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(runs) = import_text_with_meta("fuzz.in", text, 0) else {
        return;
    };
    let batch: Vec<ImportRun> = runs
        .into_iter()
        .map(|b| ImportRun {
            run: b.run,
            meta: RunMeta {
                label: b.label,
                tags: b.tags,
                source: None,
            },
            exported_id: b.id,
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("storbench-fuzz-dedupe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let mut db = Store::open(dir.join("results.db")).expect("new database");
    let Ok(first) = db.import_all(&batch) else {
        // A label the store refuses (one that reads as a run id) refuses the whole batch.
        let _ = std::fs::remove_dir_all(&dir);
        return;
    };
    let became = |o: &Imported| match *o {
        Imported::Added(id) | Imported::Held(id) | Imported::AddedBesideSameId { id } => id,
    };
    let second = db
        .import_all(&batch)
        .expect("a batch imported once imports again");
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(
            *b,
            Imported::Held(became(a)),
            "not found held the second time"
        );
    }
    let added = first
        .iter()
        .filter(|o| !matches!(o, Imported::Held(_)))
        .count();
    let held = db.list(&Default::default()).expect("lists").len();
    assert_eq!(held, added, "the database holds other than the runs added");
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
