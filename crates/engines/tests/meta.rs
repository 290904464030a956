//! Metadata operations of the local engines, and fio's filecreate/filestat/filedelete engines.

mod common;

use common::{Driver, job, pattern, rw_open};
use storbench_core::{IoKind, MetaPath, NameList, OpenOptions};

/// mkdir / create / set_size / stat / readdir / sync_dir / unlink / rmdir through `meta()`,
/// and a file made by `create` is usable for IO through the same engine.
#[test]
fn local_meta_ops_round_trip() {
    for engine in [
        "psync", "io_uring", "libaio", "posixaio", "mmap", "sync", "pvsync2",
    ] {
        if !common::available(&job(engine, 4, &[])) {
            continue;
        }
        let root = tempfile::tempdir_in("/tmp").unwrap();
        let dir = root.path().join("d");
        let (dir, file) = (
            dir.to_str().unwrap().to_string(),
            format!("{}/f", dir.display()),
        );
        let mut d = Driver::new(&job(engine, 4, &[]), 4096).unwrap();
        let meta = d.engine.meta().expect("local engines offer meta ops");
        meta.mkdir(MetaPath::whole(&common::at(&dir))).unwrap();
        let id = meta
            .create(MetaPath::whole(&common::at(&file)), &rw_open(false))
            .unwrap();
        let err = meta
            .create(MetaPath::whole(&common::at(&file)), &rw_open(false))
            .unwrap_err();
        assert_eq!(
            err.errno,
            Some(libc::EEXIST),
            "{engine}: create is exclusive: {err}"
        );
        meta.set_size(id, 1 << 20).unwrap();
        let attr = meta.stat(MetaPath::whole(&common::at(&file))).unwrap();
        assert_eq!((attr.size, attr.is_dir), (1 << 20, false), "{engine}");
        assert!(
            meta.stat(MetaPath::whole(&common::at(&dir)))
                .unwrap()
                .is_dir
        );
        let mut names = NameList::default();
        meta.read_dir_all(MetaPath::whole(&common::at(&dir)), &mut names)
            .unwrap();
        assert_eq!(names.iter().collect::<Vec<_>>(), ["f"]);
        meta.sync_dir(MetaPath::whole(&common::at(&dir))).unwrap();

        let mut expected = vec![0u8; 4096];
        pattern(3, &mut expected);
        d.run(
            id,
            &[(IoKind::Write, 8192, 4096)],
            |_, b| pattern(3, b),
            |_, _, r| assert_eq!(r, 4096),
        )
        .unwrap();
        d.run(
            id,
            &[(IoKind::Read, 8192, 4096)],
            |_, b| b.fill(0),
            |_, b, r| {
                assert_eq!(r, 4096, "{engine}");
                assert!(b == expected.as_slice(), "{engine}: data read back differs");
            },
        )
        .unwrap();
        d.engine.close(id).unwrap();

        let meta = d.engine.meta().unwrap();
        meta.unlink(MetaPath::whole(&common::at(&file))).unwrap();
        let mut names = NameList::default();
        meta.read_dir_all(MetaPath::whole(&common::at(&dir)), &mut names)
            .unwrap();
        assert!(names.is_empty());
        let err = meta.stat(MetaPath::whole(&common::at(&file))).unwrap_err();
        assert_eq!(err.errno, Some(libc::ENOENT));
        assert!(
            err.message.starts_with("stat ") && err.message.contains(&file),
            "{err}"
        );
        meta.rmdir(MetaPath::whole(&common::at(&dir))).unwrap();
        assert!(!std::path::Path::new(&dir).exists());
    }
}

/// bonnie's files with data in one call: created, written in pieces of the buffer's
/// length (bonnie++'s chunk) from its start, closed; an existing name is refused and left
/// as it was; nothing to write from is a named error.
#[test]
fn create_written_in_writes_the_buffer_in_pieces() {
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    let dir = meta
        .open_dir(MetaPath::whole(&common::at(root.path().to_str().unwrap())))
        .unwrap();
    let data: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    assert!(meta.create_written_in(&dir, "f", &data, 2500).unwrap());
    let written = std::fs::read(root.path().join("f")).unwrap();
    let expected = [&data[..], &data[..], &data[..500]].concat();
    assert!(written == expected, "pieces of the buffer from its start");
    assert!(meta.create_written_in(&dir, "empty", &data, 0).unwrap());
    assert_eq!(
        std::fs::metadata(root.path().join("empty")).unwrap().len(),
        0
    );

    let err = meta
        .create_written_in(&dir, "f", &data[..10], 10)
        .unwrap_err();
    assert_eq!(err.errno, Some(libc::EEXIST), "{err}");
    assert!(
        err.message
            .contains(&format!("{}/f", root.path().display())),
        "{err}"
    );
    assert_eq!(std::fs::read(root.path().join("f")).unwrap(), expected);
    let err = meta.create_written_in(&dir, "g", &[], 10).unwrap_err();
    assert!(err.message.contains("empty buffer"), "{err}");
    assert!(!root.path().join("g").exists());
    meta.close_dir(dir);
}

/// Files with data by name in an opened directory (bonnie's `-n N:max`), through every
/// local engine's IO path.
#[test]
fn local_files_with_data_by_name() {
    for engine in ["psync", "io_uring", "libaio", "mmap", "pvsync2"] {
        if !common::available(&job(engine, 4, &[])) {
            continue;
        }
        let root = tempfile::tempdir_in("/tmp").unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        let mut d = Driver::new(&job(engine, 4, &[]), 4096).unwrap();
        common::data_by_name(&mut d, root.path().to_str().unwrap());
        let left: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{engine}: only sub is left");
    }
}

fn paths(root: &std::path::Path, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("{}/file.{i}", root.display()))
        .collect()
}

/// Runs one IO per file through a metadata engine; returns the per-IO results.
fn one_io_per_file(
    engine: &str,
    files: &[String],
) -> Result<Vec<i64>, storbench_core::EngineError> {
    let mut d = Driver::new(&job(engine, 1, &[]), 4096)?;
    let caps = d.engine.caps();
    assert!(caps.synchronous && caps.no_data && caps.meta);
    let mut results = Vec::new();
    for path in files {
        let id = d.open(
            path,
            OpenOptions {
                read: true,
                write: true,
                ..Default::default()
            },
        )?;
        d.run(
            id,
            &[(IoKind::Read, 0, 4096)],
            |_, _| {},
            |_, _, r| results.push(r),
        )?;
        // A second IO on the same open file does no further operation, as in fio.
        d.run(
            id,
            &[(IoKind::Read, 4096, 4096)],
            |_, _| {},
            |_, _, r| results.push(r),
        )?;
        d.engine.close(id)?;
    }
    Ok(results)
}

#[test]
fn filecreate_filestat_filedelete() {
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let files = paths(root.path(), 20);

    // Opening alone creates nothing: the create is the timed IO.
    let mut d = Driver::new(&job("filecreate", 1, &[]), 4096).unwrap();
    d.open(&files[0], rw_open(false)).unwrap();
    assert!(!std::path::Path::new(&files[0]).exists());
    drop(d);

    let results = one_io_per_file("filecreate", &files).unwrap();
    assert_eq!(results, vec![4096; 40]);
    assert!(files.iter().all(|f| std::path::Path::new(f).is_file()));

    let err = one_io_per_file("filecreate", &files[..1]).unwrap_err();
    assert!(err.message.contains("already exists"), "{err}");

    assert_eq!(one_io_per_file("filestat", &files).unwrap(), vec![4096; 40]);

    assert_eq!(
        one_io_per_file("filedelete", &files).unwrap(),
        vec![4096; 40]
    );
    assert!(files.iter().all(|f| !std::path::Path::new(f).exists()));

    let err = one_io_per_file("filestat", &files[..1]).unwrap_err();
    assert_eq!(err.errno, Some(libc::ENOENT), "{err}");
    let err = one_io_per_file("filedelete", &files[..1]).unwrap_err();
    assert_eq!(err.errno, Some(libc::ENOENT), "{err}");
}

/// A URL target picks the engine serving its protocol through the catalogue; one whose
/// protocol has no files (an iSCSI LUN) is refused in one line.
#[test]
fn metadata_engines_refuse_a_protocol_without_files() {
    let mut spec = job("filecreate", 1, &[]);
    spec.filenames = vec![storbench_job::target::Target::classify(
        "iscsi://127.0.0.1/iqn.2026-12.x:y/1",
    )];
    let err = storbench_engines::create(&spec).err().unwrap();
    assert_eq!(
        err.message,
        "ioengine=filecreate: the libiscsi engine offers no metadata operations"
    );
}

/// The events `unlink_listed` gave, and what it returned.
fn unlink_listed_events(
    meta: &mut dyn storbench_core::MetaOps,
    dir: &storbench_core::DirRef,
    stop_after: usize,
) -> (
    Result<usize, storbench_core::EngineError>,
    Vec<storbench_core::Listed>,
) {
    use std::ops::ControlFlow;
    let mut events = Vec::new();
    let removed = meta.unlink_listed(dir, &mut |e| {
        events.push(e);
        let done = events
            .iter()
            .filter(|&&e| e == storbench_core::Listed::Removed)
            .count();
        if done == stop_after {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    (removed, events)
}

/// bonnie's sequential delete through the local engine: every file of a directory too big
/// for one listing batch is removed as the listing comes, a batch read opens the events,
/// `Break` stops at once, dot files stay, and a failed removal names the file.
#[test]
fn unlink_listed_removes_files_as_they_are_listed() {
    use storbench_core::Listed;
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let path = format!("{}/d", root.path().display());
    std::fs::create_dir(&path).unwrap();
    for i in 0..3000 {
        std::fs::write(format!("{path}/{i:07}-a-name-of-some-length"), b"").unwrap();
    }
    std::fs::write(format!("{path}/.kept"), b"").unwrap();
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    let dir = meta.open_dir(MetaPath::whole(&common::at(&path))).unwrap();

    let (removed, events) = unlink_listed_events(meta, &dir, 100);
    assert_eq!(
        removed.unwrap(),
        100,
        "Break after the 100th removal stops there"
    );
    assert_eq!(events[0], Listed::Batch);
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 2901);

    let (removed, events) = unlink_listed_events(meta, &dir, usize::MAX);
    assert_eq!(removed.unwrap(), 2900);
    let batches = events.iter().filter(|&&e| e == Listed::Batch).count();
    assert!(
        batches > 2,
        "2,900 names take several batches, took {batches}"
    );
    let left: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [".kept"], "dot files stay, as in bonnie++");

    std::fs::create_dir(format!("{path}/sub")).unwrap();
    let err = unlink_listed_events(meta, &dir, usize::MAX).0.unwrap_err();
    assert_eq!(err.errno, Some(libc::EISDIR), "{err}");
    assert!(err.message.contains(&format!("{path}/sub")), "{err}");
    std::fs::remove_dir(format!("{path}/sub")).unwrap();

    meta.close_dir(dir.clone());
    let err = unlink_listed_events(meta, &dir, usize::MAX).0.unwrap_err();
    assert!(err.message.contains("is not open"), "{err}");
}

/// bonnie's sequential stat through the local engine: each listed file's attributes, in
/// a directory too big for one batch; dot files skipped.
#[test]
fn stat_listed_hands_out_each_files_attributes() {
    use std::ops::ControlFlow;
    use storbench_core::Listed;
    let root = tempfile::tempdir_in("/tmp").unwrap();
    let path = format!("{}/d", root.path().display());
    std::fs::create_dir(&path).unwrap();
    for i in 0..2500usize {
        let data = vec![7u8; i % 5];
        std::fs::write(format!("{path}/{i:07}-a-name-of-some-length"), data).unwrap();
    }
    std::fs::write(format!("{path}/.dot"), b"123456").unwrap();
    let mut d = Driver::new(&job("psync", 1, &[]), 4096).unwrap();
    let meta = d.engine.meta().unwrap();
    let dir = meta.open_dir(MetaPath::whole(&common::at(&path))).unwrap();
    let (mut sizes, mut batches) = (vec![0u64; 5], 0);
    let seen = meta
        .stat_listed(&dir, &mut |e| {
            match e {
                Listed::Stat(a) => sizes[a.size as usize] += 1,
                Listed::Batch => batches += 1,
                Listed::Removed => panic!("a stat removed something"),
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(seen, 2500);
    assert_eq!(
        sizes, [500; 5],
        "every size seen as often as it was written"
    );
    assert!(batches > 2, "several batches, took {batches}");
    assert_eq!(
        std::fs::read_dir(&path).unwrap().count(),
        2501,
        "nothing removed"
    );
    meta.close_dir(dir);
}
