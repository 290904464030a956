//! Any text as an `iscsi://` URL: a URL or one error line, never a panic. The body is
//! `storbench_iscsi::fuzzing::url`, which the normal test suite also runs over the kept
//! corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_iscsi::fuzzing::url(data));
