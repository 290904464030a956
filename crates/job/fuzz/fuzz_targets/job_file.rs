//! Any bytes as a job file (with itself as every include): parsing and resolving must
//! return Ok or one error line, never panic. The body is `storbench_job::fuzzing::job_file`,
//! which the normal test suite also runs over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_job::fuzzing::job_file(data));
