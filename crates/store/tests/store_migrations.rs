//! Databases left at every earlier schema version open with the current code, keep their
//! runs, and accept new ones.

mod common;

use common::{bonnie_run, fio_run};
use rusqlite::{Connection, params};
use storbench_store::schema::{LATEST, MIGRATIONS, migrate_to};
use storbench_store::{RunFilter, RunMeta, Store};

/// A row as version 1 wrote it (the columns every later version still has).
fn insert_v1_row(c: &Connection, label: &str) {
    let run = fio_run(1_000);
    c.execute(
        "INSERT INTO runs (started_unix_ms, finished_unix_ms, saved_unix_ms, mode, label, target,
             tool_version, result_schema, result_json) VALUES (1000, 4000, 5000, 'fio', ?1,
             '/mnt/pool', 'storbench 0.1.0', 1, ?2)",
        params![label, serde_json::to_string(&run).unwrap()],
    )
    .unwrap();
    c.execute("INSERT INTO tags VALUES (last_insert_rowid(), 'old')", [])
        .unwrap();
}

#[test]
fn migrates_from_every_earlier_version() {
    assert!(MIGRATIONS.len() >= 2, "keep this test meaningful");
    for version in 0..LATEST {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        {
            let mut c = Connection::open(&path).unwrap();
            migrate_to(&mut c, version).unwrap();
            if version >= 1 {
                insert_v1_row(&c, "legacy");
            }
            let v: i64 = c
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            assert_eq!(v, version);
        }
        let mut store = Store::open(&path).unwrap_or_else(|e| panic!("from v{version}: {e}"));
        let c = Connection::open(&path).unwrap();
        let v: i64 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, LATEST, "from v{version}");
        let before = store.list(&RunFilter::default()).unwrap();
        if version >= 1 {
            assert_eq!(before.len(), 1);
            let old = store.load(before[0].id).unwrap();
            assert_eq!(old.run, fio_run(1_000));
            assert_eq!(old.meta.label.as_deref(), Some("legacy"));
            assert_eq!(old.meta.tags, vec!["old".to_string()]);
            assert_eq!(old.meta.source, None);
        }
        let meta = RunMeta {
            source: Some("x.csv".into()),
            ..RunMeta::default()
        };
        let id = store.save(&bonnie_run(9_000), &meta).unwrap();
        assert_eq!(
            store.load(id).unwrap().meta.source.as_deref(),
            Some("x.csv")
        );
    }
}

#[test]
fn migrating_twice_is_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    drop(Store::open(&path).unwrap());
    drop(Store::open(&path).unwrap());
    let mut c = Connection::open(&path).unwrap();
    migrate_to(&mut c, LATEST).unwrap();
}

/// Version 3 marks interrupted runs in a column `history` lists: runs saved before it get
/// the mark from their stored result, new runs when saved.
#[test]
fn interrupted_runs_are_marked_old_and_new() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    {
        let mut c = Connection::open(&path).unwrap();
        migrate_to(&mut c, 2).unwrap();
        insert_v1_row(&c, "whole");
        let mut cut = fio_run(2_000);
        cut.interrupted = true;
        c.execute(
            "INSERT INTO runs (started_unix_ms, finished_unix_ms, saved_unix_ms, mode, label,
                 target, tool_version, result_schema, result_json) VALUES (2000, 4000, 5000,
                 'fio', 'cut', '/mnt/pool', 'storbench 0.1.0', 1, ?1)",
            params![serde_json::to_string(&cut).unwrap()],
        )
        .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    let mut new = fio_run(3_000);
    new.interrupted = true;
    store.save(&new, &RunMeta::default()).unwrap();
    store.save(&fio_run(4_000), &RunMeta::default()).unwrap();
    let marks: Vec<bool> = store
        .list(&RunFilter::default())
        .unwrap()
        .iter()
        .map(|r| r.interrupted)
        .collect();
    assert_eq!(marks, [false, true, true, false], "newest first");
}

/// Version 4 names the quick tests the headline figures summarise: quick runs saved before
/// get their figures and tests computed again by the current rule, others keep theirs.
#[test]
fn quick_headlines_saved_before_name_their_tests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    {
        let mut c = Connection::open(&path).unwrap();
        migrate_to(&mut c, 3).unwrap();
        insert_v1_row(&c, "fio");
        c.execute(
            "INSERT INTO runs (started_unix_ms, finished_unix_ms, saved_unix_ms, mode, label,
                 target, tool_version, read_bw, result_schema, result_json) VALUES (2000, 4000,
                 5000, 'quick', 'q', '/mnt', 'storbench 0.1.0', 1.0, 1, ?1)",
            params![serde_json::to_string(&common::quick_run(2_000)).unwrap()],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let listed = store.list(&RunFilter::default()).unwrap();
    let quick = &listed[1].headline;
    assert_eq!(quick.bw_test.as_deref(), Some("SEQ1M Q8T1"));
    assert_eq!(quick.iops_test.as_deref(), Some("RND4K Q32T1"));
    assert_eq!(quick.read_bw, Some(100.0 * 1048576.0), "computed again");
    assert_eq!(listed[0].headline.bw_test, None);
}

/// A run saved before secrets were masked on the way in (CHAP password in the target and
/// the command line) comes back masked from `list` and `load`.
#[test]
fn secrets_saved_by_older_versions_are_masked_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let url = "iscsi://alice%s3cret@127.0.0.1:3260/iqn.2026-11.lab:d/1?target_password=t0ps3cret";
    {
        let mut c = Connection::open(&path).unwrap();
        migrate_to(&mut c, LATEST).unwrap();
        let mut run = fio_run(1_000);
        run.command_line = vec!["storbench".into(), "quick".into(), url.into()];
        c.execute(
            "INSERT INTO runs (started_unix_ms, finished_unix_ms, saved_unix_ms, mode, label,
                 target, tool_version, result_schema, result_json)
             VALUES (1000, 4000, 5000, 'fio', 'old', ?1, 'storbench 0.1.0', 1, ?2)",
            params![url, serde_json::to_string(&run).unwrap()],
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let listed = store.list(&RunFilter::default()).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].target.contains("s3cret"), "{}", listed[0].target);
    assert!(
        listed[0].target.contains("alice%***@"),
        "{}",
        listed[0].target
    );
    let loaded = store.load(listed[0].id).unwrap();
    let json = serde_json::to_string(&loaded.run).unwrap();
    assert!(!json.contains("s3cret"), "{json}");
    assert!(json.contains("target_password=***"), "{json}");
}

/// `import other.db` reads another database and never writes it: an older schema is
/// upgraded on a copy in memory, so the file keeps its bytes and its mtime, and no `-wal`
/// or `-shm` file is left beside it; its runs still arrive. Both journal modes: a file last
/// written by a WAL connection opens through `immutable` when no `-shm` exists.
#[test]
fn importing_an_older_database_leaves_its_bytes_and_mtime_unchanged() {
    const { assert!(LATEST >= 2, "keep this test meaningful") };
    for wal in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.db");
        {
            let mut c = Connection::open(&other).unwrap();
            if wal {
                c.pragma_update(None, "journal_mode", "WAL").unwrap();
            }
            migrate_to(&mut c, 1).unwrap();
            insert_v1_row(&c, "legacy");
        }
        let listing = |d: &std::path::Path| {
            let mut names: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        let bytes = std::fs::read(&other).unwrap();
        let mtime = std::fs::metadata(&other).unwrap().modified().unwrap();
        let files = listing(dir.path());
        std::thread::sleep(std::time::Duration::from_millis(20));

        let ours = tempfile::tempdir().unwrap();
        let mut db = Store::open(ours.path().join("r.db")).unwrap();
        let from = Store::open_to_import(&other).unwrap_or_else(|e| panic!("wal {wal}: {e}"));
        assert_eq!(db.merge_from(&from).unwrap(), (1, 0), "wal {wal}");
        drop(from);
        let got = db.list(&RunFilter::default()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(db.load(got[0].id).unwrap().run, fio_run(1_000));

        assert!(
            std::fs::read(&other).unwrap() == bytes,
            "wal {wal}: bytes changed"
        );
        let after = std::fs::metadata(&other).unwrap().modified().unwrap();
        assert_eq!(after, mtime, "wal {wal}: mtime changed");
        assert_eq!(listing(dir.path()), files, "wal {wal}: files appeared");
        let v: i64 = Connection::open(&other)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 1, "wal {wal}: the file was migrated");
    }
}
