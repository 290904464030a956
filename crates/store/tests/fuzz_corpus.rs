//! The fuzz target's kept inputs (fuzz/corpus, fuzz/regressions) replayed on stable.

use storbench_testkit::fuzz::replay;

#[test]
fn import_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "import",
        storbench_store::fuzzing::import,
    );
}

/// The duplicate detection reads the same inputs as the importer: its kept corpus.
#[test]
fn import_corpus_replays_through_duplicate_detection() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "import",
        storbench_store::fuzzing::import_dedupe,
    );
}
