//! `smb://` URL parsing. The body is `storbench_smb::fuzzing::url`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_smb::fuzzing::url(data));
