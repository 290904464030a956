//! The bodies of the cargo-fuzz targets in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through them on a stable toolchain (`tests/fuzz_corpus.rs`), and
//! the fuzz targets stay one line each. Not an API: each function panics when the property
//! it checks does not hold.

use crate::{HostFacts, parse_fio_args_with};

const HOST: HostFacts = HostFacts {
    ncpus: 2,
    mb_memory: 1024,
    pagesize: 4096,
};

/// Any bytes as a job file (with itself as every include): parsing and resolving return Ok
/// or one error line, never panic.
pub fn job_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut read = |_: &str| Ok::<String, String>(text.to_string());
    let env = |name: &str| (name == "X").then(|| "4k".to_string());
    let args = vec!["--parse-only".to_string(), "fuzz.fio".to_string()];
    if let Err(e) = parse_fio_args_with(&args, &HOST, &env, &mut read) {
        assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    }
}

/// Any command line (NUL-separated arguments, job files read from memory): Ok or one error
/// line, never a panic.
pub fn fio_args(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let args: Vec<String> = text.split('\0').map(str::to_string).collect();
    let mut read = |_: &str| Ok::<String, String>("[j]\nsize=1m\n".to_string());
    if let Err(e) = parse_fio_args_with(&args, &HOST, &|_| None, &mut read) {
        assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    }
}
