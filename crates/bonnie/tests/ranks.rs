//! The suite's agreements with other ranks (docs/multihost.md), through a scripted
//! coordinator: one after the checks, one before each test and one at the end; other ranks
//! that cannot go on end this one before the next test starts, and a failure here is told
//! to the others exactly once, at their next agreement. Files are removed either way.

mod support;

use std::cell::RefCell;

use storbench_bonnie::{Config, Flags, Host, run_once_with};
use storbench_core::coord::{self, Coordinator, Point};
use support::{FailAfter, factory};

/// A test thread's agreements so far, and the one (1-based) at which another rank fails.
#[derive(Default)]
struct Script {
    agreed: Vec<(String, bool)>,
    others_fail_at: Option<usize>,
    /// The run's directory, and what it held at each agreement.
    dir: std::path::PathBuf,
    seen: Vec<Vec<String>>,
}

thread_local! {
    static SCRIPT: RefCell<Script> = RefCell::default();
}

/// Answers as the other ranks would; per thread, so tests may share a process.
struct Scripted;

impl Coordinator for Scripted {
    fn agree(&self, at: Point, ready: bool) -> Result<(), String> {
        SCRIPT.with(|s| {
            let mut s = s.borrow_mut();
            s.agreed.push((at.name().to_string(), ready));
            let held = entries(&s.dir);
            s.seen.push(held);
            if !ready {
                return Err(format!("rank 0 could not go on at {}", at.name()));
            }
            if s.others_fail_at == Some(s.agreed.len()) {
                return Err(format!("rank 1 could not go on at {}", at.name()));
            }
            Ok(())
        })
    }

    fn rank(&self) -> u32 {
        0
    }
}

/// A small suite of `copies` copies (more than one: each test's copies run on threads).
fn config(dir: &tempfile::TempDir, others_fail_at: Option<usize>, copies: u32) -> Config {
    coord::install(Box::new(Scripted));
    SCRIPT.with(|s| {
        *s.borrow_mut() = Script {
            others_fail_at,
            dir: dir.path().to_path_buf(),
            ..Script::default()
        }
    });
    let f = Flags {
        dir: Some(dir.path().to_string_lossy().into_owned()),
        ram: Some("0".into()),
        size: Some("2:4k:64:2".into()),
        files: Some("1".into()),
        char_io: Some(Some("1".into())),
        concurrency: Some(copies.to_string()),
        ..Flags::default()
    };
    let host = Host {
        ram_mib: 16,
        hostname: "testbox".into(),
        pid: 301,
        default_seed: 1,
    };
    Config::from_flags(&f, &host).unwrap()
}

fn agreements() -> Vec<(String, bool)> {
    SCRIPT.with(|s| s.borrow().agreed.clone())
}

/// What the directory held at each agreement so far.
fn seen() -> Vec<Vec<String>> {
    SCRIPT.with(|s| s.borrow().seen.clone())
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn leftovers(dir: &tempfile::TempDir) -> Vec<String> {
    entries(dir.path())
}

/// The run's marker (`storbench clean` finds killed runs by it), named by the real PID.
fn marker() -> String {
    format!(".storbench-bonnie.{}", std::process::id())
}

#[test]
fn every_test_starts_after_an_agreement_and_the_suite_ends_with_one() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, None, 1);
    assert_eq!(cfg.base_name, "Bonnie.301.r0", "names carry the rank");
    let run = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap();
    let points: Vec<String> = agreements()
        .into_iter()
        .map(|(p, ready)| {
            assert!(ready, "{p}");
            p
        })
        .collect();
    let tests = run.bonnie.unwrap().tests;
    assert_eq!(points.len(), tests.len() + 2, "{points:#?}");
    assert_eq!(points[0], "the checks before bonnie's suite");
    assert_eq!(points[1], "the start of bonnie's per-char write");
    assert_eq!(points[2], "the start of bonnie's block write");
    assert_eq!(points.last().unwrap(), "the end of bonnie's suite");
    // Each test knows when it ran and what it did, for the ranks' aggregate.
    for t in &tests {
        let span = t.span.expect("a span");
        assert!(span.start_unix_ns > 1_600_000_000_000_000_000, "{t:?}");
        assert!(span.work > 0.0, "{t:?}");
    }
    assert!(leftovers(&dir).is_empty());
}

#[test]
fn others_that_cannot_go_on_end_this_rank_before_the_test_with_its_files_removed() {
    // The first agreement (after the checks, before anything is written) and the fourth
    // (the start of the rewrite, with the test file written).
    for (at, point) in [
        (1, "the checks before bonnie's suite"),
        (4, "the start of bonnie's rewrite"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&dir, Some(at), 2);
        let err = run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("rank 1 could not go on at {point}")),
            "{err}"
        );
        assert_eq!(agreements().len(), at, "none after: {:#?}", agreements());
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    }
}

#[test]
fn a_failure_here_is_told_to_the_others_once_at_their_next_agreement() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, None, 2);
    // Fails among the sequential creates, in a test's timed part.
    let err = run_once_with(&cfg, &factory(FailAfter::creates(500)), &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    let all = agreements();
    let (last, before) = all.split_last().unwrap();
    assert!(!last.1, "the last agreement says not ready: {all:#?}");
    assert!(before.iter().all(|a| a.1), "{all:#?}");
    assert_eq!(
        before.last().unwrap().0,
        "the start of bonnie's sequential create"
    );
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn the_marker_is_written_before_the_first_agreement_and_removed_with_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, None, 1);
    run_once_with(&cfg, &factory(FailAfter::default()), &mut |_| {}).unwrap();
    let seen = seen();
    assert_eq!(seen[0], [marker()], "before anything else: {seen:#?}");
    assert!(seen.iter().all(|s| s.contains(&marker())), "{seen:#?}");
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

/// mpirun ends a job whose rank died with SIGTERM and, as soon as one survivor exits late,
/// SIGKILL (docs/multihost.md): so after a stop the files and the marker are gone before
/// this rank waits at any agreement, not after.
#[test]
fn after_a_stop_files_and_marker_are_removed_before_the_others_are_told() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&dir, None, 2);
    let mut observe = |e: storbench_bonnie::Event| {
        if let storbench_bonnie::Event::Started(storbench_model::result::BonnieTestId::Rewrite) = e
        {
            storbench_core::stop::request();
        }
    };
    let err = run_once_with(&cfg, &factory(FailAfter::default()), &mut observe).unwrap_err();
    assert!(err.to_string().contains("interrupted"), "{err}");
    let (all, seen) = (agreements(), seen());
    let (last, _) = all.split_last().unwrap();
    assert!(!last.1, "the last agreement says not ready: {all:#?}");
    let before_stop = &seen[seen.len() - 2];
    assert!(
        before_stop.len() == 3 && before_stop.contains(&marker()),
        "the marker and two copies' files before the stop: {seen:#?}"
    );
    assert!(
        seen.last().unwrap().is_empty(),
        "at the agreement after the stop: {seen:#?}"
    );
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}
