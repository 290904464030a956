//! Where `storbench bonnie` writes what (bonnie++'s layout), and that a saved run shows
//! again with the same figures and obeys the `+++++` rule.

mod bonnie_support;

use bonnie_support::*;

#[test]
fn table_then_csv_on_stdout_progress_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let out = bonnie_ok(&["-d", &path_str(&dir), "-s", "0", "-n", "1", "-m", "layout"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("storbench ") && l.contains("Sequential Create"))
    );
    assert!(lines.last().unwrap().starts_with("1.98,storbench-"));
    assert!(
        stderr.contains("Create files in sequential order...done"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Delete files in random order...done"),
        "{stderr}"
    );
}

#[test]
fn quiet_puts_only_csv_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = bonnie_ok(&["-d", &path_str(&dir), "-q", "-s", "0", "-n", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Sequential Create"),
        "the table goes to stderr: {stderr}"
    );
    assert!(!stderr.contains("...done"), "no progress with -q: {stderr}");
}

#[test]
fn deviations_are_stated_above_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = bonnie_ok(&[
        "-d",
        &path_str(&dir),
        "-q",
        "-s",
        "4",
        "-r",
        "0",
        "-f",
        "-n",
        "0",
        "-D",
        "-b",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let head: Vec<&str> = stderr.lines().take_while(|l| !l.is_empty()).collect();
    for code in [
        "[bonnie.incompressible]",
        "[bonnie.direct]",
        "[bonnie.fsync-each]",
        "[warn.small-file]",
    ] {
        assert!(
            head.iter().any(|l| l.ends_with(code)),
            "{code} missing from {head:?}"
        );
    }
}

/// Runs with a scratch results database and returns the run's stored JSON and CSV line.
fn saved_run(args: &[&str]) -> (serde_json::Value, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = storbench()
        .args([
            "--db",
            db.to_str().unwrap(),
            "bonnie",
            "-q",
            "-d",
            work.to_str().unwrap(),
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = last_line(&out);
    let show = |format: &str| {
        let out = storbench()
            .args([
                "--db",
                db.to_str().unwrap(),
                "show",
                "1",
                "--format",
                format,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let raw: serde_json::Value = serde_json::from_str(&show("raw")).expect("raw JSON");
    (raw, printed, show("csv").trim_end().to_string())
}

#[test]
fn a_saved_run_shows_the_same_line_and_follows_the_plus_rule() {
    let (raw, printed, shown) = saved_run(&["-s", "4", "-r", "0", "-f", "1", "-n", "1"]);
    assert_eq!(
        printed, shown,
        "show --format csv reproduces the printed line"
    );
    let f = fields(&printed);
    let columns = [
        ("putc", 9),
        ("put_block", 11),
        ("rewrite", 13),
        ("getc", 15),
        ("get_block", 17),
        ("seeks", 19),
        ("seq_create", 26),
        ("seq_stat", 28),
        ("seq_del", 30),
        ("ran_create", 32),
        ("ran_stat", 34),
        ("ran_del", 36),
    ];
    let tests = raw["bonnie"]["tests"].as_array().expect("tests");
    assert_eq!(tests.len(), 12);
    for (id, col) in columns {
        let t = tests.iter().find(|t| t["id"] == id).expect(id);
        let elapsed = t["elapsed_ns"].as_u64().unwrap();
        let plus = f[col] == "+++++";
        assert_eq!(
            plus,
            elapsed < 500_000_000,
            "{id}: {} after {elapsed} ns",
            f[col]
        );
        assert_eq!(plus, t["rate"].is_null(), "{id}");
    }
    assert_eq!(raw["mode"], "bonnie");
    assert!(raw["environment"]["hostname"].is_string());
}

#[test]
fn csv_1_03_is_available_from_the_run_and_from_show() {
    let dir = tempfile::tempdir().unwrap();
    let out = bonnie_ok(&[
        "-d",
        &path_str(&dir),
        "-q",
        "-s",
        "0",
        "-n",
        "1",
        "--format",
        "csv-1.03",
        "-m",
        "old",
    ]);
    let line = last_line(&out);
    assert_eq!(fields(&line).len(), 27);
    assert!(line.starts_with("old,,"), "{line}");
}

/// The run changes to the `-d` directory as bonnie++ does; a relative `--db` must still
/// mean the directory storbench was started in.
#[test]
fn a_relative_db_path_is_not_moved_by_the_directory_change() {
    let (home, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = storbench()
        .current_dir(home.path())
        .args([
            "--db",
            "results.db",
            "bonnie",
            "-q",
            "-s",
            "0",
            "-n",
            "1",
            "-d",
            &path_str(&work),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(home.path().join("results.db").exists());
    assert!(
        entries(work.path()).is_empty(),
        "{:?}",
        entries(work.path())
    );
}
