//! Every decoder of what an SMB server sends (header, reply bodies, NTLMSSP, transform
//! header, DCE/RPC). None may panic, loop or allocate without bound. The body is
//! `storbench_smb::fuzzing::replies`, which the normal test suite also runs over the kept
//! corpus.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| storbench_smb::fuzzing::replies(data));
