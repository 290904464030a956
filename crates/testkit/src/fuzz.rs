//! Replays a cargo-fuzz target's kept inputs through the target's body on a stable
//! toolchain, so the normal suite catches a regression the fuzzer once found, in seconds.
//!
//! The inputs are every file in `fuzz/corpus/TARGET` (the seeds and what fuzzing added,
//! see `fuzz/run.sh`) and in `fuzz/regressions/TARGET` (inputs that once crashed a target,
//! kept apart so that corpus minimisation never drops them).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Runs `body` over every kept input of `target` in the crate at `crate_dir` (pass
/// `env!("CARGO_MANIFEST_DIR")`); panics naming each input that made it panic, or when the
/// corpus is missing or empty.
pub fn replay(crate_dir: &str, target: &str, body: fn(&[u8])) {
    let fuzz = Path::new(crate_dir).join("fuzz");
    let corpus = files(&fuzz.join("corpus").join(target));
    assert!(
        !corpus.is_empty(),
        "no corpus for fuzz target {target} in {}",
        fuzz.display()
    );
    let inputs = corpus
        .into_iter()
        .chain(files(&fuzz.join("regressions").join(target)));
    let mut failed = Vec::new();
    let mut seen = 0;
    for path in inputs {
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| body(&data))).is_err() {
            failed.push(path.display().to_string());
        }
        seen += 1;
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {seen} inputs panicked (messages above): {failed:?}",
        failed.len()
    );
}

/// The files in `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}
