//! A foreign, damaged or newer database is refused and left byte-for-byte untouched;
//! concurrent savers (threads and separate processes) all succeed.

mod common;

use std::path::Path;

use common::fio_run;
use rusqlite::Connection;
use storbench_store::{RunFilter, RunMeta, Store, StoreError};

fn assert_refused_untouched(path: &Path, expect: &str) {
    let before = std::fs::read(path).unwrap();
    let err = match Store::open(path) {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(msg.contains(expect), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
    assert!(std::fs::read(path).unwrap() == before, "file was modified");
    assert!(!path.with_extension("db-wal").exists());
}

#[test]
fn text_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    std::fs::write(&path, "my shopping list\n").unwrap();
    assert_refused_untouched(&path, "not a SQLite database");
}

#[test]
fn other_programs_sqlite_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch("CREATE TABLE photos(id INTEGER); INSERT INTO photos VALUES (1);")
            .unwrap();
    }
    assert_refused_untouched(&path, "another program");
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    drop(Store::open(&path).unwrap());
    {
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    }
    assert_refused_untouched(&path, "newer storbench");
}

#[test]
fn damaged_database_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    {
        let mut s = Store::open(&path).unwrap();
        for i in 0..20 {
            s.save(&fio_run(i), &RunMeta::default()).unwrap();
        }
    }
    // Fold the WAL back so the damage below hits the only copy of the data.
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let page = 4096;
    assert!(bytes.len() > 4 * page);
    for b in &mut bytes[page..3 * page] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let before = std::fs::read(&path).unwrap();
    let err = match Store::open(&path) {
        Err(e) => e,
        Ok(s) => s.list(&RunFilter::default()).map(|_| ()).unwrap_err(),
    };
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("damaged"), "{err}");
    assert!(std::fs::read(&path).unwrap() == before, "file was modified");
}

#[test]
fn threads_saving_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(&path).unwrap();
                for i in 0..10 {
                    s.save(&fio_run(t * 100 + i), &RunMeta::default()).unwrap();
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|h| h.join().unwrap());
    let n = Store::open(&path)
        .unwrap()
        .list(&RunFilter::default())
        .unwrap()
        .len();
    assert_eq!(n, 40);
}

/// Child side of [`processes_saving_at_once_all_succeed`]: saves runs when asked to.
#[test]
fn child_saver() {
    let Some(path) = std::env::var_os("STORE_TEST_CHILD_DB") else {
        return;
    };
    let mut s = Store::open(&path).unwrap();
    for i in 0..15 {
        s.save(&fio_run(i), &RunMeta::default()).unwrap();
    }
}

#[test]
fn processes_saving_at_once_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.db");
    let exe = std::env::current_exe().unwrap();
    // Three processes race to create, migrate and fill a database that does not exist yet.
    let children: Vec<_> = (0..3)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(["--exact", "child_saver", "--test-threads=1"])
                .env("STORE_TEST_CHILD_DB", &path)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a saving process failed");
    }
    let n = Store::open(&path)
        .unwrap()
        .list(&RunFilter::default())
        .unwrap()
        .len();
    assert_eq!(n, 45);
}
