//! The `nfs` engine through the Engine trait, against a real nfs-ganesha on 127.0.0.1.
//! Skips with a printed reason when ganesha is not installed.

mod common;

use std::fs;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Driver, job, pattern, rw_open};
use storbench_core::{DirCursor, ErrorKind, IoKind, MetaPath, NameList, OpenOptions};
use storbench_testkit::ganesha::{self, Ganesha};

const BS: u32 = 256 << 10;

fn server() -> Option<Ganesha> {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Ganesha::start().expect("start ganesha"))
}

fn nfs_driver(iodepth: u32, opts: &[(&str, &str)]) -> Driver {
    Driver::new(&job("nfs", iodepth, opts), BS as usize).expect("create nfs engine")
}

/// Writes `n` blocks of pattern data, then reads them back and compares.
fn write_read(d: &mut Driver, file: u32, n: usize) {
    let writes: Vec<_> = (0..n)
        .map(|i| (IoKind::Write, i as u64 * BS as u64, BS))
        .collect();
    d.run(file, &writes, pattern, |_, _, r| assert_eq!(r, BS as i64))
        .unwrap();
    assert_eq!(d.one(file, IoKind::Fsync, 0, 0).unwrap(), 0);
    let reads: Vec<_> = (0..n)
        .map(|i| (IoKind::Read, i as u64 * BS as u64, BS))
        .collect();
    d.run(
        file,
        &reads,
        |_, b| b.fill(0),
        |i, b, r| {
            assert_eq!(r, BS as i64);
            let mut want = vec![0u8; b.len()];
            pattern(i, &mut want);
            assert!(b == &want[..], "block {i} read back differs");
        },
    )
    .unwrap();
}

fn expected_file(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n * BS as usize];
    for (i, b) in v.chunks_mut(BS as usize).enumerate() {
        pattern(i, b);
    }
    v
}

#[test]
fn write_then_read_back_with_iodepth() {
    let Some(g) = server() else { return };
    let mut d = nfs_driver(16, &[]);
    let f = d.open(&g.url("job.0.0"), rw_open(false)).unwrap();
    write_read(&mut d, f, 40);
    assert_eq!(d.engine.size(f).unwrap(), 40 * BS as u64);
    d.engine.close(f).unwrap();
    assert!(fs::read(g.export_dir().join("job.0.0")).unwrap() == expected_file(40));

    let info = d.engine.info();
    let get = |k: &str| {
        info.details
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("protocol").as_deref(), Some("NFSv3"));
    assert_eq!(get("server"), Some(format!("127.0.0.1:{}", g.nfs_port)));
    assert_eq!(get("stable").as_deref(), Some("unstable+commit"));
    assert!(get("rsize").unwrap().parse::<u32>().unwrap() >= 4096);
    assert_eq!(get("nconnect").as_deref(), Some("1"));
    assert_eq!(info.interface.as_deref(), Some("lo"));
    assert!(info.notes.is_empty(), "{:?}", info.notes);
}

#[test]
fn nfs_url_option_nconnect_and_sync_writes() {
    let Some(g) = server() else { return };
    let base = g.url("") + "&nconnect=3&wsize=65536";
    let mut d = nfs_driver(8, &[("nfs_url", &base)]);
    d.engine
        .meta()
        .unwrap()
        .mkdir(MetaPath::whole(&common::at("sub")))
        .unwrap();
    let open = OpenOptions {
        sync: true,
        ..rw_open(false)
    };
    let f = d.open("sub/file", open).unwrap();
    write_read(&mut d, f, 12);
    d.engine.close(f).unwrap();
    assert!(fs::read(g.export_dir().join("sub/file")).unwrap() == expected_file(12));
    let info = d.engine.info();
    assert!(
        info.details.contains(&("nconnect".into(), "3".into())),
        "{:?}",
        info.details
    );
    assert!(
        info.details.contains(&("wsize".into(), "65536".into())),
        "{:?}",
        info.details
    );
    assert!(
        info.details
            .contains(&("stable".into(), "file_sync".into())),
        "{:?}",
        info.details
    );
}

#[test]
fn metadata_operations_and_cleanup() {
    let Some(g) = server() else { return };
    let mut d = nfs_driver(1, &[]);
    let dir = g.url("bonnie");
    let m = d.engine.meta().unwrap();
    m.mkdir(MetaPath::whole(&common::at(&dir))).unwrap();
    // Once mounted, a plain name is a RelPath below the export's root: it reaches the
    // directory just made, and one climbing out is refused in one line.
    assert!(
        m.stat(MetaPath::whole(&common::at("bonnie")))
            .unwrap()
            .is_dir
    );
    for bad in ["../escape", "bonnie/../../escape", "bonnie//x"] {
        let e = m.mkdir(MetaPath::whole(&common::at(bad))).unwrap_err();
        assert!(
            e.message.starts_with("nfs: ") && e.message.contains("cannot name a file under"),
            "{bad}: {e}"
        );
    }
    let base = dir.replace("?", "/x?");
    let name = |i: usize| base.replace("/x?", &format!("/f{i}?"));
    for i in 0..20 {
        let f = m
            .create(MetaPath::whole(&common::at(name(i))), &rw_open(false))
            .unwrap();
        m.set_size(f, i as u64 * 1000).unwrap();
    }
    assert_eq!(
        m.stat(MetaPath::whole(&common::at(name(7)))).unwrap().size,
        7000
    );
    assert!(m.stat(MetaPath::whole(&common::at(&dir))).unwrap().is_dir);
    let mut listed = NameList::default();
    m.read_dir_all(MetaPath::whole(&common::at(&dir)), &mut listed)
        .unwrap();
    let mut names: Vec<&str> = listed.iter().collect();
    names.sort_unstable();
    assert_eq!(names.len(), 20);
    let err = m
        .create(MetaPath::whole(&common::at(name(3))), &rw_open(false))
        .unwrap_err();
    assert_eq!(err.errno, Some(libc::EEXIST), "{err}");
    for i in 0..20 {
        m.unlink(MetaPath::whole(&common::at(name(i)))).unwrap();
    }
    m.sync_dir(MetaPath::whole(&common::at(&dir))).unwrap();
    m.rmdir(MetaPath::whole(&common::at(&dir))).unwrap();
    assert_eq!(
        fs::read_dir(g.export_dir()).unwrap().count(),
        0,
        "files left on the export"
    );
}

/// Names in a directory opened with open_dir (bonnie's timed loops): empty files created
/// without keeping a handle, names with a subdirectory, stat and unlink by name.
#[test]
fn names_in_an_opened_directory() {
    let Some(g) = server() else { return };
    let mut d = nfs_driver(1, &[]);
    let url = g.url("named");
    let m = d.engine.meta().unwrap();
    m.mkdir(MetaPath::whole(&common::at(&url))).unwrap();
    m.mkdir(MetaPath::whole(&common::at(
        url.replace("named", "named/sub"),
    )))
    .unwrap();
    let dir = m.open_dir(MetaPath::whole(&common::at(&url))).unwrap();
    for name in ["a", "b", "sub/c"] {
        m.create_empty_in(&dir, name).unwrap();
    }
    let kept = m.create_in(&dir, "d", &rw_open(false)).unwrap();
    m.set_size(kept, 1234).unwrap();
    let local = g.export_dir().join("named");
    assert_eq!(fs::metadata(local.join("sub/c")).unwrap().len(), 0);
    assert_eq!(m.stat_in(&dir, "d").unwrap().size, 1234);
    assert_eq!(m.stat_in(&dir, "a").unwrap().size, 0);
    let err = m.create_empty_in(&dir, "a").unwrap_err();
    assert_eq!(err.errno, Some(libc::EEXIST), "{err}");
    for name in ["a", "b", "sub/c", "d"] {
        m.unlink_in(&dir, name).unwrap();
    }
    assert_eq!(fs::read_dir(local.join("sub")).unwrap().count(), 0);
    assert_eq!(fs::read_dir(&local).unwrap().count(), 1, "only sub is left");
    let err = m.stat_in(&dir, "sub/missing").unwrap_err();
    assert_eq!(err.errno, Some(libc::ENOENT), "{err}");
    assert!(err.message.contains("/named/sub/missing"), "{err}");

    // A closed directory, or one removed (even if made again), is never reached again.
    let sub = m
        .open_dir(MetaPath::whole(&common::at(
            url.replace("named", "named/sub"),
        )))
        .unwrap();
    m.close_dir(dir.clone());
    assert!(m.create_empty_in(&dir, "x").is_err());
    m.rmdir(MetaPath::whole(&common::at(
        url.replace("named", "named/sub"),
    )))
    .unwrap();
    m.mkdir(MetaPath::whole(&common::at(
        url.replace("named", "named/sub"),
    )))
    .unwrap();
    let err = m.create_empty_in(&sub, "y").unwrap_err();
    assert!(err.message.contains("is not open"), "{err}");
    assert_eq!(fs::read_dir(local.join("sub")).unwrap().count(), 0);
    d.engine.close(kept).unwrap();
}

/// Files with data by name over NFS: CREATE and LOOKUP by the directory's handle, the
/// data through the usual READ and WRITE; a directory is not opened as a file.
#[test]
fn files_with_data_by_name() {
    let Some(g) = server() else { return };
    let mut d = nfs_driver(2, &[]);
    let url = g.url("data");
    let m = d.engine.meta().unwrap();
    m.mkdir(MetaPath::whole(&common::at(&url))).unwrap();
    m.mkdir(MetaPath::whole(&common::at(g.url("data/sub"))))
        .unwrap();
    common::data_by_name(&mut d, &url);
    let m = d.engine.meta().unwrap();
    let dir = m.open_dir(MetaPath::whole(&common::at(&url))).unwrap();
    let err = m.open_in(&dir, "sub", &common::read_only()).unwrap_err();
    assert!(err.message.contains("NFS3ERR_ISDIR"), "{err}");
    assert!(err.message.contains("/data/sub"), "{err}");
    let one_call = m.create_written_in(&dir, "w", b"abc", 3).unwrap();
    assert!(
        !one_call,
        "NFS creates files with data through create_in and WRITE"
    );
    m.close_dir(dir);
    let local = g.export_dir().join("data");
    assert_eq!(fs::read_dir(local.join("sub")).unwrap().count(), 0);
    assert_eq!(fs::read_dir(&local).unwrap().count(), 1, "only sub is left");
}

/// A listing read page by page while each listed name is removed (bonnie's sequential
/// delete) sees every file once: READDIRPLUS cookies stay valid across the removals.
#[test]
fn listing_in_pages_while_removing_sees_every_file_once() {
    let Some(g) = server() else { return };
    let local = g.export_dir().join("many");
    fs::create_dir(&local).unwrap();
    for i in 0..3000 {
        fs::write(local.join(format!("{i:07}-name-of-some-length")), b"").unwrap();
    }
    let mut d = nfs_driver(1, &[]);
    let dir = g.url("many");
    let file = |name: &str| dir.replace("many", &format!("many/{name}"));
    let m = d.engine.meta().unwrap();
    let (mut cursor, mut batch, mut seen, mut pages) =
        (DirCursor::default(), NameList::default(), Vec::new(), 0);
    while !cursor.done {
        batch.clear();
        m.read_dir(MetaPath::whole(&common::at(&dir)), &mut cursor, &mut batch)
            .unwrap();
        pages += 1;
        for name in batch.iter() {
            m.unlink(MetaPath::whole(&common::at(file(name)))).unwrap();
            seen.push(name.to_owned());
        }
    }
    assert!(
        pages > 2,
        "3000 entries take several READDIRPLUS pages, took {pages}"
    );
    seen.sort_unstable();
    let mut want: Vec<String> = (0..3000)
        .map(|i| format!("{i:07}-name-of-some-length"))
        .collect();
    want.sort_unstable();
    assert_eq!(seen, want);
    assert_eq!(fs::read_dir(&local).unwrap().count(), 0);
    m.rmdir(MetaPath::whole(&common::at(&dir))).unwrap();
}

/// bonnie's sequential stat and delete over NFS: every file stat-ed, then removed, as the
/// READDIRPLUS pages come, `Break` stopping at once, dot files left.
#[test]
fn stat_and_unlink_listed_reach_every_file_page_by_page() {
    use std::ops::ControlFlow;
    use storbench_core::Listed;
    let Some(g) = server() else { return };
    let local = g.export_dir().join("gone");
    fs::create_dir(&local).unwrap();
    for i in 0..3000 {
        fs::write(local.join(format!("{i:07}-name-of-some-length")), b"").unwrap();
    }
    fs::write(local.join(".dot"), b"").unwrap();
    let mut d = nfs_driver(1, &[]);
    let m = d.engine.meta().unwrap();
    let dir = m
        .open_dir(MetaPath::whole(&common::at(g.url("gone"))))
        .unwrap();
    let mut empty = 0;
    let stat = m
        .stat_listed(&dir, &mut |e| {
            empty += usize::from(e == Listed::Stat(storbench_core::Attr::default()));
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!((stat, empty), (3000, 3000), "LOOKUP of every listed file");
    let mut removals = 0;
    let first = m
        .unlink_listed(&dir, &mut |e| {
            removals += usize::from(e == Listed::Removed);
            if removals == 10 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(first, 10);
    let mut batches = 0;
    let rest = m
        .unlink_listed(&dir, &mut |e| {
            batches += usize::from(e == Listed::Batch);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(rest, 2990);
    assert!(batches > 2, "several READDIRPLUS pages, took {batches}");
    let left: Vec<_> = fs::read_dir(&local)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [".dot"]);
    m.close_dir(dir);
}

#[test]
fn exclusive_open_refuses_an_existing_file() {
    let Some(g) = server() else { return };
    fs::write(g.export_dir().join("precious"), b"keep me").unwrap();
    let mut d = nfs_driver(1, &[]);
    let open = OpenOptions {
        exclusive: true,
        ..rw_open(false)
    };
    let err = d.open(&g.url("precious"), open).unwrap_err();
    assert_eq!(
        (err.kind, err.errno),
        (ErrorKind::Refused, Some(libc::EEXIST)),
        "{err}"
    );
    assert_eq!(
        fs::read(g.export_dir().join("precious")).unwrap(),
        b"keep me"
    );
}

#[test]
fn errors_name_the_server_and_the_operation() {
    let Some(mut g) = server() else { return };
    let msg = |url: String| match Driver::new(&job("nfs", 1, &[]), 4096)
        .unwrap()
        .open(&url, rw_open(false))
    {
        Ok(_) => panic!("{url} opened"),
        Err(e) => e.to_string(),
    };
    let wrong = format!(
        "nfs://127.0.0.1:{}/nope/file?mountport={}",
        g.nfs_port, g.mount_port
    );
    let m = msg(wrong);
    assert!(
        m.contains(&format!("127.0.0.1:{}", g.mount_port)) && m.contains("/nope"),
        "{m}"
    );

    let denied = format!(
        "nfs://127.0.0.1:{}/private/f?mountport={}",
        g.nfs_port, g.mount_port
    );
    let m = msg(denied);
    assert!(
        m.contains("MNT3ERR_ACCES") && m.contains(&format!("127.0.0.1:{}", g.mount_port)),
        "{m}"
    );

    let m = msg("nfs://no-such-host.invalid/export/f".into());
    assert!(
        m.contains("cannot resolve NFS server no-such-host.invalid"),
        "{m}"
    );

    // Over NFSv4.1 as well: the server, the operation and the status in one line.
    let m = msg(g.url("nodir/f") + "&version=4.1");
    assert!(
        m.contains(&format!("127.0.0.1:{}", g.nfs_port))
            && m.contains("NFS4ERR_NOENT")
            && !m.contains('\n'),
        "{m}"
    );

    // A stale handle: another client removes the file while this one has it open.
    let mut d = nfs_driver(4, &[]);
    let f = d.open(&g.url("victim"), rw_open(false)).unwrap();
    nfs_driver(1, &[])
        .engine
        .meta()
        .unwrap()
        .unlink(MetaPath::whole(&common::at(g.url("victim"))))
        .unwrap();
    let err = d.one(f, IoKind::Read, 0, 4096).unwrap_err();
    assert!(
        err.message.contains("READ /export/victim: NFS3ERR_STALE"),
        "{err}"
    );
    assert!(
        err.message.contains(&format!("127.0.0.1:{}", g.nfs_port)),
        "{err}"
    );

    // A stopped server: refused connections.
    g.stop();
    let m = msg(g.url("f"));
    assert!(
        m.contains(&format!(
            "cannot connect to 127.0.0.1:{} for MOUNT",
            g.mount_port
        )),
        "{m}"
    );
    assert!(m.contains("refused"), "{m}");
}

#[test]
fn server_stopped_for_good_fails_after_the_reconnect_window() {
    let Some(mut g) = server() else { return };
    let mut d = nfs_driver(4, &[]);
    let f = d
        .open(&(g.url("f") + "&reconnect=2&timeout=2"), rw_open(false))
        .unwrap();
    g.crash();
    let start = std::time::Instant::now();
    let err = d.one(f, IoKind::Write, 0, 4096).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Disconnected, "{err}");
    assert!(
        err.message.contains(&format!("127.0.0.1:{}", g.nfs_port)) && err.message.contains("WRITE"),
        "{err}"
    );
    assert!(err.message.contains("no reconnect within 2 s"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn server_restart_mid_run_reconnects_and_notes_the_outage() {
    let Some(g) = server() else { return };
    let export = g.export_dir();
    let url = g.url("r") + "&reconnect=30";
    let g = Arc::new(Mutex::new(g));
    let mut d = nfs_driver(8, &[]);
    let f = d.open(&url, rw_open(false)).unwrap();
    let n = 400;
    let mut restarter = None;
    let writes: Vec<_> = (0..n)
        .map(|i| (IoKind::Write, (i % 40) as u64 * BS as u64, BS))
        .collect();
    d.run(
        f,
        &writes,
        |i, b| {
            pattern(i % 40, b);
            if i == 100 {
                let g2 = Arc::clone(&g);
                g.lock().unwrap().crash();
                restarter = Some(std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(800));
                    g2.lock().unwrap().start_again().expect("restart ganesha");
                }));
            }
        },
        |_, _, r| assert_eq!(r, BS as i64),
    )
    .unwrap();
    restarter.unwrap().join().unwrap();
    d.engine.close(f).unwrap();
    assert!(fs::read(export.join("r")).unwrap() == expected_file(40));
    let notes = d.engine.info().notes;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("lost at") && n.contains("reconnected after")),
        "{notes:?}"
    );
}
