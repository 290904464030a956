//! Any bytes as a job file (with itself as every include): parsing and resolving must
//! return Ok or one error line, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storbench_job::{HostFacts, parse_fio_args_with};

const HOST: HostFacts = HostFacts {
    ncpus: 2,
    mb_memory: 1024,
    pagesize: 4096,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut read = |_: &str| Ok::<String, String>(text.to_string());
    let env = |name: &str| (name == "X").then(|| "4k".to_string());
    let args = vec!["--parse-only".to_string(), "fuzz.fio".to_string()];
    if let Err(e) = parse_fio_args_with(&args, &HOST, &env, &mut read) {
        assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    }
});
