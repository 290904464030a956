//! The fuzz targets' kept inputs (fuzz/corpus, fuzz/regressions) replayed on stable.

use storbench_testkit::fuzz::replay;

#[test]
fn replies_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "replies",
        storbench_snmp::fuzzing::replies,
    );
}

#[test]
fn url_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "url",
        storbench_snmp::fuzzing::url,
    );
}
