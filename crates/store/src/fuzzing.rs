//! The body of the cargo-fuzz target in `fuzz/`, kept here so that the normal test suite
//! replays the kept corpus through it on a stable toolchain (`tests/fuzz_corpus.rs`). Not an
//! API: it panics when the property it checks does not hold.

use crate::import::{bundle, import_text, import_text_with_meta};

/// Any bytes as an imported file (fio JSON/json+, bonnie++ CSV or a storbench export): the importers return runs
/// or one error line naming the file, never panic.
pub fn import(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match import_text_with_meta("fuzz.in", text, 0) {
        Ok(runs) if bundle::is_bundle(text.trim_start()) => {
            // A storbench export read back from what was read is the same runs.
            let mut again = Vec::new();
            bundle::write_bundled(&runs, &mut again).expect("write to memory");
            let again = std::str::from_utf8(&again).expect("JSON is UTF-8");
            let back = import_text_with_meta("again.sbr", again, 0).expect("own export reads");
            assert!(back == runs, "an export does not read back as written");
            assert_eq!(
                import_text("fuzz.in", text, 0).map(|r| r.len()).ok(),
                Some(runs.len())
            );
        }
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
