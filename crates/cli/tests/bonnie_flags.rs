//! Every bad or contradictory `storbench bonnie` flag: one line naming the problem, a
//! non-zero exit, and nothing created.

mod bonnie_support;

use bonnie_support::{entries, path_str, storbench};

/// Flags that must be refused, with a piece of the message that explains why.
const REFUSED: &[(&[&str], &str)] = &[
    (&["-s", "64Q", "-r", "0"], "-s 64Q: unknown unit 'Q'"),
    (&["-s", "64k", "-r", "0"], "-s 64k: unknown unit 'k'"),
    (&["-s", "", "-r", "0"], "-s : expected a size"),
    (&["-s", "64:1000", "-r", "0"], "power of two from 256 to 1m"),
    (&["-s", "64:128", "-r", "0"], "power of two from 256 to 1m"),
    (&["-s", "64:2m", "-r", "0"], "power of two from 256 to 1m"),
    (
        &["-s", "64:8k:0", "-r", "0"],
        "seeks must be 1 to 2147483647",
    ),
    (&["-s", "64:8k:10:0", "-r", "0"], "seekers 1 to 1024"),
    (
        &["-s", "64:8k:10:2:9", "-r", "0"],
        "expected size[:chunk[:seeks[:seekers]]]",
    ),
    (
        &["-s", "64", "-r", "1024"],
        "file size should be double RAM",
    ),
    (&["-s", "0", "-n", "0"], "leaves nothing to test"),
    (&["-n", "x", "-s", "0"], "-n x: bad file count"),
    (
        &["-n", "1:10:20", "-s", "0"],
        "maximum size is below the minimum",
    ),
    (
        &["-n", "1:0:0:0", "-s", "0"],
        "directories must be 1 to 99999",
    ),
    (
        &["-n", "1:0:0:1:100", "-s", "0"],
        "power of two from 256 to 1m",
    ),
    (&["-n", "1:-3", "-s", "0"], "-n 1:-3: bad maximum size"),
    (
        &["-n", "1024", "-s", "0", "-r", "16"],
        "would page out their names",
    ),
    (&["-n", "30000", "-s", "0", "-r", "0"], "bonnie++'s limit"),
    (&["-s", "2000000t", "-r", "0"], "file size above 1 PiB"),
    (
        &["-c", "0", "-s", "0", "-n", "1"],
        "-c 0: concurrency must be 1 to 200",
    ),
    (
        &["-c", "201", "-s", "0", "-n", "1"],
        "concurrency must be 1 to 200",
    ),
    (
        &["-c", "two", "-s", "0", "-n", "1"],
        "-c two: expected a whole number",
    ),
    (&["-x", "0", "-s", "0", "-n", "1"], "-x 0: runs must be"),
    (
        &["-m", "a,b", "-s", "0", "-n", "1"],
        "no comma or line break",
    ),
    (
        &["-z", "seed", "-s", "0", "-n", "1"],
        "-z seed: expected a whole number",
    ),
    (
        &["-r", "lots", "-s", "0", "-n", "1"],
        "-r lots: expected a RAM size",
    ),
    (&["-f", "x", "-s", "0", "-n", "1"], "-f x: expected a size"),
    (
        &["-D", "-s", "64:256", "-r", "0"],
        "-D needs a chunk of at least 512 bytes",
    ),
    (
        &["-Z", "/dev/urandom", "-s", "0", "-n", "1"],
        "-Z: a seed file is not supported",
    ),
    (&["-p", "2", "-s", "0", "-n", "1"], "-p/-y"),
    (&["-y", "s", "-s", "0", "-n", "1"], "-p/-y"),
    // Negative numbers reach the flag's own check (not "unexpected argument '-5'").
    (&["-s", "-5", "-r", "0"], "-s -5: expected a size"),
    (
        &["-r", "-1", "-s", "0", "-n", "1"],
        "-r -1: expected a RAM size",
    ),
    (&["-n", "-1", "-s", "0"], "-n -1: bad file count"),
    (
        &["-x", "-1", "-s", "0", "-n", "1"],
        "-x -1: expected a whole number",
    ),
    (
        &["-z", "-5", "-s", "0", "-n", "1"],
        "-z -5: expected a whole number",
    ),
    (
        &["-c", "-2", "-s", "0", "-n", "1"],
        "-c -2: expected a whole number",
    ),
    // -u and -g are accepted for compatibility, but name a user and group that exist.
    (
        &["-u", "nosuchuser-sb", "-s", "0", "-n", "1"],
        "-u nosuchuser-sb: no user 'nosuchuser-sb' here",
    ),
    (&["-g", "nosuchgroup-sb", "-s", "0", "-n", "1"], "no group"),
    // Given twice, the last value counts, as with bonnie++'s getopt.
    (&["-s", "0", "-n", "1", "-n", "0"], "leaves nothing to test"),
];

/// A flag given twice takes its last value (wrappers append overrides to a base set).
#[test]
fn repeated_flags_take_the_last_value() {
    let dir = tempfile::tempdir().unwrap();
    let out = storbench()
        .args(["--no-save", "bonnie", "-d", &path_str(&dir), "-q"])
        .args([
            "-s", "0", "-n", "9", "-n", "1", "-m", "a", "-m", "b", "-b", "-b",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let csv = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = csv.trim_end().split(',').collect();
    assert_eq!((fields[2], fields[21]), ("b", "1"), "{csv}");
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn each_refusal_is_one_line_and_creates_nothing() {
    for (args, why) in REFUSED {
        let dir = tempfile::tempdir().unwrap();
        let out = storbench()
            .args(["--no-save", "bonnie", "-d", &path_str(&dir)])
            .args(*args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("storbench: "), "{args:?}: {stderr}");
        assert!(
            stderr.contains(why),
            "{args:?}: expected {why:?} in {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(entries(dir.path()).is_empty(), "{args:?}");
    }
}

#[test]
fn bad_directories() {
    let cases: &[(&str, &str)] = &[
        (
            "/nonexistent/storbench-test",
            "-d /nonexistent/storbench-test: cannot use",
        ),
        ("/etc/hostname", "not a directory"),
        (
            "iscsi://127.0.0.1/iqn.x/1",
            "only local directories and nfs:// or smb:// URLs",
        ),
        ("nfs://", "bad NFS URL \"nfs://\": no server name"),
    ];
    for (dir, why) in cases {
        let out = storbench()
            .args(["--no-save", "bonnie", "-s", "0", "-n", "1", "-d", dir])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{dir}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{dir}: {stderr}");
        assert!(stderr.contains(why), "{dir}: expected {why:?} in {stderr}");
    }
}

/// Syntax errors are caught by the argument parser: one line, exit code 2.
#[test]
fn unknown_flags_and_stray_words() {
    for args in [
        &["-k"][..],
        &["stray"],
        &["--format", "csv-2", "-s", "0", "-n", "1"],
        &["-s"],
    ] {
        let out = storbench()
            .args(["--no-save", "bonnie"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("storbench: "), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn a_label_that_reads_as_a_run_id_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = storbench()
        .args([
            "--label",
            "12",
            "bonnie",
            "-s",
            "0",
            "-n",
            "1",
            "-d",
            &path_str(&dir),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--label 12"));
    assert!(entries(dir.path()).is_empty());
}
