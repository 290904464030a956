//! The body of the cargo-fuzz target in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through it on a stable toolchain (`tests/fuzz_corpus.rs`). Not an
//! API: it panics when the property it checks does not hold.

use crate::import::import_text;

/// Any bytes as an imported file (fio JSON/json+ or bonnie++ CSV): the importers return runs
/// or one error line naming the file, never panic.
pub fn import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match import_text("fuzz.in", text, 0) {
        Ok(runs) => assert!(!runs.is_empty()),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.starts_with("fuzz.in"),
                "error does not name the file: {msg}"
            );
            assert!(!msg.contains('\n'), "multi-line error: {msg}");
        }
    }
}
