//! Finds the engine files, so that adding an engine is one file here plus its one line in
//! the catalogue (`storbench_job::catalogue::ENGINES`), with no list to keep beside them.
//!
//! An engine file is a `src/*.rs` file with a line `pub const NAME: &str = "…";` (its
//! catalogue name) and a `pub fn create`; one whose protocol needs checks before a run has a
//! `pub fn prepare` beside it. This script writes `engines.rs` into `OUT_DIR`: one module
//! per such file, the table of their constructors and the table of their pre-run checks,
//! which `lib.rs` includes.
//! The test `every_catalogue_entry_has_one_constructor` ties the table to the catalogue.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let src = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("src");
    println!("cargo:rerun-if-changed=src");
    let mut engines = Vec::new();
    let mut preparers = Vec::new();
    for entry in std::fs::read_dir(&src).expect("src/ is readable") {
        let path = entry.expect("src/ is readable").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let is_rs = path.extension().is_some_and(|e| e == "rs");
        if !is_rs || stem == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("engine file is readable");
        if text
            .lines()
            .any(|l| l.starts_with("pub const NAME: &str = "))
        {
            engines.push(stem.to_string());
            if text.lines().any(|l| l.starts_with("pub fn prepare(")) {
                preparers.push(stem.to_string());
            }
        }
    }
    engines.sort();
    preparers.sort();
    let mut out = String::new();
    // Modules under a `#[path]`-ed inline module resolve their own sub-modules
    // (`nfs/meta.rs`) as if declared in `lib.rs`; the re-export keeps `crate::nfs`.
    writeln!(out, "#[path = {:?}]", src.display().to_string()).unwrap();
    out.push_str("#[doc(hidden)]\npub mod files {\n");
    for e in &engines {
        writeln!(out, "    pub mod {e};").unwrap();
    }
    out.push_str("}\npub use files::{");
    out.push_str(&engines.join(", "));
    out.push_str("};\n\n/// Every engine's constructor, by its catalogue name.\n");
    out.push_str("pub static CONSTRUCTORS: &[(&str, Constructor)] = &[\n");
    for e in &engines {
        writeln!(out, "    ({e}::NAME, {e}::create),").unwrap();
    }
    out.push_str("];\n\n/// Every engine's checks before a run, by its catalogue name.\n");
    out.push_str("pub static PREPARERS: &[(&str, storbench_core::ask::Prepare)] = &[\n");
    for e in &preparers {
        writeln!(out, "    ({e}::NAME, {e}::prepare),").unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("engines.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
