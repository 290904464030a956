//! Any text as an `snmp://` URL: parses to a value that prints and parses back to the same
//! host and port, or is one error line. The body is `storbench_snmp::fuzzing::url`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_snmp::fuzzing::url(data));
