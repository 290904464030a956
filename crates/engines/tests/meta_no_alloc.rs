//! The hot-path rule for the metadata operations bonnie's file tests time: once warmed up,
//! creating, closing, stat-ing, listing (in batches) and removing files through a local
//! engine allocates nothing per file.

mod common;

use common::{Driver, job, rw_open};
use storbench_core::{DirCursor, NameList};
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
