//! UNSTABLE writes survive a server restart (RFC 1813 §3.3.7): against a real nfs-ganesha,
//! the server is killed, the data it acknowledged but was never asked to COMMIT is destroyed
//! on the export (what a crash of a server with a volatile write cache may lose), the server
//! is started again, and every byte of the file must be what the job wrote last.
//! Skips with a printed reason when ganesha is not installed.

mod common;

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Driver, job, pattern, rw_open};
use storbench_core::{EngineInfo, IoKind};
use storbench_testkit::ganesha::{self, Ganesha};

const BS: u32 = 256 << 10;

fn server() -> Option<Ganesha> {
    if let Some(why) = ganesha::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Ganesha::start().expect("start ganesha"))
}

fn driver(iodepth: u32) -> Driver {
    Driver::new(&job("nfs", iodepth, &[]), BS as usize).expect("create nfs engine")
}

/// The content a block gets in the `v`-th version of the file.
fn block(v: usize, i: usize) -> Vec<u8> {
    let mut b = vec![0u8; BS as usize];
    pattern(v * 10_000 + i, &mut b);
    b
}

/// Writes version `v` of blocks `range` (each in its own IO, `iodepth` in flight).
fn write_blocks(
    d: &mut Driver,
    f: u32,
    v: usize,
    range: std::ops::Range<usize>,
    model: &mut [Vec<u8>],
) {
    let ios: Vec<_> = range
        .clone()
        .map(|i| (IoKind::Write, i as u64 * u64::from(BS), BS))
        .collect();
    let first = range.start;
    d.run(
        f,
        &ios,
        |k, b| b.copy_from_slice(&block(v, first + k)),
        |_, _, r| assert_eq!(r, i64::from(BS)),
    )
    .unwrap();
    for i in range {
        model[i] = block(v, i);
    }
}

/// What a crash may destroy: bytes the server acknowledged UNSTABLE and was not asked to
/// commit. Overwritten with zeros in the export directory while the server is down.
fn lose(export: &Path, name: &str, blocks: std::ops::Range<usize>) {
    let mut f = OpenOptions::new()
        .write(true)
        .open(export.join(name))
        .unwrap();
    f.seek(SeekFrom::Start(blocks.start as u64 * u64::from(BS)))
        .unwrap();
    f.write_all(&vec![0u8; blocks.len() * BS as usize]).unwrap();
    f.sync_all().unwrap();
}

fn assert_file(export: &Path, name: &str, model: &[Vec<u8>]) {
    let got = fs::read(export.join(name)).unwrap();
    assert_eq!(got.len(), model.len() * BS as usize, "file size");
    for (i, want) in model.iter().enumerate() {
        let at = i * BS as usize;
        assert!(
            got[at..at + BS as usize] == want[..],
            "block {i} differs from what the job wrote last"
        );
    }
}

fn detail(info: &EngineInfo, key: &str) -> Option<String> {
    info.details
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

fn assert_rewrite_noted(info: &EngineInfo) {
    assert!(
        info.notes
            .iter()
            .any(|n| n.contains("write verifier changed") && n.contains("written again")),
        "{:?}",
        info.notes
    );
}

/// Restart noticed by the COMMIT of an fsync: the fsync must not complete before the lost
/// data is written again, including blocks overwritten since (the newest must win).
#[test]
fn fsync_after_a_restart_writes_lost_data_again() {
    let Some(mut g) = server() else { return };
    let export = g.export_dir();
    let mut model = vec![Vec::new(); 48];
    let mut d = driver(8);
    let f = d
        .open(&(g.url("c") + "&reconnect=30"), rw_open(false))
        .unwrap();
    write_blocks(&mut d, f, 1, 0..24, &mut model);
    assert_eq!(d.one(f, IoKind::Fsync, 0, 0).unwrap(), 0, "committed part");
    write_blocks(&mut d, f, 2, 24..48, &mut model);
    // Newer versions of some blocks, acknowledged after the first ones: a rewrite in the
    // wrong order would put the older data back.
    write_blocks(&mut d, f, 3, 8..12, &mut model);
    write_blocks(&mut d, f, 4, 30..34, &mut model);

    g.crash();
    lose(&export, "c", 8..12);
    lose(&export, "c", 24..48);
    g.start_again().expect("restart ganesha");

    assert_eq!(d.one(f, IoKind::Fsync, 0, 0).unwrap(), 0);
    // The fsync returned: the data must be there before close adds its own COMMIT.
    assert_file(&export, "c", &model);
    d.engine.close(f).unwrap();
    assert_file(&export, "c", &model);
    let info = d.engine.info();
    assert_rewrite_noted(&info);
    assert_eq!(detail(&info, "stable").as_deref(), Some("unstable+commit"));
}

/// Restart while writes are in flight, noticed by WRITE replies: the run continues, and
/// everything acknowledged before the crash is written again.
#[test]
fn restart_in_the_middle_of_a_write_run_loses_nothing() {
    let Some(g) = server() else { return };
    let export = g.export_dir();
    let url = g.url("m") + "&reconnect=30";
    let g = Arc::new(Mutex::new(g));
    let mut model = vec![Vec::new(); 64];
    let mut d = driver(8);
    let f = d.open(&url, rw_open(false)).unwrap();
    write_blocks(&mut d, f, 1, 0..16, &mut model);
    assert_eq!(d.one(f, IoKind::Fsync, 0, 0).unwrap(), 0);

    // Blocks 16..64, plus a second version of 20..28 at the end; the server is killed
    // (and loses everything since the fsync) when the 30th IO is being prepared.
    let order: Vec<(usize, usize)> = (16..64)
        .map(|i| (2, i))
        .chain((20..28).map(|i| (3, i)))
        .collect();
    let ios: Vec<_> = order
        .iter()
        .map(|&(_, i)| (IoKind::Write, i as u64 * u64::from(BS), BS))
        .collect();
    let mut restarter = None;
    d.run(
        f,
        &ios,
        |k, b| {
            let (v, i) = order[k];
            b.copy_from_slice(&block(v, i));
            if k == 30 {
                let mut server = g.lock().unwrap();
                server.crash();
                lose(&export, "m", 16..64);
                let g2 = Arc::clone(&g);
                restarter = Some(std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(500));
                    g2.lock().unwrap().start_again().expect("restart ganesha");
                }));
            }
        },
        |_, _, r| assert_eq!(r, i64::from(BS)),
    )
    .unwrap();
    restarter.expect("the crash happened").join().unwrap();
    for &(v, i) in &order {
        model[i] = block(v, i);
    }
    d.engine.close(f).unwrap();
    assert_file(&export, "m", &model);
    // And through NFS, from the restarted server.
    let f = d.open(&url, rw_open(false)).unwrap();
    let reads: Vec<_> = (0..model.len())
        .map(|i| (IoKind::Read, i as u64 * u64::from(BS), BS))
        .collect();
    d.run(
        f,
        &reads,
        |_, b| b.fill(0),
        |i, b, r| {
            assert_eq!(r, i64::from(BS));
            assert!(b == &model[i][..], "block {i} read back over NFS differs");
        },
    )
    .unwrap();
    let info = d.engine.info();
    assert_rewrite_noted(&info);
    assert!(
        info.notes.iter().any(|n| n.contains("reconnected after")),
        "{:?}",
        info.notes
    );
}

/// A small uncommitted-write limit forces automatic COMMITs during a run, which the result
/// states; the data is intact.
#[test]
fn automatic_commits_keep_uncommitted_data_bounded() {
    let Some(g) = server() else { return };
    let mut model = vec![Vec::new(); 40];
    let mut d = driver(8);
    let url = g.url("a") + "&wsize=65536&uncommitted=1m";
    let f = d.open(&url, rw_open(false)).unwrap();
    write_blocks(&mut d, f, 1, 0..40, &mut model);
    d.engine.close(f).unwrap();
    assert_file(&g.export_dir(), "a", &model);
    let info = d.engine.info();
    assert_eq!(detail(&info, "uncommitted_max").as_deref(), Some("1048576"));
    let commits: u64 = detail(&info, "auto_commits").unwrap().parse().unwrap();
    // 10 MiB through a 1 MiB ring that commits when half full.
    assert!(commits >= 10, "{commits} automatic COMMITs");
}

/// `uncommitted=0` keeps nothing, so every write is FILE_SYNC.
#[test]
fn no_uncommitted_buffer_means_file_sync_writes() {
    let Some(g) = server() else { return };
    let mut model = vec![Vec::new(); 4];
    let mut d = driver(4);
    let f = d
        .open(&(g.url("z") + "&uncommitted=0"), rw_open(false))
        .unwrap();
    write_blocks(&mut d, f, 1, 0..4, &mut model);
    d.engine.close(f).unwrap();
    assert_file(&g.export_dir(), "z", &model);
    let info = d.engine.info();
    assert_eq!(detail(&info, "stable").as_deref(), Some("file_sync"));
    assert_eq!(detail(&info, "auto_commits").as_deref(), Some("0"));
}
