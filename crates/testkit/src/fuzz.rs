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

#[cfg(test)]
mod tests {
    use super::*;

    fn body(data: &[u8]) {
        assert!(!data.starts_with(b"boom"), "boom");
    }

    fn crate_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, data) in files {
            let path = dir.path().join("fuzz").join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, data).unwrap();
        }
        dir
    }

    fn outcome(dir: &tempfile::TempDir) -> Result<(), String> {
        let root = dir.path().to_str().unwrap().to_string();
        catch_unwind(|| replay(&root, "t", body))
            .map_err(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
    }

    #[test]
    fn names_each_input_that_panics_in_corpus_and_regressions() {
        let dir = crate_with(&[
            ("corpus/t/fine", b"ok"),
            ("corpus/t/bad", b"boom 1"),
            ("regressions/t/crash-1", b"boom 2"),
        ]);
        let msg = outcome(&dir).unwrap_err();
        assert!(msg.contains("2 of 3 inputs panicked"), "{msg}");
        assert!(
            msg.contains("corpus/t/bad") && msg.contains("regressions/t/crash-1"),
            "{msg}"
        );
        assert!(!msg.contains("fine"), "{msg}");
    }

    #[test]
    fn passes_a_clean_corpus_and_refuses_a_missing_one() {
        assert!(outcome(&crate_with(&[("corpus/t/a", b"ok")])).is_ok());
        let msg = outcome(&crate_with(&[("corpus/other/a", b"ok")])).unwrap_err();
        assert!(msg.contains("no corpus for fuzz target t"), "{msg}");
    }
}
