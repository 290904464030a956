//! fio's engines that move no data but change a file's allocation or size (`falloc`,
//! `ftruncate`), and the one-call-per-IO engines that share one body (`sync`, `psync`,
//! `vsync`, `pvsync`, `pvsync2`): storbench and the installed fio 3.33 run the same command
//! line in temp dirs of their own, and must issue the same IOs and leave each job's file
//! with the same size and the same allocated blocks. Skipped with a reason when fio 3.33 is
//! missing.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use common::{fio, fio_available, sb_fio, words};
use serde_json::Value;

/// (read, write, trim) IOs and bytes of the JSON's first job, and its error.
fn totals(doc: &Value) -> ([u64; 3], [u64; 3], i64) {
    let j = &doc["jobs"][0];
    let ios = ["read", "write", "trim"].map(|d| j[d]["total_ios"].as_u64().unwrap());
    let bytes = ["read", "write", "trim"].map(|d| j[d]["io_bytes"].as_u64().unwrap());
    (ios, bytes, j["error"].as_i64().unwrap())
}

/// Size and 512-byte blocks of `dir/name`.
fn shape(dir: &Path, name: &str) -> (u64, u64) {
    let m = std::fs::metadata(dir.join(name)).unwrap();
    (m.len(), m.blocks())
}

/// Runs each command line in `steps` in turn with fio in one temp dir and with storbench in
/// another, comparing IO totals after each step and the file `name` at the end.
fn same_effect(steps: &[&str], name: &str) {
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for step in steps {
        let mut args = vec!["--output-format=json"];
        args.extend(words(step));
        let theirs = fio(fd.path(), &args).fio_json();
        let ours = sb_fio(sd.path(), &args).json();
        let (mut a, mut b) = (totals(&theirs), totals(&ours));
        if step.contains("randrw") {
            // fio draws each IO's direction; only the totals over directions must agree.
            for t in [&mut a, &mut b] {
                t.0 = [t.0.iter().sum(), 0, 0];
                t.1 = [t.1.iter().sum(), 0, 0];
            }
        }
        assert_eq!(a, b, "{step}");
        assert!(totals(&ours).0.iter().sum::<u64>() > 0, "{step}: no IO");
    }
    assert_eq!(
        shape(fd.path(), name),
        shape(sd.path(), name),
        "{steps:?}: {name}"
    );
}

/// Writes grow the file by allocation only; reads reserve without growing; trims punch
/// holes that free the blocks again.
#[test]
fn falloc_allocates_and_punches_like_fio() {
    if !fio_available() {
        return;
    }
    let job = "--name=f --filename=f --ioengine=falloc --bs=4k --size=256k";
    same_effect(&[&format!("{job} --rw=write")], "f");
    same_effect(
        &[
            &format!("{job} --rw=randrw --randrepeat=1"),
            &format!("{job} --rw=trim --size=128k"),
        ],
        "f",
    );
}

/// Each write sets the size to its offset, so the file ends one block short.
#[test]
fn ftruncate_sets_the_size_like_fio() {
    if !fio_available() {
        return;
    }
    let job = "--name=t --filename=t --ioengine=ftruncate --bs=4k --size=64k";
    same_effect(&[&format!("{job} --rw=write")], "t");
    let (fd, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let read = words("--name=t --filename=t --ioengine=ftruncate --bs=4k --size=64k --rw=read");
    let theirs = fio(fd.path(), &read);
    let ours = sb_fio(sd.path(), &read);
    // fio prints the job's error on stdout when that is not a terminal.
    let said = format!("{}{}", theirs.stdout, theirs.stderr);
    assert!(said.contains("error=Invalid argument"), "{said}");
    assert_eq!(ours.code, theirs.code, "{}", ours.stderr);
    assert!(ours.stderr.contains("Invalid argument"), "{}", ours.stderr);
}

/// The engines that share one body issue what fio's do, sequential and random.
#[test]
fn one_call_engines_issue_what_fio_issues() {
    if !fio_available() {
        return;
    }
    common::par_each(&["sync", "psync", "vsync", "pvsync", "pvsync2"], |engine| {
        let job = format!("--name=s --filename=s --ioengine={engine} --bs=4k --size=256k");
        same_effect(
            &[
                &format!("{job} --rw=write"),
                &format!("{job} --rw=randread --randrepeat=1"),
                &format!("{job} --rw=randwrite --fsync=4"),
            ],
            "s",
        );
    });
}
