//! Any command line (NUL-separated arguments): Ok or one error line, never a panic. The body
//! is `storbench_job::fuzzing::fio_args`, which the normal test suite also runs over the
//! kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_job::fuzzing::fio_args(data));
