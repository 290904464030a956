//! Any bytes as an SNMP agent's reply datagram: decoded, or one error line; never a panic
//! or an unbounded allocation. The body is `storbench_snmp::fuzzing::replies`, which the
//! normal test suite also runs over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_snmp::fuzzing::replies(data));
