//! The fuzz targets' kept inputs (fuzz/corpus, fuzz/regressions) replayed on stable.

use storbench_testkit::fuzz::replay;

#[test]
fn decoders_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "decoders",
        storbench_iscsi::fuzzing::decoders,
    );
}

#[test]
fn url_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "url",
        storbench_iscsi::fuzzing::url,
    );
}
