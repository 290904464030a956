//! Any text as an `nfs://` URL: a normalised URL or one error line, never a panic. The body
//! is `storbench_nfs::fuzzing::url`, which the normal test suite also runs over the kept
//! corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_nfs::fuzzing::url(data));
