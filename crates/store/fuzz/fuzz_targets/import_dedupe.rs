//! Any bytes as an imported file, imported twice: the second import finds every run held
//! as the run it became the first time and adds nothing. The body is
//! `storbench_store::fuzzing::import_dedupe`, which the normal test suite also runs over
//! the `import` target's kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_store::fuzzing::import_dedupe(data));
