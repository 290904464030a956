//! Everything an NBD server sends in transmission (simple replies and structured chunks, in
//! arbitrary read splits) and the option-reply decoders. None may panic, write outside a
//! request's buffer or complete a request twice. The body is
//! `storbench_nbd::fuzzing::replies`, which the normal test suite also runs over the kept
//! corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_nbd::fuzzing::replies(data));
