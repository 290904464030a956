//! Any command line (NUL-separated arguments): Ok or one error line, never a panic.
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
    let args: Vec<String> = text.split('\0').map(str::to_string).collect();
    let mut read = |_: &str| Ok::<String, String>("[j]\nsize=1m\n".to_string());
    if let Err(e) = parse_fio_args_with(&args, &HOST, &|_| None, &mut read) {
        assert!(!e.to_string().contains('\n'), "multi-line error: {e}");
    }
});
