//! Every decoder that reads bytes a target (or a user) controls: BHS fields, text key=value
//! data, SendTargets answers, sense data, INQUIRY / READ CAPACITY / REPORT LUNS replies, CHAP
//! binary values and URLs. None may panic, whatever the input. The body is
//! `storbench_iscsi::fuzzing::decoders`, which the normal test suite also runs over the kept
//! corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_iscsi::fuzzing::decoders(data));
