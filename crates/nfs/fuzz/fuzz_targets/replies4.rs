//! Everything an NFSv4.1/4.2 server sends passes through here: record marking (in arbitrary
//! read splits), the RPC reply header, and the COMPOUND result decoder. None may panic,
//! loop or allocate without bound. The body is `storbench_nfs::fuzzing::replies4`, which
//! the normal test suite also runs over the kept corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_nfs::fuzzing::replies4(data));
