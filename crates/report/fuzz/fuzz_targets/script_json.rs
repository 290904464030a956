//! Any bytes as run names and titles in the HTML report's embedded data: the written JSON
//! reads back as the same value and holds no `</script` or `<!--`. The body is
//! `storbench_report::fuzzing::script_json`, which the normal test suite also runs.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_report::fuzzing::script_json(data));
