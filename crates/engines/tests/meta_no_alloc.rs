//! The hot-path rule for the metadata operations bonnie's file tests time: once warmed up,
//! creating, closing, stat-ing, listing (in batches) and removing files through a local
//! engine allocates nothing per file, by path or by name in an opened directory.

mod common;

use common::{Driver, job, rw_open};
use storbench_core::{DirCursor, DirRef, NameList};
use storbench_testkit::alloc::{CountingAllocator, allocations_during};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const FILES: usize = 2000;

/// Creates (and closes), stats, lists and removes every file of `paths` in `dir`.
fn cycle(d: &mut Driver, dir: &str, paths: &[String], names: &mut NameList) {
    let open = rw_open(false);
    for path in paths {
        let file = d.engine.meta().unwrap().create(path, &open).unwrap();
        d.engine.close(file).unwrap();
    }
    let meta = d.engine.meta().unwrap();
    for path in paths {
        assert_eq!(meta.stat(path).unwrap().size, 0);
    }
    let (mut cursor, mut listed) = (DirCursor::default(), 0);
    while !cursor.done {
        names.clear();
        meta.read_dir(dir, &mut cursor, names).unwrap();
        listed += names.len();
    }
    assert_eq!(listed, paths.len());
    for path in paths {
        meta.unlink(path).unwrap();
    }
}

#[test]
fn file_metadata_operations_allocate_nothing_per_file() {
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let dir = format!("{}/d", root.path().display());
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    d.engine.meta().unwrap().mkdir(&dir).unwrap();
    let paths: Vec<String> = (0..FILES).map(|i| format!("{dir}/{i:010x}abc")).collect();
    let mut names = NameList::with_capacity(FILES, FILES * 32);
    cycle(&mut d, &dir, &paths, &mut names);
    let counted = allocations_during(|| cycle(&mut d, &dir, &paths, &mut names));
    assert_eq!(counted, 0, "allocations in {FILES} files' operations");
    d.engine.meta().unwrap().rmdir(&dir).unwrap();
}

/// The same by name in an opened directory, as bonnie's timed loops call them: empty
/// files created and closed in one call, files kept open, stats and unlinks.
fn cycle_in(d: &mut Driver, dir: &DirRef, names: &NameList) {
    let open = rw_open(false);
    for (i, name) in names.iter().enumerate() {
        if i % 2 == 0 {
            d.engine.meta().unwrap().create_empty_in(dir, name).unwrap();
        } else {
            let file = d
                .engine
                .meta()
                .unwrap()
                .create_in(dir, name, &open)
                .unwrap();
            d.engine.close(file).unwrap();
        }
    }
    let meta = d.engine.meta().unwrap();
    for name in names.iter() {
        assert_eq!(meta.stat_in(dir, name).unwrap().size, 0);
    }
    for name in names.iter() {
        meta.unlink_in(dir, name).unwrap();
    }
}

#[test]
fn name_relative_operations_allocate_nothing_per_file() {
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let path = format!("{}/d", root.path().display());
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    meta.mkdir(&path).unwrap();
    let dir = meta.open_dir(&path).unwrap();
    let mut names = NameList::with_capacity(FILES, FILES * 16);
    for i in 0..FILES {
        names.push(&format!("{i:010x}abc"));
    }
    cycle_in(&mut d, &dir, &names);
    let counted = allocations_during(|| cycle_in(&mut d, &dir, &names));
    assert_eq!(counted, 0, "allocations in {FILES} files' operations");
    let meta = d.engine.meta().unwrap();
    meta.close_dir(dir);
    meta.rmdir(&path).unwrap();
}
