//! Any text as an NBD URI: parses to a value that prints and parses back to itself, or is
//! one error line. The body is `storbench_nbd::fuzzing::url`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_nbd::fuzzing::url(data));
