//! Any bytes as an imported file (fio JSON/json+ or bonnie++ CSV): the importers must return
//! runs or one error line naming the file, never panic. The body is
//! `storbench_store::fuzzing::import`, which the normal test suite also runs over the kept
//! corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_store::fuzzing::import(data));
