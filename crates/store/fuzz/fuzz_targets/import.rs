//! Any bytes as an imported file (fio JSON/json+ or bonnie++ CSV): the importers must return
//! runs or one error line naming the file, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storbench_store::import::import_text;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match import_text("fuzz.in", text, 0) {
        Ok(runs) => assert!(!runs.is_empty()),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("fuzz.in"), "error does not name the file: {msg}");
            assert!(!msg.contains('\n'), "multi-line error: {msg}");
        }
    }
});
