//! The fuzz targets' kept inputs (fuzz/corpus, fuzz/regressions) replayed on stable.

use storbench_testkit::fuzz::replay;

#[test]
fn job_file_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "job_file",
        storbench_job::fuzzing::job_file,
    );
}

#[test]
fn fio_args_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "fio_args",
        storbench_job::fuzzing::fio_args,
    );
}
