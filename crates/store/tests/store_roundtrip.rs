//! Save, load, list, filter, resolve and delete against a real database file.

mod common;

use common::*;
use storbench_store::{RunFilter, RunMeta, Store, StoreError};

fn meta(label: &str, tags: &[&str]) -> RunMeta {
    RunMeta {
        label: Some(label.into()),
        tags: tags.iter().map(|t| t.to_string()).collect(),
        source: None,
    }
}

#[test]
fn every_mode_round_trips_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("nested/dir/results.db")).unwrap();
    for (i, run) in [fio_run(1_000), quick_run(2_000), bonnie_run(3_000)]
        .into_iter()
        .enumerate()
    {
        let m = meta(&format!("run-{i}"), &["hdd", "pool"]);
        let id = store.save(&run, &m).unwrap();
        let back = store.load(id).unwrap();
        assert_eq!(back.run, run, "mode {:?}", run.mode);
        assert_eq!(back.meta.label, m.label);
        assert_eq!(back.meta.tags, vec!["hdd".to_string(), "pool".to_string()]);
        // Percentiles recomputed from the stored histogram equal the original's.
        let dir0 = |r: &storbench_model::result::RunResult| {
            r.groups
                .first()
                .map(|g| g.jobs[0].dirs[0].clat.percentiles(&[50.0, 99.9]))
        };
        assert_eq!(dir0(&back.run), dir0(&run));
    }
}

#[test]
fn list_filters_and_headline() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("r.db")).unwrap();
    let a = store
        .save(&fio_run(1_000), &meta("hdd", &["pool"]))
        .unwrap();
    let b = store
        .save(&quick_run(2_000), &meta("ssd", &["pool", "new"]))
        .unwrap();
    let c = store.save(&bonnie_run(3_000), &RunMeta::default()).unwrap();

    let all = store.list(&RunFilter::default()).unwrap();
    assert_eq!(all.iter().map(|s| s.id).collect::<Vec<_>>(), vec![a, b, c]);
    let ids = |f: RunFilter| {
        store
            .list(&f)
            .unwrap()
            .iter()
            .map(|s| s.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ids(RunFilter {
            label: Some("ssd".into()),
            ..Default::default()
        }),
        vec![b]
    );
    assert_eq!(
        ids(RunFilter {
            tags: vec!["pool".into()],
            ..Default::default()
        }),
        vec![a, b]
    );
    assert_eq!(
        ids(RunFilter {
            tags: vec!["pool".into(), "new".into()],
            ..Default::default()
        }),
        vec![b]
    );
    assert_eq!(
        ids(RunFilter {
            mode: Some("bonnie".into()),
            ..Default::default()
        }),
        vec![c]
    );
    assert_eq!(
        ids(RunFilter {
            since_unix_ms: Some(1_500),
            ..Default::default()
        }),
        vec![b, c]
    );
    assert_eq!(
        ids(RunFilter {
            until_unix_ms: Some(1_500),
            ..Default::default()
        }),
        vec![a]
    );
    assert_eq!(
        ids(RunFilter {
            limit: Some(2),
            ..Default::default()
        }),
        vec![b, c]
    );
    assert_eq!(
        ids(RunFilter {
            target: Some("/mnt/po".into()),
            ..Default::default()
        }),
        vec![a, b, c]
    );
    assert!(
        ids(RunFilter {
            target: Some("/nope".into()),
            ..Default::default()
        })
        .is_empty()
    );

    // fio: best group is group 1 (400 MiB in 2 s) for read; group 0 gives the only writes:
    // 2 × 2 MiB over 2 s, 2 × 512 IOs over 2 s.
    let h = &all[0].headline;
    assert_eq!(h.read_bw, Some((400u64 << 20) as f64 / 2.0));
    assert_eq!(h.write_bw, Some((4u64 << 20) as f64 / 2.0));
    assert_eq!(h.read_iops, Some(1024.0));
    assert_eq!(h.write_iops, Some(512.0));
    assert_eq!(all[0].target, "/mnt/pool");
    // quick: MB/s from the sequential test, IOPS from the random one (though the
    // sequential test moved more bytes per second than the random one and the random
    // test more IOs).
    let hq = &all[1].headline;
    assert_eq!(
        (hq.read_bw, hq.write_bw),
        (Some(100.0 * 1048576.0), Some(50.0 * 1048576.0))
    );
    assert_eq!((hq.read_iops, hq.write_iops), (Some(8000.0), Some(4000.0)));
    assert_eq!(hq.bw_test.as_deref(), Some("SEQ1M Q8T1"));
    assert_eq!(hq.iops_test.as_deref(), Some("RND4K Q32T1"));
    assert_eq!((h.bw_test.as_deref(), h.iops_test.as_deref()), (None, None));
    // bonnie: block write KiB/s as bytes/s; block read was +++++; seeks/s as read IOPS.
    let hb = &all[2].headline;
    assert_eq!(hb.write_bw, Some(250_784.0 * 1024.0));
    assert_eq!(hb.read_bw, None);
    assert_eq!(hb.read_iops, Some(14_015.0));
}

/// A quick run stopped before its random tests lists no IOPS: the sequential tests' few
/// large IOs per second are no random IOPS figure.
#[test]
fn quick_stopped_before_the_random_tests_lists_no_iops() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("r.db")).unwrap();
    let mut run = quick_run(2_000);
    run.groups.truncate(1);
    store.save(&run, &meta("seq-only", &[])).unwrap();
    let h = store.list(&RunFilter::default()).unwrap()[0]
        .headline
        .clone();
    assert_eq!(h.read_bw, Some(100.0 * 1048576.0));
    assert_eq!((h.read_iops, h.write_iops), (None, None));
}

#[test]
fn resolve_ids_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("r.db")).unwrap();
    let old = store.save(&fio_run(1_000), &meta("nfs", &[])).unwrap();
    let new = store.save(&fio_run(5_000), &meta("nfs", &[])).unwrap();
    assert_eq!(store.resolve(&old.to_string()).unwrap(), (old, 1));
    assert_eq!(store.resolve(&format!("#{new}")).unwrap(), (new, 1));
    assert_eq!(store.resolve("nfs").unwrap(), (new, 2));
    assert!(matches!(
        store.resolve("iscsi"),
        Err(StoreError::NoSuchLabel(_))
    ));
    assert!(matches!(
        store.resolve("999"),
        Err(StoreError::NoSuchRun(999))
    ));
    let err = store.save(&fio_run(1), &meta("42", &[])).unwrap_err();
    assert!(err.to_string().contains("plain number"), "{err}");
}

#[test]
fn delete_removes_run_and_tags() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("r.db")).unwrap();
    let id = store.save(&fio_run(1_000), &meta("x", &["t"])).unwrap();
    store.delete(id).unwrap();
    assert!(matches!(store.load(id), Err(StoreError::NoSuchRun(_))));
    assert!(matches!(store.delete(id), Err(StoreError::NoSuchRun(_))));
    assert!(
        store
            .list(&RunFilter {
                tags: vec!["t".into()],
                ..Default::default()
            })
            .unwrap()
            .is_empty()
    );
    // Ids are never reused.
    let next = store.save(&fio_run(2_000), &RunMeta::default()).unwrap();
    assert!(next > id);
}

#[test]
fn save_all_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("r.db")).unwrap();
    let batch = vec![(fio_run(1), meta("ok", &[])), (fio_run(2), meta("7", &[]))];
    assert!(store.save_all(&batch).is_err());
    assert!(store.list(&RunFilter::default()).unwrap().is_empty());
}

/// A repeated run lists the mean of its rounds in `history`, not its last round.
#[test]
fn a_repeated_runs_headline_is_the_mean_of_its_rounds() {
    use storbench_model::repeats::{Repeats, Round};
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path().join("r.db")).unwrap();
    let mut run = fio_run(1_000);
    // Two rounds: 100 MiB and 300 MiB read in 2 s by the one job of a group.
    let round = |mib: u64| Round {
        started_unix_ms: 1_000,
        finished_unix_ms: 3_000,
        interrupted: false,
        groups: vec![storbench_model::result::GroupResult {
            id: 0,
            group_reporting: false,
            jobs: vec![job("r", (mib << 20, mib), (0, 0), 2000)],
        }],
    };
    run.groups = round(300).groups;
    run.repeats = Some(Repeats {
        requested: 2,
        rounds: vec![round(100), round(300)],
    });
    store.save(&run, &meta("rep", &[])).unwrap();
    let h = store.list(&RunFilter::default()).unwrap()[0]
        .headline
        .clone();
    let mib_s = h.read_bw.unwrap() / f64::from(1u32 << 20);
    assert!(
        (mib_s - 100.0).abs() < 1e-6,
        "{mib_s}: the last round alone is 150"
    );
}
