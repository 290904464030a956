//! The results history end to end through the `storbench` binary: import real fio and
//! bonnie++ output, list, show, compare, report, delete; concurrent savers; unreadable input
//! and foreign databases.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

struct Session {
    dir: tempfile::TempDir,
}

impl Session {
    fn new() -> Session {
        Session {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("storbench").unwrap();
        c.env("STORBENCH_DB", self.db())
            .env("NO_COLOR", "1")
            .args(args);
        c
    }

    /// Runs and returns stdout, asserting success.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "storbench {args:?} failed: {err}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs and returns stderr, asserting failure.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().unwrap();
        assert!(!out.status.success(), "storbench {args:?} succeeded");
        String::from_utf8(out.stderr).unwrap()
    }
}

/// fio json+ output of a small null-engine run; None (with a reason) without fio.
fn fio_json(path: &Path, bs: &str) -> Option<()> {
    if Command::new("fio").arg("--version").output().is_err() {
        eprintln!("SKIP: fio is not installed");
        return None;
    }
    let status = Command::new("fio")
        .args([
            "--ioengine=null",
            "--size=16m",
            "--name=copy",
            "--rw=randrw",
        ])
        .arg(format!("--bs={bs}"))
        .args(["--output-format=json+"])
        .arg(format!("--output={}", path.display()))
        .status()
        .unwrap();
    assert!(status.success());
    Some(())
}

const BONNIE: &str = "1.98,2.00a,anchor,1,1795972858,512M,,8192,5,836,98,250784,51,458356,35,1325,99,+++++,+++,14015,47,8,4096,1024,,2,4990,85,+++++,+++,5170,24,1817,95,+++++,+++,4039,24,21385us,957us,1887us,11173us,362us,17761us,1375us,4080us,2819us,5957us,112us,4199us\n";

#[test]
fn import_list_show_compare_report_rm() {
    let s = Session::new();
    let (a, b) = (s.path("pata.json"), s.path("nfs.json"));
    if fio_json(&a, "4k").is_none() || fio_json(&b, "64k").is_none() {
        return;
    }
    s.ok(&[
        "import",
        a.to_str().unwrap(),
        "--label",
        "pata",
        "--tag",
        "lab",
    ]);
    s.ok(&["import", b.to_str().unwrap(), "--label", "nfs"]);
    std::fs::write(s.path("b.csv"), BONNIE).unwrap();
    s.ok(&[
        "import",
        s.path("b.csv").to_str().unwrap(),
        "--label",
        "bonnie",
    ]);

    let list = s.ok(&["history"]);
    let lines: Vec<&str> = list.lines().collect();
    assert!(lines[0].starts_with("ID"), "{list}");
    assert_eq!(lines.len(), 5, "header, 3 runs, bonnie legend:\n{list}");
    assert!(lines[1].contains("pata") && lines[1].contains("fio") && lines[1].contains("lab"));
    let tagged = s.ok(&["history", "--tag", "lab", "--format", "json"]);
    let tagged: serde_json::Value = serde_json::from_str(&tagged).unwrap();
    assert_eq!(tagged.as_array().unwrap().len(), 1);
    assert_eq!(tagged[0]["label"], "pata");
    assert_eq!(
        s.ok(&["history", "--mode", "bonnie", "--format", "csv"])
            .lines()
            .count(),
        2
    );

    // show: fio's own JSON again, with the stored histograms as json+ bins.
    let shown: serde_json::Value =
        serde_json::from_str(&s.ok(&["show", "pata", "-f", "json+"])).unwrap();
    let original: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    assert_eq!(
        shown["jobs"][0]["read"]["io_bytes"],
        original["jobs"][0]["read"]["io_bytes"]
    );
    assert_eq!(
        shown["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"],
        original["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"]
    );
    assert!(
        s.ok(&["show", "1"]).contains("copy: (groupid=0"),
        "fio normal output"
    );
    assert!(s.ok(&["show", "bonnie"]).contains("anchor"));
    assert!(s.ok(&["show", "bonnie", "-f", "csv"]).starts_with("1.98,"));
    let err = s.fails(&["show", "bonnie", "-f", "terse"]);
    assert!(
        err.contains("format 'terse' is not available for a bonnie run"),
        "{err}"
    );

    // compare: the figures and the change, checked against fio's own numbers.
    let csv = s.ok(&["compare", "pata", "nfs", "--format", "csv"]);
    let bw = |run: &str| -> f64 {
        let line = csv
            .lines()
            .find(|l| l.starts_with("copy read,bandwidth_mb,") && l.contains(&format!(",{run},")))
            .unwrap();
        line.split(',').nth(5).unwrap().parse().unwrap()
    };
    let fio_bw = |v: &serde_json::Value| v["jobs"][0]["read"]["bw_bytes"].as_f64().unwrap() / 1e6;
    let nfs_doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    assert!((bw("pata") - fio_bw(&original)).abs() < 1e-3 * fio_bw(&original));
    assert!((bw("nfs") - fio_bw(&nfs_doc)).abs() < 1e-3 * fio_bw(&nfs_doc));
    let text = s.ok(&["compare", "pata", "nfs"]);
    // `table`, as history names its plain layout, is the same as `text`.
    assert_eq!(s.ok(&["compare", "pata", "nfs", "--format", "table"]), text);
    assert!(
        text.starts_with("Comparing pata (#1), nfs (#2); changes against pata (#1)"),
        "{text}"
    );
    let md = s.ok(&[
        "compare",
        "1",
        "2",
        "--baseline",
        "nfs",
        "--format",
        "markdown",
    ]);
    assert!(md.contains("changes against nfs (#2)"), "{md}");
    let mixed = s.ok(&["compare", "pata", "bonnie"]);
    assert!(mixed.contains("These runs share no test."), "{mixed}");
    assert!(s.fails(&["compare", "pata"]).contains("at least two runs"));
    assert!(s.fails(&["compare", "pata", "1"]).contains("named twice"));
    assert!(
        s.fails(&["compare", "pata", "nope"])
            .contains("no run labelled 'nope'")
    );

    let html = s.path("r.html");
    s.ok(&["report", "pata", "nfs", "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h3>copy read</h3>") && page.contains("uPlot"));

    // rm: asks first; without a terminal it refuses unless --yes.
    assert!(s.fails(&["rm", "3"]).contains("pass --yes"));
    s.ok(&["rm", "3", "--yes"]);
    assert!(s.fails(&["show", "3"]).contains("no run with id 3"));
}

#[test]
fn unreadable_input_imports_nothing() {
    let s = Session::new();
    std::fs::write(s.path("good.csv"), BONNIE).unwrap();
    std::fs::write(s.path("bad.csv"), format!("{BONNIE}1.98,2.00a,half\n")).unwrap();
    let err = s.fails(&[
        "import",
        s.path("good.csv").to_str().unwrap(),
        s.path("bad.csv").to_str().unwrap(),
    ]);
    assert!(
        err.contains("bad.csv:2: bonnie++ CSV format 1.98 has 50 fields"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(s.ok(&["history"]).starts_with("no runs stored"));
    let err = s.fails(&[
        "import",
        "--label",
        "42",
        s.path("good.csv").to_str().unwrap(),
    ]);
    assert!(err.contains("plain number"), "{err}");
}

#[test]
fn reading_commands_never_create_the_database() {
    let s = Session::new();
    assert!(s.ok(&["history"]).starts_with("no runs stored yet"));
    assert!(
        s.fails(&["compare", "a", "b"])
            .contains("no results database at")
    );
    assert!(s.fails(&["show", "1"]).contains("no results database at"));
    assert!(!s.db().exists());
}

#[test]
fn foreign_database_is_refused_untouched() {
    let s = Session::new();
    std::fs::write(s.db(), "not a database\n").unwrap();
    let err = s.fails(&["history"]);
    assert!(err.contains("not a storbench results database"), "{err}");
    assert_eq!(std::fs::read_to_string(s.db()).unwrap(), "not a database\n");
}

/// Four imports of one file at once all succeed, and the file's runs are held once: each
/// import's check for runs already held and its save are one transaction.
#[test]
fn concurrent_imports_all_succeed() {
    let s = Session::new();
    std::fs::write(s.path("b.csv"), BONNIE.repeat(5)).unwrap();
    let children: Vec<_> = (0..4)
        .map(|_| {
            s.cmd(&["import", s.path("b.csv").to_str().unwrap()])
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let csv = s.ok(&["history", "--format", "csv"]);
    assert_eq!(csv.lines().count(), 1 + 5, "{csv}");
}

/// A reader that stops early (`| head`) ends the command quietly, as it ends standard tools
/// (status 141, 128 + SIGPIPE), without "Broken pipe" on stderr or a panic.
#[test]
fn a_closed_pipe_ends_output_quietly() {
    let s = Session::new();
    std::fs::write(s.path("b.csv"), BONNIE.repeat(2)).unwrap();
    s.ok(&["import", s.path("b.csv").to_str().unwrap()]);
    for args in [
        &["compare", "1", "2"][..],
        &["show", "1", "-f", "raw"],
        &["history"],
        &["fio", "--cmdhelp"],
    ] {
        let out = common::into_closed_pipe(&mut s.cmd(args));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Runs `c` with stdout a pipe whose reader goes away early, as `| head -1` does: once
/// `ready` says so (given the reader, which may take a line), the read end is closed while
/// the run goes on. Returns the exit code and stderr.
fn cut_short(
    c: &mut Command,
    ready: impl FnOnce(
        &mut std::io::BufReader<std::process::ChildStdout>,
        &std::sync::mpsc::Receiver<u8>,
    ),
) -> (Option<i32>, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let drain = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut byte = [0u8; 1];
        while let Ok(1) = stderr.read(&mut byte) {
            all.push(byte[0]);
            let _ = tx.send(byte[0]);
        }
        String::from_utf8_lossy(&all).into_owned()
    });
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    ready(&mut reader, &rx);
    drop(reader);
    let status = child.wait().unwrap();
    (status.code(), drain.join().unwrap())
}

/// A reader that takes one line and goes (`storbench fio … | head -1`,
/// `storbench bonnie … | head -1`) cannot lose the measurement: the run is saved before the
/// report is written.
#[test]
fn a_reader_gone_early_keeps_fio_and_bonnie_runs_in_the_history() {
    use std::io::BufRead;
    let s = Session::new();
    let file = s.path("fio.dat");
    let file = format!("--filename={}", file.display());
    // fio prints its first line (the job's) before the run, which lasts 500 ms after head
    // has gone.
    let fio = [
        "fio",
        "--name=cut",
        "--rw=write",
        "--size=1m",
        "--runtime=500ms",
        "--time_based",
        &file,
    ];
    let (code, err) = cut_short(&mut s.cmd(&fio), |out, _| {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert!(line.starts_with("cut: (g=0)"), "{line}");
    });
    assert_eq!(code, Some(141), "{err}");
    assert!(err.contains("saved as run 1"), "{err}");
    // bonnie prints its table at the end; the reader goes once the first test has started.
    let dir = s.path("bonnie");
    std::fs::create_dir(&dir).unwrap();
    let bonnie = [
        "bonnie",
        "-d",
        dir.to_str().unwrap(),
        "-s",
        "4",
        "-r",
        "0",
        "-f",
        "1",
        "-n",
        "1",
    ];
    let (code, err) = cut_short(&mut s.cmd(&bonnie), |_, progress| {
        progress.recv().expect("bonnie reports progress on stderr");
    });
    assert_eq!(code, Some(141), "{err}");
    assert!(err.contains("saved as run 2"), "{err}");
    let csv = s.ok(&["history", "--format", "csv"]);
    assert_eq!(csv.lines().count(), 1 + 2, "{csv}");
}

/// A database that cannot be opened (a path under a regular file, a directory) is found
/// before the run, in one line, and nothing is created.
#[test]
fn an_unusable_database_stops_the_run_before_any_io() {
    let s = Session::new();
    std::fs::write(s.path("regular"), b"not a folder").unwrap();
    let under_file = s.path("regular").join("results.db");
    let a_dir = s.path("dir");
    std::fs::create_dir(&a_dir).unwrap();
    let work = s.path("work");
    std::fs::create_dir(&work).unwrap();
    let file = format!("--filename={}", work.join("f.dat").display());
    let work_str = work.to_str().unwrap();
    let runs: [&[&str]; 3] = [
        &["fio", "--name=x", "--rw=write", "--size=1m", &file],
        &["quick", "--size", "1m", "--runtime", "100ms", work_str],
        &[
            "bonnie", "-d", work_str, "-s", "4", "-r", "0", "-f", "1", "-n", "1",
        ],
    ];
    for (db, cause) in [(&under_file, "Not a directory"), (&a_dir, "Is a directory")] {
        for args in runs {
            let out = s.cmd(args).env("STORBENCH_DB", db).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert_eq!(err.matches(cause).count(), 1, "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(out.stdout.is_empty(), "{args:?}");
            assert_eq!(common::entries(&work), Vec::<String>::new(), "{args:?}");
        }
    }
}
