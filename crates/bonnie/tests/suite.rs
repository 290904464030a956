//! The whole suite over a real directory, through a test engine over std::fs: what runs,
//! what the figures are, and that nothing is ever left behind.

mod support;

use storbench_bonnie::{BonnieError, Config, Event, Flags, Host, run_once_with};
use storbench_model::result::{BonnieTestId, RunMode};
use support::{FailAfter, Log, factory, factory_logged, factory_slow_listing};

fn host(pid: u32) -> Host {
    Host {
        ram_mib: 16,
        hostname: "testbox".into(),
        pid,
        default_seed: 99,
    }
}

fn config(dir: &tempfile::TempDir, pid: u32, set: impl FnOnce(&mut Flags)) -> Config {
    let mut f = Flags {
        dir: Some(dir.path().to_string_lossy().into_owned()),
        ram: Some("0".into()),
        ..Flags::default()
    };
    set(&mut f);
    Config::from_flags(&f, &host(pid)).unwrap()
}

fn leftovers(dir: &tempfile::TempDir) -> Vec<String> {
    std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn full_suite_runs_every_test_in_order_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, 101, |f| {
        f.size = Some("4:4k:256:3".into());
        f.files = Some("1".into());
        f.char_io = Some(Some("1".into()));
    });
    let mut events = Vec::new();
    let r = run_once_with(&cfg, &factory(FailAfter::default()), &mut |e| {
        events.push(e)
    })
    .unwrap();
    assert_eq!(r.mode, RunMode::Bonnie);
    let b = r.bonnie.as_ref().unwrap();
    let ids: Vec<_> = b.tests.iter().map(|t| t.id).collect();
    use BonnieTestId::*;
    assert_eq!(
        ids,
        [
            Putc, PutBlock, Rewrite, Getc, GetBlock, Seeks, SeqCreate, SeqStat, SeqDel, RanCreate,
            RanStat, RanDel
        ]
    );
    assert_eq!(events.len(), 24, "a start and a finish per test");
    assert!(matches!(events[0], Event::Started(Putc)));
    for t in &b.tests {
        assert!(t.elapsed_ns > 0, "{:?}", t.id);
        assert!(t.max_latency_ns.unwrap() > 0, "{:?}", t.id);
        assert!(t.max_latency_ns.unwrap() <= t.elapsed_ns, "{:?}", t.id);
        // Short tests print +++++: no rate and no CPU figure, and only then.
        assert_eq!(t.rate.is_none(), t.elapsed_ns < 500_000_000, "{:?}", t.id);
        assert_eq!(t.cpu_pct.is_none(), t.rate.is_none(), "{:?}", t.id);
    }
    assert_eq!(
        (b.file_size_mib, b.chunk_bytes, b.seeks, b.seekers),
        (4, 4096, 256, 3)
    );
    assert_eq!(b.name, "testbox");
    assert_eq!(b.seed, 99);
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn rates_follow_bonnie_formulas() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, 102, |f| {
        f.size = Some("0".into());
        f.files = Some("1".into());
        f.fsync_each = true;
    });
    let r = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap();
    for t in &r.bonnie.unwrap().tests {
        if let Some(rate) = t.rate {
            let expect = 1024.0 / (t.elapsed_ns as f64 / 1e9);
            assert!(
                (rate - expect).abs() < 1e-6 * expect,
                "{:?}: {rate} vs {expect}",
                t.id
            );
        }
    }
}

#[test]
fn file_sizes_directories_and_links() {
    for files in ["1:4k:1k:3", "1:-1", "1:-2:0:2", "1:100:100:1:256"] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&dir, 103, |f| {
            f.size = Some("0".into());
            f.files = Some(files.into());
        });
        let r = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {});
        let r = r.unwrap_or_else(|e| panic!("-n {files}: {e}"));
        assert_eq!(r.bonnie.unwrap().tests.len(), 6, "-n {files}");
        assert!(
            leftovers(&dir).is_empty(),
            "-n {files}: {:?}",
            leftovers(&dir)
        );
    }
}

#[test]
fn concurrent_copies_use_their_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, 104, |f| {
        f.size = Some("2".into());
        f.files = Some("1".into());
        f.concurrency = Some("3".into());
        f.char_io = Some(None);
    });
    let r = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap();
    let b = r.bonnie.unwrap();
    assert_eq!(b.concurrency, 3);
    assert_eq!(b.tests.len(), 10, "no per-char tests with -f");
    assert!(leftovers(&dir).is_empty());
}

#[test]
fn an_error_mid_run_removes_everything_created() {
    for fail_at in [1, 2, 500, 1025, 1500] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&dir, 105, |f| {
            f.size = Some("1".into());
            f.files = Some("1:4k:0:4".into());
            f.char_io = Some(None);
        });
        let err = run_once_with(&cfg, &factory(FailAfter::creates(fail_at)), &mut |_| {})
            .expect_err("the injected failure must surface");
        assert!(err.to_string().contains("injected failure"), "{err}");
        assert!(
            leftovers(&dir).is_empty(),
            "fail at {fail_at}: {:?}",
            leftovers(&dir)
        );
    }
}

#[test]
fn refuses_a_directory_it_did_not_create_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("Bonnie.106");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("keep"), b"data").unwrap();
    let cfg = config(&dir, 106, |f| {
        f.size = Some("0".into());
        f.files = Some("1".into());
    });
    let err = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap_err();
    assert!(matches!(err, BonnieError::Refused(_)), "{err}");
    assert_eq!(std::fs::read(theirs.join("keep")).unwrap(), b"data");
}

#[test]
fn refuses_a_test_file_it_did_not_create() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Bonnie.107"), b"theirs").unwrap();
    let cfg = config(&dir, 107, |f| {
        f.size = Some("1".into());
        f.files = Some("0".into());
    });
    let err = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("Bonnie.107"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("Bonnie.107")).unwrap(),
        b"theirs"
    );
}

#[test]
fn the_buffer_choice_is_stated_in_the_result() {
    let dir = tempfile::tempdir().unwrap();
    // Block writes, and (with -s 0) small files with data.
    let runs = [("1", "0"), ("0", "1:4k:1k")];
    for ((size, files), compressible) in runs.iter().flat_map(|r| [(*r, false), (*r, true)]) {
        let cfg = config(&dir, 108, |f| {
            f.size = Some(size.into());
            f.files = Some(files.into());
            f.char_io = Some(None);
            f.compressible = compressible;
        });
        let r = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap();
        let code = if compressible {
            "bonnie.compressible"
        } else {
            "bonnie.incompressible"
        };
        assert!(r.notes.iter().any(|n| n.code == code), "{:?}", r.notes);
        assert_eq!(r.bonnie.unwrap().compressible, compressible);
    }
}

fn logged_run(set: impl FnOnce(&mut Flags)) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, 109, set);
    let log = Log::default();
    run_once_with(
        &cfg,
        &factory_logged(FailAfter::default(), Some(log.clone())),
        &mut |_| {},
    )
    .unwrap();
    assert!(leftovers(&dir).is_empty());
    log.lock().unwrap().clone()
}

/// bonnie++ 2.00a applies -D only when creating the file; storbench applies it to every
/// phase that can use it and never to the 1-byte per-char IO.
#[test]
fn direct_applies_to_every_block_phase_and_never_to_per_char() {
    let log = logged_run(|f| {
        f.size = Some("1:4k:64:2".into());
        f.files = Some("0".into());
        f.char_io = Some(Some("1".into()));
        f.direct = true;
    });
    let opens: Vec<&str> = log
        .iter()
        .filter(|l| l.starts_with("open Bonnie.109"))
        .map(String::as_str)
        .collect();
    let want = [
        "open Bonnie.109 direct=false", // per-char write
        "open Bonnie.109 direct=true",  // block write
        "open Bonnie.109 direct=true",  // rewrite
        "open Bonnie.109 direct=false", // per-char read
        "open Bonnie.109 direct=true",  // block read
        "open Bonnie.109 direct=true",  // seeker 1
        "open Bonnie.109 direct=true",  // seeker 2
    ];
    assert_eq!(opens, want);
}

#[test]
fn fsync_each_write_and_directory_syncs_with_b() {
    let count = |log: &[String], what: &str| log.iter().filter(|l| *l == what).count();
    let plain = logged_run(|f| {
        f.size = Some("1".into());
        f.files = Some("1".into());
        f.char_io = Some(None);
    });
    // Without -b: one fsync at the end of each IO test and of each seeker.
    assert_eq!(count(&plain, "fsync"), 3 + 5);
    assert_eq!(
        count(&plain, "sync_dir"),
        4,
        "the sync after each create and delete"
    );
    let synced = logged_run(|f| {
        f.size = Some("1".into());
        f.files = Some("1".into());
        f.char_io = Some(None);
        f.fsync_each = true;
    });
    let chunks = 128; // 1 MiB in 8 KiB chunks
    let files = 1024;
    assert!(
        count(&synced, "fsync") >= 2 * chunks + 3 + 5 + 2 * files,
        "every block write, rewrite and created file is synced: {}",
        count(&synced, "fsync")
    );
    assert_eq!(
        count(&synced, "sync_dir"),
        4 + 4 * files,
        "directory sync per create and delete"
    );
}

/// The latency row of the sequential tests counts a directory batch in the operation that
/// waited for it, except the listing's first batch, which bonnie++'s loop leaves outside
/// every operation.
#[test]
fn listing_batches_count_in_latency_except_the_first() {
    let delay = std::time::Duration::from_millis(300);
    let seq_latencies = |batch: u64| {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&dir, 110, |f| {
            f.size = Some("0".into());
            f.files = Some("1".into());
        });
        let r = run_once_with(&cfg, &factory_slow_listing(batch, delay), &mut |_| {}).unwrap();
        assert!(leftovers(&dir).is_empty());
        let b = r.bonnie.unwrap();
        let lat = |id| {
            let t = b.tests.iter().find(|t| t.id == id).unwrap();
            assert!(
                t.elapsed_ns >= delay.as_nanos() as u64,
                "{id:?}: the wait is timed"
            );
            t.max_latency_ns.unwrap()
        };
        (lat(BonnieTestId::SeqStat), lat(BonnieTestId::SeqDel))
    };
    let delay_ns = delay.as_nanos() as u64;
    let (stat, del) = seq_latencies(0);
    assert!(
        stat < delay_ns && del < delay_ns,
        "first batch counted: {stat} {del}"
    );
    let (stat, del) = seq_latencies(3);
    assert!(
        stat >= delay_ns && del >= delay_ns,
        "later batch not counted: {stat} {del}"
    );
}
