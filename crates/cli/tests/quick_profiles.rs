//! `quick --profile`, `--tests`, `--threads` and `--mix` through the binary: a profile's
//! chosen tests run on a tmpfs directory, the run records its profile (the card names it,
//! `compare` warns when profiles differ), and bad values are one line and a non-zero exit.

mod common;

use std::path::Path;

use common::{Run, storbench};

fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

fn sb(db: &Path, cwd: &Path, args: &[&str]) -> Run {
    let mut c = storbench();
    c.current_dir(cwd).env("STORBENCH_DB", db).args(args);
    Run::of(&mut c)
}

/// The first words of the table's test rows: `SEQ1M Q1T1 read`.
fn rows(table: &str) -> Vec<String> {
    table
        .lines()
        .filter(|l| l.starts_with("SEQ") || l.starts_with("RND"))
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn a_profile_and_one_test_run_on_tmpfs() {
    let dir = scratch();
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("r.db");
    let target = dir.path().to_str().unwrap();
    let common = ["quick", "--size", "4m", "--runtime", "100ms", "--buffered"];
    let args = |extra: &[&'static str]| {
        let mut a: Vec<&str> = common.to_vec();
        a.extend_from_slice(extra);
        a.push(target);
        a
    };
    let real = sb(
        &db,
        home.path(),
        &args(&[
            "--profile",
            "real",
            "--tests",
            "SEQ1M-Q1T1",
            "--label",
            "real",
        ]),
    );
    assert_eq!(rows(real.ok()), ["SEQ1M Q1T1 read", "SEQ1M Q1T1 write"]);
    assert!(
        real.stderr.contains("profile Real World Performance"),
        "{}",
        real.stderr
    );

    let peak = sb(
        &db,
        home.path(),
        &args(&[
            "--profile",
            "peak",
            "--tests",
            "rnd4k-q32t16",
            "--threads",
            "2",
            "--mix",
            "--label",
            "peak",
        ]),
    );
    assert_eq!(
        rows(peak.ok()),
        ["RND4K Q32T2 read", "RND4K Q32T2 write", "RND4K Q32T2 mix"]
    );

    let svg = home.path().join("card.svg");
    sb(
        &db,
        home.path(),
        &["report", "real", "--svg", svg.to_str().unwrap()],
    )
    .ok();
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("profile Real World Performance"), "{svg}");

    let cmp = sb(&db, home.path(), &["compare", "real", "peak"]);
    assert!(
        cmp.ok()
            .contains("runs differ in profile: real real, peak peak"),
        "{}",
        cmp.stdout
    );
}

#[test]
fn bad_profile_values_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--profile", "fast"],
            "'fast' is no profile; use default, peak, real, nvme or classic",
        ),
        (
            &["--profile", "real", "--tests", "SEQ1M-Q8T1"],
            "'SEQ1M-Q8T1' is not a test of the real profile; its tests are SEQ1M-Q1T1, RND4K-Q1T1",
        ),
        (
            &["--tests", "SEQ1M-Q8T1,"],
            "expected test names separated by commas",
        ),
        (&["--threads", "0"], "expected a thread count from 1 to 64"),
        (&["--threads", "65"], "expected a thread count from 1 to 64"),
    ];
    for (extra, want) in cases {
        let mut c = storbench();
        c.current_dir(dir.path())
            .args(["quick", "--no-save", "--size", "1m"])
            .args(extra)
            .arg(d);
        let run = Run::of(&mut c);
        let line = run.one_error_line();
        assert!(line.starts_with("storbench: "), "{extra:?}: {line}");
        assert!(line.contains(want), "{extra:?}: {line}");
        assert!(
            common::entries(dir.path()).is_empty(),
            "{extra:?}: files left"
        );
    }
}
