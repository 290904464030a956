//! The hot-path rule for the metadata operations bonnie's file tests time: once warmed up,
//! creating, closing, stat-ing, listing (in batches) and removing files through a local
//! engine allocates nothing per file, by path or by name in an opened directory; nor does
//! the `nfs` engine by name (against a real nfs-ganesha; skipped with a printed reason when
//! it is not installed).

mod common;

use common::{Driver, job, read_only, rw_open};
use std::ops::ControlFlow;

use storbench_core::{DirCursor, DirRef, MetaPath, NameList, RelPathBuf};
use storbench_job::target::Target;
use storbench_testkit::alloc::{CountingAllocator, allocations_during};
use storbench_testkit::ganesha::{self, Ganesha};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const FILES: usize = 2000;

/// Creates (and closes), stats, lists and removes every file of `paths` in `dir`, by
/// path: the directory as the root, each name below it.
fn cycle(d: &mut Driver, dir: &Target, paths: &[RelPathBuf], names: &mut NameList) {
    let open = rw_open(false);
    for path in paths {
        let at = MetaPath::new(dir, path);
        let file = d.engine.meta().unwrap().create(at, &open).unwrap();
        d.engine.close(file).unwrap();
    }
    let meta = d.engine.meta().unwrap();
    for path in paths {
        assert_eq!(meta.stat(MetaPath::new(dir, path)).unwrap().size, 0);
    }
    let (mut cursor, mut listed) = (DirCursor::default(), 0);
    while !cursor.done {
        names.clear();
        meta.read_dir(MetaPath::whole(dir), &mut cursor, names)
            .unwrap();
        listed += names.len();
    }
    assert_eq!(listed, paths.len());
    for path in paths {
        meta.unlink(MetaPath::new(dir, path)).unwrap();
    }
}

#[test]
fn file_metadata_operations_allocate_nothing_per_file() {
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let dir = format!("{}/d", root.path().display());
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    d.engine
        .meta()
        .unwrap()
        .mkdir(MetaPath::whole(&common::at(&dir)))
        .unwrap();
    let paths: Vec<RelPathBuf> = (0..FILES)
        .map(|i| RelPathBuf::new(format!("{i:010x}abc")).unwrap())
        .collect();
    let mut names = NameList::with_capacity(FILES, FILES * 32);
    let root = common::at(&dir);
    cycle(&mut d, &root, &paths, &mut names);
    let counted = allocations_during(|| cycle(&mut d, &root, &paths, &mut names));
    assert_eq!(counted, 0, "allocations in {FILES} files' operations");
    d.engine
        .meta()
        .unwrap()
        .rmdir(MetaPath::whole(&common::at(&dir)))
        .unwrap();
}

/// `name` created in `dir` and kept open through `create_in`, then closed.
fn create_kept(d: &mut Driver, dir: &DirRef, name: &str) {
    let meta = d.engine.meta().unwrap();
    let file = meta.create_in(dir, name, &rw_open(false)).unwrap();
    d.engine.close(file).unwrap();
}

/// `name` in `dir` opened again by name (`open_in`), as files with data are read, then
/// closed.
fn reopen(d: &mut Driver, dir: &DirRef, name: &str) {
    let meta = d.engine.meta().unwrap();
    let file = meta.open_in(dir, name, &read_only()).unwrap();
    d.engine.close(file).unwrap();
}

/// The same by name in an opened directory, as bonnie's timed loops call them: empty
/// files created and closed in one call (a quarter of them with data), files kept open
/// (and opened again by name, as files with data are read), stats and unlinks.
fn cycle_in(d: &mut Driver, dir: &DirRef, names: &NameList) {
    const DATA: [u8; 100] = [7; 100];
    let size = |i: usize| if i % 4 == 2 { 150 } else { 0 };
    for (i, name) in names.iter().enumerate() {
        let meta = d.engine.meta().unwrap();
        if size(i) > 0 {
            assert!(meta.create_written_in(dir, name, &DATA, size(i)).unwrap());
        } else if i % 2 == 0 {
            meta.create_empty_in(dir, name).unwrap();
        } else {
            create_kept(d, dir, name);
        }
    }
    for name in names.iter().skip(1).step_by(2) {
        reopen(d, dir, name);
    }
    let meta = d.engine.meta().unwrap();
    for (i, name) in names.iter().enumerate() {
        assert_eq!(meta.stat_in(dir, name).unwrap().size, size(i));
    }
    let stat = meta
        .stat_listed(dir, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(stat, names.len());
    // Half by name, the rest as a listing comes (bonnie's sequential delete).
    for name in names.iter().step_by(2) {
        meta.unlink_in(dir, name).unwrap();
    }
    let mut steps = 0;
    let removed = meta
        .unlink_listed(dir, &mut |_| {
            steps += 1;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(removed, names.len() / 2);
    assert!(steps > removed, "a step per removal and per batch");
}

#[test]
fn name_relative_operations_allocate_nothing_per_file() {
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let path = format!("{}/d", root.path().display());
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    meta.mkdir(MetaPath::whole(&common::at(&path))).unwrap();
    let dir = meta.open_dir(MetaPath::whole(&common::at(&path))).unwrap();
    let mut names = NameList::with_capacity(FILES, FILES * 16);
    for i in 0..FILES {
        names.push(&format!("{i:010x}abc"));
    }
    cycle_in(&mut d, &dir, &names);
    let counted = allocations_during(|| cycle_in(&mut d, &dir, &names));
    assert_eq!(counted, 0, "allocations in {FILES} files' operations");
    let meta = d.engine.meta().unwrap();
    meta.close_dir(dir);
    meta.rmdir(MetaPath::whole(&common::at(&path))).unwrap();
}

/// Over NFS, by name as bonnie's timed loops call them: CREATE (a third of the files kept
/// open, closed, and opened again by LOOKUP, as files with data are), LOOKUP, the listing's
/// READDIRPLUS pages and REMOVE, in the opened directory and in a subdirectory of it (the
/// subdirectory's files removed as its listing comes).
fn nfs_cycle(d: &mut Driver, [dir, sub]: [&DirRef; 2], names: &NameList, listed: &mut NameList) {
    for (i, name) in names.iter().enumerate() {
        let meta = d.engine.meta().unwrap();
        if i % 3 > 0 {
            meta.create_empty_in(dir, name).unwrap();
            continue;
        }
        create_kept(d, dir, name);
        reopen(d, dir, name);
    }
    let meta = d.engine.meta().unwrap();
    for name in names.iter() {
        assert_eq!(meta.stat_in(dir, name).unwrap().size, 0);
    }
    let (mut cursor, mut count) = (DirCursor::default(), 0);
    while !cursor.done {
        listed.clear();
        meta.read_dir(dir.path(), &mut cursor, listed).unwrap();
        count += listed.len();
    }
    assert_eq!(count, names.len() / 2 + 1, "the top files and `sub`");
    let stat = meta
        .stat_listed(sub, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(stat, names.len() / 2);
    for name in names.iter().filter(|n| !n.starts_with("sub/")) {
        meta.unlink_in(dir, name).unwrap();
    }
    let removed = meta
        .unlink_listed(sub, &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(removed, names.len() / 2);
}

#[test]
fn nfs_name_relative_operations_allocate_nothing_per_file() {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let g = Ganesha::start().expect("start ganesha");
    const NFS_FILES: usize = 600;
    let url = g.url("d");
    let mut d = Driver::new(&job("nfs", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    meta.mkdir(MetaPath::whole(&common::at(&url))).unwrap();
    meta.mkdir(MetaPath::whole(&common::at(g.url("d/sub"))))
        .unwrap();
    let dir = meta.open_dir(MetaPath::whole(&common::at(&url))).unwrap();
    let sub = meta
        .open_dir(MetaPath::whole(&common::at(g.url("d/sub"))))
        .unwrap();
    let mut names = NameList::with_capacity(NFS_FILES, NFS_FILES * 24);
    for i in 0..NFS_FILES {
        let sub = if i % 2 == 0 { "" } else { "sub/" };
        names.push(&format!("{sub}{i:010x}abc"));
    }
    let mut listed = NameList::with_capacity(NFS_FILES, NFS_FILES * 24);
    nfs_cycle(&mut d, [&dir, &sub], &names, &mut listed);
    let counted = allocations_during(|| nfs_cycle(&mut d, [&dir, &sub], &names, &mut listed));
    assert_eq!(
        counted, 0,
        "allocations in {NFS_FILES} files' NFS operations"
    );
    let meta = d.engine.meta().unwrap();
    meta.close_dir(dir);
    meta.close_dir(sub);
    meta.rmdir(MetaPath::whole(&common::at(g.url("d/sub"))))
        .unwrap();
    meta.rmdir(MetaPath::whole(&common::at(&url))).unwrap();
    assert_eq!(std::fs::read_dir(g.export_dir()).unwrap().count(), 0);
}

/// What a symbolic link named `name` in the test directory holds to reach `first`.
fn link_text(name: &str) -> &'static str {
    if name.starts_with("sub/") {
        "../first"
    } else {
        "first"
    }
}

/// bonnie's `-n N:-1` and `-n N:-2` loops by name: every other name a hard link to
/// `first`, the rest symbolic links to it (in the directory and in `sub/`, as bonnie's
/// numbered subdirectories), each stat-ed through the link, then all removed. Returns the
/// link count `first` had with every link in place.
fn link_cycle(d: &mut Driver, dir: &DirRef, names: &NameList, nlink: impl Fn() -> u64) -> u64 {
    let meta = d.engine.meta().unwrap();
    meta.create_empty_in(dir, "first").unwrap();
    for (i, name) in names.iter().enumerate() {
        if i % 2 == 0 {
            meta.link_in(dir, "first", name).unwrap();
        } else {
            meta.symlink_in(dir, link_text(name), name).unwrap();
        }
    }
    for name in names.iter() {
        let attr = meta.stat_in(dir, name).unwrap();
        assert_eq!((attr.size, attr.is_dir), (0, false));
    }
    let links = nlink();
    for name in names.iter() {
        meta.unlink_in(dir, name).unwrap();
    }
    meta.unlink_in(dir, "first").unwrap();
    links
}

/// `count` names, half of them in `sub/`.
fn link_names(count: usize) -> NameList {
    let mut names = NameList::with_capacity(count, count * 24);
    for i in 0..count {
        let sub = if i % 4 < 2 { "" } else { "sub/" };
        names.push(&format!("{sub}{i:010x}ln"));
    }
    names
}

/// Two warm-up cycles (the first checked by `first_check`, the second by `nlink`: every
/// other name a hard link, so the first file has 1 + half as many links), then a third
/// counted one that must allocate nothing.
fn links_allocate_nothing(
    d: &mut Driver,
    dir: &DirRef,
    names: &NameList,
    first_check: impl Fn() -> u64,
    nlink: impl Fn() -> u64,
) {
    let links = 1 + names.len() as u64 / 2;
    assert_eq!(link_cycle(d, dir, names, first_check), links);
    assert_eq!(link_cycle(d, dir, names, nlink), links);
    let counted = allocations_during(|| {
        link_cycle(d, dir, names, || 0);
    });
    assert_eq!(counted, 0, "allocations in {} links", names.len());
}

#[test]
fn links_by_name_allocate_nothing_per_file() {
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let path = format!("{}/d", root.path().display());
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    meta.mkdir(MetaPath::whole(&common::at(&path))).unwrap();
    meta.mkdir(MetaPath::whole(&common::at(format!("{path}/sub"))))
        .unwrap();
    let dir = meta.open_dir(MetaPath::whole(&common::at(&path))).unwrap();
    let names = link_names(FILES);
    let first = std::path::PathBuf::from(format!("{path}/first"));
    let nlink = || std::os::unix::fs::MetadataExt::nlink(&std::fs::metadata(&first).unwrap());
    let soft = format!("{path}/{}", names.get(3));
    let nlink_and_text = || {
        let text = std::fs::read_link(&soft).unwrap();
        assert_eq!(text, std::path::Path::new("../first"), "{soft}");
        nlink()
    };
    links_allocate_nothing(&mut d, &dir, &names, nlink_and_text, nlink);
    let meta = d.engine.meta().unwrap();
    let e = meta.symlink_in(&dir, "first", "sub").unwrap_err();
    assert_eq!(e.errno, Some(libc::EEXIST), "{e}");
    assert!(e.message.contains(&format!("{path}/sub")), "{e}");
    let e = meta.link_in(&dir, "missing", "x").unwrap_err();
    assert_eq!(e.errno, Some(libc::ENOENT), "{e}");
    meta.close_dir(dir);
    meta.rmdir(MetaPath::whole(&common::at(format!("{path}/sub"))))
        .unwrap();
    meta.rmdir(MetaPath::whole(&common::at(&path))).unwrap();
}

#[test]
fn nfs_links_by_name_allocate_nothing_per_file() {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let g = Ganesha::start().expect("start ganesha");
    const NFS_FILES: usize = 400;
    let mut d = Driver::new(&job("nfs", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    meta.mkdir(MetaPath::whole(&common::at(g.url("d"))))
        .unwrap();
    meta.mkdir(MetaPath::whole(&common::at(g.url("d/sub"))))
        .unwrap();
    let dir = meta
        .open_dir(MetaPath::whole(&common::at(g.url("d"))))
        .unwrap();
    let names = link_names(NFS_FILES);
    let first = g.export_dir().join("d/first");
    let nlink = || std::os::unix::fs::MetadataExt::nlink(&std::fs::metadata(&first).unwrap());
    links_allocate_nothing(&mut d, &dir, &names, nlink, nlink);
    let meta = d.engine.meta().unwrap();
    // A first file made again after the links were removed is linked to afresh.
    meta.create_empty_in(&dir, "first").unwrap();
    meta.link_in(&dir, "first", "again").unwrap();
    assert_eq!(nlink(), 2);
    let e = meta.link_in(&dir, "first", "again").unwrap_err();
    assert_eq!(e.errno, Some(libc::EEXIST), "{e}");
    assert!(e.message.contains("LINK /export/d/again"), "{e}");
    for name in ["again", "first"] {
        meta.unlink_in(&dir, name).unwrap();
    }
    let e = meta.link_in(&dir, "first", "again").unwrap_err();
    assert!(e.message.contains("NFS3ERR_NOENT"), "{e}");
    meta.close_dir(dir);
    meta.rmdir(MetaPath::whole(&common::at(g.url("d/sub"))))
        .unwrap();
    meta.rmdir(MetaPath::whole(&common::at(g.url("d"))))
        .unwrap();
    assert_eq!(std::fs::read_dir(g.export_dir()).unwrap().count(), 0);
}
